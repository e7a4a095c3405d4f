// The thesis's worked examples as literal tests (ihpp-thesis.txt):
// Figure 3.2 (k-contexts of the trace of Figure 3.1), Figures 3.6/3.7/3.8
// (2-SF of a CCT, cleared top regions), Listings 4.3/4.4/4.5 (prog1:
// per-thread and joined CCTs, 2-SF and 2-CCF with node counts 20 and 25),
// Listings 4.7/4.10 (simple recursion rolled, mutual recursion not).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "oracle.h"

using namespace kg::core;
using oracle::enter;
using oracle::leave;
using oracle::Path;
using oracle::SF;
using oracle::Stream;
using oracle::Tree;

namespace {

// Labels of prog1 (Listing 4.1) traced with -funcs a,b,c,d,e,f.
enum : uint32_t { ROOT = 0, A, B, C, D, E, F };
const std::map<std::string, uint32_t> kNames = {{"__root__", ROOT}, {"a", A}, {"b", B}, {"c", C},
                                                {"d", D},           {"e", E}, {"f", F}};

// Parses an indented listing ("name count", two spaces per level) into the
// (first tree?, path) -> calls form; the first top-level tree is the first
// tree iff first_is_special (k-SF), else every tree is an R tree (k-CCF).
std::map<std::pair<bool, Path>, uint64_t> parse_listing(const std::string& text,
                                                        const std::map<std::string, uint32_t>& names,
                                                        bool first_is_special) {
  std::map<std::pair<bool, Path>, uint64_t> r;
  std::istringstream in(text);
  std::string line;
  std::vector<uint32_t> stack;
  int tree = -1;
  while (std::getline(in, line)) {
    size_t ind = line.find_first_not_of(' ');
    if (ind == std::string::npos) continue;
    std::istringstream ls(line.substr(ind));
    std::string name;
    uint64_t count;
    ls >> name >> count;
    size_t level = ind / 2;
    if (level == 0) ++tree;
    stack.resize(level);
    stack.push_back(names.at(name));
    auto key = std::make_pair(first_is_special && tree == 0, Path(stack.begin(), stack.end()));
    EXPECT_EQ(r.count(key), 0u) << "duplicate line in expected listing: " << line;
    r[key] = count;
  }
  return r;
}

std::map<std::pair<bool, Path>, uint64_t> calls_of(const SF& sf) {
  std::map<std::pair<bool, Path>, uint64_t> r;
  for (const auto& kv : sf) r[kv.first] = kv.second.calls;
  return r;
}

std::map<std::pair<bool, Path>, uint64_t> calls_of(const Tree& t) {
  std::map<std::pair<bool, Path>, uint64_t> r;
  for (const auto& kv : t) r[{false, kv.first}] = kv.second.calls;
  return r;
}

std::string dump(const std::map<std::pair<bool, Path>, uint64_t>& m) {
  std::ostringstream o;
  for (const auto& kv : m) o << (kv.first.first ? "F" : "R") << oracle::fmt_path(kv.first.second) << "=" << kv.second << "\n";
  return o.str();
}

// prog1's threads (Listing 4.1): main calls a(0); e(); e(); thread2 calls a(1).
Stream prog1_a0() { return {enter(A), enter(B), leave(), enter(C), leave(), leave()}; }
Stream prog1_e() {
  Stream s{enter(E), enter(D), enter(C), leave(), enter(C), leave(), leave(), enter(C), leave()};
  for (auto ev : prog1_a0()) s.push_back(ev);
  s.push_back(leave());
  return s;
}
Stream prog1_thread1() {
  Stream s = prog1_a0();
  for (int i = 0; i < 2; ++i)
    for (auto ev : prog1_e()) s.push_back(ev);
  return s;
}
Stream prog1_thread2() { return {enter(A), enter(B), leave(), enter(F), leave(), leave()}; }

struct F_ {
  oracle::AllocStats st;
  Forest f;
  ~F_() { f.destroy(); }
};

void build(Forest& f, oracle::AllocStats* st, const std::vector<Stream>& ss, uint32_t k, bool roll = true,
           uint32_t root = ROOT) {
  f.init(oracle::allocator(st), k, root, roll ? Forest::kRollSimpleRecursion : 0u);
  oracle::Driver d;
  for (const auto& s : ss) d.run(f, s);
}

}  // namespace

