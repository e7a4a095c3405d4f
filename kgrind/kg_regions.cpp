// Regions of interest and live control (docs/regions.md).
//
// Everything here acts on the counters only (kg_activity.cpp, "Regions of
// interest"): the shadow stacks and forests follow the program all the
// time, so whatever is counted is counted in its true context.
// Instrumentation off is therefore collection off: the code stays
// instrumented (docs/regions.md says why).
#include "kg_regions.h"
#include "kg_activity.h"
#include "kg_block_info.h"
#include "kg_options.h"
#include "kg_output.h"
#include "kg_runtime.h"
extern "C" {
#include "pub_tool_gdbserver.h"
#include "pub_tool_clreq.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_xarray.h"
}

namespace kg {

Bool kg_region_watching = False;

namespace {

// ---- Options ----------------------------------------------------------------

const UInt kMaxRegionPatterns = 32;

// Function patterns of one option (--toggle-collect=..., repeatable).
struct PatternList {
   const HChar* option;
   UInt n;
   const HChar* globs[kMaxRegionPatterns];
};

// What entering or leaving a matching function does (bits).
const UInt kToggleCollect = 1;
const UInt kDumpBefore = 2;
const UInt kDumpAfter = 4;
const UInt kZeroBefore = 8;

PatternList toggle_collect = { "--toggle-collect", 0, {} };
PatternList dump_before = { "--dump-before", 0, {} };
PatternList dump_after = { "--dump-after", 0, {} };
PatternList zero_before = { "--zero-before", 0, {} };

Bool instr_atstart = True;
Bool collect_atstart = True;
ULong dump_every_bb = 0;          // 0: off
Bool region_options_given = False;

void add_pattern(PatternList& list, const HChar* arg, const HChar* glob)
{
   if (glob[0] == '\0') VG_(fmsg_bad_option)(arg, "%s needs a function name or glob pattern\n", list.option);
   if (list.n == kMaxRegionPatterns)
      VG_(fmsg_bad_option)(arg, "%s is given more than %u times\n", list.option, kMaxRegionPatterns);
   list.globs[list.n++] = glob;
}

ULong parse_count(const HChar* arg, const HChar* value)
{
   HChar* end = nullptr;
   Long n = VG_(strtoll10)(value, &end);
   if (value[0] == '\0' || *end != '\0' || n <= 0)
      VG_(fmsg_bad_option)(arg, "--dump-every-bb takes a positive whole number of basic blocks\n");
   return (ULong)n;
}

Bool matches(const PatternList& list, const HChar* name)
{
   for (UInt i = 0; i < list.n; i++)
      if (VG_(string_match)(list.globs[i], name)) return True;
   return False;
}

// ---- State --------------------------------------------------------------------

Bool instr_on = True;
Bool collect_on = True;
UInt dumps_written = 0;           // numbered files written during the run
ULong ir_at_last_zero = 0;        // ir_elapsed() when the counters last started
ULong next_dump_bb = 0;

// Counting runs when both instrumentation and collection are on.
void apply_counting()
{
   if (instr_on && collect_on) resume_counting();
   else pause_counting();
}

// Messages of monitor commands go to vgdb (the core sends the log's there
// too while it runs one), others to the log.
Bool replying_to_gdb = False;

#define KG_REPORT(...)                                                   \
   do {                                                                  \
      if (replying_to_gdb) VG_(gdb_printf)(__VA_ARGS__);                 \
      else VG_(umsg)(__VA_ARGS__);                                       \
   } while (0)

// The output file name of this process (expanded once: it allocates).
const HChar* base_file_name_cache = nullptr;
const HChar* base_file_name()
{
   if (!base_file_name_cache) base_file_name_cache = output_file_name();
   return base_file_name_cache;
}

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

void zero()
{
   zero_counters();
   ir_at_last_zero = ir_elapsed();
}

// The profile of what was counted since the last dump or zeroing, the open
// frames' inclusive costs up to now included; the counters stay as they are.
Bool write_counted_so_far(const HChar* path, const HChar* trigger)
{
   settle_open_frames();
   DumpInfo info = { trigger, ir_at_last_zero, ir_elapsed(), True };
   return write_profile(path, info);
}

// Writes what was counted since the last dump or zeroing to the next
// numbered file, then zeroes the counters. A file that cannot be written
// is reported and its counts stay for the next dump: the run goes on.
Bool dump(const HChar* trigger)
{
   const HChar* path = numbered_file_name(dumps_written + 1);
   Bool ok = write_counted_so_far(path, trigger);
   if (ok) {
      // The start-up placeholder would stay "incomplete": the run's
      // profiles are the numbered files now.
      if (dumps_written++ == 0) VG_(unlink)(base_file_name());
      zero();
      if (VG_(clo_verbosity) > 1 || replying_to_gdb) KG_REPORT("kgrind: dump written to %s\n", path);
   } else if (replying_to_gdb) {
      VG_(gdb_printf)("kgrind: dump to '%s' failed; the run goes on\n", path);
   }
   kg::release((void*)path);
   return ok;
}

// ---- Function entries and returns (region options) -----------------------------

UChar* fn_actions;                // by function id: action bits + 0x80 (known)
UInt fn_actions_cap;

UInt actions_of(const FnInfo* fn)
{
   if (fn->id >= fn_actions_cap) {
      UInt cap = fn_actions_cap ? fn_actions_cap : 1024;
      while (cap <= fn->id) cap *= 2;
      UChar* bigger = (UChar*)alloc_zeroed(cap);
      if (fn_actions_cap) VG_(memcpy)(bigger, fn_actions, fn_actions_cap);
      kg::release(fn_actions);
      fn_actions = bigger;
      fn_actions_cap = cap;
   }
   UChar& a = fn_actions[fn->id];
   if (!a) {
      UInt bits = (matches(toggle_collect, fn->name) ? kToggleCollect : 0) |
                  (matches(dump_before, fn->name) ? kDumpBefore : 0) |
                  (matches(dump_after, fn->name) ? kDumpAfter : 0) |
                  (matches(zero_before, fn->name) ? kZeroBefore : 0);
      a = (UChar)(bits | 0x80);
   }
   return a & 0x7F;
}

// An activation of a region function whose end does something (toggle
// back, dump after): it ends when SP rises above the SP at its entry.
struct Watch {
   ThreadId tid;
   Addr sp;
   const FnInfo* fn;
   UInt actions;
};
Watch* watches;
UInt n_watches, watches_cap;

void add_watch(const Watch& w)
{
   if (n_watches == watches_cap) {
      watches_cap = watches_cap ? 2 * watches_cap : 64;
      Watch* bigger = (Watch*)kg::alloc(watches_cap * sizeof(Watch), "kg.regions");
      if (n_watches) VG_(memcpy)(bigger, watches, n_watches * sizeof(Watch));
      kg::release(watches);
      watches = bigger;
   }
   watches[n_watches++] = w;
   kg_region_watching = True;
}

// Whether an activation of fn in thread tid toggled collection and runs.
Bool toggling_in(ThreadId tid, const FnInfo* fn)
{
   for (UInt i = 0; i < n_watches; i++)
      if (watches[i].tid == tid && watches[i].fn == fn && (watches[i].actions & kToggleCollect)) return True;
   return False;
}

void toggle_collect_now()
{
   collect_on = !collect_on;
   apply_counting();
}

const HChar* trigger_text(const HChar* what, const FnInfo* fn)
{
   static HChar text[512];
   VG_(snprintf)(text, sizeof text, "%s=%s", what, fn->name);
   return text;
}

void leave(const Watch& w)
{
   if (w.actions & kToggleCollect) toggle_collect_now();
   if (w.actions & kDumpAfter) dump(trigger_text("--dump-after", w.fn));
}

} // namespace

Bool region_function(const FnInfo* fn)
{
   return region_options_given && actions_of(fn) != 0;
}

extern "C" void VG_REGPARM(1) kg_region_enter(BlockInfo* blk)
{
   if (kg_now->ctx != kCallPending) return;   // a jump back to the entry: a loop
   const FnInfo* fn = blk->fn();
   UInt actions = actions_of(fn);
   if (actions & kZeroBefore) zero();
   if (actions & kDumpBefore) dump(trigger_text("--dump-before", fn));
   ThreadId tid = VG_(get_running_tid)();
   // A recursive call toggles nothing: collection switches at the
   // outermost activation's entry and exit (what callgrind measures).
   if ((actions & kToggleCollect) && toggling_in(tid, fn)) actions &= ~kToggleCollect;
   if (actions & kToggleCollect) toggle_collect_now();
   UInt at_end = actions & (kToggleCollect | kDumpAfter);
   if (at_end) add_watch({ tid, VG_(get_SP)(tid), fn, at_end });
}

void region_stack_rose(ThreadId tid, Addr sp)
{
   // The newest watches of this thread whose frames died, innermost first.
   for (UInt i = n_watches; i-- > 0;) {
      if (watches[i].tid != tid) continue;
      if (sp <= watches[i].sp) break;
      Watch w = watches[i];
      VG_(memmove)(&watches[i], &watches[i + 1], (n_watches - i - 1) * sizeof(Watch));
      n_watches--;
      leave(w);
   }
   kg_region_watching = n_watches > 0;
}

extern "C" void VG_REGPARM(1) kg_region_leave(BlockInfo* blk)
{
   if (!kg_region_watching) return;
   ThreadId tid = VG_(get_running_tid)();
   region_stack_rose(tid, VG_(get_SP)(tid));
}

// ---- Options ----------------------------------------------------------------

Bool process_region_option(const HChar* arg)
{
   const HChar* value;
   Bool flag;
   if VG_BOOL_CLO(arg, "--instr-atstart", instr_atstart) {}
   else if VG_BOOL_CLO(arg, "--collect-atstart", collect_atstart) {}
   else if VG_STR_CLO(arg, "--toggle-collect", value) {
      add_pattern(toggle_collect, arg, value);
      // As callgrind: the named functions are the region, so collection
      // starts off; a --collect-atstart=yes after this still turns it on.
      collect_atstart = False;
   }
   else if VG_STR_CLO(arg, "--dump-before", value) add_pattern(dump_before, arg, value);
   else if VG_STR_CLO(arg, "--dump-after", value) add_pattern(dump_after, arg, value);
   else if VG_STR_CLO(arg, "--zero-before", value) add_pattern(zero_before, arg, value);
   else if VG_STR_CLO(arg, "--dump-every-bb", value) dump_every_bb = parse_count(arg, value);
   else if VG_BOOL_CLO(arg, "--dump-line", flag) {
      // Costs are always per source line; there is nothing else to dump.
      if (!flag) VG_(fmsg_bad_option)(arg, "kgrind always writes source line positions (--dump-line=yes)\n");
   }
   else if VG_BOOL_CLO(arg, "--separate-threads", flag) {
      // The k-SF records are per thread whatever it says (docs/regions.md).
   }
   else return False;
   region_options_given = True;
   return True;
}

void print_region_usage()
{
   VG_(printf)(
"    --instr-atstart=no|yes    count from the start (else from KGRIND_START_INSTRUMENTATION\n"
"                              or the 'instrumentation on' monitor command) [yes]\n"
"    --collect-atstart=no|yes  collect from the start [yes; no after --toggle-collect]\n"
"    --toggle-collect=<glob>   toggle collection at entry and exit of matching functions\n"
"                              (sets --collect-atstart=no, as callgrind does)\n"
"    --dump-before=<glob>      dump a profile when entering matching functions\n"
"    --dump-after=<glob>       dump a profile when leaving matching functions\n"
"    --zero-before=<glob>      zero the counters when entering matching functions\n"
"    --dump-every-bb=<count>   dump a profile every <count> basic blocks (checked at\n"
"                              each thread time slice)\n"
"    --dump-line=yes           accepted (positions are always source lines)\n"
"    --separate-threads=no|yes accepted (the k-SF records are always per thread)\n"
   );
}

void regions_init()
{
   Bool region_patterns = toggle_collect.n || dump_before.n || dump_after.n || zero_before.n;
   if (block_mode() && (region_patterns || dump_every_bb || !instr_atstart || !collect_atstart)) {
      VG_(fmsg_bad_option)("--mode", "regions of interest (--instr-atstart, --collect-atstart,"
                           " --toggle-collect, --dump-*, --zero-before) need --mode=func\n");
      VG_(exit)(1);
   }
   if (tracing_children() && !name_has_pid())
      VG_(umsg)("kgrind: warning: --trace-children=yes with --kgrind-out-file=%s (no %%p): every"
                " process of the run writes that file, and the last one to exit overwrites the others'\n",
                clo.out_file);
   instr_on = instr_atstart;
   collect_on = collect_atstart;
   apply_counting();
   next_dump_bb = dump_every_bb;
}

void regions_time_slice(ULong blocks_done)
{
   if (!dump_every_bb || blocks_done < next_dump_bb) return;
   while (next_dump_bb <= blocks_done) next_dump_bb += dump_every_bb;
   dump("--dump-every-bb");
}

// ---- Client requests ----------------------------------------------------------

namespace {

// The requests of kgrind.h and callgrind.h, by their offset from the tool
// base: kgrind.h keeps callgrind.h's order.
enum Request : UWord {
   kReqDumpStats = 0,
   kReqZeroStats,
   kReqToggleCollect,
   kReqDumpStatsAt,
   kReqStartInstrumentation,
   kReqStopInstrumentation,
   kReqCurrentContext,            // kgrind.h only
};

const HChar* const request_names[] = {
   "DUMP_STATS", "ZERO_STATS", "TOGGLE_COLLECT", "DUMP_STATS_AT",
   "START_INSTRUMENTATION", "STOP_INSTRUMENTATION", "CURRENT_CONTEXT",
};

const UWord kToolBaseMask = 0xFFFF0000;

// Block modes keep their counters elsewhere: the requests are reported
// once and do nothing there.
Bool refused_in_block_mode(const HChar* tool, UWord req)
{
   static Bool told = False;
   if (!block_mode()) return False;
   if (!told) VG_(umsg)("kgrind: %s_%s and the other region requests need --mode=func: ignored\n",
                        tool, request_names[req]);
   told = True;
   return True;
}

void request(ThreadId tid, const HChar* tool, UWord req, const UWord* args, UWord* ret)
{
   *ret = 0;
   if (refused_in_block_mode(tool, req)) return;
   HChar reason[512];
   switch (req) {
   case kReqDumpStats:
      dump("Client Request");
      break;
   case kReqDumpStatsAt:
      VG_(snprintf)(reason, sizeof reason, "Client Request: %s",
                    args[1] ? (const HChar*)args[1] : "(null)");
      dump(reason);
      break;
   case kReqZeroStats:
      zero();
      break;
   case kReqToggleCollect:
      toggle_collect_now();
      break;
   case kReqStartInstrumentation:
   case kReqStopInstrumentation:
      instr_on = req == kReqStartInstrumentation;
      apply_counting();
      break;
   case kReqCurrentContext:
      *ret = current_context_id(tid);
      break;
   }
}

// Another tool's request: the program gets what it gets without Valgrind
// (the core's default), and the user learns once per tool that kgrind
// ignored it.
void report_unhandled(UWord code)
{
   const UInt kMaxTools = 16;
   static UWord told[kMaxTools];
   static UInt n_told;
   UWord base = code & kToolBaseMask;
   for (UInt i = 0; i < n_told; i++)
      if (told[i] == base) return;
   if (n_told < kMaxTools) told[n_told++] = base;
   HChar a = (HChar)((code >> 24) & 0xFF), b = (HChar)((code >> 16) & 0xFF);
   if (base == VG_USERREQ_TOOL_BASE('K', 'G')) {
      VG_(umsg)("kgrind: ignoring unknown kgrind.h request 0x%lx (the program's kgrind.h is newer"
                " than this kgrind; reported once)\n", code);
      return;
   }
   VG_(umsg)("kgrind: ignoring client request 0x%lx of another tool ('%c','%c'+%lu): kgrind handles"
             " kgrind.h's and callgrind.h's requests only (reported once per tool)\n",
             code, a, b, code & ~kToolBaseMask);
}

Bool monitor_command(const HChar* command);

} // namespace

Bool handle_client_request(ThreadId tid, UWord* args, UWord* ret)
{
   UWord code = args[0];
   if (VG_IS_TOOL_USERREQ('K', 'G', code) && code - VG_USERREQ_TOOL_BASE('K', 'G') <= kReqCurrentContext) {
      request(tid, "KGRIND", code - VG_USERREQ_TOOL_BASE('K', 'G'), args, ret);
      return True;
   }
   if (VG_IS_TOOL_USERREQ('C', 'T', code) && code - VG_USERREQ_TOOL_BASE('C', 'T') <= kReqStopInstrumentation) {
      request(tid, "CALLGRIND", code - VG_USERREQ_TOOL_BASE('C', 'T'), args, ret);
      return True;
   }
   if (code == VG_USERREQ__GDB_MONITOR_COMMAND) {
      Bool handled = monitor_command((const HChar*)args[1]);
      *ret = handled;
      return handled;
   }
   report_unhandled(code);
   return False;
}

// ---- Monitor commands (vgdb, kgrind_control) ------------------------------------

namespace {

void print_monitor_help()
{
   VG_(gdb_printf)(
"kgrind monitor commands:\n"
"  dump [<reason>]            write a profile of what was counted since the last\n"
"                             dump or zeroing (kgrind.out.<pid>.<n>), then zero\n"
"  zero                       zero the counters\n"
"  instrumentation [on|off]   show, or switch, instrumentation (counting)\n"
"  status                     each thread's current k-context and shadow stack depth\n");
}

const HChar* label_name(UInt label) { return label ? current_name(function_by_id(label - 1)) : "__root__"; }

// "c'b'a": the context's function and up to k callers, as the profile names it.
void print_context(const ForestNode* node)
{
   UInt count = 0;
   for (const ForestNode* p = node; p && (clo.k == kInfiniteK || count <= clo.k); p = p->parent, count++)
      VG_(gdb_printf)("%s%s", count ? "'" : "", label_name(p->label));
}

void print_thread_status(UInt thread, ThreadId tid, const ForestNode* ctx, UInt depth, void*)
{
   VG_(gdb_printf)("thread %u (Valgrind tid %u): shadow stack depth %u, context ", thread, tid, depth);
   print_context(ctx);
   VG_(gdb_printf)("\n");
}

void print_status()
{
   VG_(gdb_printf)("kgrind: k=");
   if (clo.k == kInfiniteK) VG_(gdb_printf)("inf");
   else VG_(gdb_printf)("%u", clo.k);
   VG_(gdb_printf)(", instrumentation %s, collection %s, Ir run %llu (counted since the last"
                   " dump or zeroing: from %llu), dumps written %u\n",
                   instr_on ? "on" : "off", collect_on ? "on" : "off", ir_elapsed(), ir_at_last_zero,
                   dumps_written);
   for_each_live_thread(print_thread_status, nullptr);
}

Bool monitor_command(const HChar* command)
{
   HChar* copy = kg::strdup(command);
   HChar* save = nullptr;
   const HChar* word = VG_(strtok_r)(copy, " ", &save);
   const HChar* rest = save ? save : "";
   while (*rest == ' ') rest++;
   replying_to_gdb = True;
   Bool handled = True;
   if (!word) {
      handled = False;
   } else if (VG_STREQ(word, "help")) {
      print_monitor_help();
   } else if (block_mode() && !VG_STREQ(word, "status")) {
      VG_(gdb_printf)("kgrind: monitor commands need --mode=func\n");
   } else if (VG_STREQ(word, "dump")) {
      HChar reason[512];
      VG_(snprintf)(reason, sizeof reason, "Monitor command: dump%s%s", *rest ? " " : "", rest);
      dump(reason);
   } else if (VG_STREQ(word, "zero")) {
      if (*rest) VG_(gdb_printf)("kgrind: 'zero' takes no argument\n");
      else zero();
   } else if (VG_STREQ(word, "instrumentation")) {
      if (VG_STREQ(rest, "on") || VG_STREQ(rest, "off")) {
         instr_on = VG_STREQ(rest, "on");
         apply_counting();
      } else if (*rest) {
         VG_(gdb_printf)("kgrind: 'instrumentation' takes on or off, not '%s'\n", rest);
      }
      VG_(gdb_printf)("instrumentation: %s\n", instr_on ? "on" : "off");
   } else if (VG_STREQ(word, "status")) {
      print_status();
   } else {
      VG_(gdb_printf)("kgrind: unknown monitor command '%s' (kgrind's: dump [reason], zero,"
                      " instrumentation [on|off], status, help)\n", word);
   }
   replying_to_gdb = False;
   kg::release(copy);
   return handled;
}

} // namespace

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

// Whether the file at path is a profile this process wrote (its pid: line).
Bool written_by_this_process(const HChar* path)
{
   SysRes fd = VG_(open)(path, VKI_O_RDONLY, 0);
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
// this process is an earlier image's.
const HChar* exec_file_name()
{
   const HChar* base = base_file_name();
   HChar* name = (HChar*)kg::alloc(VG_(strlen)(base) + 24, "kg.out");
   for (UInt n = 1;; n++) {
      VG_(sprintf)(name, "%s.exec-%u", base, n);
      if (!name_taken_by_this_process(name)) return name;
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

// ---- The end of the run ------------------------------------------------------------

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
   return write_profile(path, info);
}

} // namespace kg
