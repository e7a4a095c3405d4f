// kgrind: a Valgrind tool for k-calling-context profiling.
// Start-up, the core's callbacks, and the end of the run.
#include "kg_valgrind.h"
#include "kg_activity.h"
#include "kg_blocks.h"
#include "kg_costs.h"
#include "kg_debuginfo.h"
#include "kg_instrument.h"
#include "kg_options.h"
#include "kg_output.h"
#include "kg_version.h"

namespace kg {

namespace {

const Int kVexDefaultUnrollThresh = 120;
const Int kUnrollThresh = 400;

void post_clo_init()
{
   // Chasing would fold calls and returns into the caller's superblock.
   VG_(clo_vex_control).guest_chase = False;
   // Unroll small loops more than VEX's default (120; 400 is its maximum):
   // a run of an unrolled superblock pays the prologue and the counters'
   // pointer once for more iterations (numeric 1.21 -> 1.16x none, bzip2
   // 1.24 -> 1.20x, the others and the block modes unchanged; profiles
   // identical: docs/function-mode.md). An explicit
   // --vex-iropt-unroll-thresh other than the default is kept.
   if (VG_(clo_vex_control).iropt_unroll_thresh == kVexDefaultUnrollThresh)
      VG_(clo_vex_control).iropt_unroll_thresh = kUnrollThresh;
   check_options();
   debuginfo_init();
   if (block_mode()) {
      blocks_init();
      dump_open();
   }
   activity_init();
   instrument_init();
   create_output_file(output_file_name());
}

void client_code_starts(ThreadId tid, ULong blocks_done)
{
   thread_starts_running(tid, blocks_done);
   publish_data_bases(tid);
}

void fini(Int exit_code)
{
   finish_all_threads();
   dump_close();
   const HChar* path = output_file_name();
   Bool ok = write_profile(path);
   warn_unmatched_patterns();
   if (VG_(clo_verbosity) == 0) return;
   VG_(umsg)("\n");
   VG_(umsg)("I   refs:      %'llu\n", total_ir());
   if (ok) VG_(umsg)("Output written to %s\n", path);
}

void pre_clo_init()
{
   VG_(details_name)("kgrind");
   VG_(details_version)(KG_VERSION_STRING);
   VG_(details_description)("a k-calling-context profiler");
   VG_(details_copyright_author)("Copyright (C) 2026, the kgrind developers.");
   VG_(details_bug_reports_to)("the kgrind issue tracker");
   VG_(details_avg_translation_sizeB)(500);

   VG_(basic_tool_funcs)(post_clo_init, instrument, fini);
   VG_(needs_command_line_options)(process_option, print_usage, print_debug_usage);
   VG_(track_start_client_code)(client_code_starts);
   VG_(track_pre_thread_ll_exit)(thread_exits);
   VG_(track_pre_deliver_signal)(signal_delivered);
   VG_(track_post_deliver_signal)(signal_returned);
   VG_(atfork)(nullptr, nullptr, fork_child);

   VG_(clo_vex_control).guest_chase = False;
   // The helpers take SP as an argument and read no other guest register,
   // so only SP needs to be exact at memory accesses (as callgrind does):
   // less register write-back code per block, a smaller translation cache.
   // --vex-iropt-register-updates still overrides it.
   VG_(clo_vex_control).iropt_register_updates_default = VexRegUpdSpAtMemAccess;
   VG_(clo_px_file_backed) = VexRegUpdSpAtMemAccess;
}

} // namespace

} // namespace kg

extern "C" {
VG_DETERMINE_INTERFACE_VERSION(kg::pre_clo_init)
}
