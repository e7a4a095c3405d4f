#include "kg_costs.h"

namespace kg {

void reset_costs()
{
   reset_counters();
   reset_call_edges();
   reset_indirect_jumps();
}

} // namespace kg
