// Command-line options of the tool (--kgrind-out-file, ...).
#pragma once
#include "kg_valgrind.h"

namespace kg {

struct Options {
   const HChar* out_file;   // template; %p expands to the pid
};

extern Options clo;

// Core callbacks (VG_(needs_command_line_options)).
Bool process_option(const HChar* arg);
void print_usage();
void print_debug_usage();

} // namespace kg
