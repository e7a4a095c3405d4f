// The tool's per-thread k-Slab Forests: the host-independent core in core/
// (which knows nothing of Valgrind) with Valgrind's allocator plugged in.
#pragma once
#include "kg_valgrind.h"
#include "core/ksf.h"
#include "core/forest_ops.h"

namespace kg {

using ForestNode = core::Node;          // label, calls, excl, incl
using Activation = core::Activation;    // the (top, bottom) pair (Listing 3.2)

// Label of the synthetic root of every thread's first tree; function i has
// label i + 1.
const UInt kRootLabel = 0;

struct Forest {
   core::Forest sf;
};

// A forest of depth k (--k, or --view-k) for the --unroll-simple-rec
// option, with payload_bytes of the caller's after each node; small: its
// node memory starts at a few KB (a thread's: there may be thousands of
// threads of a few nodes each).
Forest* forest_new(UInt k, UInt payload_bytes = 0, Bool small = False);
// A forest that will grow little if at all (its thread ended): its memory
// cut to what its nodes need (core::Forest::compact_roots).
void forest_compact(Forest* f);
// Zeroes every counter (after fork, in the child).
void forest_reset(Forest* f);
// dst := join(dst, src) (Def. 4*).
void forest_join(Forest* dst, const Forest* src);

inline Activation forest_root(Forest* f) { return f->sf.enter_root(); }
inline Activation forest_enter(Forest* f, const Activation& parent, UInt label)
{
   return f->sf.enter(parent, label);
}
// The node holding the activation's full k-context: costs go there.
inline ForestNode* forest_canonical(const Activation& a) { return core::Forest::canonical(a); }

} // namespace kg
