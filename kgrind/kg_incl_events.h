// Inclusive events beyond Ir (docs/design/events.md): of each call edge
// (the body's calls= lines) and each k-SF node (the records' ksf-events),
// extra_event_count() counts each, in the columns' order, which frames add
// to as they close (activity/event_clocks.cpp) as their inclusive Ir goes
// to the edge's `incl` and the node's.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// The inclusive events of a call edge (as the edges' index keeps it) or a
// k-SF node; make: made zero where there are none yet, else null then.
ULong* incl_events_of(const void* edge_or_node, Bool make);

// Every edge's and node's inclusive events back to zero (counters zeroed,
// a fork child).
void reset_incl_events();

} // namespace kg
