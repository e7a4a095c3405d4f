// Activations: per-thread shadow stacks keyed by the stack pointer, driving
// each thread's k-SF (kg_activity.cpp, made of activity/). What the rest of
// the tool calls: the core's callbacks, the profile writer's and the
// regions' entries, each section defined in the file it names.
// Instrumented code talks to this layer through kg_hotpath.h.
#pragma once
#include "kg_forest.h"

namespace kg {

struct FnInfo;

// The threads' registry, kg_now and the empty kid arrays (activity/layouts.cpp).
void activity_init();
// The chain of the inlined levels on top of the running thread's stack (0:
// none), or kNoRunningChain when no thread runs or a call is pending: where
// a superblock translated now is about to start (instrument/inline_runs_ir.cpp).
const UInt kNoRunningChain = ~0u;
UInt running_inline_chain();

// Computed jumps that may be tail calls (activity/tail_jumps.cpp): the word
// in which the jump at jump_instr, of function fn, keeps its last target
// that a tail call from it entered (0: none). Its IR makes the jump a
// pending call when it jumps there from an activation of fn at that
// activation's entry SP (instrument/frames_ir.cpp, add_computed_tail_call).
Addr* tail_jump_word(Addr jump_instr, const FnInfo* fn);
// The translation at addr was discarded: no jump's word keeps it.
void tail_jump_target_discarded(Addr addr);

// Core callbacks (activity/threads.cpp).
void thread_starts_running(ThreadId tid, ULong blocks_done);
void thread_exits(ThreadId tid);
void signal_delivered(ThreadId tid, Int sig, Bool alt_stack);
void signal_returned(ThreadId tid, Int sig);
void fork_child(ThreadId tid);
// VALGRIND_STACK_REGISTER: [start, end] is a stack of its own (a coroutine's
// in a heap or a larger mapping), and any stack that lay there ended.
void stack_registered(Addr start, Addr end);
// Stacks that lay in unmapped memory ended.
void memory_unmapped(Addr a, SizeT len);

// A layer above may watch frames die (regions of interest: the activation
// of a --toggle-collect or --dump-after function ending). While `on`, every
// rise of a thread's SP above frames it popped is told to stack_rose, after
// the pops. A hook, so that the frames never call up into that layer.
struct FramesWatch {
   Bool on;
   void (*stack_rose)(ThreadId tid, Addr sp);
};
extern FramesWatch kg_frames_watch;

// End of run and output (activity/thread_profiles.cpp).
// End of run: closes every open activation of every thread.
void finish_all_threads();

struct EndedThread;   // a thread that ended, compact (activity/ended_threads.cpp)
struct ThreadProfile {
   ThreadId tid;
   Forest* forest;      // the k-SF (null for a compact thread: thread_forest)
   Forest* view;        // the body's contexts (the k-SF without --view-k; null
                        // for a compact thread: ended_threads_view)
   ULong ir;
   const EndedThread* ended;   // the thread's compact record, or null
};
// A thread's k-SF: its forest, or a compact thread's decoded (valid until
// another compact thread's is asked for).
const core::Forest& thread_forest(const ThreadProfile& t);
// The body's contexts of every compact thread (their counters' and call
// edges' nodes), or null.
Forest* ended_threads_view();
// Every thread that ever ran (or 1 when threads are joined): the size of
// thread_profiles' array.
UInt thread_profile_count();
UInt thread_profiles(ThreadProfile* out);
// Every thread's transitions' deferred counts into its forests and the call
// edges: before the forests or edges are read (a profile's writer). Where a
// thread's k-SF nodes keep no inclusive cost and no count of calls during
// the run (k = inf with a separate view: their `calls` and `incl` words are
// their first transition's `calls` and `edge_incl`, and transitions count
// calls from the last zeroing on), the transitions' calls are added to the
// call edges and nodes too, and derive_node_counts sets each node's
// inclusive cost to its exclusive cost plus its children's; after writing,
// forget_node_counts gives the words and calls back before the run goes on.
void flush_all_transitions();
// The inclusive events beyond Ir of node n of forest sf (a thread's k-SF,
// or the joined forest: after its payload), or null where sf's nodes have
// none (no events; a decoded record's forest).
const ULong* node_incl_events_in(const core::Forest& sf, const ForestNode* n);
// --stats: how many transitions have inclusive events.
void print_event_clock_stats();
void derive_node_counts(const ThreadProfile* threads, UInt n);
void forget_node_counts(const ThreadProfile* threads, UInt n);
// --stats: how often the frames' and levels' helpers ran (exact counts,
// which A/B comparisons can trust where time is noisy).
struct HelperCalls {
   ULong inline_enter, inline_leave, run_counters, block_start, block_counters, entry_counters, block_entry,
      entry_fixup, unwind, frame_events_close, tail_jump, frameless_find, frameless_variants, frameless_start, frameless_call, frameless_return;
};
extern HelperCalls helper_calls;
void print_helper_call_stats();

// Regions of interest (kg_regions.cpp, kg_dumps.cpp; activity/counting.cpp): the counters
// start, stop, are written and zeroed; the shadow stacks and forests never
// stop.
// Each open frame's inclusive cost so far is added to its activation, and
// its clock restarts (before a dump: its inclusive cost up to now).
void settle_open_frames();
// Every counter back to zero; the stacks and forests stay.
void zero_counters();
// Counting stops (what was counted is kept) and resumes: what ran in
// between is in no counter, its calls neither.
void pause_counting();
void resume_counting();
// The Ir the process ran so far, counted or not.
ULong ir_elapsed();
// The Ir counted since the last zeroing, every thread's (ended ones' too).
ULong ir_counted();
// Context ids (activity/context_ids.cpp).
// An id of thread tid's current k-context, stable in the run (1, 2, ...).
UWord current_context_id(ThreadId tid);
// An id of thread tid's current k-context with the call sites of its
// levels (the calls from each level into the next), from the same
// numbering: equal chains of sites in a context and thread, equal ids.
UWord current_site_context_id(ThreadId tid);
// An id handed out: its thread (0: joined) and k-SF node; for a site
// context, its n_sites sites' lines, innermost level's first (0: not known).
struct ContextIdInfo {
   UWord id;
   UInt thread;
   const ForestNode* node;
   Bool sites;
   UInt n_sites;
   const UInt* site_lines;
};
// Every id handed out.
void for_each_context_id(void (*f)(const ContextIdInfo& c, void* arg), void* arg);
// Status (activity/threads.cpp).
// Every running thread: its current context and shadow stack depth.
void for_each_live_thread(void (*f)(UInt thread, ThreadId tid, const ForestNode* ctx, UInt depth, void* arg),
                          void* arg);
// Every running thread: its Ir counted since the last zeroing, and the
// contexts of its running stack's frames, innermost first (frames[0] is
// the current context; depth of them, a buffer valid during the call).
void for_each_live_stack(void (*f)(UInt thread, ThreadId tid, ULong counted_ir, const ForestNode* const* frames,
                                   UInt depth, void* arg), void* arg);

// Block modes (activity/block_modes.cpp): every block forest, oldest thread first, then by function id.
struct BlockForest;
UInt block_forests(BlockForest** out, UInt max);

} // namespace kg
