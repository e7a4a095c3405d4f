// Functions without symbols, from the unwind tables (.eh_frame) of their
// object (core/eh_frame.h).
#pragma once
#include "kg_valgrind.h"

namespace kg {

// The unwind table's function holding a (its first instruction), if the
// object's text has one there.
Bool unwind_table_function(Addr a, Addr* start);

} // namespace kg
