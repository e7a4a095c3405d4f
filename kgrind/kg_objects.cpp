#include "kg_objects.h"
#include "kg_runtime.h"

namespace kg {

const DebugInfo* object_info(Addr a)
{
   DebugInfo* di = VG_(find_DebugInfo)(VG_(current_DiEpoch)(), a);
   if (di) return di;
   NSegment const* seg = VG_(am_find_nsegment)(a);
   const HChar* file = seg && seg->kind == SkFileC ? VG_(am_get_filename)(seg) : nullptr;
   if (!file) return nullptr;
   for (const DebugInfo* d = VG_(next_DebugInfo)(nullptr); d; d = VG_(next_DebugInfo)(d))
      if (VG_(DebugInfo_get_text_size)(d) > 0 && VG_STREQ(VG_(DebugInfo_get_filename)(d), file))
         return d;
   return nullptr;
}

Bool object_text(Addr a, Addr* lo, Addr* hi)
{
   const DebugInfo* di = object_info(a);
   if (!di || VG_(DebugInfo_get_text_size)(di) == 0) return False;
   *lo = VG_(DebugInfo_get_text_avma)(di);
   *hi = *lo + VG_(DebugInfo_get_text_size)(di);
   return True;
}

Addr file_address(Addr a)
{
   // Consecutive lookups are mostly in the same object: remember its text.
   static Addr lo = 1, hi = 0;
   static PtrdiffT bias = 0;
   if (a >= lo && a < hi) return a - bias;
   const DebugInfo* di = object_info(a);
   if (!di) return a;
   if (!VG_(find_DebugInfo)(VG_(current_DiEpoch)(), a))
      return a - VG_(DebugInfo_get_text_bias)(di);   // not cached: rare
   lo = VG_(DebugInfo_get_text_avma)(di);
   hi = lo + VG_(DebugInfo_get_text_size)(di);
   bias = VG_(DebugInfo_get_text_bias)(di);
   return a - bias;
}

ObjectEntry* object_entry(ObjectEntries* t, Addr a)
{
   UInt epoch = VG_(current_DiEpoch)().n;
   ObjectEntry* last = t->last;
   if (last && last->epoch == epoch && a >= last->text_lo && a < last->text_hi) return last->usable ? last : nullptr;
   const DebugInfo* di = object_info(a);
   Addr lo, hi;
   if (!di || !object_text(a, &lo, &hi) || a < lo || a >= hi) return nullptr;
   const HChar* file = VG_(DebugInfo_get_filename)(di);
   if (!t->entries) t->entries = VG_(newXA)(VG_(malloc), t->cost_centre, VG_(free), sizeof(ObjectEntry*));
   ObjectEntry* e = nullptr;
   for (Word i = 0; i < VG_(sizeXA)(t->entries) && !e; i++) {
      ObjectEntry* x = *(ObjectEntry**)VG_(indexXA)(t->entries, i);
      if (x->text_lo == lo && x->text_hi == hi && VG_STREQ(x->file, file)) e = x;
   }
   if (!e) {
      e = (ObjectEntry*)kg::alloc_zeroed(t->entry_size, t->cost_centre);
      e->text_lo = lo;
      e->text_hi = hi;
      e->file = kg::strdup(file);
      e->usable = t->make(e, di);
      VG_(addToXA)(t->entries, &e);
   }
   e->epoch = epoch;
   t->last = e;
   return e->usable ? e : nullptr;
}

} // namespace kg
