// Shadow stacks keyed by the stack pointer.
//
// Every frame records the SP at its activation's entry (just after the call
// pushed the return address). A frame whose recorded SP lies below the
// current SP has returned, one way or another: by ret, longjmp, an exception
// unwinding several frames, or _dl_runtime_resolve jumping to the resolved
// function. Such frames are popped, with their inclusive cost closed, before
// anything else happens; instrumented code checks `SP > kg_now->top_sp`
// inline and calls kg_unwind only when it holds.
//
// A thread may run on several stacks (makecontext/swapcontext, coroutine
// libraries): it has one shadow stack per stack it ran on, each tied to the
// memory it lies in (the thread's own stack, or the stack the program
// registered there with VALGRIND_STACK_REGISTER, else the mapping of the
// first SP seen on it). When SP leaves the running stack's memory, the thread
// switched: the running shadow stack is suspended and the one whose frames
// SP lands on (just below one of them) resumes, or a new one starts (a new
// coroutine: its first function is a root of the thread's forest, as a
// thread's first function is). However far SP moves within one stack's
// memory, it is a return or an unwind (longjmp, exceptions), never a switch.
// Coroutine stacks that share a mapping (malloc'd, carved from one mmap) are
// told apart by what the program does, not by distance: SP rising above a
// coroutine's first frame, a function entered below the top frame without
// a call, code reached as a return from a suspended stack's frame.
// A suspended stack's frames are paused: their inclusive costs count only
// what ran on their own stack, so no instruction is in the inclusive cost of
// two coroutines.
#include "kg_activity.h"
#include "kg_blocks.h"
#include "kg_options.h"
#include "kg_pairmap.h"
#include "kg_regions.h"
#include "kg_runtime.h"

