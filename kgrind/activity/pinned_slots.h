// Slots whose addresses instrumented code holds (a translation's counts, a
// jump's cached target): taken one after another from chunks of about
// 4 KB that never move or go back. Part of the activity unit
// (kg_activity.cpp).
#pragma once

namespace kg {

template <typename T>
class PinnedSlots {
 public:
   // A new slot, zeroed.
   T* take()
   {
      Chunk* c = chunks_;
      if (!c || c->used == kPerChunk) {
         c = (Chunk*)alloc_permanent(sizeof(Chunk));
         VG_(memset)(c, 0, sizeof(Chunk));
         c->next = chunks_;
         chunks_ = c;
      }
      return &c->slots[c->used++];
   }
   // f(T&) for every slot taken.
   template <typename F> void for_each(F f)
   {
      for (Chunk* c = chunks_; c; c = c->next)
         for (UInt i = 0; i < c->used; i++) f(c->slots[i]);
   }

 private:
   static const UInt kPerChunk = (4096 - 2 * sizeof(void*)) / sizeof(T);
   struct Chunk {
      Chunk* next;
      UInt used;
      T slots[kPerChunk];
   };
   Chunk* chunks_;
};

} // namespace kg
