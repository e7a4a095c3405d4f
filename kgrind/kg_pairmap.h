// Open-addressing hash maps keyed by a pair of pointers, for the tool's hot
// lookups ((context, block) -> counters, call edges, transitions).
//
// PairTable keeps its entries in the slots: a probe compares keys without
// following a pointer (one cache line, not one per probe), but entries move
// when the table grows. PairMap adds stable entries on top of it (the slot
// holds a pointer to a separately allocated entry) for callers that keep
// them.
#pragma once
#include "kg_runtime.h"

namespace kg {

// Entry starts with `const void* a; const void* b;` (the key) and is
// zero-initialised on creation; a == free_key() (the last byte of the address
// space, never a key) marks a free slot. kFirstCap: slots of the first
// allocation (a power of two; small for tables there are many of).
template <typename Entry, UWord kFirstCap = 1024>
class PairTable {
public:
   // The entry for (a, b), created zeroed (with a, b set) on first use.
   // Valid until the next get().
   Entry* get(const void* a, const void* b)
   {
      if ((used_ + 1) * 4 >= cap_ * 3) grow();
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

   UWord size() const { return used_; }

   // Frees the slots: the table is empty again.
   void clear()
   {
      release(slots_);
      slots_ = nullptr;
      cap_ = used_ = 0;
   }

   template <typename F> void for_each(F f) const
   {
      for (UWord i = 0; i < cap_; i++)
         if (!is_free(slots_[i])) f(&slots_[i]);
   }

private:
   static const void* free_key() { return (const void*)~(UWord)0; }
   static Bool is_free(const Entry& e) { return e.a == free_key(); }

   static UWord hash(const void* a, const void* b)
   {
      UWord h = (UWord)a * 0x9E3779B97F4A7C15ULL ^ ((UWord)b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
      return h ^ (h >> 29);
   }

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

   Entry* slots_ = nullptr;
   UWord cap_ = 0;
   UWord used_ = 0;
};

// Entries that never move once created, so callers may keep them.
template <typename Entry>   // Entry has members `const void* a; const void* b;`
class PairMap {
public:
   // The entry for (a, b), created zeroed (with a, b set) on first use.
   Entry* get(const void* a, const void* b)
   {
      Slot* s = table_.get(a, b);
      if (!s->entry) {
         s->entry = (Entry*)alloc_permanent(sizeof(Entry));
         s->entry->a = a;
         s->entry->b = b;
      }
      return s->entry;
   }

   // The entry for (a, b), or nullptr.
   Entry* find(const void* a, const void* b) const
   {
      const Slot* s = table_.find(a, b);
      return s ? s->entry : nullptr;
   }

   UWord size() const { return table_.size(); }

   // Frees the index, not the entries (their users keep them): for tables
   // whose lookups are over while their entries are still read.
   void forget_index() { table_.clear(); }

   template <typename F> void for_each(F f) const
   {
      table_.for_each([&](const Slot* s) { f(s->entry); });
   }

private:
   struct Slot {
      const void* a;
      const void* b;
      Entry* entry;
   };
   PairTable<Slot> table_;
};

} // namespace kg
