// The run's profile files (docs/regions.md): dumps during the run, numbered
// after callgrind's; the profile at an exec and at the end; a fork child's
// own files. Each writes the model as it is then (write_model_profile).
#pragma once
#include "kg_valgrind.h"

namespace kg {

// Messages of monitor commands go to vgdb (the core sends the log's there
// too while it runs one), others to the log.
extern Bool replying_to_gdb;

#define KG_REPORT(...)                                                   \
   do {                                                                  \
      if (replying_to_gdb) VG_(gdb_printf)(__VA_ARGS__);                 \
      else VG_(umsg)(__VA_ARGS__);                                       \
   } while (0)

// Writes what was counted since the last dump or zeroing to the next
// numbered file, then zeroes the counters. A file that cannot be written
// is reported and its counts stay for the next dump: the run goes on.
Bool dump_profile(const HChar* trigger);
// Zeroes the counters: the next profile counts from here.
void zero_profile();
// Numbered files written during the run, and the Ir run when the counters
// last started (for the monitor's status).
UInt dumps_written_so_far();
ULong last_zero_ir();

// --trace-children's value (the core keeps it from tools).
Bool tracing_children();
// Whether --kgrind-out-file has %p (each process its own file).
Bool name_has_pid();

// After fork, in the child (after the counters were zeroed).
void regions_fork_child();

// An execve/execveat of `what` (path and arguments, for the profile's
// header) is about to run: writes the profile so far and reports it as the
// exit does (docs/design/processes.md, "Exec"). The counters stay: a failed
// exec continues the run.
void regions_exec_starts(const HChar* what);
// The exec failed (the program goes on): its file is taken back.
void regions_exec_failed();

// The final profile's name: numbered after the dumps of the run.
const HChar* final_output_file_name();
// Writes the profile at the end of the run.
Bool write_final_profile(const HChar* path);

} // namespace kg
