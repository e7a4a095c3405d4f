// Jumps (--collect-jumps): callgrind's jump=/jcnd= lines, per context, from
// the flush points' counters (direct exits) and the targets of computed
// jumps.
#pragma once
#include "kg_block_info.h"
#include "kg_forest.h"

namespace kg {

extern "C" {
// --collect-jumps: a superblock of a traced function left by a computed jump.
void VG_REGPARM(2) kg_indirect_jump(BlockInfo* blk, Addr target);
}

// Where a boring exit of instruction x to `target` (computed: by an indirect
// jump) goes if that is a jump in callgrind's sense (--collect-jumps), else 0.
Addr jump_target(const InstrPos& x, Addr target, Bool computed);

// --collect-jumps: the jumps of one context from one instruction to one target
// (callgrind's --collect-jumps: conditional jumps count taken and executed).
struct ContextJump {
   ForestNode* ctx;
   Addr from;
   SourceLine* from_line;
   Addr to;
   Bool cond;
   ULong taken;
   ULong executed;                // cond: executions of the branch
   Addr superblock;               // collect_jumps: the first address of the superblock
                                  // holding the branch (0 once merged across superblocks)
};
// Sorted by context, source and target; the caller releases the array.
UWord collect_jumps(ContextJump** out);
UWord merge_jumps(ContextJump* all, UWord n);
// The jumps sorted by context, source line (as ExitCosts sorts a context's
// lines: compare_lines) and target: positions: line.
void order_jumps_by_line(ContextJump* all, UWord n);

// After fork, in the child: the computed jumps' counts back to zero.
void reset_indirect_jumps();

} // namespace kg
