// The gdbserver's monitor commands (vgdb, kgrind_control): dump, zero,
// instrumentation, status, help (docs/regions.md).
#pragma once
#include "kg_valgrind.h"

namespace kg {

// A monitor command: True if it is one of kgrind's.
Bool monitor_command(const HChar* command);

} // namespace kg
