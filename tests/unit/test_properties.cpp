// Property tests: the online k-SF and the k-CCF derived from it against the
// brute-force oracle, on many random event streams.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "oracle.h"

using namespace kg::core;
using oracle::CCT;
using oracle::SF;
using oracle::Stream;
using oracle::Tree;

namespace {

const uint32_t kKs[] = {0, 1, 2, 3, 5, kInfinity};

std::string kname(uint32_t k) { return k == kInfinity ? "inf" : std::to_string(k); }

struct Built {
  oracle::AllocStats stats;
  Forest f;
  Built() = default;
  Built(const Built&) = delete;
  ~Built() { f.destroy(); }
};

void build(Forest& f, oracle::AllocStats* st, const std::vector<Stream>& ss, uint32_t k, bool roll) {
  f.init(oracle::allocator(st), k, 0, roll ? Forest::kRollSimpleRecursion : 0);
  oracle::Driver d;
  for (const auto& s : ss) d.run(f, s);
}

std::vector<Stream> random_streams(uint64_t seed, int nthreads) {
  std::mt19937_64 rng(seed * 7919 + 17);
  oracle::GenParams g = oracle::params_for(seed);
  std::vector<Stream> ss;
  for (int t = 0; t < nthreads; ++t) ss.push_back(oracle::gen_stream(rng, g));
  return ss;
}

// Checks one (streams, k, roll) combination completely.
void check_all(const std::vector<Stream>& ss, const CCT& cct, uint32_t k, bool roll,
               const std::string& ctx) {
  SCOPED_TRACE(ctx + " k=" + kname(k) + " roll=" + std::to_string(roll));
  oracle::AllocStats st;
  {
    Forest f;
    build(f, &st, ss, k, roll);
    ASSERT_EQ(oracle::check_structure(f), "");

    // 1. The k-SF is Definition 7's join of CCT subtrees (of the rolled CCT
    //    when rolling is on), counter for counter.
    SF got = oracle::extract_sf(f);
    SF want = oracle::k_sf_def7(cct, k);
    ASSERT_TRUE(got == want) << "k-SF differs from Def. 7:\n" << oracle::diff(got, want);
    EXPECT_EQ(f.node_count(), want.size());

    // 2. Totals over canonical nodes are the stream's totals.
    Totals t = canonical_totals(f);
    EXPECT_EQ(t.calls, cct.activations);
    EXPECT_EQ(t.excl, cct.total_excl);
    EXPECT_EQ(t.incl, cct.total_incl);

    // 3. inv_k' of the k-SF is the oracle's k'-CCF for every k' <= k.
    for (uint32_t kp : kKs) {
      if (kp > k) continue;
      Forest ccf;
      ASSERT_TRUE(inv_k(ccf, f, kp));
      Tree g = oracle::extract_tree(ccf);
      Tree w = oracle::k_ccf(cct, kp);
      EXPECT_TRUE(g == w) << "inv_" << kname(kp) << " differs:\n" << oracle::diff(g, w);
      EXPECT_EQ(ccf.node_count(), w.size());
      EXPECT_EQ(oracle::check_structure(ccf), "");
      ccf.destroy();
    }
    // inv_k' with k' > k is refused.
    if (k != kInfinity) {
      Forest bad;
      EXPECT_FALSE(inv_k(bad, f, k + 1));
      bad.destroy();
    }

    // 4. Clearing the top regions (Fig. 3.8) on a copy leaves the original
    //    alone and makes the canonical totals the plain totals.
    Forest c;
    copy_forest(c, f);
    EXPECT_TRUE(oracle::extract_sf(c) == got);
    clear_top_regions(c);
    uint64_t plain_calls = 0;
    visit_preorder(c, [&](const VisitInfo& v) { plain_calls += v.node->calls; });
    EXPECT_EQ(plain_calls, cct.activations);
    EXPECT_TRUE(oracle::extract_sf(f) == got);
    c.destroy();
    f.destroy();
  }
  EXPECT_EQ(st.live, 0) << "leak";
}

}  // namespace

class RandomStreams : public ::testing::TestWithParam<int> {};