// ---------------------------------------------------------------------------
// Listing 4.3: k = infinity, one CCT per thread.
// ---------------------------------------------------------------------------
TEST(Thesis, Listing4_3_PerThreadCCTs) {
  const char* t1 =
      "__root__ 1\n"
      "  a 1\n"
      "    b 1\n"
      "    c 1\n"
      "  e 2\n"
      "    d 2\n"
      "      c 4\n"
      "    c 2\n"
      "    a 2\n"
      "      b 2\n"
      "      c 2\n";
  const char* t2 =
      "__root__ 1\n"
      "  a 1\n"
      "    b 1\n"
      "    f 1\n";
  F_ a, b;
  build(a.f, &a.st, {prog1_thread1()}, kInfinity);
  build(b.f, &b.st, {prog1_thread2()}, kInfinity);
  auto ga = calls_of(oracle::extract_sf(a.f)), gb = calls_of(oracle::extract_sf(b.f));
  auto wa = parse_listing(t1, kNames, true), wb = parse_listing(t2, kNames, true);
  EXPECT_EQ(ga, wa) << dump(ga);
  EXPECT_EQ(gb, wb) << dump(gb);
  EXPECT_EQ(a.f.node_count(), 11u);
  EXPECT_EQ(b.f.node_count(), 4u);
}

// ---------------------------------------------------------------------------
// Listing 4.4: joinThreads, k = infinity.  (The listing as extracted shows
// "a(),2" twice in a row under e; the second is an extraction artefact: the
// joined CCT has one a under e, with b and c below it.)
// ---------------------------------------------------------------------------
TEST(Thesis, Listing4_4_JoinedCCT) {
  const char* want =
      "__root__ 2\n"
      "  a 2\n"
      "    b 2\n"
      "    c 1\n"
      "    f 1\n"
      "  e 2\n"
      "    d 2\n"
      "      c 4\n"
      "    c 2\n"
      "    a 2\n"
      "      b 2\n"
      "      c 2\n";
  F_ t1, t2, both;
  build(t1.f, &t1.st, {prog1_thread1()}, kInfinity);
  build(t2.f, &t2.st, {prog1_thread2()}, kInfinity);
  ASSERT_TRUE(join(t1.f, t2.f));
  build(both.f, &both.st, {prog1_thread1(), prog1_thread2()}, kInfinity);
  auto w = parse_listing(want, kNames, true);
  EXPECT_EQ(calls_of(oracle::extract_sf(t1.f)), w);
  EXPECT_EQ(calls_of(oracle::extract_sf(both.f)), w);
}

// ---------------------------------------------------------------------------
// Listing 4.5: -joinThreads -ksf -kccf -k 2: the 2-SF (20 nodes) and the
// 2-CCF (25 nodes), every counter as printed.
// ---------------------------------------------------------------------------
const char* kListing45_SF =
    "__root__ 2\n"
    "  a 2\n"
    "    b 2\n"
    "    c 1\n"
    "    f 1\n"
    "  e 2\n"
    "    d 2\n"
    "      c 4\n"
    "    c 2\n"
    "    a 2\n"
    "      b 2\n"
    "      c 2\n"
    "b 2\n"
    "c 3\n"
    "d 2\n"
    "  c 4\n"
    "a 2\n"
    "  b 2\n"
    "  c 2\n"
    "f 1\n";
const char* kListing45_CCF =
    "__root__ 2\n"
    "a 4\n"
    "  __root__ 2\n"
    "  e 2\n"
    "    __root__ 2\n"
    "b 4\n"
    "  a 4\n"
    "    __root__ 2\n"
    "    e 2\n"
    "c 9\n"
    "  a 3\n"
    "    __root__ 1\n"
    "    e 2\n"
    "  d 4\n"
    "    e 4\n"
    "  e 2\n"
    "    __root__ 2\n"
    "f 1\n"
    "  a 1\n"
    "    __root__ 1\n"
    "e 2\n"
    "  __root__ 2\n"
    "d 2\n"
    "  e 2\n"
    "    __root__ 2\n";

