// The hot path's contract: the data that inline IR (instrument/) and the
// activity unit's C++ (activity/) both read and write, and the helpers
// instrumented code calls. A field's meaning depends on the layout, fixed
// for the run by --k and --join-threads (comments name it):
//
//   payload  k = inf, each thread its own forest (acts_in_nodes): a node has
//            one activation pair, and its ActNode is the node's payload,
//            whose bytes are the node's first transition (48 bytes a
//            transition). With a separate view (--view-k) a node's `calls`
//            and `incl` are derived at output (counts_derived).
//   joined   k = inf, threads joined: ActEntry per (top, bottom) pair in the
//            thread's index; a transition's child is found from `active`
//            (its own_active), with no `child` field (72 bytes).
//   finite   finite k: ActEntry per pair; all 80 bytes of a transition.
//
// Transition    payload                    joined               finite
// calls         calls (fences:             calls                calls
//                 fence_parent)
// edge_incl     inclusive cost (signal fences: the interrupted instruction)
// active        child's view pair, or      &child->own_active   count of frames in
//                 child ActNode (view =                           child's ctx
//                 k-SF)
// site, fn_id   call site, function id     same                 same
// kind          read alone by IR           read alone           read as 32 bits
//                                                                 (3 zero bytes)
// rolled_in,    rolled recursion, node     0                    0
//   in_payload    payload
// kid_mask,     per array (kids grow)      per array            0 (kKidSlots slots,
//   kid_shift                                                     kFiniteKidShift)
// kids          own, node's kids word,     own or no_kids       the child's shared
//                 or no_kids                                      array, or no_kids
// ctx           -                          child->view->ctx()   same
// ctx_incl      -                          outermost part       same
// parent        - (parent_of)              parent ActNode       same
// child         - (child_of)               - (from active)      child ActNode
//
// ActNode       payload                    joined               finite
// view          - (view_of: active)        view pair or null    view pair or null
// own_active /  -                          frames of the thread kid array shared by
//   shared_kids                              in the context       its transitions
#pragma once
#include "kg_debuginfo.h"
#include "kg_forest.h"
#include "kg_frameless_levels.h"
#include "kg_inline_chains.h"
#include "kg_options.h"
#include "core/kid_layout.h"