TEST_P(RandomStreams, OnlineKSFMatchesOracle) {
  int base = GetParam();
  for (int s = 0; s < 12; ++s) {
    uint64_t seed = static_cast<uint64_t>(base) * 12 + s;
    auto ss = random_streams(seed, 1 + seed % 3);
    for (bool roll : {true, false}) {
      CCT cct = oracle::build_cct(ss, 0, roll);
      for (uint32_t k : kKs) check_all(ss, cct, k, roll, "seed=" + std::to_string(seed));
    }
    if (HasFatalFailure()) return;
  }
}
INSTANTIATE_TEST_SUITE_P(Seeds, RandomStreams, ::testing::Range(0, 16));

// join: threads built separately and joined == one forest fed with all
// streams == oracle; associativity and commutativity on counts.
// kSparseRoots keeps R in the hash map only, kSmallPool starts the node pool
// small: the same forest, node for node.
TEST(SparseRoots, SameForestAsDenseRoots) {
  for (int seed = 0; seed < 8; ++seed) {
    std::vector<Stream> ss = random_streams(seed, 1 + seed % 3);
    for (uint32_t k : {1u, 2u, 3u}) {
      for (uint32_t flags : {Forest::kSparseRoots, Forest::kSparseRoots | Forest::kSmallPool}) {
        SCOPED_TRACE("seed=" + std::to_string(seed) + " k=" + kname(k) + " flags=" + std::to_string(flags));
        oracle::AllocStats st_dense, st_sparse;
        Forest dense, sparse;
        dense.init(oracle::allocator(&st_dense), k, 0, 0);
        sparse.init(oracle::allocator(&st_sparse), k, 0, flags);
        oracle::Driver dd, ds;
        for (const auto& s : ss) {
          dd.run(dense, s);
          ds.run(sparse, s);
        }
        ASSERT_EQ(oracle::check_structure(sparse), "");
        EXPECT_TRUE(oracle::extract_sf(sparse) == oracle::extract_sf(dense));
        EXPECT_EQ(sparse.tree_count(), dense.tree_count());
        for (size_t i = 0; i < dense.tree_count(); ++i)
          EXPECT_EQ(sparse.find_tree(dense.tree(i)->label)->label, dense.tree(i)->label);
        dense.destroy();
        sparse.destroy();
      }
    }
  }
}

// compact_roots (a thread's forest when the thread ends) moves R to the hash
// map halfway through: the forest built on from there is the same, node for
// node, and every tree is found.
TEST(SparseRoots, CompactedHalfwaySameForest) {
  for (int seed = 0; seed < 8; ++seed) {
    std::vector<Stream> ss = random_streams(seed + 300, 2 + seed % 3);
    for (uint32_t k : {1u, 2u, 3u}) {
      SCOPED_TRACE("seed=" + std::to_string(seed) + " k=" + kname(k));
      oracle::AllocStats st_dense, st_compact;
      Forest dense, compact;
      dense.init(oracle::allocator(&st_dense), k, 0, 0);
      compact.init(oracle::allocator(&st_compact), k, 0, Forest::kSmallPool);
      oracle::Driver dd, dc;
      for (size_t i = 0; i < ss.size(); ++i) {
        dd.run(dense, ss[i]);
        dc.run(compact, ss[i]);
        if (i == 0) compact.compact_roots();
      }
      ASSERT_EQ(oracle::check_structure(compact), "");
      EXPECT_TRUE(oracle::extract_sf(compact) == oracle::extract_sf(dense));
      ASSERT_EQ(compact.tree_count(), dense.tree_count());
      for (size_t i = 0; i < dense.tree_count(); ++i) {
        EXPECT_EQ(compact.tree(i)->label, dense.tree(i)->label);
        EXPECT_EQ(compact.find_tree(dense.tree(i)->label), compact.tree(i));
      }
      dense.destroy();
      compact.destroy();
    }
  }
}