TEST(Thesis, Listing4_5_TwoSFAndTwoCCFJoinedThreads) {
  auto want_sf = parse_listing(kListing45_SF, kNames, true);
  auto want_ccf = parse_listing(kListing45_CCF, kNames, false);
  ASSERT_EQ(want_sf.size(), 20u);
  ASSERT_EQ(want_ccf.size(), 25u);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant == 0 ? "threads joined after" : variant == 1 ? "one shared forest" : "joined 2<-1");
    F_ x, y;
    if (variant == 0) {
      build(x.f, &x.st, {prog1_thread1()}, 2);
      build(y.f, &y.st, {prog1_thread2()}, 2);
      ASSERT_TRUE(join(x.f, y.f));
    } else if (variant == 1) {
      build(x.f, &x.st, {prog1_thread1(), prog1_thread2()}, 2);
    } else {
      build(y.f, &y.st, {prog1_thread1()}, 2);
      build(x.f, &x.st, {prog1_thread2()}, 2);
      ASSERT_TRUE(join(x.f, y.f));
    }
    Forest& sf = x.f;
    EXPECT_EQ(sf.node_count(), 20u);  // "Nodes count of k slab forest: 20"
    auto got_sf = calls_of(oracle::extract_sf(sf));
    EXPECT_EQ(got_sf, want_sf) << dump(got_sf);
    Forest ccf;
    ASSERT_TRUE(inv_k(ccf, sf, 2));
    EXPECT_EQ(ccf.node_count(), 25u);  // "Nodes count of kCCF: 25"
    auto got_ccf = calls_of(oracle::extract_tree(ccf));
    EXPECT_EQ(got_ccf, want_ccf) << dump(got_ccf);
    // The trees of the k-SF: the first (__root__) then b, c, d, a, f in the
    // order they were created by the online algorithm (Listing 4.5's order).
    if (variant == 1) {
      ASSERT_EQ(sf.tree_count(), 5u);
      const uint32_t order[] = {B, C, D, A, F};
      for (size_t i = 0; i < 5; ++i) EXPECT_EQ(sf.tree(i)->label, order[i]);
      EXPECT_EQ(sf.first_tree()->label, static_cast<uint32_t>(ROOT));
    }
    // And the oracle agrees on both.
    oracle::CCT cct = oracle::build_cct({prog1_thread1(), prog1_thread2()}, ROOT, true);
    EXPECT_EQ(calls_of(oracle::k_sf_def7(cct, 2)), want_sf);
    EXPECT_EQ(calls_of(oracle::k_ccf(cct, 2)), want_ccf);
    ccf.destroy();
  }
}

// From the same run at k = 4 (and at k = infinity), inv_2 gives the same
// 2-CCF: one run at k answers every smaller k.
TEST(Thesis, Listing4_5_CCFFromLargerK) {
  auto want_ccf = parse_listing(kListing45_CCF, kNames, false);
  for (uint32_t k : {2u, 3u, 4u, 7u, kInfinity}) {
    F_ x;
    build(x.f, &x.st, {prog1_thread1(), prog1_thread2()}, k);
    Forest ccf;
    ASSERT_TRUE(inv_k(ccf, x.f, 2));
    EXPECT_EQ(calls_of(oracle::extract_tree(ccf)), want_ccf) << "k=" << k;
    ccf.destroy();
  }
}

// ---------------------------------------------------------------------------
// Figure 3.2: every k-context and its count, k = 0..3.
//
// The trace of Figure 3.1 as extracted lacks a call(c)/return under the
// first a: Figure 3.2 has c counted twice at k = 0, <a,c> at k = 1 and
// <r,a,c> at k = 2, so the trace is r( a( b() c() ) c( a( b() b() ) ) ).
// With that trace every row of Figure 3.2 holds (and Figure 3.4's remark
// that k = 3 is already full context).
// ---------------------------------------------------------------------------
namespace {
enum : uint32_t { R = 0, FA = 1, FB = 2, FC = 3 };
Stream fig31() {
  return {enter(FA), enter(FB), leave(), enter(FC), leave(), leave(),
          enter(FC), enter(FA), enter(FB), leave(), enter(FB), leave(), leave(), leave()};
}
}  // namespace

