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

// Static facts about one translated superblock, and the inline cache that
// makes the common case (same context as last time) free of helper calls.
struct BlockInfo {
   ForestNode* cached_ctx;        // read by inline IR
   ULong* cached_counters;        // counters of (cached_ctx, this block)
   Addr addr;
   FnInfo* fn;                    // function of the first instruction
   FnInfo* entry_fn;              // without symbols: the function named by addr
   Bool fn_entry;                 // addr is fn's first instruction
   Bool in_plt;                   // a PLT stub: calls pass through it
   void* entry_cache;             // the activation layer's cache (kg_activity.cpp)
   UInt n_slots;                  // distinct source lines of the block
   SourceLine** slots;
};

void costs_init();

// The interned source line for a location.
SourceLine* source_line(const SourceLoc& loc);

BlockInfo* block_info_new(Addr addr, UInt n_slots, SourceLine** slots);

extern "C" {
// Inline-cache miss: find or create the counters of (kg_now.ctx, blk).
void VG_REGPARM(1) kg_refresh_counters(BlockInfo* blk);
}

// Exclusive cost of one (context, line).
struct ContextLineCost {
   ForestNode* ctx;
   SourceLine* line;
   ULong ir;
};
// All non-zero exclusive costs merged per (context, line), sorted by
// context. The caller owns the array (release() it).
UWord collect_line_costs(ContextLineCost** out);
// Sorts by (context, line) and folds entries of the same (context, line)
// into one; returns the new count.
UWord merge_line_costs(ContextLineCost* all, UWord n);

// Call edges between contexts.
struct CallEdge {
   const void* a;                 // caller's canonical node
   const void* b;                 // callee's canonical node
   Addr call_site;                // first call instruction seen for the edge
   ULong calls;
   ULong incl;
};
CallEdge* call_edge(ForestNode* caller, ForestNode* callee);
// Copies of the edges that were used, sorted by (caller, callee, call site);
// the caller releases the array.
UWord collect_call_edges(CallEdge** out);
// Sorts the same way and folds edges of the same (caller, callee, call site).
UWord merge_call_edges(CallEdge* all, UWord n);

// After fork, in the child: every counter back to zero.
void reset_costs();

} // namespace kg
