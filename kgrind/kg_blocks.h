// Basic blocks for the block modes (--mode=intra|inter): the table of blocks
// (identity = start address), their names, and the helpers instrumented code
// calls at every block start of a traced function (docs/block-modes.md).
#pragma once
#include "kg_debuginfo.h"
#include "kg_forest.h"

namespace kg {

// The inline cache of the block modes: the forest step last taken into this
// block, from activation `from` to activation `to`. Instrumented code replays
// it without a helper call when the thread's activation equals `from` again
// (the same predecessor as last time: the common case in loops); see
// add_block_step in kg_instrument.cpp. Pointers that inline code adds to are
// never null (kg_no_node stands in), so a miss adds zero somewhere harmless.
struct BlockStep {
   ForestNode* from_top;
   ForestNode* from_bottom;
   UInt from_phase;
   UInt to_phase;
   ForestNode* to_top;
   ForestNode* to_bottom;
   ForestNode* bottom_counter;   // to_bottom, or kg_no_node
   ForestNode* canonical;        // where the block's Ir goes
   Long depth_delta;
};
static_assert(sizeof(BlockStep) == 64, "add_block_step indexes BlockSteps by shifting 6");

// Steps per block, selected by the origin's phase: with k = 2 a loop of odd
// length reaches a block from alternating phases, which one entry would miss.
const UInt kStepWays = 8;

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
   BlockStep steps[kStepWays];   // indexed by from.phase % kStepWays
};

void blocks_init();
// The block starting at addr (created on first use).
BBInfo* block_at(Addr addr, const SourceLoc& loc);
UInt block_count();                  // labels 0 .. block_count() - 1
// Return addresses of the calls translated so far (their blocks take the
// block helper without an inline step: kg_instrument.cpp, add_block_step).
void note_return_site(Addr addr);
Bool is_return_site(Addr addr);
BBInfo* block_by_label(UInt label);

// Whether blocks of this function are recorded.
inline Bool blocks_traced(const FnInfo* fn) { return fn && fn->traced && !fn->no_symbol; }

// A block k-SF: per (thread, function) in intra mode, per thread in inter mode.
struct BlockForest {
   Forest forest;
   FnInfo* fn;           // intra: the function; inter: nullptr
   UInt tid;             // thread serial; 0 when threads are joined
};
BlockForest* block_forest_new(FnInfo* fn, UInt tid, UInt root_label);

// --dump-blocks: one line per recorded block run (see docs/block-modes.md).
void dump_open();
// fn_label: the forest's function (intra) or the block's (inter), as ksf-fn ids.
void dump_block(UInt tid, ULong activation, UInt fn_label, const BBInfo* b);
void dump_close();
void dump_disable();   // in a fork child

extern "C" {
// Stand-ins for the inline step cache: a node the misses add zero to, and an
// activation no step starts from (kg_now.bb_act == nullptr).
extern ForestNode kg_no_node;
extern Activation kg_no_activation;
// Helpers called at each block start of a traced function (n: instructions
// of the block in this translation) when the inline step cache misses.
void VG_REGPARM(2) kg_block_intra(BBInfo* b, UWord n);
void VG_REGPARM(2) kg_block_inter(BBInfo* b, UWord n);
}

} // namespace kg
