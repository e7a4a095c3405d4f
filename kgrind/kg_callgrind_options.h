// callgrind's options that kgrind does not take: one line each on what
// kgrind does instead, for a command line moved over from callgrind.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// If arg is one of callgrind's options that kgrind does not take, stops
// with what kgrind does instead (does not return); else returns False.
Bool refuse_callgrind_option(const HChar* arg);

} // namespace kg
