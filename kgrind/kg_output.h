// Writes the profile in callgrind format (version 1).
#pragma once
#include "kg_valgrind.h"

namespace kg {

// The output file name for this process (the --kgrind-out-file template
// expanded with the current pid). Allocated; never freed (called once or twice).
const HChar* output_file_name();

// Checks that the output file can be created, at start-up, so that the user
// learns of a bad path before a long run. Reports and returns False if not.
Bool check_output_file(const HChar* path);

// Total Ir of all threads.
ULong total_ir();

// Writes the profile; reports failures by name with the reason.
Bool write_profile(const HChar* path);

} // namespace kg
