// Writes the profile in callgrind format (version 1).
#pragma once
#include "kg_dump_info.h"
#include "kg_valgrind.h"

namespace kg {

// The output file name for this process (the --kgrind-out-file template
// expanded with the current pid). Allocated; never freed (called once or twice).
const HChar* output_file_name();

// Creates the output file at start-up, so that the user learns of a bad path
// before a long run (reports it and returns False). It holds a callgrind
// header without costs whose desc: line says that the process did not exit
// normally: what a run that is killed by SIGKILL, or that execs in a block
// mode, leaves (nothing writes the profile then). The profile replaces it at
// exit, or at an exec (docs/design/processes.md, "Exec").
Bool create_output_file(const HChar* path);

// Total Ir of all threads.
ULong total_ir();

struct ThreadProfile;

// Writes the profile of the threads (thread_profiles), whose transitions
// were flushed and node counts derived (kg_activity.h,
// flush_all_transitions): it only reads the model. Reports failures by
// name with the reason.
// With --separate-threads=yes (function mode, threads not joined) one file
// a thread, "<path>-<thread>" (thread_file_name), instead of `path`.
Bool write_profile(const HChar* path, const DumpInfo& dump, const ThreadProfile* threads, UInt n_threads);
Bool separate_thread_files();
const HChar* thread_file_name(const HChar* path, UInt thread);

// The end of an image's log: the total Ir and the file its profile went
// to, after `ended_by` if not null ("Exec of ..."). Nothing with -q.
void report_profile_written(const HChar* path, const HChar* ended_by);

} // namespace kg