namespace kg {

// In the tool heap, next to the blocks, call sites and counters, so that
// inline IR addresses all of them from one base register (kg_instrument.cpp).
// One cache line holds what function mode's inline IR reads and writes
// (callheavy k=2 ran 4 % slower when a layout change split it over two).
Now* kg_now;
static_assert(offsetof(Now, bb_state) <= 64, "function mode's part of Now fits one cache line");

// What a transition's empty kid slots hold: a transition that matches no
// function, so that inline IR may read through it.
// Its `active` (activity_init): where ActNodes are node payloads a view
// pair or an ActNode after a node, which inline IR reads the context
// through before it knows the kid is the one.
static ViewPair no_view_pair;
static struct {
   ForestNode node;
   ActNode act;
} no_node = {};
static Transition* no_kids[kKidSlots];
static Transition no_transition = { {0}, {0}, nullptr /* activity_init */, 0, kActivation, 0, 0, 0, 0, kNoFunction,
                                    no_kids, nullptr, 0, nullptr, nullptr };


Bool acts_in_nodes() { return clo.k == kInfiniteK && !clo.join_threads; }

// Whether a thread's k-SF nodes keep no inclusive cost and no count of
// calls during the run: where ActNodes are node payloads and the body is a
// separate view, a node's exclusive cost is its activations' inclusive cost
// less their callees' (flush_transitions), so its inclusive cost is its
// exclusive cost plus its children's inclusive costs; and its calls are its
// transitions' calls, which count since the counters were last zeroed
// (flush_transitions). Both are found when a profile is written
// (flush_all_transitions, derive_node_counts). The node's last two words, `calls` and `incl`, are
// then the first two of its payload (act_offset), its first transition's
// `calls` and `edge_incl`: 16 bytes a k-SF node (cc1plus at k=inf: 46 MB).
static Bool counts_derived() { return acts_in_nodes() && separate_view(); }

// Where node counts are derived: whether the transitions' calls are in the
// nodes and call edges for good (finish_all_threads, which forgets the
// index of transitions), or only while a profile is written.
static Bool calls_added_for_good = False;

// Where ActNodes are node payloads: the bytes from a node to its ActNode
// (its first transition), which overlaps the node's `calls` and `incl`
// where those are derived.
static UWord act_offset() { return counts_derived() ? offsetof(ForestNode, calls) : sizeof(ForestNode); }
static ActNode* act_after(const ForestNode* node) { return (ActNode*)((char*)node + act_offset()); }
static ForestNode* node_before(const ActNode* n) { return (ForestNode*)((char*)n - act_offset()); }

// A transition's parent ActNode (a Transition for fences).
static const void* parent_of(const Transition* tr);

// A transition's index key besides its parent (see transition_key).
static const void* transition_key(const Transition* tr);
struct TransitionKeys {
   static const void* a(const Transition* tr) { return parent_of(tr); }
   static const void* b(const Transition* tr) { return transition_key(tr); }
};

static void settle_frames(Frame* first, Frame* top, ULong now);

namespace {

// Block modes, intra: the block activation of one function frame. It belongs
// to the frame at the same depth only if (sp, ir_at_entry, fn) match, so
// pushing frames costs nothing in any mode.
struct BlockFrame {
   Addr sp;
   ULong ir_at_entry;
   FnInfo* fn;
   BlockForest* forest;     // of (thread, fn), or of fn when threads are joined
   BlockState* state;       // the last block of this activation
   ULong serial;            // activation number in the thread (--dump-blocks)
};

} // namespace

// Memory that -fsplit-stack code continues a stack in (__morestack's new
// segment), above a kStackSegment fence; outer: the one it came from, if it
// is a segment too.
struct StackSegment {
   Addr lo, hi;
   StackSegment* outer;
};

// One stack of a thread (see the top of this file).
struct ShadowStack {
   Frame* frames;           // frames[0] the base, frames[-1] a sentinel
   UInt cap;                // usable frames
   Frame* top;              // while suspended (kg_now->top while running)
   Addr lo, hi;             // the memory the stack lies in
   ULong suspended_at;      // the thread's Ir when it was left
   UInt alt_fences;         // handlers running on an alternate signal stack
   StackSegment* segment;   // the innermost -fsplit-stack segment it runs on
   Bool registered;         // lo, hi: a stack the program registered
   // A coroutine stack in a mapping (not registered): the SP its first
   // function was entered at without a call (0: not known). Nothing of the
   // coroutine's lies above it but that function's return address, so SP
   // rising farther while its frames are open left the stack.
   Addr entry_sp;
   // While suspended: the return address in its top frame's slot, where a
   // resume returns to (0: none read).
   Addr resume_pc;
   // While suspended: the process's count of suspensions when it was left
   // (resumed_stack: the most recent of a thread's stacks and another's).
   ULong suspension;
   // While suspended: its place in the thread's suspended stacks (newest
   // first), its order in them (listed: 0 while not suspended), and the
   // lowest and highest SP of its open frames (the index: index_stack).
   ShadowStack* next;
   ShadowStack* prev;
   ULong listed;
   Addr span_lo, span_hi;
   Bool indexed;                     // in the index, else in its list of
   ShadowStack* unindexed_next;      // the thread's other suspended stacks
   ShadowStack* unindexed_prev;
};

// The memory a stack runs in now: its innermost segment's, else its own.
static Addr memory_lo(const ShadowStack* s) { return s->segment ? s->segment->lo : s->lo; }
static Addr memory_hi(const ShadowStack* s) { return s->segment ? s->segment->hi : s->hi; }

// Stacks the program registered (VALGRIND_STACK_REGISTER): sorted by lo,
// disjoint (a registration ends those it overlaps: their memory was freed,
// and the core does not tell tools of VALGRIND_STACK_DEREGISTER).
struct StackRange {
   Addr lo, hi;
};
static StackRange* registered_stacks;
static UInt n_registered_stacks, registered_stacks_cap;

// The registered stack sp lies in, if any.
static const StackRange* registered_stack_at(Addr sp)
{
   UInt lo = 0, hi = n_registered_stacks;   // the first range above sp is in [lo, hi]
   while (lo < hi) {
      UInt mid = (lo + hi) / 2;
      if (registered_stacks[mid].lo <= sp) lo = mid + 1;
      else hi = mid;
   }
   if (lo == 0 || registered_stacks[lo - 1].hi < sp) return nullptr;
   return &registered_stacks[lo - 1];
}

// Is sp in a registered stack that is not s's (nor one holding all of s)?
// A heap mapping, or a thread's stack, may hold registered coroutine stacks:
// their memory is not the mapping's stack's.
static Bool in_other_registered_stack(const ShadowStack* s, Addr sp)
{
   if (!n_registered_stacks || s->segment) return False;
   const StackRange* r = registered_stack_at(sp);
   return r && !(r->lo <= s->lo && r->hi >= s->hi);
}

static Bool in_memory_of(const ShadowStack* s, Addr sp)
{
   return sp >= memory_lo(s) && sp <= memory_hi(s) && !in_other_registered_stack(s, sp);
}

struct ThreadState {
   ThreadId tid;
   UInt serial;             // 1, 2, ... in order of creation (tids are reused)
   ThreadState* next;       // all threads ever seen, newest first
   ShadowStack* stack;      // the running stack's (its base is __root__ on
   ShadowStack* own;        // the thread's own stack)
   ShadowStack* suspended;  // the others
   UInt n_suspended;        // while they are not indexed
   OSet* spans;             // the index of suspended stacks with open frames
   Addr widest_span;        // the most span_hi - span_lo of any in spans
   ShadowStack* unindexed;  // the other suspended stacks: empty, or spread wide
   Forest* forest;
   Forest* view;            // the body's contexts (see ActNode), or forest
   Now saved;               // kg_now while another thread runs
   PairMap<ActEntry, kDenseLoad> acts;            // (top, bottom) -> ActNode, unless acts_in_nodes()
   PairMap<ViewPair> view_acts;                   // the same for the view forest
   PairIndex<Transition, TransitionKeys, 1024, kDenseLoad> transitions;   // (parent, transition_key)
   // Block modes.
   BlockFrame* bb;          // intra: indexed by frame depth
   UInt bb_cap;
   BlockForest** fn_forests;   // intra: by function id (not joined)
   UInt n_fn_forests;
   ULong bb_activations;
   BlockForest* inter_forest;  // inter
   BlockState* inter_state;
   // The call that entered ld.so's lazy-binding trampoline: it continues in
   // the resolved function (unwind_to_sp).
   Addr resolver_call_site;
   // Regions: the Ir of the thread's clock that is not counted (before the
   // last zeroing, or while counting was off), and the clock when counting
   // last paused.
   ULong ir_uncounted;
   ULong ir_at_pause;
   // Where calls count from the last zeroing on (counts_derived), while
   // counting is off: the calls of the transitions that had any when it
   // paused, which discard_uncounted puts back.
   struct TransitionCalls* calls_at_pause;
   UWord n_calls_at_pause;
};

struct TransitionCalls {
   Transition* tr;
   ULong calls;
};

static void run_trace();   // block modes

namespace {

ThreadState** by_tid;      // VG_N_THREADS entries (a run-time setting)
ThreadState* all_threads;  // every thread that ran, newest first
UInt thread_serials;

// How many frames of a thread are activations of a node now.
struct ActiveCount {
   const void* a;           // ForestNode*
   const void* b;           // ThreadState*: threads may share a joined forest
   UWord n;
};
PairMap<ActiveCount> active_counts;

ThreadState* current = nullptr;

// kg_now of thread t (its saved copy unless it is the running one).
Now& now_of(ThreadState* t) { return t == current ? *kg_now : t->saved; }

Forest* joined_forest = nullptr;
Forest* joined_view = nullptr;
BlockForest** joined_fn_forests = nullptr;   // intra, joined: by function id
UInt n_joined_fn_forests = 0;
BlockForest* joined_inter_forest = nullptr;  // inter, joined

// The running stack's frames in use (frames[0] is its base).
UInt depth(const ThreadState* t) { return (UInt)(kg_now->top - t->stack->frames) + 1; }
Frame* base_frame(const ThreadState* t) { return t->stack->frames; }

void update_now_from_top()
{
   const Frame* top = kg_now->top;
   kg_now->top_sp = top->sp;
   // A pending call stays pending (the resolver's frame dies before the
   // call reaches the resolved function).
   if (kg_now->ctx != kCallPending) kg_now->ctx = transition_ctx(top->tr);
}

const ActEntry* entry_of(const ActNode* n)
{
   return (const ActEntry*)((const char*)n - offsetof(ActEntry, node));
}

// n's activation. A payload's has depth and phase 0: at k = inf they do
// not steer the forest (the phase never reaches k) and nothing else reads
// them.
Activation act_of(const ActNode* n)
{
   if (acts_in_nodes()) return { node_before(n), nullptr, 0, 0 };
   return entry_of(n)->act();
}

// canonical(act_of(n)): where its calls and costs go.
ForestNode* ctx_of(const ActNode* n)
{
   return acts_in_nodes() ? node_before(n) : entry_of(n)->ctx();
}

// Where ActNodes are node payloads, the payload is the node's first
// transition (if one was made), whatever fields an ActNode has.
Transition* first_transition(const ActNode* n) { return (Transition*)n; }

// n's view pair (none where the view is the k-SF): where ActNodes are node
// payloads, the `active` of the node's payload transition, which act_node
// sets before the transition is made (or for a root, which has none).
const ViewPair* view_of(const ActNode* n)
{
   if (!acts_in_nodes()) return n->view;
   return separate_view() ? (const ViewPair*)first_transition(n)->active : nullptr;
}

// n's activation in the view forest, and its context.
Activation view_act_of(const ActNode* n) { return view_of(n) ? view_of(n)->act() : act_of(n); }
ForestNode* view_ctx_of(const ActNode* n) { return view_of(n) ? view_of(n)->ctx() : ctx_of(n); }

// The view pair of view_act, made on first use.
const ViewPair* view_pair(ThreadState* t, const Activation& view_act)
{
   ViewPair* v = t->view_acts.get(view_act.top, view_act.bottom);
   v->depth = view_act.depth;
   v->phase = view_act.phase;
   v->view_ctx = v->ctx();
   return v;
}

// The ActNode of act, made (zeroed) on first use: in acts, or the node's payload.
ActNode* find_act_node(ThreadState* t, const Activation& act)
{
   if (acts_in_nodes()) return act_after(act.top);
   ActEntry* e = t->acts.get(act.top, act.bottom);
   e->depth = act.depth;
   e->phase = act.phase;
   return &e->node;
}

// The activation's node; view_act is its activation in the view forest (a
// function of act: --view-k divides --k).
ActNode* act_node(ThreadState* t, const Activation& act, const Activation& view_act)
{
   ActNode* n = find_act_node(t, act);
   if (acts_in_nodes()) {
      // What the transitions into n point to (Transition::active).
      UWord*& active = first_transition(n)->active;
      if (!active) active = separate_view() ? (UWord*)view_pair(t, view_act) : (UWord*)n;
   } else if (!n->view && t->view != t->forest) {
      n->view = view_pair(t, view_act);
   }
   return n;
}

// Whether the count of a thread's frames in a context is the context's
// forest node's payload: at finite k in a thread's own forest (8 bytes a
// node instead of a table entry of 24 and its index slot: cc1plus k=2
// 119 k entries, about 3 MB).
Bool counts_in_nodes() { return clo.k != kInfiniteK && !clo.join_threads; }

// The count of thread t's frames now in n's context.
UWord* active_count(ThreadState* t, ActNode* n)
{
   // At k = inf a node has one activation pair: no other pair of the
   // thread shares the count (3 M fewer table entries for cc1plus).
   if (clo.k == kInfiniteK) return &n->own_active;
   if (counts_in_nodes()) return (UWord*)core::Forest::payload(ctx_of(n));
   return &active_counts.get(ctx_of(n), t)->n;
}

// A transition's `active`: the count of frames in its child's context, or
// where ActNodes are node payloads (nothing is counted) what inline IR finds
// the child's context from (act_node).
UWord* active_of(ThreadState* t, ActNode* child)
{
   return acts_in_nodes() ? first_transition(child)->active : active_count(t, child);
}

// A frame of tr's enters (leaves) its child's context: the count of frames
// there, where one is kept (after a leave: whether the frame was the
// outermost one).
void count_in(const Transition* tr)
{
   if (!acts_in_nodes()) ++*tr->active;
}
Bool count_out(const Transition* tr)
{
   return !acts_in_nodes() && --*tr->active == 0;
}

// Whether a transition's child is found from its `active` (k = inf: the
// child's own_active), with no `child` field.
Bool child_from_active() { return clo.k == kInfiniteK; }

// A transition's bytes: the fields that its mode has (Transition).
UWord transition_bytes()
{
   if (acts_in_nodes()) return offsetof(Transition, ctx);
   return child_from_active() ? offsetof(Transition, child) : sizeof(Transition);
}

// Where ActNodes are node payloads, the first transition made into a node
// from its parent node (not a rolled-in one) is the node's payload: at
// k = inf most nodes are entered from one call site (cc1plus: 3.21 M
// transitions for 2.89 M nodes), so most transitions need no block and no
// index slot of their own; they are found as their child's
// (find_first_transition). The others are in the thread's index, each
// after its child ActNode's address (TransitionRecord).
// A made transition has kids (no_kids at least).
Bool has_first_transition(const ActNode* n) { return first_transition(n)->kids != nullptr; }
// A thread's own k-SF's node payload: at k = inf the first transition (the
// node and it are 80 bytes, 96 with the view in the k-SF: act_offset), at
// finite k the count of frames in the node (active_count).
UInt node_payload_bytes()
{
   if (acts_in_nodes()) return transition_bytes() - (sizeof(ForestNode) - act_offset());
   if (!counts_in_nodes()) return 0;
   // The count of frames, and the counter array and its limit (counter_array_word).
   return counter_arrays_on() && !separate_view() ? 3 * sizeof(UWord) : sizeof(UWord);
}

// A thread's own view forest's node payload at finite k (--view-k, the
// default at even k > 2): the counter array and its limit (counter_array_word).
UInt view_payload_bytes() { return counter_arrays_on() ? 2 * sizeof(UWord) : 0; }

} // namespace

// The counters' contexts are the view forest's nodes: a thread's own
// k-SF's at finite k without --view-k, else its own view forest's, whose
// payload holds nothing else. Not at k = inf: there the view forest's
// arrays made cc1plus 6 % faster but cost 3.3 MB (1.2 bytes a k-SF node,
// against k=inf's unmet memory target; docs/performance.md, session 21).
Bool counter_arrays_on()
{
   return clo.mode == kModeFunc && counts_in_nodes() && !clo.dump_instr && !clo.collect_jumps;
}

static UWord call_pending_node[(sizeof(ForestNode) + 3 * sizeof(UWord)) / sizeof(UWord)];
ForestNode* const kCallPending = (ForestNode*)call_pending_node;

namespace {

// Where ActNodes are node payloads, a transition that is not a node's
// payload and its child: child_of reads the word before the transition.
struct TransitionRecord {
   ActNode* child;
   Transition tr;
};

} // namespace

// The activation of tr's frames.
static ActNode* child_of(const Transition* tr)
{
   if (acts_in_nodes()) {
      if (tr->in_payload) return (ActNode*)tr;
      return ((ActNode* const*)tr)[-1];
   }
   if (child_from_active()) return (ActNode*)((char*)tr->active - offsetof(ActNode, own_active));
   return tr->child;
}

// Where ActNodes are node payloads a transition keeps no parent: a node is
// its whole call chain, so an activation's parent is its node's parent's
// (none for a thread's root), or its own node's when it is rolled in; an
// untraced function's frame's is its child (set_child); a fence's is kept
// in fence_parent.
static const void* parent_of(const Transition* tr)
{
   if (!acts_in_nodes()) return tr->parent;
   switch (tr->kind) {
   case kActivation: {
      if (tr->rolled_in) return child_of(tr);
      ForestNode* up = ctx_of(child_of(tr))->parent;
      return up ? act_after(up) : nullptr;
   }
   case kTransparent: return child_of(tr);
   default: return tr->fence_parent;
   }
}

// Where ActNodes are node payloads a transition keeps no context: its
// child's view context (the view pair's view_ctx, or the node itself).
ForestNode* transition_ctx(const Transition* tr)
{
   return acts_in_nodes() ? view_ctx_of(child_of(tr)) : tr->ctx;
}

// A transition keeps its function's id only (fn_id: 8 bytes a transition,
// 1.9 MB on cc1plus at k=2).
FnInfo* frame_fn(const Transition* tr)
{
   return tr->fn_id == kNoFunction ? nullptr : function_by_id(tr->fn_id);
}

namespace {

// Whether tr's frames run fn (frame_fn(tr) == fn, with no lookup).
Bool runs(const Transition* tr, const FnInfo* fn) { return tr->fn_id == fn->id; }

// The transition of thread t from `parent` (an ActNode, or a Transition for
// fences) for which same(transition) holds, hashed by `key`
// (transition_key), or when there is none a new one with zero counts, whose
// key fields (kind, function, site) init sets.
template <typename Same, typename Init>
Transition* transition(ThreadState* t, const void* parent, const void* key, Same same, Init init)
{
   // The fields first: parent_of is a call, and at k = inf it is found from
   // the node.
   Transition* tr = t->transitions.find_where(parent, key, [&](const Transition* x) {
      return same(x) && parent_of(x) == parent;
   });
   if (tr) return tr;
   TransitionRecord record = {};
   Transition& made = record.tr;
   made.kids = no_kids;
   init(&made);
   if (!acts_in_nodes()) made.parent = parent;
   else if (made.kind == kActivation) made.rolled_in = child_of(&made) == parent;
   else if (made.kind != kTransparent) made.fence_parent = (const Transition*)parent;
   tl_assert(parent_of(&made) == parent && transition_key(&made) == key && same(&made));
   ActNode* child = acts_in_nodes() ? record.child : child_of(&made);
   Bool first = acts_in_nodes() && made.kind == kActivation && parent && !made.rolled_in
                && !has_first_transition(child);
   if (first) {
      tr = first_transition(child);
      made.in_payload = 1;
   } else if (acts_in_nodes()) {
      TransitionRecord* r = (TransitionRecord*)alloc_permanent(offsetof(TransitionRecord, tr) + transition_bytes());
      r->child = child;
      tr = &r->tr;
   } else {
      tr = (Transition*)alloc_permanent(transition_bytes());
   }
   VG_(memcpy)(tr, &made, transition_bytes());
   if (!first) t->transitions.insert(tr);
   return tr;
}

// Where ActNodes are node payloads: the transition into fn from parent at
// site if it is the first one made into its child (first_transition).
Transition* find_first_transition(const ActNode* parent, FnInfo* fn, Addr site)
{
   if (!acts_in_nodes() || !parent) return nullptr;
   ForestNode* child = core::find_child(ctx_of(parent), fn->id + 1);
   if (!child) return nullptr;
   ActNode* n = act_after(child);
   return has_first_transition(n) && first_transition(n)->site == site ? first_transition(n) : nullptr;
}

// f(tr) for every transition of thread t: those of its index, and where
// ActNodes are node payloads the nodes' first ones.
template <typename F>
void for_each_transition(ThreadState* t, F f)
{
   t->transitions.for_each(f);
   if (!acts_in_nodes()) return;
   core::visit_preorder(t->forest->sf, [&](const core::VisitInfo& v) {
      ActNode* n = act_after(v.node);
      if (has_first_transition(n)) f(first_transition(n));
   });
}

// tr is a TransitionRecord's where ActNodes are node payloads (transition).
void set_child(ThreadState* t, Transition* tr, ActNode* child, FnInfo* fn, FrameKind kind)
{
   if (acts_in_nodes()) ((ActNode**)tr)[-1] = child;
   else if (!child_from_active()) tr->child = child;
   if (!acts_in_nodes()) tr->ctx = view_ctx_of(child);
   tr->active = active_of(t, child);
   tr->fn_id = fn ? fn->id : kNoFunction;
   tr->kind = (UChar)kind;
}

} // namespace

// The index key of an activation's transition from its call site and the
// id of the function it calls: a hash of the two, not a unique word (the
// lookups compare the fields themselves: transition()), so no table of
// (site, callee) pairs is probed on the way (the kid-slot miss path: perl's
// runloop calls hundreds of functions from one site).
static const void* site_callee_key(Addr site, UInt fn_id)
{
   return (const void*)(site ^ ((UWord)fn_id * 0x9E3779B97F4A7C15ULL));
}

// A transition's key is found from its fields, not kept in it (8 bytes a
// k-SF node at k=inf): an activation's is its site and callee's hash (none
// for a thread's root), an untraced function's frame's its function, a
// fence's its kind.
static const void* transition_key(const Transition* tr)
{
   switch (tr->kind) {
   case kActivation: return tr->fn_id == kNoFunction ? nullptr : site_callee_key(tr->site, tr->fn_id);
   case kTransparent: return frame_fn(tr);
   default: return (const void*)(UWord)tr->kind;
   }
}

namespace {

void own_kids_before_new_child(const ActNode* parent, UInt label);

// The transition into traced function fn from parent at call site `site`
// (0: not known; a signal handler's: the interrupted instruction), with the
// call edge of that site; entry: fn's first instruction run (the block
// modes' calls= target position; 0: not known).
Transition* activation_transition(ThreadState* t, ActNode* parent, FnInfo* fn, Addr entry, Addr site)
{
   if (Transition* first = find_first_transition(parent, fn, site)) return first;
   auto same = [&](const Transition* tr) { return tr->kind == kActivation && tr->site == site && runs(tr, fn); };
   return transition(t, parent, site_callee_key(site, fn->id), same, [&](Transition* tr) {
      own_kids_before_new_child(parent, fn->id + 1);
      Activation act = forest_enter(t->forest, act_of(parent), fn->id + 1);
      // forest_enter counted this activation in top and bottom; transitions
      // count every activation themselves (flush_transitions).
      act.top->calls--;
      if (act.bottom) act.bottom->calls--;
      Activation view_act = t->view == t->forest ? act : forest_enter(t->view, view_act_of(parent), fn->id + 1);
      set_child(t, tr, act_node(t, act, view_act), fn, kActivation);
      tr->site = site;
      CallEdge* edge = call_edge(view_ctx_of(parent), transition_ctx(tr), site);
      // The calls= target position of the block modes' body.
      if (!edge->target) edge->target = entry;
   });
}

// The parent activation of an activation's transition (none for the root's).
const ActNode* parent_activation(const Transition* tr)
{
   return (const ActNode*)parent_of(tr);
}

// The call edge of an activation's transition, made when the transition was.
CallEdge* transition_edge(const Transition* tr)
{
   return call_edge(view_ctx_of(parent_activation(tr)), transition_ctx(tr), tr->site);
}

// A frame of an untraced function: costs stay in the parent activation's.
Transition* transparent_transition(ThreadState* t, ActNode* parent, FnInfo* fn)
{
   auto same = [&](const Transition* tr) { return tr->kind == kTransparent && runs(tr, fn); };
   return transition(t, parent, fn, same, [&](Transition* tr) { set_child(t, tr, parent, fn, kTransparent); });
}

// A signal fence over the top frame (keyed by the top frame's transition,
// whose function the handler interrupted).
Transition* fence_transition(ThreadState* t, Transition* top, FrameKind kind)
{
   auto same = [&](const Transition* tr) { return tr->kind == kind; };
   return transition(t, top, (const void*)(UWord)kind, same,
                     [&](Transition* tr) { set_child(t, tr, child_of(top), frame_fn(top), kind); });
}

// Whether tr enters its parent's own context (rolled simple recursion).
Bool rolled(const Transition* tr) { return acts_in_nodes() ? tr->rolled_in : parent_activation(tr) == child_of(tr); }

// The part of tr's edge_incl in outermost activations of its child's
// context. Where ActNodes are node payloads a thread's frames in one node
// on its running stack are rolled ones above an outermost one (a node is
// its whole call chain), so that is all of it unless tr is rolled
// (close_frame).
ULong outermost_incl(const Transition* tr)
{
   if (!acts_in_nodes()) return tr->ctx_incl;
   return rolled(tr) ? 0 : tr->edge_incl;
}

void zero_counts(Transition* tr)
{
   if (tr->kind != kActivation) return;   // no counts (a fence's interrupted instruction)
   tr->calls = tr->edge_incl = 0;
   if (!acts_in_nodes()) tr->ctx_incl = 0;
}

// Where node counts are derived (counts_derived): the calls of thread t's
// transitions that are not their node's first to the node (whose first
// one's `calls` is the node's), sign 1, or back, -1; and every
// transition's calls to its call edge, or back. Nodes last: a first
// transition's calls are its own only while the others' are not in them.
void add_calls_to_nodes(ThreadState* t, Long sign)
{
   t->transitions.for_each([sign](Transition* tr) {
      if (tr->kind == kActivation && tr->calls) ctx_of(child_of(tr))->calls += sign * tr->calls;
   });
}

void add_calls_to_edges(ThreadState* t, Long sign)
{
   for_each_transition(t, [sign](Transition* tr) {
      if (tr->kind == kActivation && tr->calls && parent_activation(tr)) transition_edge(tr)->calls += sign * tr->calls;
   });
}

// Adds every transition's deferred counters to the forest and the edges.
// Where a node's counts are derived, a transition's calls stay where they
// are: they count from the last zeroing on, and a node's first
// transition's `calls` is the node's; with add_calls they are added to the
// edges and nodes too, for a profile's writer (add_calls_to_nodes).
void flush_transitions(ThreadState* t, Bool add_calls)
{
   Bool calls_flushed = !counts_derived();
   Bool calls_added = counts_derived() && add_calls;
   for_each_transition(t, [=](Transition* tr) {
      Bool calls_move = (calls_flushed || calls_added) && tr->calls;
      if (tr->kind != kActivation || (!calls_move && !tr->edge_incl)) return;
      const ActNode* parent = parent_activation(tr);
      CallEdge* edge = parent ? transition_edge(tr) : nullptr;
      if (edge && calls_move) edge->calls += tr->calls;
      if (calls_flushed) {
         Activation act = act_of(child_of(tr));
         act.top->calls += tr->calls;
         if (act.bottom) act.bottom->calls += tr->calls;
         tr->calls = 0;
      }
      if (edge) edge->incl += tr->edge_incl;
      ForestNode* node = ctx_of(child_of(tr));
      if (!counts_derived()) node->incl += outermost_incl(tr);
      if (t->view != t->forest) {
         // The body's counters are the view's: a k-SF node's exclusive cost
         // is its activations' inclusive cost less their callees'.
         node->excl += tr->edge_incl;
         if (parent) ctx_of(parent)->excl -= tr->edge_incl;
      }
      tr->edge_incl = 0;
      if (!acts_in_nodes()) tr->ctx_incl = 0;
   });
   if (calls_added) add_calls_to_nodes(t, 1);
}

void zero_transitions(ThreadState* t)
{
   for_each_transition(t, zero_counts);
}

// base[0] is a sentinel below the stack's base frame (inline pops read the
// frame below the top) and base[cap + 1] a spare slot above the last usable
// frame (inline pushes write the next frame before checking it is usable).
void set_frames(ShadowStack* s, Frame* base, UInt cap)
{
   s->frames = base + 1;
   s->cap = cap;
}

// Usable frames of a new thread's stack, and of a new coroutine's: a
// program may leave thousands of coroutines suspended, live or dead (their
// memory freed unseen), and a coroutine's stack is often shallow (64
// frames: 1.6 KB a coroutine; 14: 384 bytes). Stacks grow when full.
const UInt kThreadFrames = 64;
const UInt kCoroutineFrames = 14;

// A stack with only its base frame, whose activation is root's; its sentinel
// has an SP no frame can be popped to.
ShadowStack* new_shadow_stack(Transition* root, Addr lo, Addr hi, UInt cap)
{
   ShadowStack* s = (ShadowStack*)alloc_zeroed(sizeof(ShadowStack));
   set_frames(s, (Frame*)kg::alloc((cap + 2) * sizeof(Frame)), cap);
   s->frames[-1] = { 0, 0, root };
   s->frames[0] = { ~(Addr)0, kg_now->ir, root };
   s->top = s->frames;
   s->lo = lo;
   s->hi = hi;
   return s;
}

// The memory of the stack a thread starts on: Valgrind's record of it, or
// else the mapping SP lies in.
void own_stack_memory(ThreadId tid, Addr* lo, Addr* hi)
{
   Addr max = VG_(thread_get_stack_max)(tid);
   SizeT size = VG_(thread_get_stack_size)(tid);
   if (max && size && max > size) {
      *lo = max - size + 1;
      *hi = max;
      return;
   }
   *lo = 0;
   *hi = ~(Addr)0;
}

// The memory of a stack SP switched to: the registered stack it lies in
// (True), else its mapping.
Bool stack_memory_at(Addr sp, Addr* lo, Addr* hi)
{
   if (const StackRange* r = n_registered_stacks ? registered_stack_at(sp) : nullptr) {
      *lo = r->lo;
      *hi = r->hi;
      return True;
   }
   const NSegment* seg = VG_(am_find_nsegment)(sp);
   if (seg) {
      *lo = seg->start;
      *hi = seg->end;
   } else {
      *lo = *hi = sp;
   }
   return False;
}

ThreadState* thread_state(ThreadId tid)
{
   if (by_tid[tid]) return by_tid[tid];
   ThreadState* t = (ThreadState*)alloc_zeroed(sizeof(ThreadState));
   by_tid[tid] = t;
   t->tid = tid;
   t->serial = ++thread_serials;
   t->next = all_threads;
   all_threads = t;
   if (clo.join_threads) {
      if (!joined_forest) joined_forest = forest_new(clo.k);
      if (!joined_view) joined_view = separate_view() ? forest_new(clo.view_k) : joined_forest;
      t->forest = joined_forest;
      t->view = joined_view;
   } else {
      t->forest = forest_new(clo.k, node_payload_bytes());
      t->view = separate_view() ? forest_new(clo.view_k, view_payload_bytes()) : t->forest;
   }
   // The root frame is the base of the thread's own stack.
   auto is_root = [](const Transition* tr) { return tr->kind == kActivation && tr->fn_id == kNoFunction; };
   Transition* root = transition(t, nullptr, nullptr, is_root, [t](Transition* tr) {
      Activation root_act = forest_root(t->forest);
      Activation view_root = t->view == t->forest ? root_act : forest_root(t->view);
      set_child(t, tr, act_node(t, root_act, view_root), nullptr, kActivation);
   });
   Addr lo, hi;
   own_stack_memory(tid, &lo, &hi);
   t->own = t->stack = new_shadow_stack(root, lo, hi, kThreadFrames);
   t->own->frames[0].ir_at_entry = 0;
   Frame* frames = t->own->frames;
   t->saved = { ~(Addr)0, 0, transition_ctx(root), 0, frames, frames + t->own->cap - 1 };
   if (clo.mode == kModeInter) {
      if (clo.join_threads) {
         if (!joined_inter_forest) joined_inter_forest = block_forest_new(nullptr, 0, 0);
         t->inter_forest = joined_inter_forest;
      } else {
         t->inter_forest = block_forest_new(nullptr, t->serial, 0);
      }
      t->inter_state = enter_block_root(t->inter_forest);
      t->saved.bb_state = &t->inter_state;
      t->saved.bb_forest = t->inter_forest;
   }
   return t;
}

void switch_to(ThreadId tid)
{
   if (current && current == by_tid[tid]) return;
   if (current) {
      run_trace();   // the trace holds the outgoing thread's runs
      current->saved = *kg_now;
   }
   current = thread_state(tid);
   *kg_now = current->saved;
}

// A frame of transition tr's closes (pops, or is settled) with inclusive
// cost incl. A recursive activation of the same context is already
// measured by the outermost one: its inclusive cost counts only there.
void close_frame(Transition* tr, ULong incl)
{
   tr->edge_incl += incl;
   Bool outermost = count_out(tr);
   // Where ActNodes are node payloads the node's inclusive cost comes from
   // the transitions that are not rolled (outermost_incl): frames close one
   // stack at a time (pops on the running stack, settle_thread stack by
   // stack), and a stack's frames in one node are an outermost one with
   // rolled ones above it.
   if (!acts_in_nodes() && outermost) tr->ctx_incl += incl;
}

// A new top frame (the stack grows when full).
Frame* push_frame(ThreadState* t, Addr sp, Transition* tr)
{
   if (kg_now->top + 1 > kg_now->frames_last) {
      ShadowStack* s = t->stack;
      UInt d = depth(t);
      UInt cap = s->cap * 2;
      Frame* base = (Frame*)kg::alloc((cap + 2) * sizeof(Frame));
      VG_(memcpy)(base, s->frames - 1, (d + 1) * sizeof(Frame));
      kg::release(s->frames - 1);
      set_frames(s, base, cap);
      kg_now->top = s->frames + d - 1;
      kg_now->frames_last = s->frames + cap - 1;
   }
   Frame* f = ++kg_now->top;
   f->sp = sp;
   f->ir_at_entry = kg_now->ir;
   f->tr = tr;
   if (tr->kind == kActivation) {
      tr->calls++;
      count_in(tr);
   }
   kg_now->ctx = transition_ctx(tr);
   return f;
}

// Pops the top frame; its activation's inclusive cost is closed. (Inline IR
// does the same for a return that pops one frame: kg_instrument.cpp.)
void pop_frame(ThreadState* t)
{
   const Frame* f = kg_now->top;
   Transition* tr = f->tr;
   if (tr->kind == kActivation) {
      close_frame(tr, kg_now->ir - f->ir_at_entry);
   } else if (tr->kind == kAltSignalFence) {
      t->stack->alt_fences--;
   } else if (tr->kind == kStackSegment) {
      StackSegment* left = t->stack->segment;
      t->stack->segment = left->outer;
      kg::release(left);
   }
   kg_now->top--;
}

// Pops every frame of the running stack that died, given the current SP.
void pop_dead_frames(ThreadState* t, Addr sp)
{
   const Transition* popped = nullptr;
   while (kg_now->top > base_frame(t)) {
      const Frame& f = *kg_now->top;
      if (f.tr->kind == kAltSignalFence) {
         // The handler runs on another stack: only a return to the
         // interrupted stack's memory, above the interrupted point, ends it.
         if (!(sp > f.sp && sp <= memory_hi(t->stack))) break;
      } else if (f.tr->kind == kStackSegment) {
         break;   // its segment ends when SP leaves it (leave_segments)
      } else if (sp <= f.sp) {
         break;
      }
      popped = f.tr;
      pop_frame(t);
   }
   if (popped && (popped->kind == kActivation || popped->kind == kTransparent) && frame_fn(popped) &&
       frame_fn(popped)->resolver) {
      // ld.so's trampoline dies at its jump to the function it resolved:
      // the call that entered it goes on there.
      kg_now->ctx = kCallPending;
      kg_now->call_site = t->resolver_call_site;
      kg_now->jump_site = 0;
   }
   update_now_from_top();
   // Above the top frame (the base, or a handler's fence on an alternate
   // stack): stop checking until a new frame is pushed. A segment's fence
   // (SP 0) keeps every rise checked: one leaves the segment.
   if (sp > kg_now->top_sp && kg_now->top->tr->kind != kStackSegment) kg_now->top_sp = ~(Addr)0;
}

// ---- Stack switches ---------------------------------------------------------

// Is s a coroutine stack tied to the mapping it lies in (not registered,
// not the thread's own)? Other coroutines' stacks may lie in that mapping
// (malloc'd stacks, stacks carved from one mmap), so SP moving within it
// may be a switch, which only what the program does tells from a call or
// a return.
Bool in_shared_mapping(const ThreadState* t, const ShadowStack* s)
{
   return s != t->own && !s->registered && !s->segment;
}

// The return address in the stack slot at sp, if the client may read it
// (else 0).
Addr return_address_at(Addr sp)
{
   if (!VG_(am_is_valid_for_client)(sp, sizeof(Addr), VKI_PROT_READ)) return 0;
   return *(const Addr*)sp;
}

void release_stack(ShadowStack* s)
{
   kg::release(s->frames - 1);
   kg::release(s);
}

// ---- The index of a thread's suspended stacks --------------------------------
//
// A program may keep thousands of coroutines suspended, and every switch
// looks for the stack it lands on, which is one whose open frames lie near
// the landing SP (resumed_frame, landing_distance, end_stacks_overlapped_by).
// Once a thread has kept more than kIndexedFrom stacks suspended, its
// suspended stacks with open frames are ordered by the lowest SP of those
// frames (span_lo), and a search visits only the ones whose span
// [span_lo, span_hi] may meet the SPs it asks about. Empty stacks, and
// stacks whose frames spread wider than kWideSpan (the thread's own stack
// when deep, -fsplit-stack segments' fences at SP 0), are in a list that
// every search visits. Searches pick among what they visit by the rules'
// own order (`listed`, `suspension`), so they find what a scan would.
//
// Fewer stacks are scanned: the index's upkeep at every switch made a ring
// of four coroutines 60 % slower (co_ring.c, 4 M switches, k=2: 1.35 s
// without the index, 2.17 s with it).
const UInt kIndexedFrom = 16;
const Addr kWideSpan = 64 * 1024;

struct SpanKey {
   Addr lo;
   ULong listed;   // tells apart stacks of one span_lo
};
struct SpanEntry {
   SpanKey key;
   ShadowStack* s;
};

Word compare_spans(const void* key, const void* elem)
{
   const SpanKey* a = (const SpanKey*)key;
   const SpanKey* b = &((const SpanEntry*)elem)->key;
   if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
   if (a->listed != b->listed) return a->listed < b->listed ? -1 : 1;
   return 0;
}

// Stacks put in a thread's suspended stacks so far (ShadowStack::listed).
ULong stacks_listed;

void link_unindexed(ThreadState* t, ShadowStack* s)
{
   s->unindexed_prev = nullptr;
   s->unindexed_next = t->unindexed;
   if (t->unindexed) t->unindexed->unindexed_prev = s;
   t->unindexed = s;
}

void unlink_unindexed(ThreadState* t, ShadowStack* s)
{
   if (s->unindexed_prev) s->unindexed_prev->unindexed_next = s->unindexed_next;
   else t->unindexed = s->unindexed_next;
   if (s->unindexed_next) s->unindexed_next->unindexed_prev = s->unindexed_prev;
}

// Suspended stack s joins t's index: by its span, or in the list.
void index_stack(ThreadState* t, ShadowStack* s)
{
   s->indexed = False;
   if (s->top == s->frames) {
      link_unindexed(t, s);
      return;
   }
   s->span_lo = ~(Addr)0;
   s->span_hi = 0;
   for (const Frame* f = s->frames + 1; f <= s->top; f++) {
      if (f->sp < s->span_lo) s->span_lo = f->sp;
      if (f->sp > s->span_hi) s->span_hi = f->sp;
   }
   if (s->span_hi - s->span_lo > kWideSpan) {
      link_unindexed(t, s);
      return;
   }
   SpanEntry* e = (SpanEntry*)VG_(OSetGen_AllocNode)(t->spans, sizeof(SpanEntry));
   e->key = { s->span_lo, s->listed };
   e->s = s;
   VG_(OSetGen_Insert)(t->spans, e);
   s->indexed = True;
   if (s->span_hi - s->span_lo > t->widest_span) t->widest_span = s->span_hi - s->span_lo;
}

void unindex_stack(ThreadState* t, ShadowStack* s)
{
   if (!s->indexed) {
      unlink_unindexed(t, s);
      return;
   }
   SpanKey key = { s->span_lo, s->listed };
   VG_(OSetGen_FreeNode)(t->spans, VG_(OSetGen_Remove)(t->spans, &key));
}

// s joins t's suspended stacks, first (the newest); t's stacks are
// indexed from the (kIndexedFrom + 1)th on.
void list_suspended(ThreadState* t, ShadowStack* s)
{
   s->listed = ++stacks_listed;
   s->prev = nullptr;
   s->next = t->suspended;
   if (t->suspended) t->suspended->prev = s;
   t->suspended = s;
   if (t->spans) {
      index_stack(t, s);
   } else if (++t->n_suspended > kIndexedFrom) {
      t->spans = VG_(OSetGen_Create)(offsetof(SpanEntry, key), compare_spans, VG_(malloc), "kg.spans", VG_(free));
      for (ShadowStack* o = t->suspended; o; o = o->next) index_stack(t, o);
   }
}

// s leaves t's suspended stacks.
void unlist_suspended(ThreadState* t, ShadowStack* s)
{
   if (s->prev) s->prev->next = s->next;
   else t->suspended = s->next;
   if (s->next) s->next->prev = s->prev;
   if (t->spans) unindex_stack(t, s);
   else t->n_suspended--;
   s->listed = 0;
}

Bool is_suspended(const ShadowStack* s) { return s->listed != 0; }

Addr minus(Addr a, Addr b) { return a > b ? a - b : 0; }
Addr plus(Addr a, Addr b) { return a < ~(Addr)0 - b ? a + b : ~(Addr)0; }

// Calls f(s) for each of t's suspended stacks that every search visits:
// all of them while t's are not indexed, else the empty and the widely
// spread ones. f must not change t's suspended stacks.
template <typename F> void for_each_unindexed(ThreadState* t, F f)
{
   for (ShadowStack* s = t->spans ? t->unindexed : t->suspended; s; s = t->spans ? s->unindexed_next : s->next) f(s);
}

// The same, and for each indexed one whose open frames may lie in
// [lo, hi] (span_lo <= hi and span_hi >= lo).
template <typename F> void for_each_suspended_near(ThreadState* t, Addr lo, Addr hi, F f)
{
   for_each_unindexed(t, f);
   if (!t->spans) return;
   SpanKey from = { minus(lo, t->widest_span), 0 };
   VG_(OSetGen_ResetIterAt)(t->spans, &from);
   while (const SpanEntry* e = (const SpanEntry*)VG_(OSetGen_Next)(t->spans)) {
      if (e->key.lo > hi) break;
      if (e->s->span_hi >= lo) f(e->s);
   }
}

// Ends suspended stack s of thread t: its frames close where they paused
// (as at the thread's end), so a new stack in that memory does not resume
// them (a new coroutine would go on in the dead one's frames).
void end_suspended_stack(ThreadState* t, ShadowStack* s)
{
   unlist_suspended(t, s);
   settle_frames(s->frames + 1, s->top, s->suspended_at);
   while (StackSegment* g = s->segment) {
      s->segment = g->outer;
      kg::release(g);
   }
   release_stack(s);
}

// Ends the suspended stacks of thread t for which dies(s) holds (not its
// own stack's), newest first.
template <typename Dies>
void end_suspended_stacks(ThreadState* t, Dies dies)
{
   ShadowStack* next;
   for (ShadowStack* s = t->suspended; s; s = next) {
      next = s->next;
      if (s != t->own && dies(s)) end_suspended_stack(t, s);
   }
}

// The open frames of a coroutine stack in a mapping span [*lo, *hi]
// (the SPs of its top and bottom frames); False if it has none, or a
// handler's frames on an alternate stack.
Bool open_frames_span(const ThreadState* t, const ShadowStack* s, Addr* lo, Addr* hi)
{
   if (!in_shared_mapping(t, s) || s->top == s->frames || s->alt_fences) return False;
   *lo = s->top->sp;
   *hi = s->frames[1].sp;
   return True;
}

// Ends t's suspended coroutine stacks in a mapping whose open frames lie
// where s's do: two live stacks never share memory, so theirs are a dead
// coroutine's, whose stack was freed (unseen: kgrind does not replace
// malloc) and given to s's coroutine. Keeps the suspended stacks to the
// live ones where coroutines reuse memory, which a resume searches.
void end_stacks_overlapped_by(ThreadState* t, const ShadowStack* s)
{
   Addr lo, hi;
   if (!open_frames_span(t, s, &lo, &hi)) return;
   // Newest first, as end_suspended_stacks (ending one moves no other).
   for (;;) {
      ShadowStack* newest = nullptr;
      for_each_suspended_near(t, lo, hi, [&](ShadowStack* o) {
         Addr o_lo, o_hi;
         if (o != s && o != t->own && open_frames_span(t, o, &o_lo, &o_hi) && o_lo <= hi && lo <= o_hi &&
             (!newest || o->listed > newest->listed))
            newest = o;
      });
      if (!newest) return;
      end_suspended_stack(t, newest);
   }
}

// Suspensions of stacks in the process so far (ShadowStack::suspension).
ULong stack_suspensions;

// Leaves the running stack: its frames' clocks and activity pause.
void suspend_stack(ThreadState* t)
{
   ShadowStack* s = t->stack;
   s->top = kg_now->top;
   s->suspended_at = kg_now->ir;
   s->suspension = ++stack_suspensions;
   s->resume_pc = s->top > s->frames ? return_address_at(s->top->sp) : 0;
   for (Frame* f = s->frames + 1; f <= s->top; f++)
      if (f->tr->kind == kActivation) count_out(f->tr);
   // (With none of the thread's frames active: the ended ones close as
   // the outermost of their contexts, as at the thread's end.)
   end_stacks_overlapped_by(t, s);
   list_suspended(t, s);
}

// Makes s the thread's running stack.
void run_on(ThreadState* t, ShadowStack* s)
{
   t->stack = s;
   kg_now->top = s->top;
   kg_now->frames_last = s->frames + s->cap - 1;
   update_now_from_top();
}

// Makes suspended stack s the running one: its frames go on where they
// paused.
void resume_stack(ThreadState* t, ShadowStack* s)
{
   unlist_suspended(t, s);
   ULong paused = kg_now->ir - s->suspended_at;
   for (Frame* f = s->frames + 1; f <= s->top; f++) {
      f->ir_at_entry += paused;
      if (f->tr->kind == kActivation) count_in(f->tr);
   }
   if (s->top == s->frames) s->entry_sp = 0;   // an ended coroutine's, reused by a new one
   run_on(t, s);
}

// Leaves the running stack for suspended stack s, SP now sp.
void switch_to_stack(ThreadState* t, ShadowStack* s, Addr sp)
{
   suspend_stack(t);
   resume_stack(t, s);
   pop_dead_frames(t, sp);
}

// Is pc a function's first instruction? A switch that lands there starts a
// coroutine (its function entered by a `ret` or a jump).
Bool function_entry_at(Addr pc)
{
   return pc && is_function_entry(pc);
}

// Where a switch goes on: SP, and the block that runs next where a block
// start's helper saw it, else the address in the slot below SP (where a
// `ret` went, or boost.context's jump).
struct Landing {
   Addr sp;
   Addr pc;
   const FnInfo* fn;   // pc's function, if known
   Bool starting;      // pc is a function's first instruction: a new coroutine
};

Landing landing_at(Addr sp, BlockInfo* blk)
{
   if (blk) return { sp, blk->addr, blk->fn(), blk->fn_entry };
   Addr pc = return_address_at(sp - sizeof(Addr));
   return { sp, pc, nullptr, function_entry_at(pc) };
}

// The frame of suspended stack s that a switch landing at l returns from,
// if any (its frames above died): the call that suspended s (its top frame:
// SP just above the return address in its slot, and pc that address:
// swapcontext and asm switches `ret` through that slot, boost.context
// jumps to what it holds), or a frame whose caller's function pc is in, SP
// as that caller's call left it (longjmp to a setjmp point: the caller
// called setjmp and then the switch at one SP).
const Frame* resumed_frame(const ShadowStack* s, const Landing& l)
{
   if (l.starting || !in_memory_of(s, l.sp)) return nullptr;
   const Frame* f = s->top;
   while (f > s->frames && f->sp + sizeof(Addr) < l.sp) f--;
   if (f == s->frames || f->sp + sizeof(Addr) != l.sp) return nullptr;
   if (f == s->top && s->resume_pc && s->resume_pc == l.pc) return f;
   const Transition* caller = f[-1].tr;
   Bool called = f - 1 > s->frames && (caller->kind == kActivation || caller->kind == kTransparent);
   return l.fn && called && runs(caller, l.fn) ? f : nullptr;
}

// How well sp fits suspended stack s, besides resumed_frame: a resume lands
// just above its top frame (a longjmp-like switch returns near its own
// call), or else just below a live frame (setcontext to a point saved by
// getcontext); any other sp in the memory of an empty stack, or of the
// thread's own stack (as an unwind would), fits last. ~0: it does not fit.
// A new coroutine (starting: the switch lands on a function's entry) goes
// on no other stack's frames: they would be a dead coroutine's, whose
// stack was freed (unseen) and given to the new one.
const Addr kResumeGap = 256;      // bytes above the top frame
const Addr kLandingGap = 4096;    // bytes below the nearest live frame
const Addr kFitsLast = (Addr)1 << 32;

Addr landing_distance(const ThreadState* t, const ShadowStack* s, Addr sp, Bool starting)
{
   if (!in_memory_of(s, sp)) return ~(Addr)0;
   if (s->top == s->frames) return kFitsLast;
   if (starting && s != t->own) return ~(Addr)0;
   const Frame* f = s->top;
   if (f > s->frames && f->sp < sp && sp - f->sp <= kResumeGap) return sp - f->sp;
   for (; f > s->frames; f--) {
      if (f->sp >= sp) {
         if (f->sp - sp <= kLandingGap) return kResumeGap + (f->sp - sp);
         break;
      }
   }
   return s == t->own ? kFitsLast : ~(Addr)0;
}

// Runs f with thread t's running frames counted out of `active`, as a
// switch away from its stack would: a stack settled meanwhile closes as
// its own pops would (close_frame: its outermost frame in a context counts).
template <typename F> void with_running_frames_out(ThreadState* t, F f)
{
   Frame* running_top = now_of(t).top;
   Frame* running_first = t->stack->frames + 1;
   for (Frame* fr = running_first; fr <= running_top; fr++)
      if (fr->tr->kind == kActivation) count_out(fr->tr);
   f();
   for (Frame* fr = running_first; fr <= running_top; fr++)
      if (fr->tr->kind == kActivation) count_in(fr->tr);
}

template <typename Entry>
Transition* kid_transition(ThreadState* t, Transition* from, FnInfo* fn, Addr call_site, Entry entry);

// Whether a fiber moved from one thread to another (move_stack): then a
// landing searches every thread's suspended stacks.
Bool fibers_moved;

// The transition of thread t that a frame of `old` (another thread's) has
// when the frame below it has `below`: the same kind, function and call
// site, in t's forest. No call is counted.
Transition* same_transition_in(ThreadState* t, Transition* below, const Transition* old)
{
   switch (old->kind) {
   case kActivation:
      return kid_transition(t, below, frame_fn(old), old->site, [old] { return transition_edge(old)->target; });
   case kTransparent: return transparent_transition(t, child_of(below), frame_fn(old));
   default: {
      Transition* tr = fence_transition(t, below, (FrameKind)old->kind);
      tr->interrupted = old->interrupted;
      return tr;
   }
   }
}

// A fiber moved between threads (job systems, work-stealing fiber
// schedulers resume a fiber on whichever worker is free): thread t resumes
// stack s, which thread `from` left suspended. Its frames close in `from`
// where they paused, with what they ran there (as at a thread's end), and
// go on in t in the same contexts, found again in t's forest from t's
// root, their clocks starting now. A frame's call counts in the thread that
// made it; its costs in the threads that ran them. s joins t's suspended
// stacks, to be resumed.
void move_stack(ThreadState* t, ThreadState* from, ShadowStack* s)
{
   unlist_suspended(from, s);
   with_running_frames_out(from, [&] { settle_frames(s->frames + 1, s->top, s->suspended_at); });
   Transition* below = t->own->frames[0].tr;
   s->frames[-1].tr = s->frames[0].tr = below;
   for (Frame* f = s->frames; f <= s->top; f++) {
      if (f > s->frames) f->tr = below = same_transition_in(t, below, f->tr);
      f->ir_at_entry = kg_now->ir;
   }
   s->suspended_at = kg_now->ir;
   list_suspended(t, s);
   fibers_moved = True;
}

// The suspended stack of thread t that a switch landing at l resumes
// (resumed_frame), if any: the most recently suspended first (a dead
// coroutine's stack whose memory a new one reuses ties with it, and the
// new one was suspended later).
ShadowStack* own_resumed_stack(ThreadState* t, const Landing& l)
{
   ShadowStack* newest = nullptr;
   if (l.starting) return newest;
   for_each_suspended_near(t, l.sp - sizeof(Addr), l.sp - sizeof(Addr), [&](ShadowStack* s) {
      if ((!newest || s->listed > newest->listed) && resumed_frame(s, l)) newest = s;
   });
   return newest;
}

// The suspended stack a switch landing at l resumes, if any: thread t's,
// or another thread's, which moves to t (move_stack); the most recently
// suspended of them. Other threads' stacks are searched when t has none
// that fits, or once a fiber has moved: a dead fiber's stack, left
// suspended in one thread, ties with a live one in its memory, suspended
// later in another. (A new coroutine resumes nothing.)
ShadowStack* resumed_stack(ThreadState* t, const Landing& l)
{
   ShadowStack* own = own_resumed_stack(t, l);
   if ((own && !fibers_moved) || l.starting) return own;
   ThreadState* from = nullptr;
   ShadowStack* moved = nullptr;
   ULong latest = own ? own->suspension : 0;
   for (ThreadState* o = all_threads; o; o = o->next) {
      if (o == t) continue;
      for_each_suspended_near(o, l.sp - sizeof(Addr), l.sp - sizeof(Addr), [&](ShadowStack* s) {
         if (s != o->own && s->suspension > latest && resumed_frame(s, l)) {
            from = o;
            moved = s;
            latest = s->suspension;
         }
      });
   }
   if (!moved) return own;
   move_stack(t, from, moved);
   return moved;
}

// The suspended stack a switch landing at l lands on, if any: the one it
// resumes, else the best fit.
ShadowStack* stack_landed_on(ThreadState* t, const Landing& l)
{
   if (ShadowStack* resumed = resumed_stack(t, l)) return resumed;
   // The nearest, the newest of those as near. What fits but the thread's
   // own stack is empty (unindexed), or not starting and has open frames
   // just below sp (kResumeGap) or a little above it (kLandingGap).
   ShadowStack* best = nullptr;
   Addr best_distance = ~(Addr)0;
   auto consider = [&](ShadowStack* s) {
      Addr d = landing_distance(t, s, l.sp, l.starting);
      if (d < best_distance || (d == best_distance && d != ~(Addr)0 && s->listed > best->listed)) {
         best = s;
         best_distance = d;
      }
   };
   if (is_suspended(t->own)) consider(t->own);
   if (l.starting) for_each_unindexed(t, consider);
   else for_each_suspended_near(t, minus(l.sp, kResumeGap), plus(l.sp, kLandingGap), consider);
   return best;
}

// A makecontext coroutine whose function returned has ended: glibc's
// __start_context, entered by that return, switches to uc_link or exits.
Bool coroutine_ended(const ThreadState* t)
{
   const ShadowStack* s = t->stack;
   return s != t->own && kg_now->top > s->frames && frame_fn(s->frames[1].tr) &&
          frame_fn(s->frames[1].tr)->context_start;
}

// -fsplit-stack code ran out of stack: __morestack moved SP to a new
// segment (other memory) and goes on there, calling its caller's body. The
// segment continues the stack: a fence over __morestack's frame marks where
// it starts, below the frames pushed there before a helper saw SP move
// (inline pushes), and the frames above it compare SPs in its memory only.
Bool enter_segment(ThreadState* t, Addr sp)
{
   ShadowStack* s = t->stack;
   Frame* below = kg_now->top;
   while (below > s->frames && !in_memory_of(s, below->sp)) below--;
   Transition* morestack = below->tr;
   if (below == s->frames || !frame_fn(morestack) || !frame_fn(morestack)->stack_segment ||
       (morestack->kind != kActivation && morestack->kind != kTransparent))
      return False;
   UWord at = (UWord)(below - s->frames) + 1;
   ForestNode* ctx = kg_now->ctx;   // a pending call stays pending
   Frame fence = *push_frame(t, 0, fence_transition(t, morestack, kStackSegment));
   Frame* f = s->frames + at;       // push_frame may have moved the frames
   VG_(memmove)(f + 1, f, (SizeT)(kg_now->top - f) * sizeof(Frame));
   *f = fence;
   // The segment reaches up to the SP __morestack switched to (its first
   // call pushed just below it) and down without a bound but the memory it
   // came from: Valgrind places adjacent mmaps, and merges them into one
   // mapping, so the mapping does not tell segments apart.
   StackSegment* g = (StackSegment*)kg::alloc(sizeof(StackSegment));
   Addr first_sp = sp;
   for (const Frame* above = f + 1; above <= kg_now->top; above++)
      if (above->sp > first_sp) first_sp = above->sp;
   g->lo = 0;
   g->hi = first_sp + sizeof(Addr);
   Addr outer_lo = memory_lo(s), outer_hi = memory_hi(s);
   if (sp > outer_hi) g->lo = outer_hi + 1;
   if (sp < outer_lo && g->hi >= outer_lo) g->hi = outer_lo - 1;
   g->outer = s->segment;
   s->segment = g;
   kg_now->ctx = ctx;
   update_now_from_top();
   return True;
}

// Is SP back in memory the running stack's innermost segment came from (a
// return from __morestack's call, or a longjmp out of the segment)?
Bool returned_to_outer_memory(const ShadowStack* s, Addr sp)
{
   if (!s->segment) return False;
   for (const StackSegment* g = s->segment->outer; g; g = g->outer)
      if (sp >= g->lo && sp <= g->hi) return True;
   return sp >= s->lo && sp <= s->hi;
}

// Ends the segments SP left: their frames, then their fences.
void leave_segments(ThreadState* t, Addr sp)
{
   while (!in_memory_of(t->stack, sp)) {
      while (kg_now->top->tr->kind != kStackSegment) pop_frame(t);
      pop_frame(t);
   }
   update_now_from_top();
}

// SP left the running stack's memory, or left a coroutine's stack for
// another one in the same mapping: the thread switched stacks (blk: the
// block that runs next, if known), or -fsplit-stack code entered or left a
// segment of it.
void switch_stack(ThreadState* t, Addr sp, BlockInfo* blk)
{
   if (returned_to_outer_memory(t->stack, sp)) {
      leave_segments(t, sp);
      pop_dead_frames(t, sp);
      return;
   }
   if (enter_segment(t, sp)) {
      pop_dead_frames(t, sp);
      return;
   }
   if (coroutine_ended(t))
      while (kg_now->top > base_frame(t)) pop_frame(t);
   suspend_stack(t);
   ShadowStack* s = stack_landed_on(t, landing_at(sp, blk));
   if (s) {
      resume_stack(t, s);
   } else {
      Addr lo, hi;
      Bool registered = stack_memory_at(sp, &lo, &hi);
      s = new_shadow_stack(t->own->frames[0].tr, lo, hi, kCoroutineFrames);
      s->registered = registered;
      run_on(t, s);
   }
   pop_dead_frames(t, sp);
}

// Do [a_lo, a_hi] and [b_lo, b_hi] share more than an end? Programs
// register a stack as [base, base + size]: stacks side by side share one.
static Bool overlap(Addr a_lo, Addr a_hi, Addr b_lo, Addr b_hi) { return a_lo < b_hi && b_lo < a_hi; }

// Does suspended stack s lie in memory [lo, hi] that was freed or given to
// another stack? Its top frame does, or it is empty or a registered stack
// whose memory overlaps.
Bool stack_dies_with(const ShadowStack* s, Addr lo, Addr hi)
{
   if (s->top > s->frames) {
      if (s->top->sp >= lo && s->top->sp <= hi) return True;
      if (!s->registered) return False;
   }
   return overlap(s->lo, s->hi, lo, hi);
}

// Ends the suspended stacks of every thread that lay in [lo, hi].
void end_stacks_in(Addr lo, Addr hi)
{
   for (ThreadState* t = all_threads; t; t = t->next)
      end_suspended_stacks(t, [&](const ShadowStack* s) { return stack_dies_with(s, lo, hi); });
}

// Drops the registrations that overlap [lo, hi] (they lie side by side in
// the sorted array); returns where a range [lo, hi] goes.
UInt forget_registered_stacks(Addr lo, Addr hi)
{
   UInt first = 0, end = n_registered_stacks;   // the first range ending above lo
   while (first < end) {
      UInt mid = (first + end) / 2;
      if (registered_stacks[mid].hi <= lo) first = mid + 1;
      else end = mid;
   }
   end = first;
   while (end < n_registered_stacks && registered_stacks[end].lo < hi) end++;
   VG_(memmove)(registered_stacks + first, registered_stacks + end,
                (n_registered_stacks - end) * sizeof(StackRange));
   n_registered_stacks -= end - first;
   return first;
}

// Has SP left the running stack's memory? Not while a handler runs on an
// alternate signal stack (its frames sit on the interrupted stack's).
Bool left_running_stack(const ThreadState* t, Addr sp)
{
   return !in_memory_of(t->stack, sp) && !t->stack->alt_fences;
}

// SP rose above the return address of the first function of a coroutine
// stack in a mapping while frames of it are open. An unwind cannot leave
// the stack it runs on, and nothing of the coroutine lies above: the thread
// switched to a stack above (in the mapping, so SP stayed in the running
// stack's memory). Not after the first function returned into glibc's
// __start_context, which may raise SP to uc_link's slot.
Bool rose_off_coroutine_stack(const ThreadState* t, Addr sp)
{
   const ShadowStack* s = t->stack;
   return in_shared_mapping(t, s) && s->entry_sp && kg_now->top > s->frames && sp > s->entry_sp + sizeof(Addr) &&
          !s->alt_fences && !coroutine_ended(t);
}

// Pops the frames that died, or follows a switch to another stack (blk: as
// switch_stack's).
void unwind_to_sp(ThreadState* t, Addr sp, BlockInfo* blk = nullptr)
{
   if (left_running_stack(t, sp) || rose_off_coroutine_stack(t, sp)) switch_stack(t, sp, blk);
   else pop_dead_frames(t, sp);
   if (kg_region_watching) region_stack_rose(t->tid, sp);
}

// Kid arrays given up (grown or laid out again), for reuse: free_kids[i]
// lists arrays of 2^i slots, linked through their first slot.
const UInt kKidSizeClasses = 5;   // 1 to kKidSlots slots
static_assert(kKidSlots == 1u << (kKidSizeClasses - 1), "a size class per array size");
Transition** free_kids[kKidSizeClasses];

// The slot mask of tr's kid array (Transition::kid_mask).
UWord kid_mask_of(const Transition* tr) { return kids_grow() ? tr->kid_mask : kKidSlots - 1; }
UInt kid_slots(const Transition* tr) { return (UInt)kid_mask_of(tr) + 1; }
// The slot of tr's kid array for a call of fn_id from site.
UInt kid_slot_in(const Transition* tr, UInt fn_id, Addr site)
{
   return kid_slot(fn_id, site, kid_mask_of(tr), kids_grow() ? tr->kid_shift : kFiniteKidShift);
}

// free_kids' list for arrays of `slots` slots (a power of two).
UInt kids_size_class(UInt slots) { return (UInt)__builtin_ctz(slots); }

Transition** new_kids(UInt slots)
{
   UInt i = kids_size_class(slots);
   Transition** kids = free_kids[i];
   if (kids) free_kids[i] = (Transition**)kids[0];
   else kids = (Transition**)alloc_permanent(slots * sizeof(Transition*));
   for (UInt s = 0; s < slots; s++) kids[s] = &no_transition;
   return kids;
}

void release_kids(Transition** kids, UInt slots)
{
   UInt i = kids_size_class(slots);
   kids[0] = (Transition*)free_kids[i];
   free_kids[i] = kids;
}

// A kid array's layout: its slots and kid_slot's shift.
struct KidLayout {
   UInt slots;
   UInt shift;
};

// Whether the kids (fn_id, site) all have distinct slots in layout l.
Bool separates(const Transition* const* kids, UInt n, KidLayout l)
{
   UWord mask = l.slots - 1;
   UInt used = 0;
   for (UInt i = 0; i < n; i++) {
      UInt bit = 1u << kid_slot(kids[i]->fn_id, kids[i]->site, mask, l.shift);
      if (used & bit) return False;
      used |= bit;
   }
   return True;
}

// The layout of the fewest slots (at least `slots`), then the smallest
// shift, that gives the n kids distinct slots: a kid array grows only when no
// shift separates its kids (cc1plus at k=inf: two kids collide in one in
// four shifts' slots, and grown arrays were 4.4 slots for 1.9 kids).
// False if there is none up to kKidSlots.
Bool separating_layout(const Transition* const* kids, UInt n, UInt slots, KidLayout* out)
{
   for (; slots <= kKidSlots; slots *= 2) {
      if (n > slots) continue;
      for (UInt shift = 0; shift <= kMaxKidShift; shift++)
         if (separates(kids, n, { slots, shift })) {
            *out = { slots, shift };
            return True;
         }
   }
   return False;
}

// The kKidSlots-slot layout whose shift gives the n kids the most slots
// (the kids that share one alternate through it).
KidLayout fullest_layout(const Transition* const* kids, UInt n)
{
   KidLayout best = { kKidSlots, kFiniteKidShift };
   UInt best_used = 0;
   for (UInt shift = 0; shift <= kMaxKidShift; shift++) {
      UInt used = 0;
      for (UInt i = 0; i < n; i++)
         used |= 1u << kid_slot(kids[i]->fn_id, kids[i]->site, kKidSlots - 1, shift);
      if ((UInt)__builtin_popcount(used) > best_used) {
         best_used = (UInt)__builtin_popcount(used);
         best = { kKidSlots, shift };
      }
   }
   return best;
}

// Where ActNodes are node payloads, a node's first transition whose one kid
// is the first transition into the node's only child needs no array: the
// node's `kids` word points to that kid (core::only_child_link: the
// child's `calls` word, where its first transition starts when its counts
// are derived: act_offset), so it is the array (cc1plus at k=inf: most of
// 887 k one-kid arrays). Before the node gains a second child, the
// transition gets an array of its own (own_kids_before_new_child).
Transition** node_kids_word(const Transition* tr) { return (Transition**)&ctx_of(child_of(tr))->kids; }
Bool borrows_kids(const Transition* tr) { return tr->in_payload && tr->kids == node_kids_word(tr); }
Bool may_borrow_kids(const Transition* tr, const Transition* kid)
{
   return tr->in_payload && ctx_of(child_of(tr))->nkids == 1 && *node_kids_word(tr) == kid;
}

// Before parent's node gains a child labelled `label` (forest_enter), which
// makes its `kids` word a child table: a first transition borrowing the
// word gets an array of its own.
void own_kids_before_new_child(const ActNode* parent, UInt label)
{
   if (!acts_in_nodes() || !borrows_kids(first_transition(parent))) return;
   if (core::find_child(ctx_of(parent), label)) return;
   Transition* tr = first_transition(parent);
   Transition* kid = tr->kids[0];
   tr->kids = new_kids(1);
   tr->kids[0] = kid;
}

// tr's kids and kid in a new array of layout l.
void lay_out_kids(Transition* tr, Transition* kid, KidLayout l)
{
   UInt old_slots = kid_slots(tr);
   Bool borrowed = borrows_kids(tr);
   Transition** old = tr->kids;
   tr->kids = new_kids(l.slots);
   tr->kid_mask = (UChar)(l.slots - 1);
   tr->kid_shift = (UChar)l.shift;
   for (UInt s = 0; s < old_slots; s++)
      if (old[s] != &no_transition) tr->kids[kid_slot_in(tr, old[s]->fn_id, old[s]->site)] = old[s];
   tr->kids[kid_slot_in(tr, kid->fn_id, kid->site)] = kid;
   if (!borrowed) release_kids(old, old_slots);
}

// kid joins tr's kid array, whose slot for it is another kid's: while the
// array can grow, in a layout that separates them all (else kids that no
// shift separates: in kKidSlots slots, fullest_layout); in kKidSlots slots it replaces
// the kid of its slot, with no search (the two may alternate: cppvirt's
// hot loops call 11 kids of one frame that no shift separates in 16
// slots, and searching at every miss made k=inf 40 % slower).
void add_colliding_kid(Transition* tr, Transition* kid)
{
   UInt slots = kid_slots(tr);
   if (slots == kKidSlots) {
      tr->kids[kid_slot_in(tr, kid->fn_id, kid->site)] = kid;
      return;
   }
   const Transition* kids[kKidSlots + 1];
   UInt n = 0;
   for (UInt s = 0; s < slots; s++)
      if (tr->kids[s] != &no_transition) kids[n++] = tr->kids[s];
   kids[n++] = kid;
   KidLayout l;
   if (!separating_layout(kids, n, slots, &l)) l = fullest_layout(kids, n);
   lay_out_kids(tr, kid, l);
}

// A transition's kids are the transitions from its child activation (they
// are keyed by parent activation, call site and callee), whichever
// transition entered that activation: at finite k, where arrays never grow,
// the transitions into one activation share one array, kept in the
// activation (cc1plus at k=2: 72 k arrays instead of 134 k, 7.4 MB less peak
// RSS, docs/performance.md, session 16; in the ActNode's unused
// own_active rather than an index by child, 1.6 MB less, session 18).
Transition** shared_kids(ActNode* child)
{
   tl_assert(!kids_grow());
   if (!child->shared_kids) child->shared_kids = new_kids(kKidSlots);
   return child->shared_kids;
}

// kid becomes top's kid in its slot: at k = inf, where another kid has that
// slot, the array is laid out again (add_colliding_kid); at finite k kid
// replaces it.
void add_kid(Transition* top, Transition* kid)
{
   if (top->kids == no_kids && may_borrow_kids(top, kid)) {
      top->kids = node_kids_word(top);
      top->kid_mask = 0;
      return;
   }
   if (top->kids == no_kids) {
      UInt slots = kids_grow() ? 1 : kKidSlots;
      top->kids = kids_grow() || !child_of(top) ? new_kids(slots) : shared_kids(child_of(top));
      if (kids_grow()) top->kid_mask = (UChar)(slots - 1);
   }
   Transition*& slot = top->kids[kid_slot_in(top, kid->fn_id, kid->site)];
   if (slot == &no_transition || !kids_grow()) slot = kid;
   else add_colliding_kid(top, kid);
}

// The transition into traced fn at call_site (0: not known) from a frame
// of transition `from`: from's kid in their slot if that is the one, else
// the thread's table's, which becomes the kid (entry(): fn's first
// instruction, activation_transition's, asked only then).
template <typename Entry>
Transition* kid_transition(ThreadState* t, Transition* from, FnInfo* fn, Addr call_site, Entry entry)
{
   Transition* kid = from->kids[kid_slot_in(from, fn->id, call_site)];
   if (kid->fn_id == fn->id && kid->site == call_site) return kid;
   kid = activation_transition(t, child_of(from), fn, entry(), call_site);
   add_kid(from, kid);
   return kid;
}

// The transition into traced fn from the top frame at call_site (0: not
// known), where inline IR missed it (a full stack, or not entered by a
// call).
Transition* entered_transition(ThreadState* t, FnInfo* fn, BlockInfo* blk, Addr call_site)
{
   return kid_transition(t, kg_now->top->tr, fn, call_site, [blk] { return blk->addr; });
}

// A new activation of fn, entered from call_site (0: not known).
void push_activation(ThreadState* t, FnInfo* fn, Addr sp, BlockInfo* blk, Addr call_site)
{
   if (fn->resolver) t->resolver_call_site = call_site;
   Transition* tr = fn_traced(fn) ? entered_transition(t, fn, blk, call_site)
                                  : transparent_transition(t, child_of(kg_now->top->tr), fn);
   push_frame(t, sp, tr);
   kg_now->top_sp = sp;
}

} // namespace

void activity_init()
{
   by_tid = (ThreadState**)alloc_zeroed(VG_N_THREADS * sizeof(ThreadState*));
   kg_now = (Now*)alloc_permanent(sizeof(Now), 64);
   for (UInt i = 0; i < kKidSlots; i++) no_kids[i] = &no_transition;
   // What inline IR reads the context through: as active_of's.
   if (acts_in_nodes())
      no_transition.active = separate_view() ? (UWord*)&no_view_pair : (UWord*)&no_node.act;
   else
      no_transition.active = &no_node.act.own_active;
   kg_now->top_sp = ~(Addr)0;
}

Bool kids_grow() { return clo.k == kInfiniteK; }

// Code without symbols: the function is named by the address it was called
// at, found again by that address and the code's own (object's) function,
// which tells apart objects mapped at one address in turn (a field in every
// BlockInfo was 1.6 MB on cc1plus, whose few called entries this table
// holds).
struct NamedEntry {
   const void* a;   // the address
   const void* b;   // the block's FnInfo (no symbol)
   FnInfo* fn;
};
static PairTable<NamedEntry, 64> named_entries;

FnInfo* activated_function(BlockInfo* blk)
{
   if (!blk->fn()->no_symbol) return blk->fn();
   NamedEntry* e = named_entries.get((const void*)blk->addr, blk->fn());
   if (!e->fn) e->fn = function_named_by_address(blk->addr, blk->fn());
   return e->fn;
}

// An ended coroutine's __start_context called setcontext(uc_link), which
// entered a function by its final ret: a coroutine that starts now, on a
// stack that may share the ended one's mapping (adjacent mmaps merge), so
// SP need not have left the running stack's memory. Only the call to
// setcontext may be open: a handler's fence above it is not this.
static Bool linked_to_new_coroutine(const ThreadState* t)
{
   const Transition* top = kg_now->top->tr;
   return coroutine_ended(t) && kg_now->top == t->stack->frames + 2 && frame_fn(top) &&
          frame_fn(top)->context_set;
}

extern "C" void VG_REGPARM(1) kg_unwind(Addr sp)
{
   unwind_to_sp(current, sp);
}

// A function entered without a call below the top frame's SP, on a
// coroutine stack in a mapping: a tail call enters at the top frame's SP (a
// signal's handler above its fence), so the program switched to a new
// coroutine's stack below this one (its first function entered by a `ret`
// or a jump, as makecontext's and boost.context's are).
static Bool entered_below_top(const ThreadState* t, Addr sp)
{
   const Frame* top = kg_now->top;
   return in_shared_mapping(t, t->stack) && top > t->stack->frames && sp < top->sp && !t->stack->alt_fences &&
          (top->tr->kind == kActivation || top->tr->kind == kTransparent);
}

// A coroutine stack's first function was entered at sp without a call
// (rose_off_coroutine_stack).
static void note_coroutine_entry(ThreadState* t, Addr sp)
{
   ShadowStack* s = t->stack;
   if (s != t->own && kg_now->top == s->frames + 1 && !s->entry_sp) s->entry_sp = sp;
}

static ULong* block_counters_now(BlockInfo* blk);

// A block that may start an activation, after a call or not. Returns its
// counters in the context it runs in.
static ULong* block_entry(BlockInfo* blk, Addr sp, UWord after_call)
{
   ThreadState* t = current;
   if (after_call) {
      push_activation(t, activated_function(blk), sp, blk, kg_now->call_site);
   } else if (blk->fn_entry && !runs(kg_now->top->tr, blk->fn())) {
      if (linked_to_new_coroutine(t) || entered_below_top(t, sp)) switch_stack(t, sp, blk);
      // A jump to a function's first instruction from another function is a
      // tail call; a jump back to its own entry is a loop. (Direct jumps
      // left the call pending: kg_instrument.cpp, add_tail_call.) Here by an
      // indirect jump, or by a signal's delivery (its site then: the
      // interrupted instruction, signal_delivered).
      push_activation(t, blk->fn(), sp, blk, kg_now->jump_site);
      note_coroutine_entry(t, sp);
   }
   kg_now->jump_site = 0;
   return block_counters_now(blk);
}

// A new coroutine's first function (entered by a ret, not a call) comes
// through kg_entry_fixup or kg_block_entry; kg_block_start checks in
// unwind_at_block_start.
static void follow_stack_switch(Addr sp, BlockInfo* blk)
{
   if (left_running_stack(current, sp)) switch_stack(current, sp, blk);
}

extern "C" void VG_REGPARM(3) kg_entry_fixup(BlockInfo* blk, Addr sp, ForestNode* ctx_before)
{
   Transition* tr = kg_now->top->tr;
   tr->calls--;
   count_out(tr);
   kg_now->top--;
   kg_now->ctx = ctx_before;
   update_now_from_top();
   // A handler on an alternate stack runs below no frame (signal_delivered).
   if (kg_now->top->tr->kind == kAltSignalFence) kg_now->top_sp = ~(Addr)0;
   follow_stack_switch(sp, blk);
   block_entry(blk, sp, ctx_before == kCallPending);
}

extern "C" void VG_REGPARM(3) kg_block_entry(BlockInfo* blk, Addr sp, ForestNode* ctx_before)
{
   follow_stack_switch(sp, blk);
   block_entry(blk, sp, ctx_before == kCallPending);
}

// blk, outside the top frame's function, runs where a suspended coroutine
// stack resumes (resumed_frame), while a coroutine stack in a mapping runs:
// a switch to that stack, below (one above raised SP: kg_unwind). Code runs
// outside its top frame's function after such a switch (the top frame is
// the switch's, the resumed code the switch's caller); a normal return pops
// the top frame inline and leaves blk in the new top frame's function.
static void follow_resume_below(ThreadState* t, BlockInfo* blk, Addr sp)
{
   if (!in_shared_mapping(t, t->stack) || t->stack->alt_fences || runs(kg_now->top->tr, blk->fn())) return;
   if (ShadowStack* resumed = resumed_stack(t, landing_at(sp, blk))) switch_to_stack(t, resumed, sp);
}

// Pops the frames that died, by SP at the start of the running superblock
// (helpers called there: the guest state holds it, as no statement of the
// superblock ran yet), or follows a switch to another stack (a resumed
// coroutine's first block misses its cached context, so it gets here).
// Returns that SP.
static Addr unwind_at_block_start(BlockInfo* blk)
{
   Addr sp = VG_(get_SP)(current->tid);
   if (sp > kg_now->top_sp || left_running_stack(current, sp)) unwind_to_sp(current, sp, blk);
   else if (current->suspended) follow_resume_below(current, blk, sp);
   return sp;
}

extern "C" void VG_REGPARM(1) kg_block_start(BlockInfo* blk)
{
   Addr sp = unwind_at_block_start(blk);
   UWord after_call = kg_now->ctx == kCallPending;
   if (after_call || blk->fn_entry)
      block_entry(blk, sp, after_call);
   else
      point_block_at(blk, kg_now->ctx);
}

// The counters of blk in kg_now->ctx, in its array or else its way 0.
static ULong* block_counters_now(BlockInfo* blk)
{
   ULong* counters = array_counters(kg_now->ctx, blk);
   if (counters) return counters;
   point_block_at(blk, kg_now->ctx);
   return blk->ways[0].counters;
}

extern "C" void VG_REGPARM(1) kg_block_counters(UWord block_id)
{
   BlockInfo* blk = block_with_id((UInt)block_id);
   Addr sp = unwind_at_block_start(blk);
   UWord after_call = kg_now->ctx == kCallPending;
   kg_now->found_counters = after_call || blk->fn_entry ? block_entry(blk, sp, after_call) : block_counters_now(blk);
}

extern "C" void VG_REGPARM(1) kg_entry_counters(UWord block_id)
{
   kg_now->found_counters = block_counters_now(block_with_id((UInt)block_id));
}

extern "C" void VG_REGPARM(2) kg_jump_out(Addr target, Addr jump_instr)
{
   // ld.so's resolver jumping to the function it resolved: already pending.
   if (kg_now->ctx == kCallPending || !is_unnamed_object_code(target)) return;
   kg_now->call_site = jump_instr;
   kg_now->ctx = kCallPending;
}

// The instructions of a superblock with one flush point.
static UWord block_instructions(const BlockInfo* blk)
{
   if (clo.dump_instr) return blk->n_instrs;   // per-instruction positions
   UWord n = 0;
   for (UInt i = 0; i < blk->n_runs; i++) n += blk->runs()[i].n;
   return n;
}

extern "C" void VG_REGPARM(1) kg_sigreturn_code(BlockInfo* blk)
{
   unwind_at_block_start(blk);
   Transition* top = kg_now->top->tr;
   Bool fence = top->kind == kSignalFence || top->kind == kAltSignalFence;
   if (!fence || kg_now->ctx == kCallPending) {
      kg_block_start(blk);
      blk->ways[0].counters[0]++;   // its flush point, reached
      return;
   }
   // A handler returned into the restorer: as a PLT stub's instructions
   // are charged to its call, these go to the interrupted instruction.
   BlockInfo* at = position_block(top->interrupted);
   point_block_at(at, transition_ctx(top));
   at->ways[0].counters[0] += block_instructions(blk);
}

extern "C" void VG_REGPARM(1) kg_plt_start(BlockInfo* blk)
{
   unwind_at_block_start(blk);
   point_block_at(blk, transition_ctx(kg_now->top->tr));
}

// ---- Block modes ------------------------------------------------------------

static BlockForest** grow_forest_table(BlockForest** table, UInt* n, UInt id)
{
   UInt cap = *n ? *n : 16;
   while (cap <= id) cap *= 2;
   BlockForest** bigger = (BlockForest**)alloc_zeroed(cap * sizeof(BlockForest*));
   if (*n) VG_(memcpy)(bigger, table, *n * sizeof(BlockForest*));
   kg::release(table);
   *n = cap;
   return bigger;
}

// The block forest of (thread, fn); a new one is rooted at root_label.
static BlockForest* intra_forest(ThreadState* t, FnInfo* fn, UInt root_label)
{
   BlockForest*** table = clo.join_threads ? &joined_fn_forests : &t->fn_forests;
   UInt* n = clo.join_threads ? &n_joined_fn_forests : &t->n_fn_forests;
   if (fn->id >= *n) *table = grow_forest_table(*table, n, fn->id);
   BlockForest*& f = (*table)[fn->id];
   if (!f) f = block_forest_new(fn, clo.join_threads ? 0 : t->serial, root_label);
   return f;
}

// The runs recorded in the block trace: the current activation's next blocks.
static void run_trace()
{
   UWord* start = trace_start();
   UWord* end = kg_trace_pos;
   if (end == start) return;
   kg_trace_pos = start;
   BlockForest* f = kg_now->bb_forest;
   BlockState* s = *kg_now->bb_state;
   const UWord* e = start;
   for (; e + 1 < end; e += 2)
      s = step_two(f, s, trace_label(e[0]), trace_count(e[0]), trace_label(e[1]), trace_count(e[1]));
   if (e < end) s = step_block(f, s, trace_label(*e), trace_count(*e));
   *kg_now->bb_state = s;
}

extern "C" void kg_trace_full() { run_trace(); }

extern "C" void VG_REGPARM(2) kg_block_intra(BBInfo* b, UWord n)
{
   run_trace();   // before the activation may change
   ThreadState* t = current;
   UInt d = depth(t) - 1;
   const Frame& f = *kg_now->top;
   FnInfo* fn = frame_fn(f.tr);
   // Only blocks run by an activation of a traced function are recorded.
   if (f.tr->kind != kActivation || !fn) return;
   if (d >= t->bb_cap) {
      UInt cap = t->bb_cap ? t->bb_cap : 64;
      while (cap <= d) cap *= 2;
      BlockFrame* bb = (BlockFrame*)alloc_zeroed(cap * sizeof(BlockFrame));
      if (t->bb_cap) VG_(memcpy)(bb, t->bb, t->bb_cap * sizeof(BlockFrame));
      kg::release(t->bb);
      t->bb = bb;
      t->bb_cap = cap;
   }
   BlockFrame& s = t->bb[d];
   if (!s.forest || s.sp != f.sp || s.ir_at_entry != f.ir_at_entry || s.fn != fn) {
      // The first block of a new activation: it starts again at the root of
      // the function's forest (normally the function's first block).
      s.sp = f.sp;
      s.ir_at_entry = f.ir_at_entry;
      s.fn = fn;
      s.forest = intra_forest(t, fn, b->label);
      s.serial = ++t->bb_activations;
      if (s.forest->forest.sf.root_label() == b->label)
         s.state = run_block_root(s.forest, n);
      else
         s.state = step_block(s.forest, enter_block_root(s.forest), b->label, n);
   } else {
      s.state = step_block(s.forest, s.state, b->label, n);
   }
   // The block trace continues this frame's activation while the frame is on top.
   kg_now->bb_state = &s.state;
   kg_now->bb_top = kg_now->top;
   kg_now->bb_ir = f.ir_at_entry;
   kg_now->bb_forest = s.forest;
   dump_block(t->serial, s.serial, fn->id + 1, b);
}

extern "C" void VG_REGPARM(2) kg_block_inter(BBInfo* b, UWord n)
{
   run_trace();   // earlier runs first
   ThreadState* t = current;
   t->inter_state = step_block(t->inter_forest, t->inter_state, b->label, n);
   dump_block(t->serial, 0, b->fn->id + 1, b);
}

UInt block_forests(BlockForest** out, UInt max)
{
   UInt n = 0;
   auto add = [&](BlockForest* f) { if (f && n < max) out[n++] = f; };
   auto add_table = [&](BlockForest** table, UInt size) {
      for (UInt i = 0; i < size; i++) add(table[i]);
   };
   if (clo.mode == kModeInter && clo.join_threads) {
      add(joined_inter_forest);
      return n;
   }
   if (clo.mode == kModeIntra && clo.join_threads) {
      add_table(joined_fn_forests, n_joined_fn_forests);
      return n;
   }
   // Oldest thread first.
   // Serials have gaps in a fork child (forget_other_threads).
   for (UInt serial = 1; serial <= thread_serials; serial++) {
      for (ThreadState* t = all_threads; t; t = t->next) {
         if (t->serial != serial) continue;
         if (clo.mode == kModeInter) add(t->inter_forest);
         else add_table(t->fn_forests, t->n_fn_forests);
      }
   }
   return n;
}

// Calls f on every block forest once.
template <typename F> static void for_each_block_forest(F f)
{
   auto each = [&](BlockForest* bf) { if (bf) f(bf); };
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (t->inter_forest != joined_inter_forest) each(t->inter_forest);
      for (UInt i = 0; i < t->n_fn_forests; i++) each(t->fn_forests[i]);
   }
   each(joined_inter_forest);
   for (UInt i = 0; i < n_joined_fn_forests; i++) each(joined_fn_forests[i]);
}