// A per-node payload (the tool keeps an activation record there at k=inf):
// the same forest node for node, each node's payload zeroed when it is made
// and its own (a stamp written into every payload after each stream
// survives every later node and child table).
TEST(NodePayload, SameForestAndPayloadsOwnTheirBytes) {
  for (int seed = 0; seed < 8; ++seed) {
    std::vector<Stream> ss = random_streams(seed + 500, 1 + seed % 3);
    for (uint32_t k : kKs) {
      SCOPED_TRACE("seed=" + std::to_string(seed) + " k=" + kname(k));
      oracle::AllocStats st_plain, st_payload;
      Forest plain, with_payload;
      const uint32_t kPayload = 24;
      plain.init(oracle::allocator(&st_plain), k, 0);
      with_payload.init(oracle::allocator(&st_payload), k, 0, Forest::kRollSimpleRecursion, kPayload);
      oracle::Driver dp, dw;
      uint64_t stamped = 0;
      auto stamp_new_nodes = [&] {
        visit_preorder(with_payload, [&](const VisitInfo& v) {
          uint64_t* words = static_cast<uint64_t*>(Forest::payload(const_cast<Node*>(v.node)));
          if (words[0] == 0) {
            // A node whose payload was never stamped: still all zero.
            for (uint32_t i = 0; i < kPayload / 8; ++i) ASSERT_EQ(words[i], 0u);
            for (uint32_t i = 0; i < kPayload / 8; ++i) words[i] = reinterpret_cast<uintptr_t>(v.node) + i;
            ++stamped;
          }
        });
      };
      for (const auto& s : ss) {
        dp.run(plain, s);
        dw.run(with_payload, s);
        stamp_new_nodes();
      }
      ASSERT_EQ(oracle::check_structure(with_payload), "");
      EXPECT_TRUE(oracle::extract_sf(with_payload) == oracle::extract_sf(plain));
      EXPECT_EQ(stamped, with_payload.node_count());
      visit_preorder(with_payload, [&](const VisitInfo& v) {
        const uint64_t* words = static_cast<const uint64_t*>(Forest::payload(const_cast<Node*>(v.node)));
        EXPECT_EQ(reinterpret_cast<uintptr_t>(words) % 8, 0u);
        for (uint32_t i = 0; i < kPayload / 8; ++i) EXPECT_EQ(words[i], reinterpret_cast<uintptr_t>(v.node) + i);
      });
      EXPECT_EQ(with_payload.node_bytes(), with_payload.node_count() * (sizeof(Node) + kPayload));
      plain.destroy();
      with_payload.destroy();
    }
  }
}

// visit_postorder: every node once, after all its children and before its
// parent; a subtree sum computed in that order (kgrind derives k=inf
// inclusive costs so) equals the sum over the node's descendants found from
// the preorder's parent ids.
TEST(Visit, PostorderVisitsChildrenFirstAndSumsSubtrees) {
  for (int seed = 0; seed < 8; ++seed) {
    std::vector<Stream> ss = random_streams(seed + 700, 1 + seed % 3);
    for (uint32_t k : kKs) {
      SCOPED_TRACE("seed=" + std::to_string(seed) + " k=" + kname(k));
      oracle::AllocStats st;
      Forest f;
      f.init(oracle::allocator(&st), k, 0);
      oracle::Driver d;
      for (const auto& s : ss) d.run(f, s);
      std::map<const Node*, uint64_t> id_of, parent_of_id;
      std::vector<const Node*> by_id(1, nullptr);
      visit_preorder(f, [&](const VisitInfo& v) {
        id_of[v.node] = v.id;
        parent_of_id[v.node] = v.parent_id;
        by_id.push_back(v.node);
      });
      std::vector<uint64_t> subtree(by_id.size(), 0);
      for (size_t id = by_id.size() - 1; id >= 1; --id) {
        subtree[id] += by_id[id]->excl;
        if (parent_of_id[by_id[id]]) subtree[parent_of_id[by_id[id]]] += subtree[id];
      }
      std::map<const Node*, uint64_t> sum;
      visit_postorder(f, [&](Node* n) {
        ASSERT_EQ(sum.count(n), 0u);
        uint64_t total = n->excl;
        for_each_child(n, [&](Node* c) {
          ASSERT_EQ(sum.count(c), 1u);
          total += sum[c];
        });
        sum[n] = total;
      });
      ASSERT_EQ(sum.size(), by_id.size() - 1);
      for (size_t id = 1; id < by_id.size(); ++id) EXPECT_EQ(sum[by_id[id]], subtree[id]);
      f.destroy();
    }
  }
}

