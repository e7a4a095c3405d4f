// The block registry: static facts about each translated superblock
// (BlockInfo), the source lines and instructions it counts, and its inline
// cache of counters; every block by its id.
#pragma once
#include "kg_source_lines.h"
#include "kg_forest.h"

namespace kg {

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
// follow from them (instrument/pending_counts.cpp).
// Two ways: four or eight made sqlite3 and cppvirt no faster (the helper
// shifts more ways; docs/design/counting.md).
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
   // "reached" at exit: ExitCosts::take; instrument/pending_counts.cpp).
   Bool counts_leaving;
   // The last counter is not a flush point's: it counts the instructions of
   // the PLT stub that the block's last instruction calls, charged to that
   // instruction (block modes; function mode has a LineRun for it).
   Bool stub_counter;
   // Its counters' offset in its context's counter array, or kNoArrayOffset
   // (counter arrays: kg_counters.h).
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
const UShort kNoArrayOffset = 0xFFFF;   // BlockInfo::array_offset: none
static_assert(sizeof(BlockInfo) <= 56 && sizeof(BlockInfo) % sizeof(SourceLine*) == 0 &&
                 sizeof(LineRun) % sizeof(SourceLine*) == 0 && sizeof(InstrPos) % sizeof(SourceLine*) == 0,
              "one BlockInfo per translation: keep it small; what follows it stays aligned");

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

// The block of an id (BlockInfo::id).
BlockInfo* block_with_id(UInt id);
// Blocks made so far: ids 1 .. block_info_count().
UWord block_info_count();

// Events beyond Ir (--cache-sim, --branch-sim: kg_events.h): a (context,
// block) has a counter per event slot. A slot counts one event of one
// line: an access's misses, a branch's mispredicts, a guarded access's
// count. Slots that inline IR or every run of a helper adds to (a guarded
// access's count without the simulation, a bus event, a system call) are
// counters after the flush points'; the others, which count misses and
// seldom anything, are the block's miss counters, made for a context at
// its first miss (kg_counter_store.h: miss_store), whose place the counter
// after the inline slots holds (its anchor; 0 until then).
struct EventSlot {
   UShort line;                   // an index into BlockInfo::lines(), or with
                                  // per-instruction positions into instrs()
   UShort event;                  // kg_events.h: EventId
};
// An event that happens `times` at `line` each time execution reaches flush
// point `point` (an unguarded access's Dr or Dw, a branch's Bc or Bi): its
// count is the point's counter times `times`, with no counter of its own.
struct PointEvent {
   UShort line;                   // as EventSlot::line
   UShort event;                  // kg_events.h: EventId
   UShort point;                  // the flush point (its counter's index)
   UShort times;
};
struct BlockEvents {
   UShort n_inline;               // slots counted after the flush points
   UShort n_miss;                 // slots among the miss counters
   UInt n_by_point;
   const PointEvent* by_point;    // n_by_point of them
   EventSlot slots[1];            // n_inline, then n_miss
};
// Each block's event slots by id (below block_events_cap), or nullptr (no
// events: the table stays empty, its cap 0).
extern BlockEvents** block_events;
extern UWord block_events_cap;
void set_block_events(const BlockInfo* blk, const EventSlot* slots, UInt n_inline, UInt n_miss,
                      const PointEvent* by_point, UInt n_by_point);
inline const BlockEvents* events_of(const BlockInfo* blk)
{
   return __builtin_expect(blk->id < block_events_cap, 0) ? block_events[blk->id] : nullptr;
}
// The first event counter of a (context, block): after its flush points'.
inline UInt event_base(const BlockInfo* blk) { return blk->n_slots ? blk->n_slots : 1; }
// The index of a (context, block)'s miss anchor among its counters (given
// the block's inline event slots), or kNoMissAnchor (no miss slots).
const UInt kNoMissAnchor = ~0u;
inline UInt miss_anchor_index(const BlockInfo* blk)
{
   const BlockEvents* e = events_of(blk);
   return e && e->n_miss ? event_base(blk) + e->n_inline : kNoMissAnchor;
}
// Counters a (context, block) has: one per slot, at least one, its inline
// event slots and its miss anchor.
inline UInt counter_count(const BlockInfo* blk)
{
   UInt n = event_base(blk);
   if (const BlockEvents* e = events_of(blk)) n += e->n_inline + (e->n_miss ? 1 : 0);
   return n;
}

} // namespace kg
