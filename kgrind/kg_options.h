// Command-line options of the tool.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// k = kInfiniteK builds the calling context tree.
const UInt kInfiniteK = 0xFFFFFFFFu;
const UInt kMaxFuncPatterns = 64;

struct Options {
   const HChar* out_file;        // template; %p expands to the pid
   UInt k;                       // --k
   Bool join_threads;            // --join-threads
   Bool unroll_simple_rec;       // --unroll-simple-rec
   UInt n_func_patterns;         // --funcs, split at commas
   const HChar* func_patterns[kMaxFuncPatterns];
};

extern Options clo;

// Core callbacks (VG_(needs_command_line_options)).
Bool process_option(const HChar* arg);
void print_usage();
void print_debug_usage();

// Whether a (demangled) function name is traced; records which patterns
// matched, for the end-of-run warning.
Bool name_is_traced(const HChar* name);
// Patterns of --funcs that never matched (for the warning).
UInt unmatched_patterns(const HChar** out, UInt max);

} // namespace kg
