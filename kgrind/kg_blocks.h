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
// blocks call the block helper: kg_instrument.cpp, add_block_step).
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
// and nothing reads it, so a state does not keep it.
//
// A state is two cache lines, aligned: the first holds what every run into
// it reads and writes (its counts and its steps), the second the activation
// (read only on a new step and when settling). A forest with more states
// than the caches hold (rolled inter mode on cppvirt: 12 k) then misses
// once a run, not twice.
struct alignas(64) BlockState {
   // Hot.
   ULong runs;                // runs not yet added to top's and bottom's calls
   ULong ir;                  // their instructions, not yet in canonical's excl
   struct Step {
      UInt label;             // 0: unused (label 0 is __root__, never stepped into)
      BlockState* to;
   } steps[3];                // most recent first (step_block checks three)
   // Cold.
   ForestNode* top;
   ForestNode* bottom;        // nullptr while depth < k, or k infinite
   ForestNode* canonical;     // where the runs' Ir goes
   UInt phase;
   UInt depth;                // rolled loops only
};
static_assert(sizeof(BlockState) == 128 && offsetof(BlockState, top) == 64, "hot line, cold line");

// The index of a forest's states, by (top, bottom).
struct BlockStateRef {
   const void* a;             // top
   const void* b;             // bottom
   BlockState* state;
};

// A block k-SF: per (thread, function) in intra mode, per thread in inter mode.
struct BlockForest {
   Forest forest;
   FnInfo* fn;           // intra: the function; inter: nullptr
   UInt tid;             // thread serial; 0 when threads are joined
   PairTable<BlockStateRef> states;
   BlockState* root;     // the first tree's root activation
};
BlockForest* block_forest_new(FnInfo* fn, UInt tid, UInt root_label);

// A new activation of the forest's first tree root (whose block did not run).
BlockState* enter_block_root(BlockForest* f);
// The run of block `label` (n instructions) after state s, in the forest.
BlockState* step_block_slow(BlockForest* f, BlockState* s, UInt label, UWord n);
inline BlockState* step_block(BlockForest* f, BlockState* s, UInt label, UWord n)
{
   // Way 0 spelled out: its load is the chain from one run to the next, and
   // a loop over the ways puts an address computation before it.
   BlockState* to;
   if (__builtin_expect(s->steps[0].label == label, 1)) {
      to = s->steps[0].to;
   } else if (s->steps[1].label == label) {
      to = s->steps[1].to;
   } else if (s->steps[2].label == label) {
      to = s->steps[2].to;
   } else {
      return step_block_slow(f, s, label, n);
   }
   to->runs++;
   to->ir += n;
   return to;
}
// The run of the first tree's root block (n instructions) as a new activation.
inline BlockState* run_block_root(BlockForest* f, UWord n)
{
   BlockState* r = f->root;
   r->runs++;
   r->ir += n;
   return r;
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
// as one word (add_block_step in kg_instrument.cpp), and the recorded runs
// are stepped through the forest in C in batches (kg_activity.cpp): one
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