TEST(Join, AssociativeCommutativeAndMatchesOracle) {
  for (uint64_t seed = 0; seed < 24; ++seed) {
    auto ss = random_streams(seed + 1000, 3);
    for (uint32_t k : kKs) {
      for (bool roll : {true, false}) {
        SCOPED_TRACE("seed=" + std::to_string(seed) + " k=" + kname(k));
        oracle::AllocStats st;
        {
          Forest a, b, c, all;
          build(a, &st, {ss[0]}, k, roll);
          build(b, &st, {ss[1]}, k, roll);
          build(c, &st, {ss[2]}, k, roll);
          build(all, &st, ss, k, roll);
          // (a join b) join c
          Forest x;
          copy_forest(x, a);
          ASSERT_TRUE(join(x, b));
          ASSERT_TRUE(join(x, c));
          // a join (b join c)
          Forest bc, y;
          copy_forest(bc, b);
          ASSERT_TRUE(join(bc, c));
          copy_forest(y, a);
          ASSERT_TRUE(join(y, bc));
          // (c join b) join a, into an empty forest
          Forest z;
          z.init(oracle::allocator(&st), k, 0, roll ? Forest::kRollSimpleRecursion : 0);
          z.enter_root();  // then undo the root count below
          z.first_tree()->calls = 0;
          ASSERT_TRUE(join(z, c));
          ASSERT_TRUE(join(z, b));
          ASSERT_TRUE(join(z, a));
          SF sx = oracle::extract_sf(x), sy = oracle::extract_sf(y), sz = oracle::extract_sf(z),
             sall = oracle::extract_sf(all);
          ASSERT_TRUE(sx == sy) << oracle::diff(sx, sy);
          ASSERT_TRUE(sx == sz) << oracle::diff(sx, sz);
          ASSERT_TRUE(sx == sall) << oracle::diff(sx, sall);
          CCT cct = oracle::build_cct(ss, 0, roll);
          ASSERT_TRUE(sx == oracle::k_sf_def7(cct, k));
          EXPECT_EQ(oracle::check_structure(x), "");
          // join of the CCFs == CCF of the join
          Forest ca, cb, cc, cx;
          inv_k(ca, a, k);
          inv_k(cb, b, k);
          inv_k(cc, c, k);
          inv_k(cx, x, k);
          ASSERT_TRUE(join(cc, ca));
          ASSERT_TRUE(join(cc, cb));
          Tree t1 = oracle::extract_tree(cc), t2 = oracle::extract_tree(cx);
          ASSERT_TRUE(t1 == t2) << oracle::diff(t1, t2);
          ASSERT_TRUE(t1 == oracle::k_ccf(cct, k));
          for (Forest* f : {&a, &b, &c, &all, &x, &bc, &y, &z, &ca, &cb, &cc, &cx}) f->destroy();
        }
        EXPECT_EQ(st.live, 0);
      }
    }
  }
}

TEST(Join, RefusesMismatches) {
  oracle::AllocStats st;
  Forest a, b, c, d;
  a.init(oracle::allocator(&st), 2, 0);
  b.init(oracle::allocator(&st), 3, 0);
  c.init(oracle::allocator(&st), 2, 9);
  d.init_ccf(oracle::allocator(&st), 2);
  EXPECT_FALSE(join(a, b));
  EXPECT_FALSE(join(a, c));
  EXPECT_FALSE(join(a, d));
  EXPECT_FALSE(join(a, a));
  for (Forest* f : {&a, &b, &c, &d}) f->destroy();
  EXPECT_EQ(st.live, 0);
}

// The oracle itself: Def. 3 counts vs Def. 5 forest (a k-CCF node of
// length k+1 counts exactly the activations of that k-context; shorter CCF
// nodes sum the contexts they are a suffix of).
TEST(Oracle, KContextsConsistentWithKCCF) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    auto ss = random_streams(seed + 5000, 2);
    CCT cct = oracle::build_cct(ss, 0, seed % 2);
    for (uint32_t k : {0u, 1u, 2u, 4u}) {
      auto kc = oracle::k_contexts(cct, k);
      Tree ccf = oracle::k_ccf(cct, k);
      for (const auto& kv : ccf) {
        oracle::Path p(kv.first.rbegin(), kv.first.rend());  // forward path
        uint64_t sum = 0;
        for (const auto& c : kc)
          if (c.first.size() >= p.size() && std::equal(p.begin(), p.end(), c.first.end() - p.size()))
            sum += c.second;
        ASSERT_EQ(kv.second.calls, sum);
      }
    }
  }
}

