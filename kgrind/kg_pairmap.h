// Open-addressing hash maps keyed by a pair of pointers, for the tool's hot
// lookups ((context, block) -> counters, call edges, transitions).
//
// PairTable keeps its entries in the slots: a probe compares keys without
// following a pointer (one cache line, not one per probe), but entries move
// when the table grows. PairIndex indexes entries allocated elsewhere (one
// tagged word a slot); PairMap allocates them, for callers that keep them.
#pragma once
#include "kg_runtime.h"

namespace kg {

// The largest load, in eighths, of most tables: 3/4.
const UWord kUsualLoad = 6;
// For big indexes looked up off the hot path (a miss probes about 32 slots
// at 7/8, against 8.5 at 3/4): cc1plus's 3.2 M transitions at k=inf fit in
// 4 M slots instead of 8 M (34 MB less).
const UWord kDenseLoad = 7;

// The slot array of an open-addressing table keyed by a pair of pointers,
// with linear probing, load factor at most kMaxLoad eighths, and the pair's
// hash: what PairTable and PairIndex share.
template <typename Slot, UWord kMaxLoad = kUsualLoad>
class PairSlots {
public:
   UWord size() const { return used_; }

   // Frees the slots (not what they point to): the table is empty again.
   void clear()
   {
      release(slots_);
      slots_ = nullptr;
      cap_ = used_ = 0;
   }

protected:
   static UWord hash(const void* a, const void* b)
   {
      UWord h = (UWord)a * 0x9E3779B97F4A7C15ULL ^ ((UWord)b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
      return h ^ (h >> 29);
   }
   // One more entry needs a bigger array.
   Bool full() const { return (used_ + 1) * 8 >= cap_ * kMaxLoad; }

   Slot* slots_ = nullptr;
   UWord cap_ = 0;
   UWord used_ = 0;
};

// Entry starts with `const void* a; const void* b;` (the key) and is
// zero-initialised on creation; a == free_key() (the last byte of the address
// space, never a key) marks a free slot. kFirstCap: slots of the first
// allocation (a power of two; small for tables there are many of).
template <typename Entry, UWord kFirstCap = 1024>
class PairTable : public PairSlots<Entry> {
   using Base = PairSlots<Entry>;
   using Base::hash;
   using Base::slots_;
   using Base::cap_;
   using Base::used_;

public:
   // The entry for (a, b), created zeroed (with a, b set) on first use.
   // Valid until the next get().
   Entry* get(const void* a, const void* b)
   {
      if (this->full()) grow();
      UWord i = hash(a, b) & (cap_ - 1);
      for (; !is_free(slots_[i]); i = (i + 1) & (cap_ - 1))
         if (slots_[i].a == a && slots_[i].b == b) return &slots_[i];
      VG_(memset)(&slots_[i], 0, sizeof(Entry));
      slots_[i].a = a;
      slots_[i].b = b;
      used_++;
      return &slots_[i];
   }

   // The entry for (a, b), or nullptr.
   Entry* find(const void* a, const void* b) const
   {
      if (!cap_) return nullptr;
      for (UWord i = hash(a, b) & (cap_ - 1); !is_free(slots_[i]); i = (i + 1) & (cap_ - 1))
         if (slots_[i].a == a && slots_[i].b == b) return &slots_[i];
      return nullptr;
   }

   template <typename F> void for_each(F f) const
   {
      for (UWord i = 0; i < cap_; i++)
         if (!is_free(slots_[i])) f(&slots_[i]);
   }

private:
   static const void* free_key() { return (const void*)~(UWord)0; }
   static Bool is_free(const Entry& e) { return e.a == free_key(); }

   void grow()
   {
      UWord old_cap = cap_;
      Entry* old = slots_;
      cap_ = cap_ ? cap_ * 2 : kFirstCap;
      slots_ = (Entry*)kg::alloc(cap_ * sizeof(Entry), "kg.pairmap");
      for (UWord i = 0; i < cap_; i++) slots_[i].a = free_key();
      for (UWord i = 0; i < old_cap; i++) {
         if (is_free(old[i])) continue;
         UWord j = hash(old[i].a, old[i].b) & (cap_ - 1);
         while (!is_free(slots_[j])) j = (j + 1) & (cap_ - 1);
         slots_[j] = old[i];
      }
      release(old);
   }
};

// An index of entries that live elsewhere and never move (callers keep
// pointers to them), keyed by their first two words. A slot is one word: the
// entry's address with 16 bits of the key's hash above it (user-space
// addresses fit in 48 bits), so a probe follows a pointer only when the tag
// matches, and the index costs 8 bytes a slot instead of a PairTable's 24
// (sqlite3's (context, block) index: 1.5 MB -> 0.5 MB). Keys gives an
// entry's key (by default its first two members, a and b); kFirstCap, the
// slots of the first allocation (small for indexes there are many of).
template <typename Entry> struct MemberKeys {
   static const void* a(const Entry* e) { return e->a; }
   static const void* b(const Entry* e) { return e->b; }
};

template <typename Entry, typename Keys = MemberKeys<Entry>, UWord kFirstCap = 1024, UWord kMaxLoad = kUsualLoad>
class PairIndex : public PairSlots<UWord, kMaxLoad> {
   using Base = PairSlots<UWord, kMaxLoad>;
   using Base::hash;
   using Base::slots_;
   using Base::cap_;
   using Base::used_;

public:
   Entry* find(const void* a, const void* b) const
   {
      return find_where(a, b, [a, b](const Entry* e) { return Keys::a(e) == a && Keys::b(e) == b; });
   }

