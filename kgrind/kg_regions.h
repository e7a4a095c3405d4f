// Regions of interest (docs/regions.md): the options that start, stop, dump
// and zero, what region functions' entries and returns do, and client
// requests (kgrind.h's and callgrind.h's; the gdbserver's monitor commands
// come as one).
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
void region_stack_rose(ThreadId tid, Addr sp);

} // namespace kg
