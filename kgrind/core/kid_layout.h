// kgrind core: kid slots. A transition's kid array keeps, for each (callee,
// call site) its frames called, the transition of that call in one slot,
// which inline IR reads to push a frame with no helper (kg_hotpath.h).
//
// A kid's slot is (key >> shift) & (slots - 1), its key a word made of the
// call site and the callee's id. Arrays of a fixed size (kKidSlots slots,
// shift kFixedKidShift) use fixed_kid_key; arrays that grow use
// growing_kid_key, and each takes the layout (slots, shift) that gives its
// kids distinct slots in the fewest slots (separating_layout), else the one
// that spreads them over the most slots (fullest_layout).
#pragma once
#include <stdint.h>

namespace kg {
namespace core {

const uint32_t kKidSlots = 16;
// The shift of fixed-size arrays: key bits 3 and up (sites a few 8-byte
// steps apart).
const uint32_t kFixedKidShift = 3;
// The largest shift a growing array's layout tries: the slots come from key
// bits shift and up (key bits 0-2 tell apart calls 5 bytes apart).
const uint32_t kMaxKidShift = 18;
const uint32_t kKidIdFactor = 5;

// The key of fixed-size arrays, site + (5 * fn_id << 3): a caller's nearby
// call sites (a few 8-byte steps apart) often call functions of nearby ids,
// in either order, and two kids collide when the sites' step difference ds
// and the ids' difference di give ds + 5 * di = 0 (mod 16): never with
// |ds| < 5 and |di| < 3.
inline uint64_t fixed_kid_key(uint32_t fn_id, uint64_t site) { return site + ((uint64_t)fn_id * kKidIdFactor << 3); }
// The key of growing arrays, whose layouts choose a shift.
inline uint64_t growing_kid_key(uint32_t fn_id, uint64_t site) { return site ^ ((uint64_t)fn_id << 3); }

inline uint32_t kid_slot_of_key(uint64_t key, uint64_t mask, uint32_t shift) {
  return (uint32_t)((key >> shift) & mask);
}

// A kid array's layout: its slots and the key's shift.
struct KidLayout {
  uint32_t slots;
  uint32_t shift;
};

// Whether the n kids all have distinct slots in layout l; key_of(kid) is a
// kid's key.
template <class Kid, class KeyOf>
bool separates(const Kid* kids, uint32_t n, KidLayout l, KeyOf key_of) {
  uint64_t mask = l.slots - 1;
  uint32_t used = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t bit = 1u << kid_slot_of_key(key_of(kids[i]), mask, l.shift);
    if (used & bit) return false;
    used |= bit;
  }
  return true;
}

// The layout of the fewest slots (at least `slots`, a power of two), then
// the smallest shift, that gives the n kids distinct slots: an array grows
// only when no shift separates its kids. False if there is none up to
// kKidSlots.
template <class Kid, class KeyOf>
bool separating_layout(const Kid* kids, uint32_t n, uint32_t slots, KeyOf key_of, KidLayout* out) {
  for (; slots <= kKidSlots; slots *= 2) {
    if (n > slots) continue;
    for (uint32_t shift = 0; shift <= kMaxKidShift; shift++)
      if (separates(kids, n, {slots, shift}, key_of)) {
        *out = {slots, shift};
        return true;
      }
  }
  return false;
}

// The kKidSlots-slot layout whose shift gives the n kids the most slots
// (the first such shift; kFixedKidShift for no kids).
template <class Kid, class KeyOf>
KidLayout fullest_layout(const Kid* kids, uint32_t n, KeyOf key_of) {
  KidLayout best = {kKidSlots, kFixedKidShift};
  uint32_t best_used = 0;
  for (uint32_t shift = 0; shift <= kMaxKidShift; shift++) {
    uint32_t used = 0;
    for (uint32_t i = 0; i < n; i++) used |= 1u << kid_slot_of_key(key_of(kids[i]), kKidSlots - 1, shift);
    if ((uint32_t)__builtin_popcount(used) > best_used) {
      best_used = (uint32_t)__builtin_popcount(used);
      best = {kKidSlots, shift};
    }
  }
  return best;
}

}  // namespace core
}  // namespace kg