static void reset_block_state()
{
   // Every forest's counters back to zero (fork child), the parent's runs
   // still in the trace and in the states included.
   kg_trace_pos = trace_start();
   for_each_block_forest([](BlockForest* f) {
      settle_block_states(f);
      forest_reset(&f->forest);
   });
   for (UInt l = 0; l < block_count(); l++) block_by_label(l)->count = 0;
   dump_disable();
}

// ---- Regions of interest ----------------------------------------------------
//
// Dumps, zeroing and collection switched off (kg_regions.cpp) act on the
// counters only: the shadow stacks and forests always follow the program, so
// the contexts are right whenever counting resumes. A frame's inclusive cost
// is the thread's clock (kg_now->ir) less its entry's reading; these
// functions settle frames and restart their entries. The clock itself only
// runs forward: they may be called from helpers in the middle of a
// superblock, which keeps its value in temporaries (kg_instrument.cpp,
// PendingCounts); what it ran uncounted is kept apart (ir_uncounted).

Bool kg_counting = True;


// Calls f(s, top) for each of t's stacks with its top frame.
template <typename F> static void for_each_stack(ThreadState* t, F f)
{
   f(t->stack, now_of(t).top);
   for (ShadowStack* s = t->suspended; s; s = s->next) f(s, s->top);
}

