// The freestanding C++ runtime the tool needs: allocation through the core's
// VG_(malloc)/VG_(free). No exceptions, no RTTI, no static constructors.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// Cost-centre name shown by Valgrind's memory profiling (--profile-heap).
inline void* alloc(SizeT n) { return VG_(malloc)("kg.alloc", n); }
inline void* alloc_zeroed(SizeT n) { return VG_(calloc)("kg.alloc", 1, n); }
inline void release(void* p) { if (p) VG_(free)(p); }

// A copy of a C string on the tool heap; never freed for interned names.
HChar* strdup(const HChar* s);

} // namespace kg
