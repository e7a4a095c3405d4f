#include "kg_costs.h"
#include "kg_incl_events.h"

namespace kg {

void reset_costs()
{
   reset_counters();
   reset_call_edges();
   reset_incl_events();
   reset_indirect_jumps();
}

} // namespace kg