TEST(Thesis, Figure3_2_KContexts) {
  struct Row {
    uint32_t k;
    Path ctx;
    uint64_t count;
  };
  const std::vector<Row> rows = {
      {0, {R}, 1},        {0, {FA}, 2},         {0, {FB}, 3},         {0, {FC}, 2},
      {1, {R, FA}, 1},    {1, {FA, FB}, 3},     {1, {FA, FC}, 1},     {1, {R, FC}, 1},
      {1, {FC, FA}, 1},   {2, {R, FA, FB}, 1},  {2, {R, FA, FC}, 1},  {2, {R, FC, FA}, 1},
      {2, {FC, FA, FB}, 2}, {3, {R, FC, FA, FB}, 2},
  };
  oracle::CCT cct = oracle::build_cct({fig31()}, R, true);
  for (uint32_t k = 0; k <= 3; ++k) {
    // The oracle's k-contexts of length k+1 are exactly the figure's rows.
    std::map<Path, uint64_t> want;
    for (const auto& r : rows)
      if (r.k == k) want[r.ctx] = r.count;
    std::map<Path, uint64_t> got;
    for (const auto& kv : oracle::k_contexts(cct, k))
      if (kv.first.size() == k + 1) got[kv.first] = kv.second;
    EXPECT_EQ(got, want) << "oracle, k=" << k;
    // The core: the k-CCF built online at k, and inv_k from a 3-SF and from
    // the CCT, have the same count on every reversed row path; its nodes at
    // depth k are exactly the rows.
    for (uint32_t build_k : {k, 3u, kInfinity}) {
      oracle::AllocStats st;
      Forest f;
      build(f, &st, {fig31()}, build_k);
      Forest ccf;
      ASSERT_TRUE(inv_k(ccf, f, k));
      std::map<Path, uint64_t> core_rows;
      for (const auto& kv : oracle::extract_tree(ccf))
        if (kv.first.size() == k + 1) core_rows[Path(kv.first.rbegin(), kv.first.rend())] = kv.second.calls;
      EXPECT_EQ(core_rows, want) << "core, k=" << k << " built at k=" << build_k;
      ccf.destroy();
      f.destroy();
      EXPECT_EQ(st.live, 0);
    }
  }
  // Figure 3.4, k = 1: a has been called twice, once by r and once by c.
  oracle::AllocStats st;
  Forest f, ccf;
  build(f, &st, {fig31()}, 1);
  inv_k(ccf, f, 1);
  Node* a = ccf.find_tree(FA);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->calls, 2u);
  EXPECT_EQ(a->nkids, 2u);
  EXPECT_EQ(find_child(a, R)->calls, 1u);
  EXPECT_EQ(find_child(a, FC)->calls, 1u);
  // k = 3 is full context: inv_3 == inv_inf of the CCT.
  Forest cct_f, inf_ccf, ccf3;
  build(cct_f, &st, {fig31()}, kInfinity);
  inv_k(inf_ccf, cct_f, kInfinity);
  inv_k(ccf3, cct_f, 3);
  EXPECT_TRUE(oracle::extract_tree(inf_ccf) == oracle::extract_tree(ccf3));
  for (Forest* x : {&f, &ccf, &cct_f, &inf_ccf, &ccf3}) x->destroy();
}

// ---------------------------------------------------------------------------
// Figures 3.6 / 3.7 / 3.8 (pictures missing from the text; CCT rebuilt from
// the prose): a CCT whose nodes at levels 0, 2, 4 root five subtrees
// T1..T5; the 2-SF has four trees: T1 (root r), join(T3, T4) (same root
// label), and the one-node trees T2 and T5.  Fig. 3.8 clears the top
// regions (levels 0..k-1) of every tree but the first.
//
//   r ─ a ─ b                    T2 = b            (level 2, leaf)
//     │   └ c ─ d ─ e            T3 = c-d-e        (level 2), T5 = e (level 4)
//     └ f ─ c ─ g                T4 = c-g          (level 2)
// ---------------------------------------------------------------------------
TEST(Thesis, Figures3_6_3_7_3_8_TwoSlabForest) {
  enum : uint32_t { r = 0, a, b, c, d, e, f, g };
  Stream s = {enter(a), enter(b), leave(), enter(c), enter(d), enter(e), leave(3), leave(),
              enter(f), enter(c), enter(g), leave(3)};
  const std::map<std::string, uint32_t> names = {{"r", r}, {"a", a}, {"b", b}, {"c", c},
                                                 {"d", d}, {"e", e}, {"f", f}, {"g", g}};
  oracle::AllocStats st;
  Forest sf;
  build(sf, &st, {s}, 2);
  // Fig. 3.7: T1, join(T3,T4), T2, T5.
  const char* fig37 =
      "r 1\n"
      "  a 1\n"
      "    b 1\n"
      "    c 1\n"
      "      d 1\n"
      "  f 1\n"
      "    c 1\n"
      "      g 1\n"
      "b 1\n"
      "c 2\n"
      "  d 1\n"
      "    e 1\n"
      "  g 1\n"
      "e 1\n";
  EXPECT_EQ(calls_of(oracle::extract_sf(sf)), parse_listing(fig37, names, true));
  EXPECT_EQ(sf.tree_count(), 3u);  // + the first tree = 4 trees
  EXPECT_EQ(sf.node_count(), 14u);
  // Definition 7 literally (the first tree is not joined with anything here
  // since r is unique).
  EXPECT_TRUE(oracle::extract_sf(sf) == oracle::k_sf_def7(oracle::build_cct({s}, r, true), 2));
  // Fig. 3.8: the same forest with the top regions of the non-first trees
  // cleared: c(0) d(0) g(0), e below d keeps 1; b(0); e(0).
  const char* fig38 =
      "r 1\n"
      "  a 1\n"
      "    b 1\n"
      "    c 1\n"
      "      d 1\n"
      "  f 1\n"
      "    c 1\n"
      "      g 1\n"
      "b 0\n"
      "c 0\n"
      "  d 0\n"
      "    e 1\n"
      "  g 0\n"
      "e 0\n";
  Forest cleared;
  copy_forest(cleared, sf);
  clear_top_regions(cleared);
  EXPECT_EQ(calls_of(oracle::extract_sf(cleared)), parse_listing(fig38, names, true));
  // The visitor flags the same nodes; the original is untouched.
  std::map<std::pair<bool, Path>, uint64_t> flagged;
  std::map<uint64_t, Path> paths;
  visit_preorder(sf, [&](const VisitInfo& v) {
    Path p = v.parent_id ? paths[v.parent_id] : Path{};
    p.push_back(v.node->label);
    paths[v.id] = p;
    flagged[{v.first_tree, p}] = v.cleared ? 0 : v.node->calls;
  });
  EXPECT_EQ(flagged, parse_listing(fig38, names, true));
  EXPECT_EQ(calls_of(oracle::extract_sf(sf)), parse_listing(fig37, names, true));
  // inv_2 of the 2-SF is the 2-CCF of the CCT.
  Forest ccf;
  inv_k(ccf, sf, 2);
  EXPECT_TRUE(oracle::extract_tree(ccf) == oracle::k_ccf(oracle::build_cct({s}, r, true), 2));
  for (Forest* x : {&sf, &cleared, &ccf}) x->destroy();
  EXPECT_EQ(st.live, 0);
}