// Adds the inclusive cost that frames first..top of one stack have run up
// to `now`, as their pops would (a recursive context's only in its
// outermost frame), and starts their clocks at now. The stack's frames are
// not counted in `active` (as a suspended stack's: suspend_stack) and are
// counted in only while they settle.
static void settle_frames(Frame* first, Frame* top, ULong now)
{
   for (Frame* f = first; f <= top; f++)
      if (f->tr->kind == kActivation) count_in(f->tr);
   for (Frame* f = top; f >= first; f--) {
      Transition* tr = f->tr;
      if (tr->kind != kActivation) continue;
      close_frame(tr, now - f->ir_at_entry);
   }
   for (Frame* f = first; f <= top; f++) f->ir_at_entry = now;
}

// __root__'s frame closes now (its inclusive cost is the thread's run so
// far), and its clock restarts.
static void settle_root(ThreadState* t, ULong now)
{
   Frame& root = t->own->frames[0];
   ForestNode* root_node = ctx_of(child_of(root.tr));
   if (!counts_derived()) root_node->incl += now - root.ir_at_entry;
   if (t->view != t->forest) root_node->excl += now - root.ir_at_entry;   // as flush_transitions
   root.ir_at_entry = now;
}

// Each stack is settled as its own pops would close its frames: with only
// its frames counted in `active`, so a suspended stack's frame in a node
// where the running stack has one too is outermost on its stack and counts
// what it ran (the running stack's frames are counted out meanwhile, as a
// switch away from it would).
static void settle_thread(ThreadState* t)
{
   ULong ir = now_of(t).ir;
   with_running_frames_out(t, [&] {
      for_each_stack(t, [&](ShadowStack* s, Frame* top) {
         settle_frames(s->frames + 1, top, s == t->stack ? ir : s->suspended_at);
      });
   });
   settle_root(t, ir);
}