// Deep recursion: iterative traversals (no stack overflow), k = inf CCT of
// depth 200000 with rolling off, and rolled into a single node with it on.
TEST(Deep, HundredsOfThousandsOfLevels) {
  const uint32_t D = 200000;
  Stream s;
  for (uint32_t i = 0; i < D; ++i) {
    s.push_back(oracle::enter(1 + (i % 2)));  // a b a b ... (never rolled)
    s.push_back(oracle::cost(1));
  }
  s.push_back(oracle::leave(D));
  oracle::AllocStats st;
  {
    Forest f;
    build(f, &st, {s}, kInfinity, true);
    EXPECT_EQ(f.node_count(), D + 1);
    Totals t = canonical_totals(f);
    EXPECT_EQ(t.calls, D + 1);
    EXPECT_EQ(t.excl, D);
    Forest c;
    inv_k(c, f, 3);
    uint64_t root_calls = 0, root_excl = 0;
    for (size_t i = 0; i < c.tree_count(); ++i) {
      root_calls += c.tree(i)->calls;
      root_excl += c.tree(i)->excl;
    }
    EXPECT_EQ(root_calls, D + 1);
    EXPECT_EQ(root_excl, D);
    // reversed paths of length <= 4 over the labels 0,1,2 of the chain
    // 0 1 2 1 2 ...: (0) (1)(1,0)(1,2)(1,2,1)(1,2,1,0)(1,2,1,2)
    // (2)(2,1)(2,1,0)(2,1,2)(2,1,2,1) = 12 nodes
    EXPECT_EQ(c.node_count(), 12u);
    Forest j;
    copy_forest(j, f);
    EXPECT_EQ(j.node_count(), f.node_count());
    c.destroy();
    j.destroy();
    f.destroy();
    // k = 2 on the same stream: the k-SF stays tiny.
    build(f, &st, {s}, 2, true);
    EXPECT_LE(f.node_count(), 20u);
    Forest c2;
    inv_k(c2, f, 2);
    Totals t2 = canonical_totals(c2);
    (void)t2;
    uint64_t r2 = 0;
    for (size_t i = 0; i < c2.tree_count(); ++i) r2 += c2.tree(i)->calls;
    EXPECT_EQ(r2, D + 1);
    c2.destroy();
    f.destroy();
  }
  EXPECT_EQ(st.live, 0);
}

// Simple recursion rolling: the caller's stack keeps one entry per call,
// rolled entries share the parent's pair and depth.
TEST(Rolling, RolledActivationSharesPairAndDepth) {
  oracle::AllocStats st;
  Forest f;
  f.init(oracle::allocator(&st), 2, 0);
  Activation r = f.enter_root();
  Activation a = f.enter(r, 5);
  Activation a2 = f.enter(a, 5);
  EXPECT_TRUE(Forest::is_rolled(a, a2));
  EXPECT_FALSE(Forest::is_rolled(r, a));
  EXPECT_EQ(a2.top, a.top);
  EXPECT_EQ(a2.bottom, a.bottom);
  EXPECT_EQ(a2.depth, 1u);
  EXPECT_EQ(a.top->calls, 2u);
  Activation b = f.enter(a2, 6);
  EXPECT_EQ(b.depth, 2u);
  EXPECT_NE(b.bottom, nullptr);  // depth 2 = k: bottom region of the first tree
  EXPECT_EQ(Forest::canonical(b), b.bottom);
  EXPECT_EQ(Forest::canonical(a), a.top);
  f.destroy();
  // rolling off: a separate node
  f.init(oracle::allocator(&st), 2, 0, 0);
  r = f.enter_root();
  a = f.enter(r, 5);
  a2 = f.enter(a, 5);
  EXPECT_FALSE(Forest::is_rolled(a, a2));
  EXPECT_NE(a2.top, a.top);
  EXPECT_EQ(a2.depth, 2u);
  f.destroy();
  EXPECT_EQ(st.live, 0);
}

