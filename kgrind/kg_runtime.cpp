// operator new/delete for a tool linked without libstdc++.
#include "kg_runtime.h"

void* operator new(SizeT n) { return kg::alloc(n); }
void* operator new[](SizeT n) { return kg::alloc(n); }
void operator delete(void* p) noexcept { kg::release(p); }
void operator delete[](void* p) noexcept { kg::release(p); }
void operator delete(void* p, SizeT) noexcept { kg::release(p); }
void operator delete[](void* p, SizeT) noexcept { kg::release(p); }

// Called only if a pure virtual function is somehow invoked: a tool bug.
extern "C" void __cxa_pure_virtual() { VG_(tool_panic)((HChar*)"kgrind: pure virtual call"); }

void* kg::alloc_permanent(SizeT n)
{
   static const SizeT kChunk = 64 * 1024;
   static UChar* next;
   static SizeT left;
   n = (n + 7) & ~(SizeT)7;
   if (n > kChunk / 8) return alloc_zeroed(n, "kg.permanent");
   if (n > left) {
      next = (UChar*)alloc_zeroed(kChunk, "kg.permanent");
      left = kChunk;
   }
   void* p = next;
   next += n;
   left -= n;
   return p;
}

HChar* kg::strdup(const HChar* s)
{
   return VG_(strdup)("kg.strdup", s);
}