// Thread t's frames (and stacks) start their clocks at its clock's reading:
// what they ran so far is counted no more.
static void restart_frames(ThreadState* t)
{
   ULong ir = now_of(t).ir;
   for_each_stack(t, [&](ShadowStack* s, Frame* top) {
      for (Frame* f = s->frames; f <= top; f++) f->ir_at_entry = ir;
      s->suspended_at = ir;
   });
   t->ir_at_pause = ir;
}

// Where calls count from the last zeroing on (counts_derived): thread t's
// transitions' calls as counting pauses, to be put back when what ran
// since is discarded.
static void save_calls_at_pause(ThreadState* t)
{
   if (!counts_derived()) return;
   UWord n = 0;
   for_each_transition(t, [&](Transition* tr) { n += tr->kind == kActivation && tr->calls; });
   t->calls_at_pause = (TransitionCalls*)kg::alloc((n + 1) * sizeof(TransitionCalls));
   t->n_calls_at_pause = 0;
   for_each_transition(t, [&](Transition* tr) {
      if (tr->kind == kActivation && tr->calls) t->calls_at_pause[t->n_calls_at_pause++] = { tr, tr->calls };
   });
}

static void forget_calls_at_pause(ThreadState* t)
{
   kg::release(t->calls_at_pause);
   t->calls_at_pause = nullptr;
   t->n_calls_at_pause = 0;
}

