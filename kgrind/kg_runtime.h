// The freestanding C++ runtime the tool needs: allocation through the core's
// VG_(malloc)/VG_(free). No exceptions, no RTTI, no static constructors.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// Cost-centre name shown by Valgrind's memory profiling (--profile-heap).
// Pass a more specific one where a kind of data may grow large.
inline void* alloc(SizeT n, const HChar* cc = "kg.alloc") { return VG_(malloc)(cc, n); }
inline void* alloc_zeroed(SizeT n, const HChar* cc = "kg.alloc") { return VG_(calloc)(cc, 1, n); }
inline void release(void* p) { if (p) VG_(free)(p); }

// Zeroed memory for objects that live until the tool exits (per-block data,
// counters, map entries), aligned to `align` (a power of two; 8 by default):
// small ones carved from large chunks, because VG_(malloc) adds 32 bytes of
// headers and red zones to every block (sqlite3 made 110 k such blocks: 3.5
// MB of the core arena). Never freed.
void* alloc_permanent(SizeT n, SizeT align = 8);
// The permanent block p of n bytes keeps only its first m: the rest is given
// back if nothing was allocated after it (else it stays unused).
void shrink_permanent(void* p, SizeT n, SizeT m);

// A copy of a C string on the tool heap; never freed for interned names.
HChar* strdup(const HChar* s);

} // namespace kg
