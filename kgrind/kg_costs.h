// Costs: instruction counts per (context, source line), kept per
// (context, block) so that instrumented code updates them with inline IR.
#pragma once
#include "kg_debuginfo.h"
#include "kg_forest.h"

namespace kg {

// A source position of some function: (function, file, line).
struct SourceLine {
   FnInfo* fn;
   UInt file;
   UInt line;
};

// Per-instruction positions (positions: instr line: --dump-instr, the block
// modes): one instruction of a superblock.
struct InstrPos {
   Addr addr;
   SourceLine* line;
   UInt len;                      // bytes
   UInt point;                    // the flush point that counts it
   Bool cond;                     // a conditional branch (has a boring side exit)
};

// Per-instruction positions: a flush point of a superblock, just before side
// exit j (or at the end for the last one), and the jump that exit makes.
struct FlushPoint {
   UInt instr;                    // index of the instruction holding the exit
   Addr jump_target;              // the exit is a jump (not a call, return,
                                  // fall-through or computed target) to here; else 0
};

// Function mode: `n` instructions of line `line` (an index into
// BlockInfo::lines()) that flush point `point` counts.
struct LineRun {
   UShort point;
   UShort line;
   UInt n;
};

// Static facts about one translated superblock, and the inline cache that
// makes the common case (same context as last time) free of helper calls.
//
// Counters: one per flush point (before each side exit, and at the end),
// counting how often execution reached it (loops in function mode count
// where it left: counts_leaving): one add per point, whatever the number
// of lines. Each line's Ir (function mode: `runs`), each
// instruction's Ir and each exit's count (per instruction: `instrs`, `points`)
// follow from them (kg_instrument.cpp).
// Two ways: four or eight made sqlite3 and cppvirt no faster (the helper
// shifts more ways; docs/function-mode.md).
const UInt kCounterWays = 2;
struct CounterWay {
   ForestNode* ctx;
   ULong* counters;
};

struct BlockInfo {
   // A cache of (context -> counters), most recent first. Inline IR checks
   // way 0 only (one compare); the helper finds the others without a hash
   // lookup, for blocks run alternately in a few contexts (a function called
   // from several places).
   CounterWay ways[kCounterWays];
   Addr addr;
   // The counts and flags together: one per translation, so padding costs.
   // (A superblock has at most a few hundred instructions.)
   UShort n_slots;                // counters: flush points
   union {
      UShort n_runs;              // per line
      UShort n_instrs;            // per instruction
   };
   UShort n_lines;
   Bool fn_entry;                 // addr is fn's first instruction
   Bool in_plt;                   // a PLT stub: calls pass through it
   // A point's counter counts the runs that left the block there (made
   // "reached" at exit: ExitCosts::take; kg_instrument.cpp, PendingCounts).
   Bool counts_leaving;
   // The last counter is not a flush point's: it counts the instructions of
   // the PLT stub that the block's last instruction calls, charged to that
   // instruction (block modes; function mode has a LineRun for it).
   Bool stub_counter;
   // Its counters' offset in its context's counter array, or kNoArrayOffset
   // (counter arrays: below).
   UShort array_offset;
   UInt id;                       // 1, 2, ...: in the order made (the counters' tables key on it)
   // What varies in size is stored right after the block, not pointed to
   // (each pointer was 1.6 MB on cc1plus): its distinct source lines, then
   // per line (function mode) its line runs, or per instruction
   // (--dump-instr) its instructions and then its flush points (one before
   // each counted side exit, one at the end).
   SourceLine* const* lines() const { return (SourceLine* const*)(this + 1); }
   // The function of the first instruction, whose line is the first (a
   // field was 1.6 MB on cc1plus).
   FnInfo* fn() const { return lines()[0]->fn; }
   LineRun* runs() const { return (LineRun*)(lines() + n_lines); }
   InstrPos* instrs() const { return (InstrPos*)(lines() + n_lines); }
   FlushPoint* points() const { return (FlushPoint*)(instrs() + n_instrs); }
};
static_assert(sizeof(BlockInfo) <= 56 && sizeof(BlockInfo) % sizeof(SourceLine*) == 0 &&
                 sizeof(LineRun) % sizeof(SourceLine*) == 0 && sizeof(InstrPos) % sizeof(SourceLine*) == 0,
              "one BlockInfo per translation: keep it small; what follows it stays aligned");

// The interned source line for a location.
SourceLine* source_line(const SourceLoc& loc);

// A block of the n_lines lines `lines` (its counters: n_slots, set later),
// with tail_bytes after them for its runs or instructions and points.
BlockInfo* block_info_new(Addr addr, UInt n_lines, SourceLine** lines, UInt tail_bytes);
// The block's line runs are its first n_runs (of the n_runs it was made with
// room for): the rest of its memory is given back if nothing was allocated
// since.
void block_info_trim_runs(BlockInfo* blk, UInt n_runs);

// A block of one position, the instruction at `at` (its line, and in the
// block modes the instruction itself), whose one counter holds instructions
// charged there from elsewhere: one per address.
BlockInfo* position_block(Addr at);

// Counter arrays (function mode at finite k, docs/function-mode.md): the
// counters of a traced function's blocks in one context lie in one array,
// the context's, each block's at an offset fixed when it is translated
// (BlockInfo::array_offset), so that a block finds them from its context
// with no helper and no read of its BlockInfo. A context node's payload
// (the k-SF's, or the view forest's where that is separate)
// holds the array's address and its limit (kg_activity.h,
// counter_array_word, array_limit_word): (function id << 8) | capacity,
// with the top bit set while counting is off, which inline IR checks
// against the block's function and end; zero (no array yet, and the node
// that kCallPending is) passes no block. The word before the counters is
// their offset in the counter store. An array holds room for its
// function's blocks up to the last one that ran in the context: functions of
// more than kArrayCounters counters keep the rest in the ways and tables
// above.
const UInt kArrayCounters = 128;   // fits the limit's 8 bits
const UInt kMaxArrayFunction = 1u << 23;   // function ids that fit the limit
const UShort kNoArrayOffset = 0xFFFF;
// Whether the counter arrays are in use (function mode, finite k, counts per
// line, counters' context nodes with room for them).
Bool counter_arrays_on();
// The check's constants for a block of function fn_id whose counters end at
// `end` (array_offset + counters): the limit minus c1 is below c2 exactly
// when the array is the function's, holds [0, end) and counting is on.
inline UInt array_check_c1(UInt fn_id, UInt end) { return (fn_id << 8) + end; }
inline UInt array_check_c2(UInt end) { return 256 - end + 1; }
// The block of an id (BlockInfo::id).
BlockInfo* block_with_id(UInt id);
// The counters of (ctx, blk) in ctx's array, made or grown to hold them;
// nullptr if blk has no offset, ctx is not its function's or counting is off.
ULong* array_counters(ForestNode* ctx, BlockInfo* blk);

// Makes the counters of (ctx, blk) the block's way 0: inline for a hit in
// way 1 (half of sqlite3's 121 M calls), the table otherwise.
void point_block_at_table(BlockInfo* blk, ForestNode* ctx);
inline void point_block_at(BlockInfo* blk, ForestNode* ctx)
{
   static_assert(kCounterWays == 2, "point_block_at checks two ways");
   CounterWay* ways = blk->ways;
   if (ways[0].ctx == ctx) return;
   if (ways[1].ctx != ctx) return point_block_at_table(blk, ctx);
   CounterWay hit = ways[1];
   ways[1] = ways[0];
   ways[0] = hit;
}

extern "C" {
// Inline-cache miss: makes the counters of (kg_now->ctx, blk) way 0.
void VG_REGPARM(1) kg_refresh_counters(BlockInfo* blk);
// --collect-jumps: a superblock of a traced function left by a computed jump.
void VG_REGPARM(2) kg_indirect_jump(BlockInfo* blk, Addr target);
}

// Where a boring exit of instruction x to `target` (computed: by an indirect
// jump) goes if that is a jump in callgrind's sense (--collect-jumps), else 0.
Addr jump_target(const InstrPos& x, Addr target, Bool computed);

// Exclusive cost of one (context, line), or of one (context, instruction)
// with per-instruction positions (then addr is the instruction's).
struct ContextLineCost {
   ForestNode* ctx;
   SourceLine* line;
   Addr addr;
   ULong ir;
};

struct ContextBlocks;   // kg_costs.cpp: one context's counters
struct CostGroup;       // kg_costs.cpp: one context's counters and where they go
struct CountedBlock;    // kg_costs.cpp: one (context, block)'s counters

// The exclusive costs at exit, kept as the (context, block) counters grouped
// by context: a context's costs are expanded and folded only when asked
// for, so they are never all held at once (this runs at exit, where peak
// RSS may be reached: sqlite3's 25 k folded costs took 0.8 MB). Zeroed
// memory is an empty ExitCosts.
class ExitCosts {
public:
   // Takes every (context, block)'s counters, consuming the index they are
   // found by (--collect-jumps collects them first): per line, or per
   // instruction.
   void take(Bool per_instruction);
   // The same from copies of the counters, which go on (a dump during the run).
   void snapshot(Bool per_instruction);
   // Sets each context node's excl to its exclusive cost.
   void set_exclusive_costs() const;
   // Groups the counters by rep(context, arg): contexts reported as one
   // (identity: each context alone). Before costs_of.
   void regroup(const ForestNode* (*rep)(const void* ctx, const void* arg), const void* arg);
   // The non-zero costs of every context that rep() mapped to ctx, folded
   // per line or instruction and sorted; valid until the next call.
   UWord costs_of(const ForestNode* ctx, const ContextLineCost** out);
   void release();

private:
   void sort_by_context();
   UWord first_group(const ForestNode* ctx) const;
   template <typename F> void for_each_entry(F f) const;
   ContextBlocks blocks(UWord g) const;
   CountedBlock entry(const ContextBlocks& c, UInt i) const;

