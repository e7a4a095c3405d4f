// Block counters: each (context, block) has one counter per flush point,
// found through the block's inline cache (BlockInfo::ways), a per-context
// table, or (function mode; at k = inf in a separate view) the context's
// counter array.
#pragma once
#include "kg_block_info.h"
#include "kg_forest.h"

namespace kg {

// Counter arrays (function mode at finite k, and at k = inf where the
// counters' contexts are a separate view's; docs/design/counting.md): the
// counters of a traced function's blocks in one context lie in one array,
// the context's, each block's at an offset fixed when it is translated
// (BlockInfo::array_offset), so that a block finds them from its context
// with no helper and no read of its BlockInfo. A context node's payload
// (the k-SF's, or the view forest's where that is separate)
// holds the array's address and its limit (kg_hotpath.h,
// counter_array_word, array_limit_word): (array_key << 8) | capacity,
// with the top bit set while counting is off, which inline IR checks
// against the block's function and end; zero (no array yet, and the node
// that kCallPending is) passes no block. The word before the counters is
// their offset in the counter store. An array holds room for its
// function's blocks up to the last one that ran in the context: functions of
// more than kArrayRoom counters keep the rest in the ways and the
// per-context tables.
const UInt kArrayRoom = 128;   // a function's room, in counters; fits the limit's 8 bits
// The limit's 23 bits of a function: its id, and for an inlined level's
// context (whose array holds its physical function's blocks) a flag, so
// that a block of the function's own code never finds a level's array.
const UInt kLevelArrayFlag = 1u << 22;
const UInt kMaxArrayFunction = kLevelArrayFlag;   // function ids that fit the limit
// The key of fn's arrays in its own contexts, or in its inlined levels'.
inline UInt array_key(UInt fn_id, Bool level) { return fn_id | (level ? kLevelArrayFlag : 0); }
// Whether the counter arrays are in use (function mode, counts per line,
// counters' context nodes with room for them: at k = inf a view's). Decided by the
// activation layouts, which know the nodes' payloads (activity/layouts.cpp).
Bool counter_arrays_on();
// The check's constants for a block of function fn_id whose counters end at
// `end` (array_offset + counters): the limit minus c1 is below c2 exactly
// when the array is the function's, holds [0, end) and counting is on.
inline UInt array_check_c1(UInt key, UInt end) { return (key << 8) + end; }
inline UInt array_check_c2(UInt end) { return 256 - end + 1; }
// The counters of (ctx, blk) in ctx's array, made or grown to hold them;
// nullptr if blk has no offset, ctx is not its function's or counting is off.
ULong* array_counters(ForestNode* ctx, BlockInfo* blk);

// The counters of (ctx, blk), leaving the block's ways as they are (a run
// of inlined levels: instrument/inline_runs_ir.cpp).
ULong* counters_in(BlockInfo* blk, ForestNode* ctx);
// --stats: how often counters_in found its answer among its recent ones.
void print_counter_stats();

// A run of inlined levels' own way (instrument/inline_runs_ir.cpp): its
// block's counters in the context it last ran in, which is an inlined
// level's (never one with a counter array: arrays move). Emptied with the
// blocks' ways (forget_cached_counters).
CounterWay* new_run_way();
// way's counters in ctx: made way's when they are not an array's.
ULong* run_way_counters(CounterWay* way, BlockInfo* blk, ForestNode* ctx);

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
}

// Every block's cached (context -> counters) ways are emptied, so that each
// block finds its counters again (counting switched on or off).
void forget_cached_counters();

// Threads that ended (activity/ended_threads.cpp): ctx's counters, its
// table's and its counter array's, added into into's (the array itself
// moves when into has none); then, for the contexts for which gone(ctx,
// arg) holds, whose nodes are about to be freed, their tables and counters
// given back, their arrays forgotten, and every block's cached counters.
// `groups`: the blocks of the functions' arrays (made for the moves).
class ArrayGroups;
void move_context_counters(ForestNode* from, ForestNode* into, const ArrayGroups& groups);
void forget_counters_of(Bool (*gone)(const ForestNode* ctx, void* arg), void* arg);

// After fork, in the child: every block counter back to zero.
void reset_counters();

} // namespace kg