// While counting is off: forgets what thread t ran since it paused (calls
// and inclusive costs; exclusive costs went to no counter).
static void discard_uncounted(ThreadState* t)
{
   zero_transitions(t);
   for (UWord i = 0; i < t->n_calls_at_pause; i++) t->calls_at_pause[i].tr->calls = t->calls_at_pause[i].calls;
   t->ir_uncounted += now_of(t).ir - t->ir_at_pause;
   restart_frames(t);
}

void settle_open_frames()
{
   for (ThreadState* t = all_threads; t; t = t->next) {
      // Settled when counting paused: what ran since is not counted.
      if (kg_counting) settle_thread(t);
      else discard_uncounted(t);
   }
}

void zero_counters()
{
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (!clo.join_threads) forest_reset(t->forest);
      if (!clo.join_threads && t->view != t->forest) forest_reset(t->view);
      zero_transitions(t);
      forget_calls_at_pause(t);   // zero too
      t->ir_uncounted = now_of(t).ir;
      restart_frames(t);
   }
   if (joined_forest) forest_reset(joined_forest);
   if (joined_view && joined_view != joined_forest) forest_reset(joined_view);
   reset_costs();
}

void pause_counting()
{
   if (!kg_counting) return;
   for (ThreadState* t = all_threads; t; t = t->next) {
      settle_thread(t);
      flush_transitions(t, False);   // what follows can be told apart and discarded
      save_calls_at_pause(t);
      t->ir_at_pause = now_of(t).ir;
   }
   kg_counting = False;
   forget_cached_counters();
}

