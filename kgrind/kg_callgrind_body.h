// The callgrind body: each context's exclusive costs per line (or
// instruction, with its jumps), then its calls.
#pragma once
#include "kg_profile_writer.h"

namespace kg {

// Function mode's body: one section for the whole process. Its costs are
// summed over threads by context (callgrind's readers would do the same);
// the per-thread figures are in the k-SF records.
void write_contexts(Writer& w);

} // namespace kg
