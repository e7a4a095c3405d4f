// Unit tests of kgrind/core/cache_model.h and branch_model.h: hand-computed
// sequences for LRU, write-allocate, straddling accesses and LL reached only
// on a first-level miss; random streams against a brute-force LRU; the
// geometry checks' messages; the branch predictors' documented behaviour.
#include <gtest/gtest.h>

#include <cstdlib>
#include <list>
#include <random>
#include <string>
#include <vector>

#include "../../kgrind/core/branch_model.h"
#include "../../kgrind/core/cache_model.h"

using namespace kg::core;

namespace {

void* host_alloc(void*, size_t n) { return std::malloc(n); }
void host_free(void*, void* p) { std::free(p); }
const Allocator kHost = {nullptr, host_alloc, host_free, false};
// Zeroed memory, as the tool's fresh pages: the caches write no empty tags.
void* host_calloc(void*, size_t n) { return std::calloc(1, n); }
const Allocator kHostZeroed = {nullptr, host_calloc, host_free, true};

struct Hierarchy {
  CacheHierarchy h;
  Hierarchy(CacheGeometry i1, CacheGeometry d1, CacheGeometry ll, const Allocator& al = kHost) {
    h.init(al, i1, d1, ll);
  }
  ~Hierarchy() { h.destroy(); }
};

std::string error_of(uint64_t size, uint64_t assoc, uint64_t line) {
  const char* e = cache_geometry_error({size, assoc, line});
  return e ? e : "";
}

TEST(CacheGeometry, ValidGeometries) {
  EXPECT_EQ(error_of(32768, 8, 64), "");
  EXPECT_EQ(error_of(49152, 12, 64), "");   // 64 sets of 12 ways: the size need not be a power of two
  EXPECT_EQ(error_of(64, 1, 64), "");       // one line
  EXPECT_EQ(error_of(1024, 16, 64), "");    // fully associative
  EXPECT_EQ(error_of(1 << 30, 2, 64), "");
}

TEST(CacheGeometry, EachFaultHasItsMessage) {
  EXPECT_EQ(error_of(0, 1, 64), "the cache size is 0");
  EXPECT_EQ(error_of(1024, 0, 64), "the associativity is 0");
  EXPECT_EQ(error_of(1024, 1, 0), "the line size is 0");
  EXPECT_EQ(error_of((1ull << 30) + 64, 1, 64), "the cache size is over 1 GB (1073741824 bytes)");
  EXPECT_EQ(error_of(1024, 1, 48), "the line size is not a power of two");
  EXPECT_EQ(error_of(1024, 1, 8), "the line size is under 16 bytes");
  EXPECT_EQ(error_of(1024, 1, 4096), "the line size is larger than the cache");
  EXPECT_EQ(error_of(1024, 32, 64), "the associativity is larger than the number of lines (size / line size)");
  EXPECT_EQ(error_of(1000, 1, 64), "the size is not a multiple of associativity x line size (a whole number of sets)");
  EXPECT_EQ(error_of(1024, 3, 64), "the size is not a multiple of associativity x line size (a whole number of sets)");
  EXPECT_EQ(error_of(3 * 1024, 1, 64), "the number of sets (size / (associativity x line size)) is not a power of two");
}

const CacheGeometry kBig = {1 << 20, 16, 64};   // an LL that holds everything below

TEST(CacheModel, DirectMappedConflict) {
  Hierarchy c({1024, 1, 64}, {1024, 1, 64}, kBig);   // 16 sets: 0 and 1024 share set 0
  EXPECT_EQ(c.h.data(0, 4), kLLMiss);
  EXPECT_EQ(c.h.data(0, 4), kHit);
  EXPECT_EQ(c.h.data(60, 4), kHit);      // same line
  EXPECT_EQ(c.h.data(1024, 4), kLLMiss);  // evicts line 0
  EXPECT_EQ(c.h.data(0, 4), kL1Miss);    // back from LL
  EXPECT_EQ(c.h.data(64, 4), kLLMiss);   // set 1: no conflict
  EXPECT_EQ(c.h.data(0, 4), kHit);
}

TEST(CacheModel, LeastRecentlyUsedIsEvicted) {
  Hierarchy c({1024, 1, 64}, {256, 2, 64}, kBig);   // D1: 2 sets of 2 ways; lines 0, 2, 4 in set 0
  EXPECT_EQ(c.h.data(0, 1), kLLMiss);     // A
  EXPECT_EQ(c.h.data(128, 1), kLLMiss);   // B
  EXPECT_EQ(c.h.data(0, 1), kHit);        // A most recent
  EXPECT_EQ(c.h.data(256, 1), kLLMiss);   // C evicts B
  EXPECT_EQ(c.h.data(0, 1), kHit);
  EXPECT_EQ(c.h.data(128, 1), kL1Miss);   // B evicts C
  EXPECT_EQ(c.h.data(256, 1), kL1Miss);   // C evicts A
  EXPECT_EQ(c.h.data(128, 1), kHit);
}

TEST(CacheModel, WritesAllocate) {
  Hierarchy c({1024, 1, 64}, {1024, 1, 64}, kBig);
  EXPECT_EQ(c.h.data(4096, 8), kLLMiss);   // a write miss brings the line in
  EXPECT_EQ(c.h.data(4100, 4), kHit);      // a read of it hits
}

TEST(CacheModel, StraddlingAccessTouchesBothLinesAndCountsOnce) {
  Hierarchy c({1024, 1, 64}, {1024, 1, 64}, kBig);
  EXPECT_EQ(c.h.data(60, 8), kLLMiss);   // lines 0 and 1: both missed, one miss
  EXPECT_EQ(c.h.data(0, 1), kHit);       // both now present
  EXPECT_EQ(c.h.data(64, 1), kHit);
  EXPECT_EQ(c.h.data(60, 8), kHit);
  EXPECT_EQ(c.h.data(1024 + 64, 1), kLLMiss);   // evicts line 1 only
  EXPECT_EQ(c.h.data(60, 8), kL1Miss);   // line 0 hits, line 1 misses at L1 and hits at LL
  EXPECT_EQ(c.h.data(1024, 1), kLLMiss);    // evicts line 0
  EXPECT_EQ(c.h.fetch(120, 16), kLLMiss);   // I1 and D1 are separate; lines 1 and 2 at LL: 2 is new
  EXPECT_EQ(c.h.fetch(120, 16), kHit);
}

TEST(CacheModel, StraddlingMissLooksUpTheWholeAccessAtLastLevel) {
  // D1 one set of two ways; LL direct-mapped, 4 sets (line 4 shares set 0
  // with line 0). A straddling access that misses at D1 in one line only
  // looks both lines up at LL, as cachegrind does: the line D1 still holds
  // but LL lost is an LL miss.
  Hierarchy c({64, 1, 64}, {128, 2, 64}, {256, 1, 64});
  EXPECT_EQ(c.h.data(60, 8), kLLMiss);    // D1: 1 0; LL sets: 0 1 - -
  EXPECT_EQ(c.h.fetch(256, 1), kLLMiss);  // LL set 0: 4 (line 0 only in D1 now)
  EXPECT_EQ(c.h.data(0, 1), kHit);        // D1: 0 1
  EXPECT_EQ(c.h.data(128, 1), kLLMiss);   // D1: 2 0 (line 1 out); LL set 2: 2
  EXPECT_EQ(c.h.data(60, 8), kLLMiss);    // D1: 0 hits, 1 misses; LL: 0 misses, 1 hits
  EXPECT_EQ(c.h.data(64, 1), kHit);
  EXPECT_EQ(c.h.data(256, 1), kLLMiss);   // D1: 4 1; LL set 0 holds line 0 again: line 4 lost
}

TEST(CacheModel, LastLevelOnlyOnFirstLevelMiss) {
  // D1 and I1 one line each; LL one set of two ways (LRU over two lines).
  Hierarchy c({64, 1, 64}, {64, 1, 64}, {128, 2, 64});
  EXPECT_EQ(c.h.data(0, 1), kLLMiss);     // LL: 0
  EXPECT_EQ(c.h.fetch(64, 1), kLLMiss);   // LL: 1 0
  EXPECT_EQ(c.h.data(0, 1), kHit);        // D1 hit: LL untouched, still 1 0
  EXPECT_EQ(c.h.fetch(128, 1), kLLMiss);  // evicts 0: LL 2 1 (2 0 had the hit reached LL)
  EXPECT_EQ(c.h.data(64, 1), kL1Miss);    // line 1 still in LL
}

TEST(CacheModel, SmallerLastLevelLinesSeeTheAccessedBytes) {
  // LL lines of 16 bytes under D1 lines of 64: a miss looks up the LL lines
  // of the bytes accessed, not of the whole first-level line.
  Hierarchy c({64, 1, 64}, {64, 1, 64}, {1024, 64, 16});
  EXPECT_EQ(c.h.data(0, 4), kLLMiss);     // LL line 0
  EXPECT_EQ(c.h.data(64, 4), kLLMiss);    // D1 now holds line 1
  EXPECT_EQ(c.h.data(4, 4), kL1Miss);     // LL line 0 again: a hit
  EXPECT_EQ(c.h.data(64, 4), kL1Miss);
  EXPECT_EQ(c.h.data(16, 4), kLLMiss);    // LL line 1 was never looked up
}

// A brute-force model: each set a list, most recent first.
struct ReferenceCache {
  CacheGeometry g;
  std::vector<std::list<uint64_t>> sets;
  explicit ReferenceCache(CacheGeometry geo) : g(geo), sets(geo.size / (geo.assoc * geo.line)) {}
  bool access(uint64_t line) {
    auto& s = sets[line % sets.size()];
    for (auto it = s.begin(); it != s.end(); ++it)
      if (*it == line) {
        s.erase(it);
        s.push_front(line);
        return true;
      }
    s.push_front(line);
    if (s.size() > g.assoc) s.pop_back();
    return false;
  }
};

// A fetch whose line is its set's most recent tag hits (what inline code
// tests before calling the simulation), and every line just fetched is.
TEST(CacheModel, MostRecentTagMeansAHitThatChangesNothing) {
  std::mt19937_64 rng(11);
  Hierarchy c({4096, 8, 64}, {4096, 8, 64}, {8192, 4, 64});
  Hierarchy twin({4096, 8, 64}, {4096, 8, 64}, {8192, 4, 64});
  int skipped = 0;
  for (int i = 0; i < 100000; i++) {
    uint64_t line = rng() % 400;
    bool most_recent = *c.h.i1_most_recent_of(line) == CacheLevel::tag_of(line);
    CacheMiss m = c.h.fetch(line * 64, 4);
    if (most_recent) {
      EXPECT_EQ(m, kHit);
      skipped++;
    } else {
      EXPECT_EQ(m, twin.h.fetch(line * 64, 4)) << "access " << i;   // the twin sees only the calls
    }
    EXPECT_EQ(*c.h.i1_most_recent_of(line), CacheLevel::tag_of(line));
  }
  EXPECT_GT(skipped, 1000);
}

// Both allocators (memory the caches fill with empty tags, and zeroed
// memory); the addresses include line 0.
TEST(CacheModel, RandomStreamsAgreeWithBruteForce) {
  std::mt19937_64 rng(7);
  const CacheGeometry geos[] = {{1024, 1, 64}, {2048, 4, 32}, {4096, 8, 64}, {512, 8, 64}, {49152 / 16, 12, 16}};
  for (int g = 0; g < 2 * 5; g++) {
    const CacheGeometry& l1 = geos[g % 5];
    CacheGeometry ll = {8192, 4, 64};
    Hierarchy c(l1, l1, ll, g < 5 ? kHost : kHostZeroed);
    ReferenceCache d1(l1), rll(ll);
    for (int i = 0; i < 200000; i++) {
      uint64_t addr = rng() % 20000;
      uint64_t size = 1 + rng() % 16;
      uint64_t first = addr / l1.line, last = (addr + size - 1) / l1.line;
      bool l1_miss = false, ll_miss = false;
      for (uint64_t line = first; line <= last; line++)
        if (!d1.access(line)) l1_miss = true;
      if (l1_miss)   // LL: every line of the access's bytes
        for (uint64_t l = addr / ll.line; l <= (addr + size - 1) / ll.line; l++)
          if (!rll.access(l)) ll_miss = true;
      CacheMiss want = ll_miss ? kLLMiss : l1_miss ? kL1Miss : kHit;
      ASSERT_EQ(c.h.data(addr, size), want) << "geometry " << l1.size << "," << l1.assoc << "," << l1.line
                                            << " access " << i;
    }
  }
}

// The last level keeps tags without their set bits, in 2 bytes while they
// fit, widened to 4 and 8 as lines of higher addresses come: the same hits
// and misses as the brute force throughout, the widenings included (tags
// copied in place, each set's order kept).
TEST(CacheModel, NarrowTagsAgreeWithBruteForceAcrossWidenings) {
  const CacheGeometry geos[] = {{8192, 4, 64}, {4096, 1, 64}, {65536, 16, 32}, {1024, 16, 64}, {65536, 64, 64}, {49152, 12, 64}};
  const int n = sizeof geos / sizeof geos[0];
  for (int g = 0; g < 2 * n; g++) {
    const CacheGeometry& geo = geos[g % n];
    std::mt19937_64 rng(100 + g);
    NarrowTagLevel level;
    level.init(g < n ? kHost : kHostZeroed, geo);
    ReferenceCache ref(geo);
    uint64_t sets = geo.size / (geo.assoc * geo.line);
    // Where lines start to need 4 and 8 bytes (a tag is the line number
    // over the sets, plus 1), and lines far beyond.
    const uint64_t bounds[] = {sets << 16, sets << 32, (uint64_t)1 << 58};
    uint32_t widths_seen[3] = {0, 0, 0};
    for (int i = 0; i < 300000; i++) {
      int phase = i < 100000 ? 0 : i < 200000 ? 1 : 2;
      // Mostly lines near earlier ones (hits), some of each region so far.
      int region = (int)(rng() % (phase + 1));
      uint64_t base = region == 0 ? 0 : bounds[region - 1];
      uint64_t line = base + rng() % (4 * sets * geo.assoc);
      ASSERT_EQ(level.access_line(line), ref.access(line)) << "geometry " << g << " access " << i;
      widths_seen[phase] = level.tag_bytes();
    }
    EXPECT_EQ(widths_seen[0], 2u);
    EXPECT_EQ(widths_seen[1], 4u);
    EXPECT_EQ(widths_seen[2], 8u);
    level.destroy();
  }
}

// The last level's set as its most recent tag and the rest
// (lru_access_below), against the brute force at associativities from 1 to
// a large host LL's 64 and beyond: every hit or miss, and every way's tag
// in recency order after each step (a one-way slip in the move shows
// there), with guard ways on both sides that no step may touch.
TEST(CacheModel, MostRecentApartFromTheRestKeepsTheLruOrder) {
  const uint32_t assocs[] = {1, 2, 3, 7, 8, 9, 12, 16, 17, 20, 24, 31, 32, 48, 63, 64, 65};
  for (uint32_t assoc : assocs) {
    std::mt19937_64 rng(assoc);
    ReferenceCache ref({assoc * 64, assoc, 64});   // one set
    uint32_t mru = 0;
    std::vector<uint32_t> ways(assoc + 1, 0xBEEF);   // guard, the rest, guard
    uint32_t* rest = ways.data() + 1;
    for (uint32_t w = 0; w + 1 < assoc; w++) rest[w] = 0;
    for (int i = 0; i < 20000; i++) {
      // Tags 1..(assoc + assoc/4 + 2): the set fills, most steps hit ways deep in it.
      uint32_t tag = (uint32_t)(1 + rng() % (assoc + assoc / 4 + 2));
      bool hit = mru == tag || lru_access_below(&mru, rest, assoc - 1, tag);
      ASSERT_EQ(hit, ref.access(tag)) << "assoc " << assoc << " step " << i;
      std::vector<uint32_t> order(1, mru);
      order.insert(order.end(), rest, rest + assoc - 1);
      uint32_t w = 0;
      for (uint64_t t : ref.sets[0]) ASSERT_EQ(order[w++], t) << "assoc " << assoc << " step " << i << " way " << w - 1;
      for (; w < assoc; w++) ASSERT_EQ(order[w], 0u) << "assoc " << assoc << " empty way " << w;
      ASSERT_EQ(ways.front(), 0xBEEFu);
      ASSERT_EQ(ways.back(), 0xBEEFu);
    }
  }
}

// A 512 MB LL of 64-byte lines in 2 ways (a virtual machine's host LL as
// simulated: 4 M sets, a tag is address >> 28, plus 1): 2-byte tags for
// every address below 0xFFFF << 28 (16 TB less 256 MB).
TEST(CacheModel, LargeLastLevelKeepsTwoByteTags) {
  Hierarchy c({32768, 8, 64}, {49152, 12, 64}, {512u << 20, 2, 64}, kHostZeroed);
  EXPECT_EQ(c.h.data(0x1ffefff000, 8), kLLMiss);   // a client stack under Valgrind
  EXPECT_EQ(c.h.data((0xFFFFull << 28) - 64, 8), kLLMiss);
  EXPECT_EQ(c.h.ll_tag_bytes(), 2u);
  EXPECT_EQ(c.h.data(0xFFFFull << 28, 8), kLLMiss);
  EXPECT_EQ(c.h.ll_tag_bytes(), 4u);
}

struct Predictor {
  BranchPredictor* p = static_cast<BranchPredictor*>(std::calloc(1, sizeof(BranchPredictor)));
  ~Predictor() { std::free(p); }
};

TEST(BranchModel, IndirectPredictsTheLastTargetPerLow9Bits) {
  Predictor b;
  EXPECT_TRUE(b.p->indirect(0x1000, 0x4000));    // fresh entry: target 0
  EXPECT_FALSE(b.p->indirect(0x1000, 0x4000));
  EXPECT_TRUE(b.p->indirect(0x1000, 0x5000));
  EXPECT_FALSE(b.p->indirect(0x1000, 0x5000));
  EXPECT_TRUE(b.p->indirect(0x1200, 0x4000));    // same low 9 bits: shares the entry
  EXPECT_TRUE(b.p->indirect(0x1000, 0x5000));
  EXPECT_TRUE(b.p->indirect(0x1001, 0x5000));    // a neighbour has its own entry
  EXPECT_FALSE(b.p->indirect(0x1000, 0x5000));
}

TEST(BranchModel, NeverTakenNeverMispredicts) {
  Predictor b;
  for (int i = 0; i < 1000; i++) ASSERT_FALSE(b.p->conditional(0x401234, false));
}

TEST(BranchModel, AlwaysTakenLearnsOnceTheHistoryIsFull) {
  // The history fills with ones over 7 branches, each reaching a fresh
  // counter (strongly not taken: a mispredict); then one counter, which
  // needs two more mispredicts to predict "taken".
  Predictor b;
  int mispredicts = 0;
  for (int i = 0; i < 1000; i++) mispredicts += b.p->conditional(0x401234, true);
  EXPECT_EQ(mispredicts, 7 + 2);
}

TEST(BranchModel, BranchesApartBy128BytesShareCounters) {
  // Address bits 7 and up are not in the index: a branch 128 bytes on,
  // after the same history, finds the counter trained by the first.
  Predictor b;
  for (int i = 0; i < 9; i++) b.p->conditional(0x401234, true);   // history 0x7F, counter at 2
  EXPECT_FALSE(b.p->conditional(0x401234 + 128, true));
  EXPECT_TRUE(b.p->conditional(0x401234 + 1, true));              // its own counter
}

TEST(BranchModel, TwoBitCountersNeedTwoMissesToFlip) {
  // A loop-like pattern T T T N repeats; the history then has 4 values at
  // steady state, each its own counter, each of which learns.
  Predictor b;
  int late = 0;
  for (int i = 0; i < 4000; i++) {
    bool m = b.p->conditional(0x2000, i % 4 != 3);
    if (i >= 400) late += m;
  }
  EXPECT_EQ(late, 0);
}

TEST(BranchModel, IndexIsSevenAddressBitsAboveSevenHistoryBits) {
  EXPECT_EQ(cond_index(0x401234, 0), 0x34u << 7);
  EXPECT_EQ(cond_index(0x401234, 0x7F), (0x34u << 7) | 0x7F);
  EXPECT_EQ(cond_index(0x401234, 0xFF), cond_index(0x401234, 0x7F));   // older outcomes left out
  EXPECT_EQ(cond_index(0x401274, 5), cond_index(0x401234, 5) | (1u << 13));   // address bit 6
  EXPECT_EQ(cond_index(0x4012B4, 5), cond_index(0x401234, 5));                 // bit 7: out
}

// Where every instruction's address has its low bits zero (arm64: 2, as
// cachegrind's N_IADDR_LO_ZERO_BITS), both indexes start above them.
TEST(BranchModel, IndexesLeaveOutTheAlwaysZeroAddressBits) {
  EXPECT_EQ(kIaddrLowZeroBits, 0u);   // this host is x86-64
  EXPECT_EQ(cond_index(0x401234, 5, 2), cond_index(0x401234 >> 2, 5, 0));
  EXPECT_EQ(cond_index(0x401234, 5, 2), (0x0Du << 7) | 5);                      // bits 2-8 of 0x234
  EXPECT_EQ(cond_index(0x401238, 0, 2), cond_index(0x401234, 0, 2) + (1u << 7));  // the next instruction
  EXPECT_EQ(indirect_index(0x401234, 2), 0x08Du);                               // bits 2-10 of 0x234
  EXPECT_EQ(indirect_index(0x401234, 0), 0x034u);
}

}  // namespace
