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

static Addr permanent_next, permanent_end;

void* kg::alloc_permanent(SizeT n, SizeT align)
{
   static const SizeT kChunk = 64 * 1024;
   Addr& next = permanent_next;
   Addr& end = permanent_end;
   auto align_up = [align](Addr a) { return (a + align - 1) & ~(Addr)(align - 1); };
   n = (n + 7) & ~(SizeT)7;
   if (n > kChunk / 8) return (void*)align_up((Addr)alloc_zeroed(n + align - 1, "kg.permanent"));
   if (align_up(next) + n > end) {
      next = (Addr)alloc_zeroed(kChunk, "kg.permanent");
      end = next + kChunk;
   }
   next = align_up(next);
   void* p = (void*)next;
   next += n;
   return p;
}

void kg::shrink_permanent(void* p, SizeT n, SizeT m)
{
   auto round = [](SizeT x) { return (x + 7) & ~(SizeT)7; };
   if ((Addr)p + round(n) == permanent_next) permanent_next = (Addr)p + round(m);
}

HChar* kg::strdup(const HChar* s)
{
   return VG_(strdup)("kg.strdup", s);
}
