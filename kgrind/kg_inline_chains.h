// Inline chains (--inline-frames): the functions a code address lies in
// inlined, outermost first, from the debug info's inline records. A chain
// is interned with its parent (the chain one level shorter), so that a
// chain's id names its whole path; id 0 is the empty chain (code of the
// physical function itself).
#pragma once
#include "kg_debuginfo.h"

namespace kg {

struct InlineChain {
   UInt parent;         // the chain without its innermost level
   UInt depth;          // levels (1 for a function inlined into the physical one)
   FnInfo* fn;          // the innermost level's function ("g [inlined]")
   UInt call_file;      // where the level above calls it: file id and line
   UInt call_line;
};

// An inlined level's frame has this call site: kInlineSiteBase + its chain
// id, above every user-space address (so that a real call's site is never
// one, and the check "is the top frame an inlined level" is one compare).
const Addr kInlineSiteBase = 0xFFFFF00000000000ULL;
inline Bool is_inline_site(Addr site) { return site >= kInlineSiteBase; }
inline Addr inline_site(UInt chain) { return kInlineSiteBase + chain; }
inline UInt site_chain(Addr site) { return (UInt)(site - kInlineSiteBase); }

// The chain of the instruction at a of function fn (0: none, or no inline
// records there).
UInt inline_chain_at(Addr a, const FnInfo* fn);
const InlineChain& inline_chain(UInt id);
// Whether chain `outer` is `inner` or one of its parents.
Bool chain_contains(UInt inner, UInt outer);

} // namespace kg
