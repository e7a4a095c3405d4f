#include "kg_dumps.h"
#include "kg_activity.h"
#include "kg_options.h"
#include "kg_output.h"
#include "kg_runtime.h"
#include "kg_writer.h"
extern "C" {
#include "pub_tool_gdbserver.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_xarray.h"
}

namespace kg {

Bool replying_to_gdb = False;

namespace {

UInt dumps_written = 0;           // numbered files written (or names refused) during the run
ULong ir_at_last_zero = 0;        // ir_elapsed() when the counters last started

// The output file name of this process (expanded once: it allocates).
const HChar* base_file_name_cache = nullptr;
const HChar* base_file_name()
{
   if (!base_file_name_cache) base_file_name_cache = output_file_name();
   return base_file_name_cache;
}

// Set in a fork child that writes its own file instead of its parent's.
const HChar* parents_file_name = nullptr;

// A fork child whose file name has no %p would write its parent's file
// (the one written last wins): it writes "<name>.<pid>" instead, and says so.
void give_fork_child_its_own_file()
{
   if (name_has_pid()) return;
   const HChar* parents = output_file_name();
   HChar* own = (HChar*)kg::alloc(VG_(strlen)(parents) + 16, "kg.out");
   VG_(sprintf)(own, "%s.%d", parents, VG_(getpid)());
   base_file_name_cache = own;
   parents_file_name = parents;
}

// "<base>.<n>": callgrind's numbering of the files of one run.
const HChar* numbered_name(const HChar* base, UInt n)
{
   HChar* name = (HChar*)kg::alloc(VG_(strlen)(base) + 16, "kg.out");
   VG_(sprintf)(name, "%s.%u", base, n);
   return name;
}

const HChar* numbered_file_name(UInt n) { return numbered_name(base_file_name(), n); }

// The profile of the model as it is now: the threads' deferred counts go
// into the forests and call edges first, and the node counts derived for
// writing are given back after (the writer only reads the model).
Bool write_model_profile(const HChar* path, const DumpInfo& info)
{
   ThreadProfile* threads = (ThreadProfile*)kg::alloc(thread_profile_count() * sizeof(ThreadProfile));
   flush_all_transitions();
   UInt n_threads = thread_profiles(threads);
   derive_node_counts(threads, n_threads);
   Bool ok = write_profile(path, info, threads, n_threads);
   forget_node_counts(threads, n_threads);
   kg::release(threads);
   return ok;
}

// The profile of what was counted since the last dump or zeroing, the open
// frames' inclusive costs up to now included; the counters stay as they are.
Bool write_counted_so_far(const HChar* path, const HChar* trigger)
{
   settle_open_frames();
   DumpInfo info = { trigger, ir_at_last_zero, ir_elapsed(), True };
   return write_model_profile(path, info);
}

} // namespace

Bool name_has_pid() { return VG_(strstr)(clo.out_file, "%p") != nullptr; }

// --trace-children's value (the core keeps it from tools): the last of
// Valgrind's arguments (.valgrindrc, VALGRIND_OPTS, the command line) says.
Bool tracing_children()
{
   Bool on = False;
   for (Word i = 0; i < VG_(sizeXA)(VG_(args_for_valgrind)); i++) {
      const HChar* arg = *(const HChar**)VG_(indexXA)(VG_(args_for_valgrind), i);
      if (VG_(strncmp)(arg, "--trace-children=", 17) == 0) on = VG_STREQ(arg + 17, "yes");
   }
   return on;
}

void zero_profile()
{
   zero_counters();
   ir_at_last_zero = ir_elapsed();
}

Bool dump_profile(const HChar* trigger)
{
   const HChar* path = numbered_file_name(dumps_written + 1);
   Bool ok = write_counted_so_far(path, trigger);
   // A name refused (a symbolic link planted there) stays refused: its
   // number is skipped, the dump's counts go into the next file. After
   // another failure (a directory gone) the next dump tries it again.
   if (ok || name_refused(path)) {
      // The start-up placeholder would stay "incomplete": the run's
      // profiles are the numbered files now.
      if (dumps_written++ == 0) VG_(unlink)(base_file_name());
   }
   if (ok) {
      zero_profile();
      if (VG_(clo_verbosity) > 1 || replying_to_gdb) KG_REPORT("kgrind: dump written to %s\n", path);
   } else if (replying_to_gdb) {
      VG_(gdb_printf)("kgrind: dump to '%s' failed; the run goes on\n", path);
   }
   kg::release((void*)path);
   return ok;
}

UInt dumps_written_so_far() { return dumps_written; }
ULong last_zero_ir() { return ir_at_last_zero; }

void regions_fork_child()
{
   // The child's files are its own (its pid): numbered from 1, its Ir from 0.
   dumps_written = 0;
   ir_at_last_zero = 0;
   base_file_name_cache = nullptr;   // %p is the child's pid
   give_fork_child_its_own_file();
}

// ---- Exec ------------------------------------------------------------------------

namespace {

// The file written for the exec under way (null: none).
const HChar* exec_file = nullptr;
// With --trace-children=yes, the image's file name before the exec under
// way moved its files to "<name>.exec-<n>" (null: none moved).
const HChar* base_before_exec = nullptr;

// Whether the file at path is a profile this process wrote (its pid: line);
// a symbolic link there is not followed (the open fails: not this process's).
Bool written_by_this_process(const HChar* path)
{
   SysRes fd = VG_(open)(path, VKI_O_RDONLY | VKI_O_NONBLOCK | kOpenNoFollow, 0);
   if (sr_isError(fd)) return False;
   HChar head[256];
   Int n = VG_(read)(sr_Res(fd), head, sizeof head - 1);
   VG_(close)(sr_Res(fd));
   if (n <= 0) return False;
   head[n] = '\0';
   HChar pid_line[32];
   VG_(sprintf)(pid_line, "\npid: %d\n", VG_(getpid)());
   return VG_(strstr)(head, pid_line) != nullptr;
}

// Whether an earlier image of this process wrote its profile, or its
// first dump, under the file name `name`.
Bool name_taken_by_this_process(const HChar* name)
{
   const HChar* first_dump = numbered_name(name, 1);
   Bool taken = written_by_this_process(name) || written_by_this_process(first_dump);
   kg::release((void*)first_dump);
   return taken;
}

// "<base>.exec-<n>": the n-th image of this process that exec'd. A file of
// that name from another process (an earlier run) is overwritten; one of
// this process is an earlier image's; a name refused is skipped.
const HChar* exec_file_name()
{
   const HChar* base = base_file_name();
   HChar* name = (HChar*)kg::alloc(VG_(strlen)(base) + 24, "kg.out");
   for (UInt n = 1;; n++) {
      VG_(sprintf)(name, "%s.exec-%u", base, n);
      if (!name_taken_by_this_process(name) && !name_refused(name)) return name;
   }
}

// The dumps written so far, from "<from>.<i>" to "<to>.<i>".
void move_dumps(const HChar* from, const HChar* to)
{
   for (UInt i = 1; i <= dumps_written; i++) {
      const HChar* old_name = numbered_name(from, i);
      const HChar* new_name = numbered_name(to, i);
      VG_(rename)(old_name, new_name);
      kg::release((void*)old_name);
      kg::release((void*)new_name);
   }
}

// With --trace-children=yes the exec'd program is profiled in this process
// and writes this process's files (it cannot know of this image's): this
// image's file name becomes "<name>.exec-<n>", its dumps move there.
void rename_image_for_exec()
{
   base_before_exec = base_file_name();
   const HChar* exec_base = exec_file_name();
   move_dumps(base_before_exec, exec_base);
   base_file_name_cache = exec_base;
}

void undo_rename_for_exec()
{
   if (!base_before_exec) return;
   move_dumps(base_file_name_cache, base_before_exec);
   kg::release((void*)base_file_name_cache);
   base_file_name_cache = base_before_exec;
   base_before_exec = nullptr;
}

// Frees a name from final_output_file_name.
void release_file_name(const HChar* path)
{
   if (path != base_file_name()) kg::release((void*)path);
}

} // namespace

void regions_exec_starts(const HChar* what)
{
   Bool traced = tracing_children();
   if (traced) rename_image_for_exec();
   const HChar* path = final_output_file_name();
   HChar trigger[600];
   VG_(snprintf)(trigger, sizeof trigger, "Exec: %s", what);
   if (!write_counted_so_far(path, trigger)) {
      release_file_name(path);
      undo_rename_for_exec();
      return;
   }
   exec_file = path;
   // The start-up placeholder is the exec'd image's to write, or (an
   // untraced program, --trace-children-skip) nobody's: the profile is here.
   if (traced && dumps_written == 0) VG_(unlink)(base_before_exec);
   report_profile_written(path, what);
}

void regions_exec_failed()
{
   if (!exec_file) return;
   // The run goes on with the counters untouched: its profile at exit is
   // the whole run's. Until then the files are what they were.
   VG_(unlink)(exec_file);
   if (VG_(clo_verbosity) > 0)
      VG_(umsg)("Exec failed: the run goes on, and its profile is written at exit (%s taken back)\n",
                exec_file);
   release_file_name(exec_file);
   exec_file = nullptr;
   undo_rename_for_exec();
   if (dumps_written == 0) create_output_file(base_file_name());
}

const HChar* final_output_file_name()
{
   return dumps_written ? numbered_file_name(dumps_written + 1) : base_file_name();
}

Bool write_final_profile(const HChar* path)
{
   DumpInfo info = { "Program termination", ir_at_last_zero, ir_elapsed(), False };
   if (parents_file_name)
      VG_(umsg)("kgrind: --kgrind-out-file has no %%p: this fork child writes %s, not its parent's %s\n",
                path, parents_file_name);
   return write_model_profile(path, info);
}

} // namespace kg