// ---------------------------------------------------------------------------
// Listings 4.6/4.7/4.8: simple recursion rolled by default; the real CCT
// with unrollSimpleRec (rolling off).  Listings 4.9/4.10: mutual recursion
// is never rolled.
// ---------------------------------------------------------------------------
TEST(Thesis, Listing4_7_SimpleRecursionRolled) {
  enum : uint32_t { root = 0, main_, foo, rec, bar };
  const std::map<std::string, uint32_t> names = {
      {"__root__", root}, {"main", main_}, {"foo", foo}, {"recFunc", rec}, {"bar", bar}};
  Stream s = {enter(main_), enter(foo)};
  for (int i = 0; i < 6; ++i) s.push_back(enter(rec));  // recFunc(5) .. recFunc(0)
  s.push_back(enter(bar));
  s.push_back(leave(9));
  const char* rolled =
      "__root__ 1\n"
      "  main 1\n"
      "    foo 1\n"
      "      recFunc 6\n"
      "        bar 1\n";
  std::string unrolled =
      "__root__ 1\n"
      "  main 1\n"
      "    foo 1\n";
  for (int i = 0; i < 6; ++i) unrolled += std::string(6 + 2 * i, ' ') + "recFunc 1\n";
  unrolled += std::string(18, ' ') + "bar 1\n";
  oracle::AllocStats st;
  Forest f;
  build(f, &st, {s}, kInfinity, true);
  EXPECT_EQ(calls_of(oracle::extract_sf(f)), parse_listing(rolled, names, true));
  f.destroy();
  build(f, &st, {s}, kInfinity, false);
  EXPECT_EQ(calls_of(oracle::extract_sf(f)), parse_listing(unrolled, names, true));
  f.destroy();
  // prog3: foo(5) -> bar(4) -> foo(3) -> bar(2) -> foo(1) -> bar(0).
  Stream m = {enter(main_), enter(foo), enter(bar), enter(foo), enter(bar), enter(foo), enter(bar), leave(7)};
  const char* mutual =
      "__root__ 1\n"
      "  main 1\n"
      "    foo 1\n"
      "      bar 1\n"
      "        foo 1\n"
      "          bar 1\n"
      "            foo 1\n"
      "              bar 1\n";
  for (bool roll : {true, false}) {
    build(f, &st, {m}, kInfinity, roll);
    EXPECT_EQ(calls_of(oracle::extract_sf(f)), parse_listing(mutual, names, true));
    f.destroy();
  }
  EXPECT_EQ(st.live, 0);
}
