// libFuzzer target: bytes -> event streams -> kgrind core vs the oracle.
//
// Build (tests/unit/build_and_run.sh does it):
//   clang++-14 -std=gnu++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     tests/fuzz/fuzz_core.cpp -o fuzz_core
//
// Input format:
//   byte 0: bits 0-2 k selector {0,1,2,3,4,5,7,inf}; bit 3 rolling off;
//           bit 4 loop-rolling mode (block sequences, k = inf);
//           bits 5-7 label alphabet size selector {2,3,4,6,8,16,64,1000}
//   then one byte per event:
//     0x00-0x9f  enter label (b % alphabet) + 1 (0 = root label when b < 4);
//                at depth 40 an enter byte is read as a leave
//     0xa0-0xdf  leave 1 + (b & 3) levels, or (b & 0x20 set) unwind
//                (b & 0x1f) + 1 levels at once
//     0xe0-0xfb  exclusive cost (b & 0x1f) + 1
//     0xfc-0xff  start a new thread (a new stream / root activation)
// In loop mode every enter byte is a block, other bytes end the current
// function activation (a new run from the root).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "../unit/oracle.h"

using namespace kg::core;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  fprintf(stderr, "MISMATCH: %s\n%s\n", what, detail.c_str());
  abort();
}

const uint32_t kKsel[8] = {0, 1, 2, 3, 4, 5, 7, kInfinity};
const uint32_t kAlpha[8] = {2, 3, 4, 6, 8, 16, 64, 1000};

void check_streams(const std::vector<oracle::Stream>& ss, uint32_t k, bool roll) {
  oracle::AllocStats st;
  oracle::CCT cct = oracle::build_cct(ss, 0, roll);
  uint32_t flags = roll ? Forest::kRollSimpleRecursion : 0u;
  Forest all;
  all.init(oracle::allocator(&st), k, 0, flags);
  oracle::Driver d;
  for (const auto& s : ss) d.run(all, s);
  std::string e = oracle::check_structure(all);
  if (!e.empty()) fail("structure", e);
  oracle::SF got = oracle::extract_sf(all), want = oracle::k_sf_def7(cct, k);
  if (got != want) fail("k-SF vs Def. 7", oracle::diff(got, want));
  Totals t = canonical_totals(all);
  if (t.calls != cct.activations || t.excl != cct.total_excl || t.incl != cct.total_incl)
    fail("totals", "");
  // Every k' <= k.
  for (uint32_t kp : kKsel) {
    if (kp > k) continue;
    Forest ccf;
    if (!inv_k(ccf, all, kp)) fail("inv_k refused", "");
    oracle::Tree g = oracle::extract_tree(ccf), w = oracle::k_ccf(cct, kp);
    if (g != w) fail("k'-CCF", "k'=" + std::to_string(kp) + "\n" + oracle::diff(g, w));
    e = oracle::check_structure(ccf);
    if (!e.empty()) fail("ccf structure", e);
    ccf.destroy();
  }
  // Threads built apart and joined in reverse order == all together.
  if (ss.size() > 1) {
    Forest j;
    j.init(oracle::allocator(&st), k, 0, flags);
    j.first_tree()->calls = 0;
    for (size_t i = ss.size(); i-- > 0;) {
      Forest one;
      one.init(oracle::allocator(&st), k, 0, flags);
      oracle::Driver d1;
      d1.run(one, ss[i]);
      if (!join(j, one)) fail("join refused", "");
      one.destroy();
    }
    oracle::SF gj = oracle::extract_sf(j);
    if (gj != got) fail("join of threads", oracle::diff(gj, got));
    j.destroy();
  }
  all.destroy();
  if (st.live != 0) fail("leak", std::to_string(st.live));
}

void check_loops(const std::vector<std::vector<uint32_t>>& runs) {
  oracle::AllocStats st;
  Forest f;
  f.init(oracle::allocator(&st), kInfinity, 0);
  std::vector<std::vector<uint32_t>> depths;
  for (const auto& run : runs) {
    Activation a = f.enter_root();
    std::vector<uint32_t> ds;
    for (uint32_t b : run) {
      a = f.enter_loop(a, b);
      ds.push_back(a.depth);
    }
    depths.push_back(ds);
  }
  std::vector<std::vector<uint32_t>> want_depths;
  oracle::Tree want = oracle::loop_rolled(runs, 0, &want_depths);
  oracle::Tree got = oracle::extract_tree(f);
  if (got != want) fail("loop rolling", oracle::diff(got, want));
  if (depths != want_depths) fail("loop depths", "");
  std::string e = oracle::check_structure(f);
  if (!e.empty()) fail("loop structure", e);
  f.destroy();
  if (st.live != 0) fail("leak", std::to_string(st.live));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uint8_t h = data[0];
  uint32_t k = kKsel[h & 7];
  bool roll = !(h & 8);
  bool loops = (h & 16) != 0;
  uint32_t alpha = kAlpha[h >> 5];
  auto label_of = [&](uint8_t b) -> uint32_t { return b < 4 ? 0u : (b % alpha) + 1; };

  if (loops) {
    std::vector<std::vector<uint32_t>> runs(1);
    for (size_t i = 1; i < size; ++i) {
      uint8_t b = data[i];
      if (b < 0xa0)
        runs.back().push_back(label_of(b));
      else if (runs.size() < 64)
        runs.emplace_back();
    }
    check_loops(runs);
    return 0;
  }

  // The depth is capped (an enter beyond kMaxDepth becomes a leave): the
  // oracle's k = infinity CCF is cubic in the depth.
  const uint32_t kMaxDepth = 40;
  uint32_t depth = 0;
  std::vector<oracle::Stream> ss(1);
  for (size_t i = 1; i < size; ++i) {
    uint8_t b = data[i];
    if (b < 0xa0 && depth < kMaxDepth) {
      ss.back().push_back(oracle::enter(label_of(b)));
      ++depth;
    } else if (b < 0xe0) {
      uint32_t n = (b < 0xa0) ? 1u : (b & 0x20) ? (b & 0x1f) + 1u : 1u + (b & 3);
      ss.back().push_back(oracle::leave(n));
      depth = n >= depth ? 0 : depth - n;
    } else if (b < 0xfc) {
      ss.back().push_back(oracle::cost((b & 0x1f) + 1u));
    } else if (ss.size() < 16) {
      ss.emplace_back();
      depth = 0;
    }
  }
  check_streams(ss, k, roll);
  if (k != kInfinity) check_streams(ss, kInfinity, roll);
  return 0;
}
