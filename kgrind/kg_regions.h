// Regions of interest and live control (docs/regions.md): client requests
// (kgrind.h's and callgrind.h's), the options that start, stop, dump and
// zero, and the gdbserver's monitor commands.
#pragma once
#include "kg_valgrind.h"
#include "kg_debuginfo.h"

namespace kg {

struct BlockInfo;

// Options (--instr-atstart, --toggle-collect, ...): True if arg is one.
Bool process_region_option(const HChar* arg);
void print_region_usage();
// After the options: starts with collection off if they say so.
void regions_init();

// VG_(needs_client_requests).
Bool handle_client_request(ThreadId tid, UWord* args, UWord* ret);

// A thread starts a time slice: --dump-every-bb checks there.
void regions_time_slice(ULong blocks_done);

// What function entries and returns do for the region options
// (--toggle-collect, --dump-before, --dump-after, --zero-before): whether a
// block of fn needs the helpers below (decided at translation).
Bool region_function(const FnInfo* fn);
extern "C" {
// A region function's first block, before its frame is pushed.
void VG_REGPARM(1) kg_region_enter(BlockInfo* blk);
// After a region function's return (its frame popped).
void VG_REGPARM(1) kg_region_leave(BlockInfo* blk);
}
// SP rose to sp on thread tid (frames died): region functions left.
extern Bool kg_region_watching;
void region_stack_rose(ThreadId tid, Addr sp);

// After fork, in the child (after the counters were zeroed).
void regions_fork_child();

// An execve/execveat of `what` (path and arguments, for the profile's
// header) is about to run: writes the profile so far and reports it as the
// exit does (docs/function-mode.md, "Exec"). The counters stay: a failed
// exec continues the run.
void regions_exec_starts(const HChar* what);
// The exec failed (the program goes on): its file is taken back.
void regions_exec_failed();

// The final profile's name: numbered after the dumps of the run.
const HChar* final_output_file_name();
// Writes the profile at the end of the run.
Bool write_final_profile(const HChar* path);

} // namespace kg