   CostGroup* groups_;            // each context's counters
   UWord n_groups_;
   ContextLineCost* scratch_;     // room for the widest group's costs
   UChar* copies_;                // snapshot's copies of the tables, refs and counters
   ULong* copied_counters_;       // snapshot: what the refs' offsets index (else the run's counters)
   Bool per_instruction_;
};

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
};
// Sorted by context, source and target; the caller releases the array.
UWord collect_jumps(ContextJump** out);
UWord merge_jumps(ContextJump* all, UWord n);

// Call edges between contexts.
struct CallEdge {
   const void* a;                 // caller's canonical node
   const void* b;                 // callee's canonical node
   Addr call_site;                // the call instruction (0: not known)
   Addr target;                   // first callee instruction seen for the edge
   ULong calls;
   ULong incl;
   CallEdge* next_site;           // the same contexts' edge at another site
};
// The edge of (caller, callee) at call_site.
CallEdge* call_edge(ForestNode* caller, ForestNode* callee, Addr call_site);
// The edges that were used, as pointers sorted by (caller, callee, call
// site); the caller releases *out and *copies. During the run (a dump) they
// point to copies in *copies; at exit to the edges themselves, which the
// caller may change (an array of copies was 13 MB on cc1plus, at the peak).
UWord collect_call_edges(Bool at_exit, CallEdge*** out, CallEdge** copies);
// Sorts the same way and folds edges of the same (caller, callee, call site)
// into the first.
UWord merge_call_edges(CallEdge** all, UWord n);

// After fork, in the child: every counter back to zero.
void reset_costs();

// Every block's cached (context -> counters) ways are emptied, so that each
// block finds its counters again (counting switched on or off).
void forget_cached_counters();

} // namespace kg
