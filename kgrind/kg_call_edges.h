// Call edges between contexts: calls and inclusive cost per (caller,
// callee, call site), made when a transition is and counted when the
// transitions are flushed.
#pragma once
#include "kg_forest.h"

namespace kg {

// Call edges between contexts.
struct CallEdge {
   const void* a;                 // caller's canonical node
   const void* b;                 // callee's canonical node
   Addr call_site;                // the call instruction (0: not known)
   Addr target;                   // first callee instruction seen for the edge
   ULong calls;
   ULong incl;
   union {
      CallEdge* next_site;        // in the index: the same contexts' edge at another site
      // Collected for a profile (collect_call_edges): its inclusive events
      // beyond Ir (edge_incl_events), or null.
      const ULong* incl_events;
   };
};
// With events beyond Ir every edge has room for its inclusive events after
// its fields (extra_event_count() counts, which frames add to as they close:
// activity/event_clocks.cpp): made with the edge, before any is made.
void call_edges_init();
// The inclusive events of edge e (with events beyond Ir).
inline ULong* edge_incl_events(const CallEdge* e) { return (ULong*)(e + 1); }
// The edge of (caller, callee) at call_site.
CallEdge* call_edge(ForestNode* caller, ForestNode* callee, Addr call_site);
// The edges that were used, as pointers sorted by (caller, callee, call
// site), each with its incl_events; the caller releases *out and *copies. During the run (a dump) they
// point to copies in *copies; at exit to the edges themselves, which the
// caller may change (an array of copies was 13 MB on cc1plus, at the peak).
UWord collect_call_edges(Bool at_exit, CallEdge*** out, CallEdge** copies);
// Sorts the same way and folds edges of the same (caller, callee, call site)
// into the first (their events into a new array: a dump's edges are copies
// whose events are the run's).
UWord merge_call_edges(CallEdge** all, UWord n);

// Every edge whose caller or callee moved (moved(node, arg): the node it
// moved to, or null) added into the edge of the nodes they moved to, at the
// same site, and given back. Not with events beyond Ir (their inclusive
// events are not added): threads are compacted only without them.
void move_call_edges(ForestNode* (*moved)(const void* node, void* arg), void* arg);

// Every edge's counts and inclusive events back to zero (counters zeroed,
// a fork child).
void reset_call_edges();

} // namespace kg
