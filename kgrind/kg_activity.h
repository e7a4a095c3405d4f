// Activations: per-thread shadow stacks keyed by the stack pointer, driving
// each thread's k-SF. Instrumented code talks to this layer through the
// globals in `kg_now` (read and written by inline IR) and three helpers.
#pragma once
#include "kg_costs.h"
#include "kg_forest.h"

namespace kg {

struct BlockInfo;

// The running thread's state as inline IR sees it. One instance; the
// thread layer swaps its contents at every thread switch.
struct Now {
   Addr top_sp;               // SP recorded by the top frame; ~0 when none
   UWord pending_call;        // the previous block ended in a call
   Addr call_site;            // address of that call instruction
   ForestNode* ctx;           // canonical node of the current activation
   ULong ir;                  // instructions run by this thread
};
extern Now kg_now;

void activity_init();

// Helpers called from instrumented code (see kg_instrument.cpp).
extern "C" {
// SP rose above the top frame: pop the frames that died.
void VG_REGPARM(1) kg_unwind(Addr sp);
// A block that may start an activation (entered after a call, or a
// function's first block).
void VG_REGPARM(3) kg_block_entry(BlockInfo* blk, Addr sp, UWord after_call);
}

// Core callbacks.
void thread_starts_running(ThreadId tid, ULong blocks_done);
void thread_exits(ThreadId tid);
void signal_delivered(ThreadId tid, Int sig, Bool alt_stack);
void signal_returned(ThreadId tid, Int sig);
void fork_child(ThreadId tid);

// End of run: closes every open activation of every thread.
void finish_all_threads();

// For output.
struct ThreadProfile {
   ThreadId tid;
   Forest* forest;
   ULong ir;
};
UInt thread_profiles(ThreadProfile* out, UInt max);

// Block modes: every block forest, oldest thread first, then by function id.
struct BlockForest;
UInt block_forests(BlockForest** out, UInt max);

} // namespace kg
