// Costs: what the run counts and instrumented code updates inline: block
// counters per (context, block), call edges, jumps.
#pragma once
#include "kg_block_info.h"
#include "kg_call_edges.h"
#include "kg_counters.h"
#include "kg_jumps.h"

namespace kg {

// After fork, in the child: every counter back to zero.
void reset_costs();

} // namespace kg