// A pair's bottom determines its top: every activation whose pair has a
// given bottom has the same top (the bottom's last phase + 1 labels below
// the root of their first one's tree). A context's node (the bottom, or the
// top while there is none) therefore says which node any callee or inlined
// level entered from it gets, at a depth that is a multiple of k too, where
// enter() hangs the new bottom off the parent's top.
TEST(Pairs, ABottomHasOneTop) {
  for (uint32_t k : {1u, 2u, 3u, 4u})
    for (uint32_t flags : {0u, Forest::kRollSimpleRecursion})
      for (uint64_t seed = 0; seed < 40; seed++) {
        oracle::AllocStats st;
        Forest f;
        f.init(oracle::allocator(&st), k, 0, flags);
        std::mt19937_64 rng(seed);
        std::vector<Activation> stack{f.enter_root()};
        std::map<const Node*, const Node*> top_of;
        size_t bottoms_seen_again = 0;
        for (int step = 0; step < 5000; step++) {
          if (stack.size() > 30 || (stack.size() > 1 && rng() % 100 < 48)) {
            stack.pop_back();
            continue;
          }
          Activation a = f.enter(stack.back(), 1 + (uint32_t)(rng() % (3 + seed % 6)));
          stack.push_back(a);
          if (!a.bottom) continue;
          auto seen = top_of.emplace(a.bottom, a.top);
          if (!seen.second) {
            ++bottoms_seen_again;
            ASSERT_EQ(seen.first->second, a.top) << "k=" << k << " seed=" << seed << " step=" << step;
          }
        }
        EXPECT_GT(bottoms_seen_again, 100u);  // the streams revisit contexts
        f.destroy();
        EXPECT_EQ(st.live, 0);
      }
}

// Serialisation round trip: the records "id, parent, label, calls, excl,
// incl" plus k are enough to rebuild the k-CCF (the algorithm the Perl
// script implements, docs/design/core.md), here in plain C++ over the records.
TEST(Serialisation, RecordsRebuildTheKCCF) {
  struct Rec {
    uint64_t id, parent;
    uint32_t label;
    uint64_t calls, excl, incl;
  };
  for (uint64_t seed = 0; seed < 40; ++seed) {
    auto ss = random_streams(seed + 9000, 2);
    for (uint32_t k : kKs) {
      oracle::AllocStats st;
      Forest f;
      build(f, &st, ss, k, seed % 2);
      std::vector<Rec> recs;
      visit_preorder(f, [&](const VisitInfo& v) {
        recs.push_back(Rec{v.id, v.parent_id, v.node->label, v.node->calls, v.node->excl, v.node->incl});
      });
      // --- the documented reconstruction ---
      std::map<uint64_t, size_t> idx;
      for (size_t i = 0; i < recs.size(); ++i) idx[recs[i].id] = i;
      std::vector<uint32_t> level(recs.size());
      std::vector<bool> first(recs.size());
      for (size_t i = 0; i < recs.size(); ++i) {
        const Rec& r = recs[i];
        if (r.parent == 0) {
          level[i] = 0;
          first[i] = (r.id == 1);  // the first tree is the one of record id 1
        } else {
          size_t p = idx.at(r.parent);  // parents come first (preorder)
          ASSERT_LT(p, i);
          level[i] = level[p] + 1;
          first[i] = first[p];
        }
      }
      for (uint32_t kp : kKs) {
        if (kp > k) continue;
        Tree ccf;
        for (size_t i = 0; i < recs.size(); ++i) {
          bool cleared = !first[i] && k != 0 && level[i] < k;
          oracle::Counters c;
          if (!cleared) c = oracle::Counters{recs[i].calls, recs[i].excl, recs[i].incl};
          oracle::Path p;
          size_t j = i;
          for (uint32_t n = 0;; ++n) {
            p.push_back(recs[j].label);
            ccf[p].add(c);
            if (recs[j].parent == 0 || (kp != kInfinity && n + 1 > kp)) break;
            j = idx.at(recs[j].parent);
          }
        }
        Tree want = oracle::k_ccf(oracle::build_cct(ss, 0, seed % 2), kp);
        ASSERT_TRUE(ccf == want) << "k=" << kname(k) << " k'=" << kname(kp) << "\n" << oracle::diff(ccf, want);
      }
      f.destroy();
      EXPECT_EQ(st.live, 0);
    }
  }
}

