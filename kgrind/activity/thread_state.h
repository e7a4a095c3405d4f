// A thread's state: its shadow stacks, its forests and the index of its
// transitions; and the registry of threads.
// Part of the activity unit (kg_activity.cpp), which includes it first.
#pragma once

namespace kg {

// A transition's parent ActNode (a Transition for fences; transitions.cpp).
static const void* parent_of(const Transition* tr);

// A transition's index key besides its parent (see transition_key).
static const void* transition_key(const Transition* tr);
struct TransitionKeys {
   static const void* a(const Transition* tr) { return parent_of(tr); }
   static const void* b(const Transition* tr) { return transition_key(tr); }
};

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
   // With events beyond Ir (event_clocks.cpp): each frame's readings of the
   // thread's event clock at its entry, a row a frame beside `frames`; and
   // while suspended, the clock when it was left.
   ULong* ev;
   ULong* ev_suspended_at;
   UInt alt_fences;         // handlers running on an alternate signal stack
   StackSegment* segment;   // the innermost -fsplit-stack segment it runs on
   Bool registered;         // lo, hi: a stack the program registered
   Bool mapped;             // lo, hi: the mapping it lay in when read (it may grow)
   // A coroutine stack in a mapping (not registered): the SP its first
   // function was entered at without a call (0: not known). Nothing of the
   // coroutine's lies above it but that function's return address, so SP
   // rising farther while its frames are open left the stack.
   Addr entry_sp;
   // While suspended: the return address in its top frame's slot, where a
   // resume returns to (0: none read).
   Addr resume_pc;
   // The goroutine that ran on it (goroutine_at: Go's g), when a switch
   // landed on it; 0: not known.
   Addr goroutine;
   // While suspended, a coroutine stack's: what its frames' slots held
   // (stack_shape), by which a copy of the stack in other memory is known
   // (moved_stack). 0: not known.
   ULong shape;
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

// The slots a thread's tables first have (a power of two).
const UWord kThreadFirstCap = 16;

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
   ULong ev_clock[kEventIds];   // its events so far (kg_event_clock while it runs)
   // Threads after the first start these small (kThreadFirstCap; thread_state):
   // a program may make thousands of threads of a few calls each.
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

// Threads that ended, compacted in batches (ended_threads.cpp): thread t
// ended; a fork child forgets them; zero_counters zeroes their records; the
// sum of their clocks.
static void end_thread(ThreadState* t);
static void forget_ended_threads();
static void zero_ended_threads();
static ULong ended_threads_clock();

// After the options: which events' clocks run (event_clocks.cpp).
static void event_clocks_init();

struct TransitionCalls {
   Transition* tr;
   ULong calls;
};

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

} // namespace

} // namespace kg
