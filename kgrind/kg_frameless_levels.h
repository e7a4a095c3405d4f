// Frameless inlined levels (docs/design/performance.md, "Open leads"): a
// run of an inlined chain pushes no level frames. It counts in a record of
// its own per (physical context, run), found through a one-way cache in the
// run's static data, and the levels' numbers (their contexts' counters,
// entries, inclusive costs) are derived from the records when a profile is
// written, a thread ends or counting pauses. Level frames exist only under
// a call (or tail call, signal, context-id request) made from inlined code,
// so that the callee's contexts and the call's inclusive costs are the
// frame design's. The contract between the IR (instrument/frameless_runs_ir.cpp)
// and the activity unit (activity/frameless_levels.cpp).
#pragma once
#include "kg_forest.h"

namespace kg {

struct BlockInfo;
struct ThreadState;
struct Transition;
struct FramelessRecord;

// A run of one inline chain in one translation (static, made at
// instrumentation and never freed: records point to it).
struct FramelessRun {
   // The one-way cache, read by inline IR: the physical activation's key
   // (frameless_key) its record was last found for, and that record.
   const void* cached_key;
   FramelessRecord* cached_rec;
   BlockInfo* blk;
   UInt chain;
   // The chain of the run before it in its superblock, whose levels a pass
   // of its first flush point leaves for its own; kStartOfSuperblock for
   // the superblock's first run, whose entries are counted at run time.
   UInt prev_chain;
   // Its flush points: [first_point, end_point).
   UShort first_point;
   UShort end_point;
};
const UInt kStartOfSuperblock = ~0u;

// What a run counts in one physical context. Inline IR reads pred_chain,
// adds to pred_count, reads the levels' transitions and their counts of
// frames, and counts in the counters that follow them (their offsets are
// static: the run's depth).
//
// A level's context may have frames below the running activation (a
// recursion through a call made from inlined code, or a context that two
// functions' chains share at small k): then the run's cost is in an outer
// activation of that context already and adds nothing to its context
// inclusive cost, as a level frame there would not (close_frame). Whether
// it has is fixed while an activation runs, but differs between
// activations of one physical context: a run's record is its physical
// context's plain one (no level's context has frames) while every level's
// count of frames is 0, which inline IR checks at every run (the levels its
// superblock's previous run did not share), and else a variant for that
// set of levels, found by kg_frameless_find at every such run.
struct FramelessRecord {
   // The chain that ran before a superblock's first run, as last seen by
   // kg_frameless_start (its prediction), and the starts after it.
   UWord pred_chain;
   ULong pred_count;
   const void* key;         // the physical activation's (frameless_key)
   const FramelessRun* run;
   ThreadState* owner;
   FramelessRecord* next;   // every record, for the derivation
   FramelessRecord* plain;   // a variant's plain record
   UInt depth;              // the run's chain's levels
   UInt n_counters;
   // Non-zero for a variant: the levels whose contexts had frames below,
   // a bit each (outermost: bit 0).
   UWord nested;
   // The level transitions of the run's chain, outermost first, made from
   // the physical activation's kids with the record; their counts of
   // frames in their contexts (Transition::active).
   Transition** levels() { return (Transition**)(this + 1); }
   UWord** active() { return (UWord**)(levels() + depth); }
   ULong* counters() { return (ULong*)(active() + depth); }
   // Entries the helper counted at superblock starts that missed the
   // prediction, per level.
   ULong* entries() { return counters() + n_counters; }
   // Whether the run's cost counts in each level's context inclusive cost:
   // not where the level's context is an outer level's of the chain, or
   // had frames below when the record was made.
   UChar* counts_ctx_incl() { return (UChar*)(entries() + depth); }
};
inline UWord frameless_levels_offset() { return sizeof(FramelessRecord); }
inline UWord frameless_active_offset(UInt depth) { return sizeof(FramelessRecord) + depth * sizeof(Transition*); }
inline UWord frameless_counters_offset(UInt depth) { return sizeof(FramelessRecord) + 2 * depth * sizeof(Transition*); }
// While counting is off runs count in scratch records (one per depth,
// never derived, without a run, the runs' caches before they find a
// record), whose levels are this empty transition (with no frames).
const Transition* frameless_no_level();

// What a record is kept per: the physical frame's context (its counters'
// node), or the physical frame's transition (whose child is one
// activation of one thread: more records, one load more a run) where the
// counters' contexts are a separate view's, whose nodes are several k-SF
// activations', or every thread's (--join-threads: each thread has its own
// transitions, whose counts the record's levels are).
Bool frameless_keyed_by_transition();
inline const void* frameless_key(ForestNode* ctx, const Transition* top_tr)
{
   return frameless_keyed_by_transition() ? (const void*)top_tr : (const void*)ctx;
}

// Whether frameless levels are on (--inline-levels=records, with inlined
// levels in function mode, without jumps, joined threads or tiering: the
// options refuse the rest). Fixed after options.
Bool frameless_levels_on();
void frameless_levels_init();

// The levels of the running chain (kg_now->chain) pushed as frames before
// a tail call's, a signal's or a context id's frame goes on top; the chain
// that runs again noted when a call from inlined code returned and its
// level frames are popped (leave_levels).
void push_running_levels(ThreadState* t);
void note_levels_left();

// A new run's static data (instrument/frameless_runs_ir.cpp).
FramelessRun* new_frameless_run(BlockInfo* blk, UInt chain, UInt prev_chain, UInt first_point);

// The records' counts moved to their levels (counters, entries, inclusive
// costs) and zeroed: of every thread, or of one (t).
void derive_frameless_levels();
void derive_frameless_levels_of(ThreadState* t);
// Every record's counts zeroed (counters zeroed), or a thread's records
// dropped (it ended: its contexts go).
void zero_frameless_records();
void drop_frameless_records_of(ThreadState* t);
// A fork's child: the records of every thread but t dropped.
void drop_frameless_records_except(ThreadState* t);
// The runs' one-way caches emptied (cached counters forgotten).
void forget_frameless_caches();

extern "C" {
// A run's cache missed (its physical context is kg_now->ctx), or a level's
// context has frames, or the previous run's record is a variant: its
// record, made if new, in run->cached_rec (cached for the context when it
// is the plain one).
void VG_REGPARM(1) kg_frameless_find(FramelessRun* run);
// A superblock's first run of rec's chain started after chain prev, which
// its prediction did not name.
void VG_REGPARM(2) kg_frameless_start(FramelessRecord* rec, UWord prev);
// A return popped its frame inline onto the level frames of the call from
// inlined code that it returns from: they are popped, and their chain
// runs again.
void VG_REGPARM(0) kg_frameless_return();
// A call from rec's run that inline IR did not push the levels for (no
// room on the shadow stack, or counting off): pushes them.
void VG_REGPARM(1) kg_frameless_call(FramelessRecord* rec);
}

} // namespace kg
