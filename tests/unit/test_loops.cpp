// Loop rolling for basic-block sequences (thesis 4.3.4, 5.5.1), against the
// path-list oracle, plus the thesis's prog4 example (Listings 4.14 / 4.17).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "oracle.h"

using namespace kg::core;
using oracle::Path;
using oracle::Tree;

namespace {

// Runs block sequences through enter_loop, one run per function activation
// (each starts at the root, like IHPP's intraMode with its first block as
// root).  Returns the depths reported by the core.
std::vector<std::vector<uint32_t>> run_loops(Forest& f, const std::vector<std::vector<uint32_t>>& runs) {
  std::vector<std::vector<uint32_t>> depths;
  for (const auto& run : runs) {
    Activation cur = f.enter_root();
    std::vector<uint32_t> ds;
    for (uint32_t b : run) {
      cur = f.enter_loop(cur, b);
      ds.push_back(cur.depth);
      EXPECT_EQ(cur.bottom, nullptr);
      EXPECT_EQ(Forest::canonical(cur), cur.top);
      EXPECT_EQ(cur.top->label, b);
    }
    depths.push_back(ds);
  }
  return depths;
}

}  // namespace

TEST(LoopRolling, RandomSequencesMatchOracle) {
  for (uint64_t seed = 0; seed < 400; ++seed) {
    std::mt19937_64 rng(seed);
    uint32_t alphabet = 2 + seed % 12;
    std::vector<std::vector<uint32_t>> runs(1 + seed % 4);
    for (auto& run : runs) {
      size_t n = rng() % 300;
      // Mostly structured: walk a random "CFG" where each block has 1-3
      // successors (loops emerge), sometimes uniformly random blocks.
      uint32_t cur = 1;
      std::vector<std::vector<uint32_t>> succ(alphabet + 1);
      for (uint32_t b = 0; b <= alphabet; ++b)
        for (uint32_t j = 0; j < 1 + rng() % 3; ++j) succ[b].push_back(1 + rng() % alphabet);
      for (size_t i = 0; i < n; ++i) {
        if (seed % 3 == 0)
          cur = 1 + rng() % alphabet;
        else
          cur = succ[cur][rng() % succ[cur].size()];
        run.push_back(cur);
      }
    }
    oracle::AllocStats st;
    Forest f;
    f.init(oracle::allocator(&st), kInfinity, 0);
    auto got_depths = run_loops(f, runs);
    std::vector<std::vector<uint32_t>> want_depths;
    Tree want = oracle::loop_rolled(runs, 0, &want_depths);
    Tree got = oracle::extract_tree(f);
    ASSERT_TRUE(got == want) << "seed " << seed << "\n" << oracle::diff(got, want);
    ASSERT_EQ(got_depths, want_depths) << "seed " << seed;
    EXPECT_EQ(oracle::check_structure(f), "");
    // A root path never holds a label twice (so the forest stays bounded by
    // the number of distinct paths without repetition).
    visit_preorder(f, [&](const VisitInfo& v) {
      for (const Node* u = v.node->parent; u; u = u->parent) ASSERT_NE(u->label, v.node->label);
    });
    f.destroy();
    EXPECT_EQ(st.live, 0);
  }
}

// Self loops (a block branching to itself) roll onto the same node.  (IHPP's
// intraModeBlockTrace starts its ancestor search at the parent of top, so it
// alternates between X and a child X; kgrind includes top itself.)
TEST(LoopRolling, SelfLoopRollsOntoItself) {
  oracle::AllocStats st;
  Forest f;
  f.init(oracle::allocator(&st), kInfinity, 0);
  Activation a = f.enter_root();
  a = f.enter_loop(a, 7);
  for (int i = 0; i < 5; ++i) {
    Activation b = f.enter_loop(a, 7);
    EXPECT_EQ(b.top, a.top);
    EXPECT_EQ(b.depth, a.depth);
    a = b;
  }
  EXPECT_EQ(a.top->calls, 6u);
  EXPECT_EQ(f.node_count(), 2u);
  // Back to the root label rolls onto the root.
  Activation r = f.enter_loop(a, 0);
  EXPECT_EQ(r.top, f.first_tree());
  EXPECT_EQ(r.depth, 0u);
  EXPECT_EQ(f.first_tree()->calls, 2u);
  f.destroy();
  EXPECT_EQ(st.live, 0);
}

// prog4 (Listing 4.13), foo(1): blocks by offset.  The first activation
// runs 0 12 24 49 (33 45)x3 55, calls foo(0) which runs 0 69 81, then
// returns to 67 81.  Listing 4.14 (k = 100, no rolling) is the plain chain;
// Listing 4.17 (rollLoops) rolls the for loop: 33 and 45 counted 3 times.
// (The extracted Listing 4.17 lost the "{foo+33 at 17,0},3" line and
// prints foo+81 as "foo+67 at 25"; the tree below is what the algorithm of
// Listing 5.22 produces.)
TEST(LoopRolling, Prog4Listings4_14And4_17) {
  const std::vector<uint32_t> act1a = {12, 24, 49, 33, 45, 33, 45, 33, 45, 55};
  const std::vector<uint32_t> act2 = {69, 81};
  const std::vector<uint32_t> act1b = {67, 81};
  oracle::AllocStats st;
  for (bool roll : {false, true}) {
    Forest f;
    f.init(oracle::allocator(&st), roll ? kInfinity : 100, 0, 0);
    // The tool keeps one activation per function activation (a shadow
    // stack of them) and replaces it block after block.
    auto step = [&](Activation a, uint32_t b) { return roll ? f.enter_loop(a, b) : f.enter(a, b); };
    Activation a1 = f.enter_root();
    for (uint32_t b : act1a) a1 = step(a1, b);
    Activation a2 = f.enter_root();  // recursive call foo(0)
    for (uint32_t b : act2) a2 = step(a2, b);
    for (uint32_t b : act1b) a1 = step(a1, b);
    Tree got = oracle::extract_tree(f);
    Tree want;
    auto add = [&](Path p, uint64_t c) { want[p] = oracle::Counters{c, 0, 0}; };
    add({0}, 2);
    add({0, 69}, 1);
    add({0, 69, 81}, 1);
    if (!roll) {
      Path p{0};
      for (uint32_t b : act1a) {
        p.push_back(b);
        add(p, 1);
      }
      for (uint32_t b : act1b) {
        p.push_back(b);
        add(p, 1);
      }
      EXPECT_EQ(f.node_count(), 15u);
    } else {
      add({0, 12}, 1);
      add({0, 12, 24}, 1);
      add({0, 12, 24, 49}, 1);
      add({0, 12, 24, 49, 33}, 3);
      add({0, 12, 24, 49, 33, 45}, 3);
      add({0, 12, 24, 49, 33, 45, 55}, 1);
      add({0, 12, 24, 49, 33, 45, 55, 67}, 1);
      add({0, 12, 24, 49, 33, 45, 55, 67, 81}, 1);
      EXPECT_EQ(f.node_count(), 11u);
    }
    EXPECT_TRUE(got == want) << oracle::diff(got, want);
    f.destroy();
  }
  EXPECT_EQ(st.live, 0);
}
