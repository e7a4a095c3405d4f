// An open-addressing hash map from a pair of pointers to a value slot, for
// the tool's hot lookups ((context, block) -> counters, call edges). Values
// never move once created: the table stores pointers to separately allocated
// entries, so callers may keep them.
#pragma once
#include "kg_runtime.h"

namespace kg {

template <typename Entry>   // Entry has members `const void* a; const void* b;`
class PairMap {
public:
   // The entry for (a, b), created zeroed (with a, b set) on first use.
   Entry* get(const void* a, const void* b)
   {
      if ((used_ + 1) * 4 >= cap_ * 3) grow();
      UWord i = hash(a, b) & (cap_ - 1);
      while (slots_[i]) {
         Entry* e = slots_[i];
         if (e->a == a && e->b == b) return e;
         i = (i + 1) & (cap_ - 1);
      }
      Entry* e = (Entry*)alloc_zeroed(sizeof(Entry));
      e->a = a;
      e->b = b;
      slots_[i] = e;
      used_++;
      return e;
   }

   // The entry for (a, b), or nullptr.
   Entry* find(const void* a, const void* b) const
   {
      if (!cap_) return nullptr;
      for (UWord i = hash(a, b) & (cap_ - 1); slots_[i]; i = (i + 1) & (cap_ - 1))
         if (slots_[i]->a == a && slots_[i]->b == b) return slots_[i];
      return nullptr;
   }

   UWord size() const { return used_; }

   template <typename F> void for_each(F f) const
   {
      for (UWord i = 0; i < cap_; i++)
         if (slots_[i]) f(slots_[i]);
   }

private:
   static UWord hash(const void* a, const void* b)
   {
      UWord h = (UWord)a * 0x9E3779B97F4A7C15ULL ^ ((UWord)b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
      return h ^ (h >> 29);
   }

   void grow()
   {
      UWord old_cap = cap_;
      Entry** old = slots_;
      cap_ = cap_ ? cap_ * 2 : 1024;
      slots_ = (Entry**)alloc_zeroed(cap_ * sizeof(Entry*));
      for (UWord i = 0; i < old_cap; i++) {
         if (!old[i]) continue;
         UWord j = hash(old[i]->a, old[i]->b) & (cap_ - 1);
         while (slots_[j]) j = (j + 1) & (cap_ - 1);
         slots_[j] = old[i];
      }
      release(old);
   }

   Entry** slots_ = nullptr;
   UWord cap_ = 0;
   UWord used_ = 0;
};

} // namespace kg
