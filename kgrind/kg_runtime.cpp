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

HChar* kg::strdup(const HChar* s)
{
   return VG_(strdup)("kg.strdup", s);
}