void resume_counting()
{
   if (kg_counting) return;
   for (ThreadState* t = all_threads; t; t = t->next) {
      discard_uncounted(t);
      forget_calls_at_pause(t);
   }
   kg_counting = True;
   forget_cached_counters();
}

ULong ir_elapsed()
{
   ULong ir = 0;
   for (ThreadState* t = all_threads; t; t = t->next) ir += now_of(t).ir;
   return ir;
}

// The Ir counted of thread t.
static ULong counted_ir(ThreadState* t) { return now_of(t).ir - t->ir_uncounted; }

// ---- Context ids (KGRIND_CURRENT_CONTEXT) -----------------------------------

namespace {
struct ContextId {
   const void* a;     // ForestNode*: a canonical k-SF node
   const void* b;     // the thread's serial (0: threads joined)
   UWord id;
};
PairMap<ContextId> context_ids;
UWord n_context_ids = 0;
} // namespace

UWord current_context_id(ThreadId tid)
{
   switch_to(tid);
   ForestNode* node = ctx_of(child_of(kg_now->top->tr));
   UWord serial = clo.join_threads ? 0 : current->serial;
   ContextId* c = context_ids.get(node, (const void*)serial);
   if (!c->id) c->id = ++n_context_ids;
   return c->id;
}

void for_each_context_id(void (*f)(UWord id, UInt thread, const ForestNode* node, void* arg), void* arg)
{
   context_ids.for_each([&](ContextId* c) { f(c->id, (UInt)(UWord)c->b, (const ForestNode*)c->a, arg); });
}

