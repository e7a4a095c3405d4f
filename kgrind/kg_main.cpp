// kgrind: a Valgrind tool for k-calling-context profiling.
// Start-up, the core's callbacks, and the end of the run.
#include "kg_valgrind.h"
#include "kg_activity.h"
#include "kg_call_edges.h"
#include "kg_callgrind_options.h"
#include "kg_counters.h"
#include "kg_blocks.h"
#include "kg_debuginfo.h"
#include "kg_dumps.h"
#include "kg_events.h"
#include "kg_frameless_levels.h"
#include "kg_instrument.h"
#include "kg_options.h"
#include "kg_output.h"
#include "kg_regions.h"
#include "kg_systime.h"
#include "kg_tiers.h"
#include "kg_version.h"
extern "C" {
#include "pub_tool_vkiscnums.h"
}

namespace kg {

namespace {

const Int kVexDefaultUnrollThresh = 120;
const Int kUnrollThresh = 400;

// VEX's loop unrolling threshold.
void choose_unroll_threshold()
{
   Int& thresh = VG_(clo_vex_control).iropt_unroll_thresh;
   // Function mode counts jumps at superblock exits, and a loop unrolled
   // into one superblock jumps back to its start inside it, where nothing
   // counts the jump: no unrolling with --collect-jumps, whatever was asked
   // (callgrind never unrolls). The block modes count jumps from their
   // block trace.
   if (clo.collect_jumps && !block_mode()) thresh = 0;
   // Else unroll small loops more than VEX's default (120; 400 is its
   // maximum): a run of an unrolled superblock pays the prologue and the
   // counters' pointer once for more iterations (numeric 1.21 -> 1.16x none,
   // bzip2 1.24 -> 1.20x, the others and the block modes unchanged; profiles
   // identical: docs/design/counting.md). An explicit
   // --vex-iropt-unroll-thresh other than the default is kept.
   else if (thresh == kVexDefaultUnrollThresh) thresh = kUnrollThresh;
}

void post_clo_init()
{
   // Chasing would fold calls and returns into the caller's superblock.
   VG_(clo_vex_control).guest_chase = False;
   check_options();
   if (!inline_frames_on()) VG_(clo_read_inline_info) = False;
   events_init();
   call_edges_init();
   systime_init();
   choose_unroll_threshold();
   debuginfo_init();
   if (block_mode()) {
      blocks_init();
      dump_open();
   }
   activity_init();
   frameless_levels_init();
   regions_init();
   instrument_init();
   create_output_file(output_file_name());
}

void client_code_starts(ThreadId tid, ULong blocks_done)
{
   thread_starts_running(tid, blocks_done);
   publish_data_bases(tid);
   regions_time_slice(blocks_done);
}

void child_after_fork(ThreadId tid)
{
   fork_child(tid);
   regions_fork_child();
}

// ---- exec ----

// Copies the client's string at addr into buf (cut to fit), reading only
// client memory that is mapped readable; False if there is none.
Bool copy_client_string(Addr addr, HChar* buf, SizeT size)
{
   SizeT n = 0;
   for (; n + 1 < size; n++) {
      if (!VG_(am_is_valid_for_client)(addr + n, 1, VKI_PROT_READ)) break;
      buf[n] = *(const HChar*)(addr + n);
      if (!buf[n]) return True;
   }
   buf[n] = '\0';
   return n > 0;
}

// "<path> (argv: a b c)", cut to fit in buf.
void describe_exec(const HChar* path, Addr argv, HChar* buf, SizeT size)
{
   VG_(snprintf)(buf, size, "%s (argv:", path);
   for (UInt i = 0; argv && VG_(am_is_valid_for_client)(argv + i * sizeof(Addr), sizeof(Addr), VKI_PROT_READ); i++) {
      Addr arg = ((const Addr*)argv)[i];
      SizeT used = VG_(strlen)(buf);
      if (!arg || used + 2 >= size) break;
      buf[used++] = ' ';
      if (!copy_client_string(arg, buf + used, size - used - 1)) buf[used] = '\0';
   }
   SizeT used = VG_(strlen)(buf);
   if (used + 1 < size) VG_(strcat)(buf, ")");
}

// A missing program fails the exec before anything happens (the C
// library's PATH search tries several): no profile is written for it.
// execveat's path may be relative to a directory descriptor: not probed.
Bool exec_may_succeed(UInt sysno, const HChar* path)
{
   struct vg_stat st;
   return sysno != __NR_execve || !sr_isError(VG_(stat)(path, &st));
}

Bool is_exec(UInt sysno) { return sysno == __NR_execve || sysno == __NR_execveat; }

const HChar* mode_option() { return clo.mode == kModeIntra ? "intra" : "inter"; }

// A successful exec does not return: the image's profile is written before
// (all threads: the core ends the others only after this callback).
void pre_syscall(ThreadId tid, UInt sysno, UWord* args, UInt)
{
   systime_pre(tid);
   if (!is_exec(sysno)) return;
   Bool at = sysno == __NR_execveat;
   HChar path[512];
   // An unreadable path fails the exec (EFAULT).
   if (!copy_client_string(args[at ? 1 : 0], path, sizeof path) || !exec_may_succeed(sysno, path)) return;
   if (block_mode()) {
      VG_(umsg)("kgrind: exec of %s: --mode=%s writes no profile at exec (only --mode=func"
                " does): this image's file stays incomplete\n", path, mode_option());
      return;
   }
   HChar what[512];
   describe_exec(path, args[at ? 2 : 1], what, sizeof what);
   regions_exec_starts(what);
}

void post_syscall(ThreadId tid, UInt sysno, UWord*, UInt, SysRes res)
{
   systime_post(tid);
   if (is_exec(sysno) && sr_isError(res)) regions_exec_failed();
}

void fini(Int exit_code)
{
   finish_all_threads();
   dump_close();
   const HChar* path = final_output_file_name();
   Bool ok = write_final_profile(path);
   warn_unmatched_patterns();
   report_profile_written(ok ? path : nullptr, nullptr);
   if (VG_(clo_stats)) {
      print_tier_stats();
      print_event_clock_stats();
      print_helper_call_stats();
      print_counter_stats();
   }
}

// The tool's options: the region options (kg_regions.h), then the others
// (kg_options.h); callgrind's that kgrind does not take stop with what
// kgrind does instead (kg_callgrind_options.h).
Bool process_tool_option(const HChar* arg)
{
   return process_region_option(arg) || process_option(arg) || refuse_callgrind_option(arg);
}

void print_tool_usage()
{
   print_usage();
   print_region_usage();
}

// A translation was discarded (code unmapped or changed, the table full, a
// tier's promotion): the code at its address may be another function's
// next time, so no computed jump keeps it as a tail call's target.
void superblock_discarded(Addr orig_addr, VexGuestExtents) { tail_jump_target_discarded(orig_addr); }

void pre_clo_init()
{
   VG_(details_name)("kgrind");
   VG_(details_version)(KG_VERSION_STRING);
   VG_(details_description)("a k-calling-context profiler");
   VG_(details_copyright_author)("Copyright (C) 2026, the kgrind developers.");
   VG_(details_bug_reports_to)("the kgrind issue tracker");
   VG_(details_avg_translation_sizeB)(500);

   VG_(basic_tool_funcs)(post_clo_init, instrument, fini);
   VG_(needs_command_line_options)(process_tool_option, print_tool_usage, print_debug_usage);
   VG_(needs_client_requests)(handle_client_request);
   VG_(needs_syscall_wrapper)(pre_syscall, post_syscall);
   VG_(needs_superblock_discards)(superblock_discarded);
   VG_(track_start_client_code)(client_code_starts);
   VG_(track_pre_thread_ll_exit)(thread_exits);
   VG_(track_pre_deliver_signal)(signal_delivered);
   VG_(track_post_deliver_signal)(signal_returned);
   VG_(track_register_stack)(stack_registered);
   VG_(track_die_mem_munmap)(memory_unmapped);
   VG_(atfork)(nullptr, nullptr, child_after_fork);

   VG_(clo_vex_control).guest_chase = False;
   // The helpers take SP as an argument and read no other guest register,
   // so only SP needs to be exact at memory accesses (as callgrind does):
   // less register write-back code per block, a smaller translation cache.
   // --vex-iropt-register-updates still overrides it.
   VG_(clo_vex_control).iropt_register_updates_default = VexRegUpdSpAtMemAccess;
   VG_(clo_px_file_backed) = VexRegUpdSpAtMemAccess;
   // --inline-frames reads the debug info's inline records (the core's
   // --read-inline-info, which --read-inline-info=no still turns off).
   VG_(clo_read_inline_info) = True;
}

} // namespace

} // namespace kg

extern "C" {
VG_DETERMINE_INTERFACE_VERSION(kg::pre_clo_init)
}