// mark_counted_paths (the writer's pruning of zero subtrees): a stream
// "forks" at a random event: every counter is zeroed and the open frames'
// clocks restart (kgrind's fork_child), the rest of the stream counts.
// The kept nodes hold every count, are closed under parents, hold the
// top-region copy of every kept slab node (kgrind_annotate checks it), and
// nothing else: each counts in its subtree, is the first tree's root, or
// is on the path of such a copy.
namespace {

void run_with_fork(Forest& f, const Stream& s, size_t fork_at) {
  oracle::Driver d;
  d.st.push_back(oracle::Driver::Frame{f.enter_root(), false, d.now});
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == fork_at) {
      visit_preorder(f, [](const VisitInfo& v) {
        Node* n = const_cast<Node*>(v.node);
        n->calls = n->excl = n->incl = 0;
      });
      for (auto& fr : d.st) fr.start = d.now;
    }
    const oracle::Event& e = s[i];
    if (e.op == oracle::ENTER) {
      Activation a = f.enter(d.st.back().a, e.arg);
      d.st.push_back(oracle::Driver::Frame{a, Forest::is_rolled(d.st.back().a, a), d.now});
    } else if (e.op == oracle::LEAVE) {
      for (uint32_t j = 0; j < e.arg && d.st.size() > 1; ++j) d.pop(f);
    } else {
      Forest::add_exclusive(d.st.back().a, e.arg);
      d.now += e.arg;
    }
  }
  while (!d.st.empty()) d.pop(f);
}

bool counts(const oracle::Counters& c) { return c.calls || c.excl || c.incl; }

}  // namespace

TEST(Pruning, KeepsEveryCountEveryPathAndEverySlabCopyOnly) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::mt19937_64 rng(seed * 31 + 5);
    Stream s = oracle::gen_stream(rng, oracle::params_for(seed));
    size_t fork_at = s.empty() ? 0 : rng() % s.size();
    for (uint32_t k : kKs) {
      SCOPED_TRACE("seed=" + std::to_string(seed) + " k=" + kname(k));
      oracle::AllocStats st;
      Forest f;
      f.init(oracle::allocator(&st), k, 0, Forest::kRollSimpleRecursion);
      run_with_fork(f, s, fork_at);
      Vec<uint8_t> keep;
      keep.init(f.allocator(), 0);
      auto label = [](const Node* n) { return n->label; };
      auto counted = [](const Node* n) { return n->calls || n->excl || n->incl; };
      uint64_t kept = mark_counted_paths(f, counted, label, true, keep);
      ASSERT_EQ(keep.size(), f.node_count());
      // The kept nodes as the oracle's k-SF entries (first tree?, root path).
      oracle::SF all = oracle::extract_sf(f), pruned;
      std::map<uint64_t, oracle::Path> paths;
      visit_preorder_by(f, [&](const VisitInfo& v) {
        oracle::Path p = v.parent_id ? paths.at(v.parent_id) : oracle::Path{};
        p.push_back(v.node->label);
        paths[v.id] = p;
        if (keep[v.id - 1]) pruned[{v.first_tree, p}] = {v.node->calls, v.node->excl, v.node->incl};
      }, label, true);
      EXPECT_EQ(pruned.size(), kept);
      std::set<std::pair<bool, oracle::Path>> needed;   // counting subtrees, first root, slab copies
      needed.insert({true, oracle::Path{0}});
      for (const auto& [key, c] : all) {
        if (!counts(c)) continue;
        EXPECT_TRUE(pruned.count(key) && pruned.at(key) == c) << "a count left out";
        for (size_t n = 1; n <= key.second.size(); ++n)
          needed.insert({key.first, oracle::Path(key.second.begin(), key.second.begin() + n)});
      }
      bool slabs = k != 0 && k != kInfinity;
      for (bool changed = true; changed;) {   // the copies of needed slab nodes, and their paths
        changed = false;
        for (const auto& key : std::set<std::pair<bool, oracle::Path>>(needed)) {
          if (!slabs || key.second.size() <= k) continue;
          oracle::Path copy(key.second.begin() + k, key.second.end());
          for (size_t n = 1; n <= copy.size(); ++n)
            changed |= needed.insert({false, oracle::Path(copy.begin(), copy.begin() + n)}).second;
        }
      }
      for (const auto& [key, c] : pruned) {
        EXPECT_TRUE(needed.count(key)) << "kept without need: " << oracle::fmt_path(key.second);
        if (key.second.size() < 2) continue;
        oracle::Path parent(key.second.begin(), key.second.end() - 1);
        EXPECT_TRUE(pruned.count({key.first, parent})) << "parent left out";
      }
      for (const auto& key : needed) EXPECT_TRUE(pruned.count(key)) << "needed but left out: " << oracle::fmt_path(key.second);
      keep.destroy();
      f.destroy();
      EXPECT_EQ(st.live, 0) << "leak";
    }
    if (HasFailure()) return;
  }
}
