// Unit tests of kgrind/core/kid_layout.h: the kid keys' collision rules and
// the layouts of growing kid arrays, against brute force.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "../../kgrind/core/kid_layout.h"

using namespace kg::core;

namespace {

struct Kid {
  uint32_t fn_id;
  uint64_t site;
};

uint64_t growing_key(const Kid& k) { return growing_kid_key(k.fn_id, k.site); }

uint32_t slot(const Kid& k, KidLayout l) { return kid_slot_of_key(growing_key(k), l.slots - 1, l.shift); }

bool distinct_slots(const std::vector<Kid>& kids, KidLayout l) {
  std::set<uint32_t> used;
  for (const Kid& k : kids)
    if (!used.insert(slot(k, l)).second) return false;
  return true;
}

uint32_t slots_used(const std::vector<Kid>& kids, KidLayout l) {
  std::set<uint32_t> used;
  for (const Kid& k : kids) used.insert(slot(k, l));
  return (uint32_t)used.size();
}

std::vector<Kid> random_kids(std::mt19937_64& rng, uint32_t n) {
  std::vector<Kid> kids;
  uint64_t base = 0x400000 + (rng() % 0x100000);
  for (uint32_t i = 0; i < n; i++) kids.push_back({(uint32_t)(rng() % 64), base + rng() % 256});
  return kids;
}

}  // namespace

// Fixed-size arrays: calls from sites fewer than 5 steps of 8 bytes apart
// into functions whose ids differ by less than 3 never share a slot.
TEST(KidKey, FixedKeySeparatesNearbyCalls) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; round++) {
    uint64_t site = 0x400000 + rng() % 0x1000000;
    uint32_t id = 2 + (uint32_t)(rng() % 100000);
    uint32_t s0 = kid_slot_of_key(fixed_kid_key(id, site), kKidSlots - 1, kFixedKidShift);
    for (int ds = -4; ds <= 4; ds++)
      for (int di = -2; di <= 2; di++) {
        if (ds == 0 && di == 0) continue;
        uint64_t key = fixed_kid_key(id + di, site + 8 * ds);
        EXPECT_NE(kid_slot_of_key(key, kKidSlots - 1, kFixedKidShift), s0) << "ds " << ds << " di " << di;
      }
  }
}

// The collision the fixed key avoids: with the xor key a call one step
// later into the function of the previous id can take the same slot.
TEST(KidKey, XorKeyCollidesWhereFixedKeyDoesNot) {
  uint64_t site = 0x401000;
  uint32_t id = 9;
  auto fixed_slot = [](uint32_t f, uint64_t s) {
    return kid_slot_of_key(fixed_kid_key(f, s), kKidSlots - 1, kFixedKidShift);
  };
  auto xor_slot = [](uint32_t f, uint64_t s) {
    return kid_slot_of_key(growing_kid_key(f, s), kKidSlots - 1, kFixedKidShift);
  };
  EXPECT_EQ(xor_slot(id, site), xor_slot(id - 1, site + 8));
  EXPECT_NE(fixed_slot(id, site), fixed_slot(id - 1, site + 8));
}

TEST(KidLayout, SeparatesTellsCollisions) {
  std::vector<Kid> kids = {{1, 0x1000}, {1, 0x1000 + (16 << 3)}};
  // 16 steps of 8 bytes apart: one slot at shift 3 in 16 slots, two at shift 7.
  EXPECT_FALSE(separates(kids.data(), 2, {16, 3}, growing_key));
  EXPECT_TRUE(separates(kids.data(), 2, {16, 7}, growing_key));
  EXPECT_TRUE(separates(kids.data(), 1, {1, 0}, growing_key));
  EXPECT_TRUE(separates(kids.data(), 0, {1, 0}, growing_key));
}

// The layout of the fewest slots, then the smallest shift, that separates
// the kids; none when no layout up to kKidSlots does.
TEST(KidLayout, SeparatingLayoutIsTheSmallest) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 3000; round++) {
    uint32_t n = 1 + (uint32_t)(rng() % 17);
    std::vector<Kid> kids = random_kids(rng, n);
    uint32_t min_slots = 1u << (rng() % 5);
    bool expect_found = false;
    KidLayout expect = {0, 0};
    for (uint32_t s = min_slots; s <= kKidSlots && !expect_found; s *= 2) {
      if (n > s) continue;
      for (uint32_t shift = 0; shift <= kMaxKidShift; shift++)
        if (distinct_slots(kids, {s, shift})) {
          expect = {s, shift};
          expect_found = true;
          break;
        }
    }
    KidLayout got = {0, 0};
    bool found = separating_layout(kids.data(), n, min_slots, growing_key, &got);
    ASSERT_EQ(found, expect_found);
    if (found) {
      EXPECT_EQ(got.slots, expect.slots);
      EXPECT_EQ(got.shift, expect.shift);
    }
  }
}

// kKidSlots slots, at the first shift that gives the kids the most slots.
TEST(KidLayout, FullestLayoutUsesTheMostSlots) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 3000; round++) {
    uint32_t n = 1 + (uint32_t)(rng() % 24);
    std::vector<Kid> kids = random_kids(rng, n);
    uint32_t best = 0, best_shift = 0;
    for (uint32_t shift = 0; shift <= kMaxKidShift; shift++) {
      uint32_t used = slots_used(kids, {kKidSlots, shift});
      if (used > best) {
        best = used;
        best_shift = shift;
      }
    }
    KidLayout got = fullest_layout(kids.data(), n, growing_key);
    EXPECT_EQ(got.slots, kKidSlots);
    EXPECT_EQ(got.shift, best_shift);
  }
  KidLayout none = fullest_layout((const Kid*)nullptr, 0, growing_key);
  EXPECT_EQ(none.slots, kKidSlots);
  EXPECT_EQ(none.shift, kFixedKidShift);
}
