// Unit tests of kgrind/core/containers.h and arena.h.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include "../../kgrind/core/arena.h"
#include "../../kgrind/core/containers.h"
#include "oracle.h"

using namespace kg::core;

TEST(Vec, PushPopResize) {
  oracle::AllocStats st;
  Vec<uint64_t> v;
  v.init(oracle::allocator(&st));
  std::vector<uint64_t> ref;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20000; ++i) {
    int op = rng() % 10;
    if (op < 6) {
      uint64_t x = rng();
      v.push_back(x);
      ref.push_back(x);
    } else if (op < 8 && !ref.empty()) {
      v.pop_back();
      ref.pop_back();
    } else if (op == 8) {
      size_t n = rng() % 50;
      size_t old = ref.size();
      v.resize(n);
      ref.resize(n);
      for (size_t j = old; j < n; ++j) ASSERT_EQ(v[j], 0u);
    } else {
      v.push_zero() = 7;
      ref.push_back(7);
    }
    ASSERT_EQ(v.size(), ref.size());
  }
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(v[i], ref[i]);
  // self-aliasing push at capacity
  v.clear();
  v.push_back(42);
  while (v.size() < v.capacity()) v.push_back(v[0]);
  v.push_back(v[0]);
  EXPECT_EQ(v.back(), 42u);
  v.destroy();
  EXPECT_EQ(st.live, 0);
}

TEST(U64Map, RandomOpsAgainstUnorderedMap) {
  oracle::AllocStats st;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    U64Map<uint64_t> m;
    m.init(oracle::allocator(&st), seed % 3 ? 0 : 1000);
    std::unordered_map<uint64_t, uint64_t> ref;
    std::mt19937_64 rng(seed);
    uint64_t range = (seed % 2) ? 64 : 5000;  // dense collisions vs growth
    for (int i = 0; i < 20000; ++i) {
      uint64_t key = rng() % range;
      if (key == 3) key = ~uint64_t(0);  // the out-of-band key
      if (seed % 4 == 0) key *= 0x100000000ull;  // keys differing in high bits only
      int op = rng() % 4;
      if (op <= 1) {
        bool ins = false;
        uint64_t* v = m.insert(key, &ins);
        ASSERT_EQ(ins, ref.count(key) == 0);
        if (ins) {
          ASSERT_EQ(*v, 0u);
        }
        *v += i;
        ref[key] += i;
      } else if (op == 2) {
        ASSERT_EQ(m.erase(key), ref.erase(key) == 1);
      } else {
        uint64_t* v = m.find(key);
        auto it = ref.find(key);
        ASSERT_EQ(v != nullptr, it != ref.end());
        if (v) {
          ASSERT_EQ(*v, it->second);
        }
      }
      ASSERT_EQ(m.size(), ref.size());
    }
    std::map<uint64_t, uint64_t> seen;
    m.for_each([&](uint64_t k, uint64_t& v) { seen[k] = v; });
    ASSERT_EQ(seen.size(), ref.size());
    for (auto& kv : ref) ASSERT_EQ(seen[kv.first], kv.second);
    m.clear();
    EXPECT_EQ(m.size(), 0u);
    EXPECT_EQ(m.find(5), nullptr);
    m.destroy();
  }
  EXPECT_EQ(st.live, 0);
}

TEST(Pool, BlocksDoNotOverlapAndAreReused) {
  oracle::AllocStats st;
  Pool p;
  p.init(oracle::allocator(&st));
  std::mt19937_64 rng(7);
  struct B {
    unsigned char* p;
    size_t n;
    unsigned char tag;
  };
  std::vector<B> live;
  for (int i = 0; i < 20000; ++i) {
    if (live.empty() || rng() % 3) {
      size_t n = (rng() % 64 == 0) ? (rng() % 100000 + 1) : (rng() % 300 + 1);
      bool bump = rng() % 4 == 0;
      unsigned char* q = static_cast<unsigned char*>(bump ? p.bump(n) : p.alloc_block(n));
      ASSERT_EQ(reinterpret_cast<uintptr_t>(q) % 16, 0u);
      unsigned char tag = static_cast<unsigned char>(rng());
      memset(q, tag, n);
      live.push_back(B{q, bump ? 0 : n, tag});
      if (bump) live.back().n = n | (size_t(1) << 62);
    } else {
      size_t j = rng() % live.size();
      B b = live[j];
      size_t n = b.n & ~(size_t(1) << 62);
      for (size_t x = 0; x < n; ++x) ASSERT_EQ(b.p[x], b.tag) << "corrupted block";
      if (!(b.n >> 62)) p.release_block(b.p, n);
      live[j] = live.back();
      live.pop_back();
    }
  }
  for (auto& b : live) {
    size_t n = b.n & ~(size_t(1) << 62);
    for (size_t x = 0; x < n; ++x) ASSERT_EQ(b.p[x], b.tag);
  }
  EXPECT_GT(p.bytes_reserved(), 0u);
  p.destroy();
  EXPECT_EQ(st.live, 0);
}

