#include "kg_objects.h"

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

} // namespace kg