// ---- Status (monitor command) ------------------------------------------------

void for_each_live_thread(void (*f)(UInt thread, ThreadId tid, const ForestNode* ctx, UInt depth, void* arg),
                          void* arg)
{
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (!by_tid[t->tid] || by_tid[t->tid] != t) continue;
      const Now& now = now_of(t);
      f(t->serial, t->tid, ctx_of(child_of(now.top->tr)), (UInt)(now.top - t->stack->frames), arg);
   }
}

void thread_starts_running(ThreadId tid, ULong blocks_done)
{
   switch_to(tid);
}

// Every stack's frames end now, the suspended ones' where they paused;
// but at the thread's exit (keep_fibers) its suspended coroutine stacks
// with frames stay suspended: another thread may resume them (a fiber
// scheduler's worker ended; move_stack). What is left of them ends with
// the run (finish_all_threads).
void close_thread(ThreadState* t, Bool keep_fibers)
{
   if (block_mode()) run_trace();
   for (;;) {
      while (kg_now->top > base_frame(t)) pop_frame(t);
      ShadowStack* done = t->stack;
      done->top = done->frames;
      if (done != t->own) release_stack(done);
      ShadowStack* next = !keep_fibers ? t->suspended : done != t->own ? t->own : nullptr;
      if (!next) break;
      resume_stack(t, next);
   }
   end_suspended_stacks(t, [](const ShadowStack* s) { return s->top == s->frames; });
   run_on(t, t->own);
   // __root__'s inclusive cost is the thread's whole run.
   settle_root(t, kg_now->ir);
   update_now_from_top();
}

void thread_exits(ThreadId tid)
{
   if (!by_tid[tid]) return;
   switch_to(tid);
   if (!kg_counting) discard_uncounted(current);
   close_thread(current, True);
   // The tid will be reused by a new thread, which gets its own state.
   current->saved = *kg_now;
   by_tid[tid] = nullptr;
   current = nullptr;
}

// A thread that registers the stack it runs on (its own, or a coroutine's
// seen before as part of a mapping) tells where that stack is: else SP
// would seem to have left it for another stack.
static void tie_running_stack(Addr start, Addr end)
{
   ThreadId tid = VG_(get_running_tid)();
   if (tid == VG_INVALID_THREADID) return;
   Addr sp = VG_(get_SP)(tid);
   if (sp < start || sp > end) return;
   switch_to(tid);
   ShadowStack* s = current->stack;
   s->lo = start;
   s->hi = end;
   s->registered = True;
}

void stack_registered(Addr start, Addr end)
{
   if (start > end) {   // as the core takes it
      Addr swap = start;
      start = end;
      end = swap;
   }
   UInt at = forget_registered_stacks(start, end);
   end_stacks_in(start, end);
   if (n_registered_stacks == registered_stacks_cap) {
      registered_stacks_cap = registered_stacks_cap ? 2 * registered_stacks_cap : 16;
      StackRange* grown = (StackRange*)kg::alloc(registered_stacks_cap * sizeof(StackRange));
      if (n_registered_stacks) VG_(memcpy)(grown, registered_stacks, n_registered_stacks * sizeof(StackRange));
      if (registered_stacks) kg::release(registered_stacks);
      registered_stacks = grown;
   }
   VG_(memmove)(registered_stacks + at + 1, registered_stacks + at,
                (n_registered_stacks - at) * sizeof(StackRange));
   registered_stacks[at] = { start, end };
   n_registered_stacks++;
   tie_running_stack(start, end);
}

void memory_unmapped(Addr a, SizeT len)
{
   if (!len) return;
   forget_registered_stacks(a, a + len - 1);
   end_stacks_in(a, a + len - 1);
}

void signal_delivered(ThreadId tid, Int sig, Bool alt_stack)
{
   switch_to(tid);
   ThreadState* t = current;
   FrameKind kind = alt_stack ? kAltSignalFence : kSignalFence;
   Transition* tr = fence_transition(t, kg_now->top->tr, kind);
   tr->interrupted = VG_(get_IP)(tid);   // where the signal restorer is charged
   Frame* f = push_frame(t, VG_(get_SP)(tid), tr);
   if (alt_stack) t->stack->alt_fences++;
   // The handler's first block is entered by the core, not by a call:
   // push_frame made ctx the fence's, so no call is pending. Its call edge
   // is at the interrupted instruction (the next one to run when the handler
   // returns), as the jump site of its entry: a line of the interrupted
   // context rather than line 0 (docs/function-mode.md, "Signals").
   kg_now->jump_site = VG_(get_IP)(tid);
   kg_now->top_sp = alt_stack ? ~(Addr)0 : f->sp;
}

void signal_returned(ThreadId tid, Int sig)
{
   switch_to(tid);
   ThreadState* t = current;
   // Pop the handler's frames and its fence (the innermost one).
   while (kg_now->top > base_frame(t)) {
      UWord kind = kg_now->top->tr->kind;
      pop_frame(t);
      if (kind == kSignalFence || kind == kAltSignalFence) break;
   }
   update_now_from_top();
}

// A fork child runs only the thread that forked: the parent's other threads,
// finished or running, are not the child's and leave its profile.
static void forget_other_threads(ThreadId tid)
{
   switch_to(tid);
   for (UInt i = 0; i < VG_N_THREADS; i++)
      if (by_tid[i] != current) by_tid[i] = nullptr;
   current->next = nullptr;
   all_threads = current;
}

void fork_child(ThreadId tid)
{
   forget_other_threads(tid);
   // The child starts from zero: forests, line costs, call edges, and the
   // clocks (this runs between superblocks: no temporary holds them).
   for (ThreadState* t = all_threads; t; t = t->next) now_of(t).ir = 0;
   zero_counters();
   if (block_mode()) reset_block_state();
}

void finish_all_threads()
{
   for (UInt tid = 0; tid < VG_N_THREADS; tid++) {
      if (!by_tid[tid]) continue;
      switch_to(tid);
      if (!kg_counting) discard_uncounted(current);
      close_thread(current, False);
   }
   if (current) current->saved = *kg_now;
   // Fibers that ended threads left suspended, no other thread resumed.
   for (ThreadState* t = all_threads; t; t = t->next) end_suspended_stacks(t, [](const ShadowStack*) { return True; });
   if (block_mode()) {
      for_each_block_forest([](BlockForest* f) {
         settle_block_states(f);
         f->states.clear();
      });
   }
   // No more lookups: their tables' memory goes to the output's buffers.
   // The transitions are found through their index: flushed first.
   for (ThreadState* t = all_threads; t; t = t->next) {
      flush_transitions(t, True);
      t->acts.forget_index();
      t->transitions.clear();
      t->view_acts.forget_index();
   }
   active_counts.forget_index();
   calls_added_for_good = True;
}

void derive_node_counts(const ThreadProfile* threads, UInt n)
{
   if (!counts_derived()) return;
   for (UInt i = 0; i < n; i++)
      core::visit_postorder(threads[i].forest->sf, [](ForestNode* node) {
         tl_assert(node->incl == 0);   // its first transition's edge_incl, flushed (flush_all_transitions)
         ULong incl = node->excl;
         core::for_each_child(node, [&](ForestNode* c) { incl += c->incl; });
         node->incl = incl;
      });
}

void forget_node_counts(const ThreadProfile* threads, UInt n)
{
   if (!counts_derived()) return;
   for (UInt i = 0; i < n; i++)
      core::visit_postorder(threads[i].forest->sf, [](ForestNode* node) { node->incl = 0; });
   if (calls_added_for_good) return;
   for (ThreadState* t = all_threads; t; t = t->next) {
      add_calls_to_nodes(t, -1);
      add_calls_to_edges(t, -1);
   }
}

UInt thread_profile_count()
{
   if (clo.join_threads) return 1;
   UInt n = 0;
   for (ThreadState* t = all_threads; t; t = t->next) n++;
   return n;
}

void flush_all_transitions()
{
   for (ThreadState* t = all_threads; t; t = t->next) flush_transitions(t, !calls_added_for_good);
}

UInt thread_profiles(ThreadProfile* out)
{
   if (current) current->saved = *kg_now;
   if (clo.join_threads) {
      if (!joined_forest) return 0;
      ULong ir = 0;
      for (ThreadState* t = all_threads; t; t = t->next) ir += counted_ir(t);
      out[0].tid = 0;
      out[0].forest = joined_forest;
      out[0].view = joined_view;
      out[0].ir = ir;
      return 1;
   }
   // Oldest first: the main thread is thread 1.
   UInt n = thread_profile_count();
   UInt i = n;
   for (ThreadState* t = all_threads; t; t = t->next) {
      i--;
      out[i].tid = t->serial;
      out[i].forest = t->forest;
      out[i].view = t->view;
      out[i].ir = counted_ir(t);
   }
   return n;
}

} // namespace kg
