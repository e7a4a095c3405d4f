#include "kg_collection.h"
#include "kg_activity.h"

namespace kg {

namespace {

Bool instr_on = True;
Bool collect_on = True;

// Counting runs when both instrumentation and collection are on.
void apply_counting()
{
   if (instr_on && collect_on) resume_counting();
   else pause_counting();
}

} // namespace

void set_counting(Bool instrumentation, Bool collection)
{
   instr_on = instrumentation;
   collect_on = collection;
   apply_counting();
}

void set_instrumentation(Bool on)
{
   instr_on = on;
   apply_counting();
}

void toggle_collection()
{
   collect_on = !collect_on;
   apply_counting();
}

Bool instrumentation_on() { return instr_on; }
Bool collection_on() { return collect_on; }

} // namespace kg
