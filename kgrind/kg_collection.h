// Whether the counters count (docs/regions.md): instrumentation
// (--instr-atstart, START/STOP_INSTRUMENTATION, the monitor's
// "instrumentation") and collection (--collect-atstart, --toggle-collect,
// TOGGLE_COLLECT) must both be on.
#pragma once
#include "kg_valgrind.h"

namespace kg {

void set_counting(Bool instrumentation, Bool collection);
void set_instrumentation(Bool on);
void toggle_collection();
Bool instrumentation_on();
Bool collection_on();

} // namespace kg
