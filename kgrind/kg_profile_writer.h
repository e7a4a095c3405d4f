// One profile being written: the state that its header, context names,
// callgrind body and k-SF records share (docs/output-format.md).
#pragma once
#include "kg_call_edges.h"
#include "kg_exit_costs.h"
#include "kg_forest.h"
#include "kg_jumps.h"
#include "kg_dump_info.h"
#include "kg_writer.h"
#include "core/record_check.h"

namespace kg {

// Context names longer than this many callers are cut, with the node id
// appended so that they stay unique (k = inf can make chains very long).
const UInt kMaxNamedCallers = 16;

// callgrind's name compression: "(id) name" on first use, "(id)" afterwards.
class NameCompressor {
public:
   void init(UInt count)
   {
      count_ = count;
      written_ = count ? (Bool*)VG_(calloc)("kg.out", count, sizeof(Bool)) : nullptr;
   }
   void done() { if (written_) VG_(free)(written_); written_ = nullptr; }

   // Writes "key=(id)", then " name" the first time; the caller ends the line.
   Bool emit_id(FileWriter& out, const HChar* key, UInt id)
   {
      out.printf("%s=(%u)", key, id + 1);
      if (id >= count_ || written_[id]) return False;
      written_[id] = True;
      out.put_char(' ');
      return True;
   }
   Bool written(UInt id) const { return id < count_ && written_[id]; }
   void emit(FileWriter& out, const HChar* key, UInt id, const HChar* name)
   {
      if (emit_id(out, key, id)) out.put_escaped(name);
      out.put_char('\n');
   }

private:
   UInt count_ = 0;
   Bool* written_ = nullptr;
};

// A canonical node of some thread's forest and the context it reports
// under. One k-context can have several canonical nodes (it is reached at
// different depths mod k, and in every thread): the body names it once
// and sums them, as callgrind sums a context over threads, under its first
// node visited (Writer::reps). 16 bytes: one per node, at exit, where the
// peak RSS may be reached.
struct ContextSlot {
   const ForestNode* node;
   UInt name_id;              // 1-based fn= id of the context
   UInt preorder_id;          // 1-based, within its forest (names of cut chains)
};

// The nodes of a forest that its records hold: those on a path to a count
// (core::mark_counted_paths). A fork child's forest is its parent's with
// every counter zeroed: written whole, a python3 subprocess child of 9,242 Ir
// listed 75,268 nodes at k=inf, 65 of them counting.
struct WrittenNodes {
   core::Vec<uint8_t> keep;   // by preorder id - 1, children by written label
   ULong count;
   ULong left_out;
};

// What the checks of the k-SF records as written found
// (core/record_check.h): how many threads' records a reader refuses, the
// first of them and its check.
// Events beyond Ir a profile can have (kg_events.h: 13).
const UInt kMaxEventColumns = 16;

struct RecordFindings {
   UInt threads;
   UInt first_tid;
   core::RecordCheck first;
   UInt event_sums_off;   // events whose nodes' sum is not their total
   UInt first_event;      // the first of them (its column)
};

struct Writer {
   FileWriter out;
   NameCompressor objects, files, contexts;
   ContextSlot* slots;        // sorted by node
   UWord n_slots;
   const ForestNode** reps;   // by name id - 1: the context's first node visited
   ExitCosts costs;
   CallEdge** edges;          // sorted by caller, callee and site
   CallEdge* edge_copies;     // what edges point to in a dump during the run
   UWord n_edges;
   Bool instr;                // positions: instr line (--dump-instr; block modes)
   ContextJump* jumps;        // --collect-jumps
   UWord n_jumps;
   UInt last_object;          // ob= in force, to write it only when it changes
   UInt last_file;            // fl= in force, or kNoFile after fi=/fe= lines
   Addr last_addr;            // position of the last cost line (file address,
   UInt last_line;            // positions: instr line) and its line
   Bool last_line_known;      // False after fn=, fl=, fi=, fe=: next one absolute
   const DumpInfo* dump;      // why and what this file covers
   UInt n_names;              // distinct contexts (name ids 1..n_names)
   HChar** caller_names;      // by label: its name as a caller in context
   UInt n_labels;             // names (short where unique), or null
   UInt* name_rank;           // 0-based fn= id written for each name id - 1
   UInt* written_label;       // each label's rank: the records' order of
                              // labels (function mode; null: the label)
   UInt* listed_id;           // each rank's ksf-fns id, for the ranks some
                              // record names (function mode)
   UInt* label_written_at;    // the label of each ksf-fns id (function
   UInt n_listed_labels;      // mode; null: the same), and their number
   WrittenNodes* thread_nodes; // function mode: what each thread's records hold
   UInt n_events;             // events beyond Ir (kg_events.h): columns after Ir
   ULong event_totals[kMaxEventColumns];    // their totals, in column order
   RecordFindings findings;   // function mode: the records' checks
   UInt only_thread;          // the file of this thread alone (--separate-threads), or 0
};

const UInt kNoFile = 0xFFFFFFFFu;
const UInt kNoObject = 0xFFFFFFFFu;

} // namespace kg
