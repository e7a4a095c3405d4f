// Small operations on arrays in tool memory: appending with doubling, and
// sorting with entries that compare equal folded together.
#pragma once
#include "kg_runtime.h"

namespace kg {

// Appends x to items[0, n) of room cap, doubling it from `first`.
template <typename T>
inline void append(T*& items, UWord& n, UWord& cap, T x, UWord first, const HChar* cc)
{
   if (n == cap) {
      cap = cap ? 2 * cap : first;
      T* bigger = (T*)kg::alloc(cap * sizeof(T), cc);
      if (n) VG_(memcpy)(bigger, items, n * sizeof(T));
      kg::release(items);
      items = bigger;
   }
   items[n++] = x;
}

// Sorts, then folds entries that compare equal into the first (the same
// instruction or line reached through several superblocks).
template <typename T, typename Fold>
inline UWord sort_and_fold(T* all, UWord n, Int (*cmp)(const void*, const void*), Fold fold)
{
   VG_(ssort)(all, n, sizeof(T), cmp);
   UWord merged = 0;
   for (UWord i = 0; i < n; i++) {
      if (merged && cmp(&all[merged - 1], &all[i]) == 0) fold(all[merged - 1], all[i]);
      else all[merged++] = all[i];
   }
   return merged;
}

} // namespace kg
