// Basic blocks for the block modes (--mode=intra|inter): the table of blocks
// (identity = start address), their names, and the helpers instrumented code
// calls at every block start of a traced function (docs/block-modes.md).
#pragma once
#include "kg_debuginfo.h"
#include "kg_forest.h"
#include "kg_pairmap.h"

namespace kg {

// One basic block: a straight run entered at `addr` (a superblock's first
// instruction, or the instruction after a side exit). Label 0 is __root__.
struct BBInfo {
   UInt label;           // dense, 1, 2, ... in order of first translation
   UInt file;            // file id of the first instruction (0: unknown)
   UInt line;            // its line (0: unknown)
   UInt offset;          // bytes from the function's start
   Addr addr;
   FnInfo* fn;           // function of the first instruction
   ULong count;          // executions recorded in a block forest
   const HChar* name;    // "{foo+12 at prog.c:14}"
};

void blocks_init();
// The block starting at addr (created on first use).
BBInfo* block_at(Addr addr, const SourceLoc& loc);
UInt block_count();                  // labels 0 .. block_count() - 1
// Return addresses of the calls translated so far (in intra mode their
// blocks call the block helper: instrument/block_modes_ir.cpp, add_block_step).
void note_return_site(Addr addr);
Bool is_return_site(Addr addr);
BBInfo* block_by_label(UInt label);

// Whether blocks of this function are recorded.
inline Bool blocks_traced(const FnInfo* fn) { return fn && fn->traced && !fn->no_symbol; }

// One activation (top, bottom) of a block forest, interned per forest, and
// the steps taken from it to the next blocks: a thread's position in a block
// forest is a BlockState, and a block run whose step is known is one compare
// and one pointer load (the next state), the loop-carried dependency of the
// block modes (docs/block-modes.md, "Stepping"). Runs into a state are
// counted in it and added to the forest's nodes by settle_block_states.
// (top, bottom) determine the phase (top's depth in its tree with finite k)
// and, with rolled loops, the depth (top's); without them depth only grows
// and nothing reads it, so a state's depth is just the first one seen.
//
// A state is two cache lines, aligned: the first holds what every run into
// it reads and writes (its counts, its last step and its last pair of
// steps), the second older steps and the activation (read on a new step and
// when settling). A forest with more states than the caches hold (rolled
// inter mode on cppvirt: 12 k) then misses once a run, not twice.
struct BlockState;
struct BlockStep {
   UInt label;                // 0: unused (label 0 is __root__, never stepped into)
   BlockState* to;
};
struct alignas(64) BlockState {
   // Hot.
   ULong runs;                // runs not yet added to top's and bottom's calls
   ULong ir;                  // their instructions, not yet in canonical's excl
   BlockStep step;            // the last step taken from here
   // The last two steps taken from here at once (step_two): the labels,
   // the first in the low half (0: none), and the states they led to.
   UWord pair_labels;
   BlockState* pair_mid;
   BlockState* pair_to;
   // Cold.
   alignas(64) BlockStep older[2];   // the steps before, most recent first
   ForestNode* top;
   ForestNode* bottom;        // nullptr while depth < k, or k infinite
   ForestNode* canonical;     // where the runs' Ir goes
   UInt phase;
   UInt depth;                // exact with rolled loops only
};
static_assert(sizeof(BlockState) == 128 && offsetof(BlockState, older) == 64, "hot line, cold line");

// A forest's states are indexed by (top, bottom).
struct BlockStateKeys {
   static const void* a(const BlockState* s) { return s->top; }
   static const void* b(const BlockState* s) { return s->bottom; }
};

// A block k-SF: per (thread, function) in intra mode, per thread in inter mode.
struct BlockForest {
   Forest forest;
   FnInfo* fn;           // intra: the function; inter: nullptr
   UInt tid;             // thread serial; 0 when threads are joined
   PairIndex<BlockState, BlockStateKeys, 16> states;   // intra mode has a forest per function
   BlockState* root;     // the first tree's root activation
};
BlockForest* block_forest_new(FnInfo* fn, UInt tid, UInt root_label);

// A new activation of the forest's first tree root (whose block did not run).
BlockState* enter_block_root(BlockForest* f);
// The run of block `label` (n instructions) after state s, in the forest.
BlockState* step_block_slow(BlockForest* f, BlockState* s, UInt label, UWord n);
inline void count_run(BlockState* s, UWord n)
{
   s->runs++;
   s->ir += n;
}
inline BlockState* step_block(BlockForest* f, BlockState* s, UInt label, UWord n)
{
   // The last step spelled out: its load is the chain from one run to the
   // next, and a loop over the steps puts an address computation before it.
   BlockState* to;
   if (__builtin_expect(s->step.label == label, 1))
      to = s->step.to;
   else if (s->older[0].label == label)
      to = s->older[0].to;
   else if (s->older[1].label == label)
      to = s->older[1].to;
   else
      return step_block_slow(f, s, label, n);
   count_run(to, n);
   return to;
}
// Two runs after state s: when the same two blocks followed s last time,
// one compare and one load on the chain for both (a loop's runs are
// latency-bound on that chain: docs/block-modes.md).
inline BlockState* step_two(BlockForest* f, BlockState* s, UInt label1, UWord n1, UInt label2, UWord n2)
{
   UWord labels = (UWord)label1 | ((UWord)label2 << 32);
   if (__builtin_expect(s->pair_labels == labels, 1)) {
      BlockState* to = s->pair_to;   // read before the counts, which may be s's
      count_run(s->pair_mid, n1);
      count_run(to, n2);
      return to;
   }
   BlockState* mid = step_block(f, s, label1, n1);
   BlockState* to = step_block(f, mid, label2, n2);
   s->pair_labels = labels;
   s->pair_mid = mid;
   s->pair_to = to;
   return to;
}
// The run of the first tree's root block (n instructions) as a new activation.
inline BlockState* run_block_root(BlockForest* f, UWord n)
{
   count_run(f->root, n);
   return f->root;
}
// Adds the runs counted in the states to the forest's nodes and to the
// blocks' counts (before the forest is read or reset).
void settle_block_states(BlockForest* f);

// --dump-blocks: one line per recorded block run (see docs/block-modes.md).
void dump_open();
// fn_label: the forest's function (intra) or the block's (inter), as ksf-fn ids.
void dump_block(UInt tid, ULong activation, UInt fn_label, const BBInfo* b);
void dump_close();
void dump_disable();   // in a fork child

// The block trace: instrumented code records each run of a traced block
// as one word (add_block_step in instrument/block_modes_ir.cpp), and the recorded runs
// are stepped through the forest in C in batches (activity/block_modes.cpp): one
// store a block instead of a helper call. The buffer is aligned to its
// size, so inline code knows it is full when the position's low bits are
// zero. It holds runs of one thread and, in intra mode, of one activation:
// it is emptied before either changes.
const UWord kTraceBytes = 1 << 16;
const UInt kTraceCountShift = 32;   // entry: block label | instructions << 32
inline UWord trace_entry(const BBInfo* b, UWord n) { return (UWord)b->label | (n << kTraceCountShift); }
inline UInt trace_label(UWord e) { return (UInt)e; }
inline UWord trace_count(UWord e) { return e >> kTraceCountShift; }
UWord* trace_start();

extern "C" {
// The next free entry of the block trace.
extern UWord* kg_trace_pos;
// Helpers called at a block start of a traced function (n: instructions of
// the block in this translation) when its run cannot be recorded in the
// trace (intra mode: its activation is not the trace's; --dump-blocks).
void VG_REGPARM(2) kg_block_intra(BBInfo* b, UWord n);
void VG_REGPARM(2) kg_block_inter(BBInfo* b, UWord n);
// The trace is full: step through it.
void kg_trace_full();
}

} // namespace kg
