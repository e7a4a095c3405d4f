// The exclusive costs per (context, line) or (context, instruction) that a
// profile reports, gathered from the block counters at exit or at a dump.
#pragma once
#include "kg_forest.h"
#include "kg_source_lines.h"

namespace kg {

// Exclusive cost of one (context, line), or of one (context, instruction)
// with per-instruction positions (then addr is the instruction's).
struct ContextLineCost {
   ForestNode* ctx;
   SourceLine* line;
   Addr addr;
   ULong ir;
};

struct ContextBlocks;   // kg_counter_store.h: one context's counters
struct CostGroup;       // kg_exit_costs.cpp: one context's counters and where they go
struct CountedBlock;    // kg_exit_costs.cpp: one (context, block)'s counters

// The exclusive costs at exit, kept as the (context, block) counters grouped
// by context: a context's costs are expanded and folded only when asked
// for, so they are never all held at once (this runs at exit, where peak
// RSS may be reached: sqlite3's 25 k folded costs took 0.8 MB). Zeroed
// memory is an empty ExitCosts.
class ExitCosts {
public:
   // Takes every (context, block)'s counters, consuming the index they are
   // found by (--collect-jumps collects them first): per line, or per
   // instruction; by_line: per-instruction counters folded per line
   // (--collect-jumps without --dump-instr).
   void take(Bool per_instruction, Bool by_line);
   // The same from copies of the counters, which go on (a dump during the run).
   void snapshot(Bool per_instruction, Bool by_line);
   // Sets each context node's excl to its exclusive cost; with events
   // beyond Ir, also indexes the groups by context for node_events.
   void set_exclusive_costs();
   // After set_exclusive_costs, with events beyond Ir: ctx's exclusive
   // events, extra_event_count() of them in column order (every event
   // counter of its blocks, summed when asked: valid until the next
   // call), or null where it has no counters.
   const ULong* node_events(const ForestNode* ctx) const;
   // Groups the counters by rep(context, arg): contexts reported as one
   // (identity: each context alone). Before costs_of.
   void regroup(const ForestNode* (*rep)(const void* ctx, const void* arg), const void* arg);
   // The non-zero costs of every context that rep() mapped to ctx, folded
   // per line or instruction and sorted; valid until the next call.
   UWord costs_of(const ForestNode* ctx, const ContextLineCost** out);
   // With events beyond Ir (kg_events.h), per line: the events of costs_of's
   // i-th cost, extra_event_count() of them in column order; valid until the
   // next costs_of.
   const ULong* events_of(UWord i) const { return events_ + i * n_events_; }
   // Every event's total over all contexts, in column order.
   void event_totals(ULong* out) const;
   void release();

private:
   void sort_by_context();
   void index_groups_by_node();
   UWord first_group(const ForestNode* ctx) const;
   template <typename F> void for_each_entry(F f) const;
   ContextBlocks blocks(UWord g) const;
   ContextBlocks blocks_at(UWord where) const;
   CountedBlock entry(const ContextBlocks& c, UInt i) const;

   CostGroup* groups_;            // each context's counters
   UWord n_groups_;
   ContextLineCost* scratch_;     // room for the widest group's costs
   UChar* copies_;                // snapshot's copies of the tables, refs and counters
   ULong* copied_counters_;       // snapshot: what the refs' offsets index (else the run's counters)
   Bool per_instruction_;
   Bool by_line_;                 // costs_of folds per line all the same
   ULong* events_;                // room for the widest group's costs' events
   UInt n_events_;
   // Each group by the context it counts for (before any regroup), sorted:
   // node_events sums a context's events when asked (an array of every
   // context's events was 10.8 MB of cc1plus's peak with --cache-sim,
   // which is the writer's).
   CostGroup* node_groups_;
   ULong* node_sums_;             // node_events' answer, extra_event_count() of them
};

// A context's exclusive Ir so far, from its counters (function mode, per
// line): for the records of threads that ended (activity/ended_threads.cpp),
// between context_ir_begin and context_ir_end.
void context_ir_begin();
ULong context_ir(const ForestNode* ctx);
void context_ir_end();

} // namespace kg
