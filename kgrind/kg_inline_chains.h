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
   UInt kids;           // chains interned with this one as their parent
   UWord kid_key;       // its level's key in kid arrays (level_kid_key)
};

// An inlined level's frame has this call site: kInlineSiteBase + 8 times its
// chain id, above every user-space address (so that a real call's site is
// never one, and the check "is the top frame an inlined level" is one
// compare). A level's kid slot comes from its own key (level_kid_key).
const Addr kInlineSiteBase = 0xFFFFF00000000000ULL;
inline Bool is_inline_site(Addr site) { return site >= kInlineSiteBase; }
inline Addr inline_site(UInt chain) { return kInlineSiteBase + ((Addr)chain << 3); }
inline UInt site_chain(Addr site) { return (UInt)((site - kInlineSiteBase) >> 3); }

// The chain of the instruction at a of function fn (0: none, or no inline
// records there).
UInt inline_chain_at(Addr a, FnInfo* fn);
// id -> chain (inline: the inline-frames helpers look chains up at every
// crossing of an inline boundary they take).
extern InlineChain* inline_chains;
inline const InlineChain& inline_chain(UInt id) { return inline_chains[id]; }
// A level's key in its parent's kid array (kid_key, for its site): the
// siblings of one parent chain (for first levels: of one physical
// function) have consecutive slots, so that up to 16 never share one.
// Keyed by the function and chain id, as calls are, levels of one frame
// took each other's slots: cppvirt (10 units, k=2) had 13.4 M of its 15.3
// M level pushes that missed their kid so (19.1 M helper calls; 0.3 M and
// 7.9 M keyed so).
inline UWord level_kid_key(UInt chain) { return inline_chains[chain].kid_key; }
// Whether chain `outer` is `inner` or one of its parents.
Bool chain_contains(UInt inner, UInt outer);
// The depth of the longest chain that both a and b are or extend (0: only
// the function's own code).
UInt chains_common_depth(UInt a, UInt b);

// Where a frame's call site is in the source: a call instruction's
// position, or for an inlined level's site (is_inline_site) the line its
// caller's source calls it at, from the inline records.
void call_site_loc(Addr site, SourceLoc* out);

} // namespace kg
