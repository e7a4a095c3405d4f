// Events beyond Ir (--cache-sim, --branch-sim, --collect-bus, --collect-data,
// --collect-systime): which are on, their names
// and columns in a profile, the cache geometry, and the simulators that
// instrumented code calls per instruction fetch, data access and branch
// (docs/design/events.md). Each helper adds to the event counters of the
// (context, block) the block's prologue found: counting is attributed to the
// context exactly as Ir is.
#pragma once
#include "kg_block_info.h"
#include "kg_writer.h"

namespace kg {

// Every event beyond Ir, in callgrind's column order.
enum EventId : UShort {
   kEvDr, kEvDw, kEvI1mr, kEvD1mr, kEvD1mw, kEvILmr, kEvDLmr, kEvDLmw,   // --cache-sim
   kEvBc, kEvBcm, kEvBi, kEvBim,                                       // --branch-sim
   kEvGe,                                                              // --collect-bus
   kEvSysCount, kEvSysTime, kEvSysCpuTime,                             // --collect-systime
   kEventIds
};

// Whether an event (EventId) is on.
Bool event_on(UInt e);
// Whether event e is one that most instructions, accesses and branches do
// not have (a miss, a mispredict, a bus event, a system call's counts).
Bool event_is_rare(EventId e);
// Whether the frames' inline pops test the clocks' column pairs of rare
// events before adding them (at least two such pairs: --cache-sim), and
// whether the pair at column c (an even column: c and c + 1, or c alone
// when it is the last) is one (both its events rare). Such pairs' clocks
// seldom move while a frame runs; when they do, the pop calls
// kg_frame_events_close.
Bool pops_test_rare_events();
Bool rare_column_pair(UInt c);
// Whether any event beyond Ir is on.
Bool extra_events_on();
// Events beyond Ir that a profile has (its columns after Ir).
UInt extra_event_count();
// The bytes of a call edge's or a k-SF node's inclusive events beyond Ir
// (0 without events).
UInt incl_events_bytes();
// The column of an event after Ir (0-based), for an event that is on.
UInt event_column(EventId e);
// The name of the event in a column after Ir (0-based, below
// extra_event_count()).
const HChar* extra_event_name(UInt column);
// The event in a column after Ir.
EventId extra_event_id(UInt column);

// The running thread's clock of every event (by EventId): its totals so
// far, which the helpers below, the inline counts and the system call
// callbacks add to as they add to the counters. A frame's inclusive events
// are the clock's readings at its exit less those at its entry
// (activity/event_clocks.cpp); the thread layer points this at the
// running thread's clock.
extern ULong* kg_event_clock;
// Non-zero while counting is off (!kg_counting): inline pops add nothing,
// and the helpers count misses in scratch.
extern UWord kg_events_paused;

// After the options: checks the geometry (host defaults for what --I1,
// --D1, --LL did not give) and makes the simulators. A bad geometry is one
// message and exit 1, before the program runs.
void events_init();

// log2 of I1's and D1's line sizes (after events_init, with --cache-sim).
UInt i1_line_bits();
// Where I1 keeps the most recent tag of the set of the line at addr, and
// the tag of that line: equal, a fetch of that line hits and changes
// nothing, so inline code calls the simulation only when they differ.
const ULong* i1_most_recent_of(Addr addr);
ULong i1_tag_of(Addr addr);
UInt d1_line_bits();

// The header's "desc: I1 cache: ..." lines (with --cache-sim).
void write_cache_descs(FileWriter& out);
// The header's "events: Ir ..." line (every profile).
void write_events_line(FileWriter& out);

// " c1 c2 ...": n event counts after a cost line's Ir, trailing zeros left
// out (readers take a missing count as 0).
void write_event_costs(FileWriter& out, const ULong* counts, UInt n);

// What a helper's call site knows at translation, in one word (an
// immediate and no arithmetic in the translation, instead of four
// arguments): the site's first miss slot, the block's number of miss slots
// (so that the first miss makes the miss counters), the index of the miss
// anchor among the block's counters (kg_block_info.h, BlockEvents), the
// instruction's length (a fetch) and the data access's size. No miss
// slots: the block's one miss slot is the counter at the anchor's index
// (an inline slot).
struct EventSite {
   static const UInt kSlotBits = 13, kAnchorBits = 16, kFetchBits = 6, kSizeBits = 16;
   static const UInt kMissesAt = kSlotBits, kAnchorAt = 2 * kSlotBits, kFetchAt = kAnchorAt + kAnchorBits,
                     kSizeAt = kFetchAt + kFetchBits;
   static_assert(kSizeAt + kSizeBits == 64, "a site fills one word");
   static UWord field(UWord site, UInt at, UInt bits) { return site >> at & ((1ULL << bits) - 1); }
   static UWord first_slot(UWord site) { return field(site, 0, kSlotBits); }
   static UInt n_miss(UWord site) { return (UInt)field(site, kMissesAt, kSlotBits); }
   static UWord anchor(UWord site) { return field(site, kAnchorAt, kAnchorBits); }
   static UWord fetch_len(UWord site) { return field(site, kFetchAt, kFetchBits); }
   static UWord size(UWord site) { return site >> kSizeAt; }
};

// The simulators' entry points. `counters`: the counters of the (context,
// block) of what the helper counts, whose miss anchor `site` (EventSite)
// gives. An unguarded access's Dr or
// Dw and a branch's Bc or Bi are counted by the block's flush points
// (PointEvent), so most helpers count misses alone: a fetch [I1mr, ILmr];
// an instruction's fetch and its first data access in one call [I1mr,
// ILmr, D1mr, DLmr] (or D1mw, DLmw); a data access [D1mr, DLmr] or [D1mw,
// DLmw]; a conditional branch [Bcm]; an indirect one [Bim]. Those called
// whenever their access or branch happens add its Dr, Dw, Bc or Bi to the
// clock (fewer bytes of code than the flush point's add); the _lines
// helpers, called only when the access is not in the line of the one
// before, do not (the flush point does). A guarded access (_guarded)
// counts itself too: [Dr, D1mr, DLmr] or [Dw, D1mw, DLmw]. An atomic
// instruction counts [Ge] in an inline slot (`slot`: its counter).
extern "C" {
void kg_sim_fetch(ULong* counters, UWord site, Addr addr);
void kg_sim_read(ULong* counters, UWord site, Addr addr);
void kg_sim_write(ULong* counters, UWord site, Addr addr);
void kg_sim_read_guarded(ULong* counters, UWord site, Addr addr);
void kg_sim_write_guarded(ULong* counters, UWord site, Addr addr);
void kg_sim_read_lines(ULong* counters, UWord site, Addr addr);
void kg_sim_write_lines(ULong* counters, UWord site, Addr addr);
void kg_sim_fetch_read(ULong* counters, UWord site, Addr iaddr, Addr addr);
void kg_sim_fetch_write(ULong* counters, UWord site, Addr iaddr, Addr addr);
void kg_sim_cond(ULong* counters, UWord site, Addr addr, UWord taken);
void kg_sim_indirect(ULong* counters, UWord site, Addr addr, Addr target);
void VG_REGPARM(1) kg_count_bus(ULong* slot);
}

} // namespace kg