TEST(ChildTable, ManyChildrenLookups) {
  oracle::AllocStats st;
  Forest f;
  f.init(oracle::allocator(&st), kInfinity, 0);
  Node* r = f.first_tree();
  std::mt19937_64 rng(3);
  std::map<uint32_t, Node*> ref;
  for (int i = 0; i < 5000; ++i) {
    uint32_t l = static_cast<uint32_t>(rng() % 3000) * 7919u;  // spread labels
    Node* c = f.child(r, l);
    if (ref.count(l))
      ASSERT_EQ(ref[l], c);
    else
      ref[l] = c;
    ASSERT_EQ(r->nkids, ref.size());
  }
  for (auto& kv : ref) ASSERT_EQ(find_child(r, kv.first), kv.second);
  EXPECT_EQ(find_child(r, 1), nullptr);
  EXPECT_EQ(oracle::check_structure(f), "");
  f.destroy();
  EXPECT_EQ(st.live, 0);
}

// A slot keeps 16 bits of its child's label: labels equal in those bits are
// told apart by the child's own label.
TEST(ChildTable, LabelsEqualInTheirTagBits) {
  oracle::AllocStats st;
  Forest f;
  f.init(oracle::allocator(&st), kInfinity, 0);
  Node* r = f.first_tree();
  std::vector<Node*> kids;
  for (uint32_t i = 0; i < 6; ++i) kids.push_back(f.child(r, 5 + (i << 16)));
  for (uint32_t i = 0; i < 6; ++i) {
    ASSERT_EQ(find_child(r, 5 + (i << 16)), kids[i]);
    ASSERT_EQ(kids[i]->label, 5 + (i << 16));
  }
  EXPECT_EQ(find_child(r, 5 + (6u << 16)), nullptr);
  EXPECT_EQ(find_child(r, 6), nullptr);
  f.destroy();
  EXPECT_EQ(st.live, 0);
}

TEST(ChildTable, CapacityRule) {
  EXPECT_EQ(child_table_bits(2), 1u);  // full tables up to 8 children: 2 slots
  EXPECT_EQ(child_table_bits(3), 2u);  // 4 slots
  EXPECT_EQ(child_table_bits(4), 2u);  // 4
  EXPECT_EQ(child_table_bits(5), 3u);  // 8
  EXPECT_EQ(child_table_bits(8), 3u);  // 8
  EXPECT_EQ(child_table_bits(9), 4u);  // n + n/2 = 13 -> 16
  for (uint32_t n = 2; n < 100000; ++n) {
    uint32_t cap = 1u << child_table_bits(n);
    if (n <= 8) {
      ASSERT_GE(cap, n);             // the smallest power of two that holds them
      ASSERT_LT(cap, 2 * n);
    } else {
      ASSERT_GT(cap, n);             // at least one empty slot
      ASSERT_LE(3 * n, 2 * cap + 2); // load <= ~2/3
      ASSERT_LT(cap, 3 * n);
    }
  }
}

// A full table (2, 4 or 8 children, no empty slot) finds each child and
// answers "absent" for other labels, with colliding tags too.
TEST(ChildTable, FullTablesFindEveryChildAndNoOther) {
  for (uint32_t n : {2u, 4u, 8u}) {
    oracle::AllocStats st;
    Forest f;
    f.init(oracle::allocator(&st), kInfinity, 0);
    Node* r = f.first_tree();
    Node* kids[8];
    for (uint32_t i = 0; i < n; ++i) kids[i] = f.child(r, 1 + i * (1u << 16));
    ASSERT_EQ(r->nkids, n);
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(find_child(r, 1 + i * (1u << 16)), kids[i]);
    EXPECT_EQ(find_child(r, 1 + n * (1u << 16)), nullptr);   // the same tag bits as every child
    EXPECT_EQ(find_child(r, 2), nullptr);
    EXPECT_EQ(oracle::check_structure(f), "");
    f.destroy();
    EXPECT_EQ(st.live, 0);
  }
}
