// What one profile file covers: read by its writer (kg_output.h), given by
// whoever decides to write one (kg_dumps.h).
#pragma once
#include "kg_valgrind.h"

namespace kg {

// What one profile file covers (docs/regions.md).
struct DumpInfo {
   const HChar* trigger;   // why it was written ("Program termination", ...)
   ULong ir_from, ir_to;   // the Ir of the run it covers (ir_elapsed)
   Bool during_run;        // the run goes on: the counters stay as they are
};

} // namespace kg