namespace kg {

struct BlockInfo;
struct CounterWay;
struct LevelTierCounts;
struct BlockForest;
struct BlockState;

// ---- The hot path's data (inline IR reads and writes these fields) --------

// What a frame is.
enum FrameKind : UInt {
   kActivation,       // an activation of a traced function
   kTransparent,      // an untraced function: costs go to the caller's activation
   kSignalFence,      // the interrupted code's boundary while a handler runs
   kAltSignalFence,   // the same, with the handler on an alternate stack
   kStackSegment,     // -fsplit-stack: the frames above run on a new segment
};

// An activation of a thread's forest: a unique object per thread and
// activation pair (top, bottom), so that "same parent activation" is one
// pointer comparison. At k = inf (threads not joined) a node has one
// activation pair, (node, none): its ActNode is in the forest node's
// payload (core::Forest::payload; from the node's last two words, `calls`
// and `incl`, where those are derived at output: act_offset), whose bytes are the node's first
// transition (first_transition), not an ActNode's fields: its view is that
// transition's `active` (view_of), and no frames are counted there.
// Otherwise it follows its pair in an ActEntry, the entry of the thread's
// (top, bottom) index.
struct ActEntry;
struct Transition;

// The activation of an index entry keyed by its pair (top, bottom), and
// canonical(act): where its calls and costs go.
template <typename Pair> Activation pair_act(const Pair& p)
{
   return { (ForestNode*)p.a, (ForestNode*)p.b, p.depth, p.phase };
}
template <typename Pair> ForestNode* pair_ctx(const Pair& p) { return (ForestNode*)(p.b ? p.b : p.a); }

// An activation of the view forest (the body's contexts at --view-k), shared
// by many k-SF activations: the entry of a thread's (top, bottom) index of
// them. 32 bytes, no ActNode: nothing counts frames or keeps kids there.
struct ViewPair {
   const void* a;     // PairMap key: top
   const void* b;     // PairMap key: bottom
   UInt depth;        // the rest of the Activation
   UInt phase;
   // Its ctx(), which inline IR reads through a transition's `active` where
   // transitions keep no ctx (transition_ctx).
   ForestNode* view_ctx;
   Activation act() const { return pair_act(*this); }
   ForestNode* ctx() const { return pair_ctx(*this); }
};

static_assert(sizeof(ViewPair) == 32, "a view pair without an ActNode");

struct ActNode {
   // The same activation in the view forest, or none when the view is the
   // k-SF. In the payload layout, view_of finds it.
   const ViewPair* view;
   union {
      // Frames of this thread now in its context at k = inf with joined
      // threads, where a node has one activation pair of the thread (else
      // a count shared by the node's pairs: the transitions' `active`).
      // Not in a node's payload, where nothing reads a count: the node's
      // inclusive cost comes from its transitions (outermost_incl).
      UWord own_active;
      // At finite k: the kid array of the transitions into this activation
      // (shared_kids), null until one of them calls a traced function.
      Transition** shared_kids;
   };
};

static_assert(sizeof(ActNode) == 16, "an ActEntry's ActNode");

// An ActNode with its activation pair: the entry of a (top, bottom) index.
struct ActEntry {
   const void* a;     // PairMap key: top
   const void* b;     // PairMap key: bottom
   UInt depth;        // the rest of the Activation
   UInt phase;
   ActNode node;
   Activation act() const { return pair_act(*this); }
   ForestNode* ctx() const { return pair_ctx(*this); }
};

// A function called from one call site of one activation of a thread: the
// child activation and counters whose transfer to the forest and the call
// edge at that site is deferred (flush_transitions), so that a frame push
// or pop touches one record. Frames of other kinds (fences, untraced
// functions) have one too (site 0).
// At k = inf a transition's kid array has 1, 2, 4, 8 or kKidSlots slots: when a
// new kid's slot is taken it is laid out again with a shift of the key that
// separates its kids, growing only when no shift does (most deep forests'
// transitions call one or two callees: cc1plus at k=inf, 57 % of 1.58 M
// arrays hold one kid).
// At finite k the arrays have kKidSlots from the first kid on, and inline IR
// masks with the constant kKidOffsetMask (cppvirt k=2 ran 4-6 % slower
// with the mask loaded from the transition).
using core::kKidSlots;
const UWord kKidOffsetMask = (kKidSlots - 1) * sizeof(void*);
// Whether kid arrays grow from one slot (k = inf) or start full.
Bool kids_grow();
// Whether a thread's k-SF ActNodes are its forest nodes' payloads (k = inf:
// one activation pair a node; a joined forest's nodes are several threads').
Bool acts_in_nodes();
// The kid slot of a call of function fn_id from site in an array of
// kid_mask + 1 slots: kid_key(fn_id, site) shifted right by kid_shift,
// masked (core/kid_layout.h). Inline IR computes the key from the pending
// call's site and the constant kid_key(fn->id, 0); at k = inf the slot's
// byte offset as ((key >> kid_shift) & kid_mask) << 3, where the last shift
// is the load's address mode's scale, and each array has the shift that
// gives its kids distinct slots in the fewest slots (add_kid); at finite k
// as key & kKidOffsetMask, the same with the shift kFiniteKidShift.
//
// The key at finite k, where the slot is fixed, is core::fixed_kid_key:
// a caller's nearby call sites often call functions of nearby ids (ids are
// given as functions are first translated). The xor key collides there at
// ds = 1, di = -1 (callheavy's walk calling mix and then walk: each call
// evicted the other's kid, 2.9x `none` instead of 1.8x); a virtual call's
// consecutive ids (ds = 0) get distinct slots either way.
// At k = inf, where the layouts choose a shift, the key stays the xor
// (core::growing_kid_key): cppvirt's hot loop (more kids in one frame than
// any shift separates in 16 slots) missed 3.1 M predictions with it, 6.5 M
// with site + (fn_id << 3) and 16.8 M with the finite key (k=inf 12 %
// slower).
using core::kKidIdFactor;
inline UWord kid_key(UInt fn_id, Addr site)
{
   if (is_inline_site(site)) return level_kid_key(site_chain(site));
   return kids_grow() ? core::growing_kid_key(fn_id, site) : core::fixed_kid_key(fn_id, site);
}
inline UInt kid_slot(UInt fn_id, Addr site, UWord kid_mask, UInt kid_shift)
{
   return core::kid_slot_of_key(kid_key(fn_id, site), kid_mask, kid_shift);
}
const UInt kFiniteKidShift = core::kFixedKidShift;
struct Transition {
   union {
      ULong calls;      // activations since the last flush
      // A fence's parent (the interrupted frame's transition) where
      // ActNodes are node payloads (parent_of).
      const Transition* fence_parent;
   };
   union {
      ULong edge_incl;  // their inclusive cost
      // A signal fence's: the instruction the signal interrupted (where the
      // signal restorer is charged).
      Addr interrupted;
   };
   // Frames now in child->ctx() (active_count); in the payload
   // layout (no frames are counted there), the child's view pair (its
   // view_ctx is the context of the counters), or the child ActNode itself
   // when the view is the k-SF (48 bytes after the context): inline IR
   // finds the context with one load or none. The child is then the
   // transition's own payload's node (in_payload) or the word before the
   // transition (child_of).
   UWord* active;
   Addr site;           // the call site (instruction) of an activation's frame
   // FrameKind. Inline IR reads it with the next three bytes as 32 bits at
   // finite k (where they are 0), alone at k = inf.
   UChar kind;
   // In the payload layout: an activation's transition into its
   // parent's own context (rolled simple recursion; parent_of), and whether
   // the transition is its child node's payload (first_transition). Not
   // read by inline IR.
   UChar rolled_in : 1;
   UChar in_payload : 1;
   // At k = inf (kids_grow): slots of kids - 1, at most kKidSlots - 1; 0
   // at finite k, where every array has kKidSlots (kid_mask_of).
   UChar kid_mask;
   // At k = inf: kid_slot's shift for this array (0 at finite k).
   UChar kid_shift;
   // The id of the function running in the frame (kNoFunction for a
   // thread's root and no_transition): in the payload layout
   // frame_fn finds the function from it, and inline IR compares it with
   // its function's (32 bits, next to `kind`).
   UInt fn_id;
   // The transitions this frame's calls pushed, by callee and call site:
   // kids[s] is the last one whose (function, site) has slot s (kid_slot),
   // or no transition. A traced function's first block pushes the top
   // frame's transition's kid in the slot of (its function, the pending
   // call's site) inline when that is a transition into its function from
   // that site (instrument/frames_ir.cpp, add_inline_entry).
   // A shared array of no transitions until this transition's frames call
   // a traced function: half of a deep forest's nodes never call one
   // (cc1plus at k=inf: 1.53 M of 3.0 M).
   Transition** kids;
   // In the payload layout a transition ends here (48 bytes): a
   // node is its whole call chain, so the parent is found from the child
   // (parent_of) and the part of edge_incl in outermost activations is all
   // of it unless the transition is rolled_in (outermost_incl); the
   // function is fn_id's (frame_fn) and the context the child's
   // (transition_ctx). A transition there that is not a node's payload
   // follows its child ActNode's address (child_of).
   ForestNode* ctx;     // child->view->ctx(): the context of the block counters
   // The part of edge_incl in outermost activations of the child's context.
   ULong ctx_incl;
   // Not read by inline IR.
   // The parent ActNode (a Transition for fences). With a key of the
   // transition's own fields (transition_key) it is the transition's key in
   // its thread's index.
   const void* parent;
   // The call edge (parent view ctx -> child view ctx at site) is found when
   // the counters are flushed, not kept here (8 bytes a k-SF node at k=inf).
   // The frame's activation (child_of). Not at k = inf, where `active` is
   // its own_active: transitions end before this field there (72 bytes
   // with joined threads).
   ActNode* child;
};

static_assert(offsetof(Transition, ctx) == 48, "a node payload's transition");
static_assert(offsetof(Transition, child) == 72, "a transition whose child is found from `active`");
static_assert(sizeof(Transition) == 80, "a transition with its child");

const UInt kNoFunction = ~0u;
// The function running in tr's frames (none for a thread's root).
FnInfo* frame_fn(const Transition* tr);
// The context of tr's block counters: its child's view context.
ForestNode* transition_ctx(const Transition* tr);

struct Frame {
   Addr sp;             // SP at entry, just after the call pushed the return address
   ULong ir_at_entry;
   Transition* tr;
};

// The function a call into blk activates (by address without symbols).
FnInfo* activated_function(BlockInfo* blk);

// The running thread's state as inline IR sees it. One instance; the
// thread layer swaps its contents at every thread switch.
struct Now {
   Addr top_sp;               // top->sp, or ~0 while no frame can have died
   Addr call_site;            // the last call (or tail call's jump)
                              // instruction: where its call edge is
   ForestNode* ctx;           // top->tr->ctx, or kCallPending after a call
                              // until the callee's first block
   ULong ir;                  // instructions run by this thread
   Frame* top;                // the top frame
   Frame* frames_last;        // the last usable frame: a push needs top + 1 <= frames_last
                              // (the one after it is writable)
   // Function mode: a block ending in a direct call to a PLT stub leaves
   // the stub's address and a counter of its own (its context's) for the
   // stub's instructions, so the stub, which runs in every caller's
   // context, need not find counters of its own (instrument/prologue.cpp).
   Addr plt_stub;             // 0 once the stub has used plt_counter
   ULong* plt_counter;
   // Block modes: where the block activation that the next recorded block
   // continues is kept, and its forest (inter: the thread's, always; intra:
   // the activation of frame bb_top, valid while that frame, entered at Ir
   // bb_ir, is the top one). The block trace's runs (kg_blocks.h) continue
   // it too.
   BlockState** bb_state;
   Frame* bb_top;
   ULong bb_ir;
   BlockForest* bb_forest;
   // The last indirect jump's instruction (not a PLT stub's): where a tail
   // call that the helper sees (a jump into a function's first instruction
   // with no call pending) comes from; 0 once used. After a signal, the
   // interrupted instruction (the handler's entry's site).
   Addr jump_site;
   // Where that jump went (kAnyJumpTarget after a signal): the site is an
   // entry's only where the jump went to it, or to a PLT stub that jumps
   // on (a jump that landed inside a function, a longjmp's, is no entry's).
   Addr jump_target;
   // A block with a counter array offset whose check failed: its counters,
   // as the helper found them (kg_block_counters, kg_entry_counters).
   ULong* found_counters;
   // With events beyond Ir: frame f's readings of the event clocks at its
   // entry (activity/event_clocks.cpp) are at ev_rows + (f >> 3) *
   // frame_row_scale(), mod 2^64 (the running stack's rows).
   UWord ev_rows;
   // Frameless inlined levels (kg_frameless_levels.h): the chain of the
   // last run of the physical frame on top (0 at a function's entry; 0
   // while level frames are on top, whose chain is then the running one).
   UWord chain;
};
extern Now* kg_now;
const Addr kAnyJumpTarget = ~(Addr)0;

// Whether instructions, calls and inclusive costs are being counted
// (regions of interest: activity/counting.cpp switches it; the counters,
// jumps and counter arrays read it).
extern Bool kg_counting;
// In the tool heap, next to the blocks, call sites and counters, so that
// inline IR addresses all of them from one base register (instrument/).
// One cache line holds what function mode's inline IR reads and writes
// (callheavy k=2 ran 4 % slower when a layout change split it over two).
static_assert(offsetof(Now, bb_state) <= 64, "function mode's part of Now fits one cache line");

// kg_now->ctx while a call is pending (the previous block ended in a call):
// it matches no block's cached context, so the first block after a call
// always misses the inline context check, which therefore also tells "a
// call is pending" (one guard, not two). It is the only record of a
// pending call. A direct tail call's jump makes a call pending too, as does
// ld.so's lazy-binding trampoline when its frame dies at its jump to the
// resolved function (callgrind's "pop on jump"): the call it resolved
// continues there.
// It is a node of no forest, with an empty counter array (kg_counters.h), so
// that a block's counter array check may read through it.
extern ForestNode* const kCallPending;

// A context node's counter array and its limit (counter_arrays_on;
// kg_counters.h): two payload words, after the count of frames in a k-SF's
// node, first in a separate view forest's (--view-k).
inline UInt array_payload_word() { return separate_view() ? 0 : 1; }
inline ULong** counter_array_word(ForestNode* ctx) { return (ULong**)(ctx + 1) + array_payload_word(); }
inline UInt* array_limit_word(ForestNode* ctx) { return (UInt*)((UWord*)(ctx + 1) + array_payload_word() + 1); }

// The largest SP change instrumentation follows as a constant offset
// (Valgrind's --max-stackframe default). Stack switches are told from
// returns by the memory SP lies in, not by distance (activity/stack_switch.cpp).
const Addr kMaxStackFrame = 2000000;

// How calls leave their return address (docs/design/shadow-stacks.md,
// "arm64"): x86-64's call pushes it, so a frame's SP at entry lies below
// its caller's and a frame dies when SP rises above it; arm64's `bl`/`blr`
// put it in the link register (x30) and leave SP alone, so a callee's SP
// at entry may equal its caller's SP, and returns are told by where they
// return to (activity/link_register_returns.cpp, instrument/link_register_ir.cpp).
#if defined(VGA_arm64)
const Bool kCallsPush = False;
const Addr kCallLength = 4;   // a `bl`/`blr`: the return address is the call's + 4
#else
const Bool kCallsPush = True;
#endif
// The bytes a call pushes: a frame's SP at entry lies this far below the
// SP its return leaves.
const Addr kReturnSlot = kCallsPush ? sizeof(Addr) : 0;

// Helpers called from instrumented code (see instrument/).
extern "C" {
// SP rose above the top frame: pop the frames that died.
void VG_REGPARM(1) kg_unwind(Addr sp);
#if defined(VGA_arm64)
// A `ret` to target that the inline pop did not take: the frames entered
// at this SP, down to the one whose call returns to target, if any.
void VG_REGPARM(2) kg_link_return(Addr target, Addr sp);
#endif
// A block with a counter array offset missed its context's array: as
// kg_block_start, leaving its counters (in the array, or its way 0) in
// kg_now->found_counters. The block by its id: a 5-byte constant, where
// its address is a 10-byte one or a register.
void VG_REGPARM(1) kg_block_counters(UWord block_id);
// The same for a function's first block after its inline entry.
void VG_REGPARM(1) kg_entry_counters(UWord block_id);
// --inline-frames: kg_block_counters and kg_block_start for a block whose
// first instructions are its function's own code (no inline chain): the
// inlined levels on top are popped first (activity/inline_frames.cpp).
void VG_REGPARM(1) kg_own_block_counters(UWord block_id);
void VG_REGPARM(1) kg_own_block_start(BlockInfo* blk);
// A block that may start an activation (entered after a call, or a
// function's first block); ctx_before is kg_now->ctx at its start
// (kCallPending: after a call); callee the function a call into it
// activates (activated_function, found at translation: a function without
// a symbol is a table look-up, 1.5 % of cc1plus's time when the helpers
// found it).
void VG_REGPARM(3) kg_block_entry(BlockInfo* blk, Addr sp, ForestNode* ctx_before, FnInfo* callee);
// A function's first block pushed a frame from its entry cache, but the
// push was wrong (see instrument/frames_ir.cpp): undo it, then as kg_block_entry.
void VG_REGPARM(3) kg_entry_fixup(BlockInfo* blk, Addr sp, ForestNode* ctx_before, FnInfo* callee);
// Any other block, when its frame may have died (SP rose), a call is pending,
// or its counters are another context's: everything the prologue may need.
// (It reads SP from the guest state: one argument less to compute in every
// run of every block.)
void VG_REGPARM(1) kg_block_start(BlockInfo* blk);
// An indirect jump of a function with a symbol left its object: into code
// without a symbol (a stripped library's static function, a .fini) it is a
// tail call, which the target's block then starts as after a call.
void VG_REGPARM(2) kg_jump_out(Addr target, Addr jump_instr);
// A computed jump of function fn_id at jump_instr, SP sp, to the function
// a tail call from it entered before (activity/tail_jumps.cpp): a pending
// call at jump_instr when it jumps from an activation of that function at
// its entry SP.
void VG_REGPARM(3) kg_tail_jump(Addr sp, Addr jump_instr, UWord fn_id);
// A direct jump into another function fn, not at its first instruction,
// while the top frame runs another function: if an activation of fn is
// open among the 16 frames below the top frame (no fence between), the
// jump returns to it and the frames above it are popped (a "ret-jump").
void VG_REGPARM(1) kg_jump_into(FnInfo* fn);
// A PLT stub's block, when SP rose or its counters are not its caller's:
// the stub's instructions are the caller's, and a pending call stays
// pending until the stub jumps to the real function.
void VG_REGPARM(1) kg_plt_start(BlockInfo* blk);
// A signal restorer's superblock (one flush point, counted into scratch):
// after a handler returned into it, its instructions are charged to the
// instruction the signal interrupted; else it counts as any block does.
void VG_REGPARM(1) kg_sigreturn_code(BlockInfo* blk);
// A run of blk's instructions whose inline chain is `chain` starts while
// the top frame's levels are another chain's: pops and pushes inlined
// levels to it (activity/inline_frames.cpp), leaving blk's counters in the
// context it runs in in kg_now->found_counters (found through the run's way,
// where it has one, when they are no array's). tier: the block's counts at
// the levels' tier 1 (kg_tiers.h), else nullptr; at_start: the run is the
// superblock's first.
void VG_REGPARM(3) kg_inline_enter(BlockInfo* blk, UWord chain, CounterWay* way, LevelTierCounts* tier,
                                   UWord at_start);
// Inline IR pushed or popped the levels of a run of blk (the inline fast
// path): blk's counters in the context it now runs in, an inlined level's,
// in found_counters, and in the run's way when they are no array's.
void VG_REGPARM(2) kg_run_counters(BlockInfo* blk, CounterWay* way);
// The same where the run's context has no array of its block's function
// (or no room for it) and the run has no way: its counters looked up,
// the block's ways untouched.
void VG_REGPARM(1) kg_run_array_counters(UWord block_id);
// blk returns from its function: the inlined levels on top are popped.
// tier: as kg_inline_enter's.
void VG_REGPARM(2) kg_inline_leave(BlockInfo* blk, LevelTierCounts* tier);
// Events beyond Ir (activity/event_clocks.cpp): a block that may have
// popped frame f inline, whose transition's arrays are not made yet or
// whose rare events' clocks (event_is_rare: their column pairs,
// frames_ir.cpp) moved while it ran: if it did pop it, f's event clocks
// close (its context's count of frames already lowered): all of them, or
// the rare ones that the inline pop left.
void VG_REGPARM(1) kg_frame_events_close(const Frame* f);
}

// Events beyond Ir: the bytes of a frame's row of readings, times 3's
// inverse mod 2^64 (Now::ev_rows).
UWord frame_row_scale();
// Where frames of a transition add their inclusive events as they close
// (activity/event_clocks.cpp): its call edge's and its k-SF node's arrays,
// whose addresses the transition keeps after its fields (at
// transition_events_offset(); with events a transition has that much more
// room), null until its first frame closes with counting on. The edge is
// kg_events_sink for a thread's root, the node at k = inf for a rolled
// transition (never its node's outermost activation). An inline pop adds to
// them (to the node at finite k when its context's count of frames reached
// 0) when they are made and counting is on (kg_events_paused zero), else
// to kg_events_sink, and then calls kg_frame_events_close, which makes them.
struct TransitionEvents {
   ULong* edge;
   ULong* node;
};
// The byte offset of a transition's TransitionEvents (transition_bytes()).
UWord transition_events_offset();
inline TransitionEvents* events_arrays(const Transition* tr)
{
   return (TransitionEvents*)((char*)tr + transition_events_offset());
}
// What inline pops add where nothing counts; never read.
extern ULong kg_events_sink[];

} // namespace kg