   // The entry hashed as (a, b) for which same(entry) holds, or nullptr: for
   // keys that are hashes of an entry's fields rather than unique words
   // (same() compares the fields themselves).
   template <typename Same> Entry* find_where(const void* a, const void* b, Same same) const
   {
      if (!cap_) return nullptr;
      UWord h = hash(a, b);
      UWord tag = h & kTagMask;
      for (UWord i = h & (cap_ - 1); slots_[i]; i = (i + 1) & (cap_ - 1)) {
         if ((slots_[i] & kTagMask) != tag) continue;
         Entry* e = (Entry*)(slots_[i] & ~kTagMask);
         if (same(e)) return e;
      }
      return nullptr;
   }

   // The index's first slots, cap of them (a power of two) instead of
   // kFirstCap, allocated now: for one of many indexes that mostly stay small.
   void start_with(UWord cap)
   {
      tl_assert(!cap_ && cap && !(cap & (cap - 1)));
      slots_ = (UWord*)alloc_zeroed(cap * sizeof(UWord), "kg.pairmap");
      cap_ = cap;
   }

   // Adds e, whose key is not in the index yet.
   void insert(Entry* e)
   {
      tl_assert(((UWord)e & kTagMask) == 0);
      if (this->full()) grow();
      put(slots_, cap_, e);
      used_++;
   }


   template <typename F> void for_each(F f) const
   {
      for (UWord i = 0; i < cap_; i++)
         if (slots_[i]) f((Entry*)(slots_[i] & ~kTagMask));
   }

   // Drops the entries for which drop(entry) holds (not what they point
   // to), the others laid out again in slots of the same number.
   template <typename Drop> void remove_if(Drop drop)
   {
      if (!cap_) return;
      UWord* kept = (UWord*)alloc_zeroed(cap_ * sizeof(UWord), "kg.pairmap");
      used_ = 0;
      for_each([&](Entry* e) {
         if (drop(e)) return;
         put(kept, cap_, e);
         used_++;
      });
      release(slots_);
      slots_ = kept;
   }

   // The entries as an array of *n pointers (the caller releases it), in the
   // index's own memory, which has room for *room (if asked): the index is
   // empty afterwards. For output at exit, where a copy could set the peak
   // RSS.
   Entry** take_entries(UWord* n, UWord* room = nullptr)
   {
      Entry** all = (Entry**)slots_;
      UWord m = 0;
      for (UWord i = 0; i < cap_; i++)
         if (slots_[i]) all[m++] = (Entry*)(slots_[i] & ~kTagMask);
      *n = m;
      if (room) *room = cap_;
      slots_ = nullptr;
      cap_ = used_ = 0;
      return all;
   }

private:
   static const UWord kTagMask = ~(UWord)0 << 48;

   static void put(UWord* slots, UWord cap, Entry* e)
   {
      UWord h = hash(Keys::a(e), Keys::b(e));
      UWord i = h & (cap - 1);
      while (slots[i]) i = (i + 1) & (cap - 1);
      slots[i] = (h & kTagMask) | (UWord)e;
   }

   void grow()
   {
      UWord new_cap = cap_ ? cap_ * 2 : kFirstCap;
      UWord* bigger = (UWord*)alloc_zeroed(new_cap * sizeof(UWord), "kg.pairmap");
      for_each([&](Entry* e) { put(bigger, new_cap, e); });
      release(slots_);
      slots_ = bigger;
      cap_ = new_cap;
   }
};

// Entries that never move once created, so callers may keep them.
template <typename Entry, UWord kMaxLoad = kUsualLoad>   // Entry has members `const void* a; const void* b;`
class PairMap {
public:
   // The entry for (a, b), created zeroed (with a, b set) on first use.
   Entry* get(const void* a, const void* b)
   {
      if (Entry* e = index_.find(a, b)) return e;
      Entry* e = new_entry();
      e->a = a;
      e->b = b;
      index_.insert(e);
      return e;
   }

   // Drops the entries for which drop(entry) holds from the index (their
   // memory stays the caller's: recycle).
   template <typename Drop> void remove_if(Drop drop) { index_.remove_if(drop); }
   // An entry no longer in any map of this type, for the next get (entries
   // come from permanent memory, which is never freed).
   static void recycle(Entry* e)
   {
      *(Entry**)e = free_;
      free_ = e;
   }
   // A zeroed entry, recycled if there is one, in no map yet.
   static Entry* new_entry()
   {
      Entry* e = free_;
      if (!e) return (Entry*)alloc_permanent(sizeof(Entry) + room_);
      free_ = *(Entry**)e;
      VG_(memset)(e, 0, sizeof(Entry) + room_);
      return e;
   }
   // Bytes of the user's after every entry of this type, zeroed with it
   // (set before the first entry is made).
   static void set_entry_room(UWord bytes) { room_ = bytes; }

   // The entry for (a, b), or nullptr.
   Entry* find(const void* a, const void* b) const { return index_.find(a, b); }

   UWord size() const { return index_.size(); }

   // PairIndex::start_with.
   void start_with(UWord cap) { index_.start_with(cap); }

   // Frees the index, not the entries (their users keep them): for tables
   // whose lookups are over while their entries are still read.
   void forget_index() { index_.clear(); }
   // The entries, in the index's memory (PairIndex::take_entries).
   Entry** take_entries(UWord* n, UWord* room) { return index_.take_entries(n, room); }

   template <typename F> void for_each(F f) const { index_.for_each(f); }

private:
   PairIndex<Entry, MemberKeys<Entry>, 1024, kMaxLoad> index_;
   inline static Entry* free_ = nullptr;   // recycled entries, linked through their first word
   inline static UWord room_ = 0;          // set_entry_room
};

} // namespace kg
