// Regions of interest (docs/regions.md): the region options, region
// functions' entries and returns, and client requests.
//
// Everything here acts on the counters only (activity/counting.cpp): the shadow stacks and forests follow the program all the
// time, so whatever is counted is counted in its true context.
// Instrumentation off is therefore collection off: the code stays
// instrumented (docs/regions.md says why).
#include "kg_regions.h"
#include "kg_activity.h"
#include "kg_hotpath.h"
#include "kg_block_info.h"
#include "kg_collection.h"
#include "kg_dumps.h"
#include "kg_monitor.h"
#include "kg_options.h"
#include "kg_runtime.h"
extern "C" {
#include "pub_tool_clreq.h"
}

namespace kg {


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

ULong next_dump_bb = 0;

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
   kg_frames_watch = { True, region_stack_rose };
}

// Whether an activation of fn in thread tid toggled collection and runs.
Bool toggling_in(ThreadId tid, const FnInfo* fn)
{
   for (UInt i = 0; i < n_watches; i++)
      if (watches[i].tid == tid && watches[i].fn == fn && (watches[i].actions & kToggleCollect)) return True;
   return False;
}

const HChar* trigger_text(const HChar* what, const FnInfo* fn)
{
   static HChar text[512];
   VG_(snprintf)(text, sizeof text, "%s=%s", what, fn->name);
   return text;
}

void leave(const Watch& w)
{
   if (w.actions & kToggleCollect) toggle_collection();
   if (w.actions & kDumpAfter) dump_profile(trigger_text("--dump-after", w.fn));
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
   if (actions & kZeroBefore) zero_profile();
   if (actions & kDumpBefore) dump_profile(trigger_text("--dump-before", fn));
   ThreadId tid = VG_(get_running_tid)();
   // A recursive call toggles nothing: collection switches at the
   // outermost activation's entry and exit (what callgrind measures).
   if ((actions & kToggleCollect) && toggling_in(tid, fn)) actions &= ~kToggleCollect;
   if (actions & kToggleCollect) toggle_collection();
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
   kg_frames_watch.on = n_watches > 0;
}

extern "C" void VG_REGPARM(1) kg_region_leave(BlockInfo* blk)
{
   if (!kg_frames_watch.on) return;
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
   set_counting(instr_atstart, collect_atstart);
   next_dump_bb = dump_every_bb;
}

void regions_time_slice(ULong blocks_done)
{
   if (!dump_every_bb || blocks_done < next_dump_bb) return;
   while (next_dump_bb <= blocks_done) next_dump_bb += dump_every_bb;
   dump_profile("--dump-every-bb");
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
   kReqCurrentSiteContext,
};

const HChar* const request_names[] = {
   "DUMP_STATS", "ZERO_STATS", "TOGGLE_COLLECT", "DUMP_STATS_AT",
   "START_INSTRUMENTATION", "STOP_INSTRUMENTATION", "CURRENT_CONTEXT",
   "CURRENT_SITE_CONTEXT",
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
      dump_profile("Client Request");
      break;
   case kReqDumpStatsAt:
      VG_(snprintf)(reason, sizeof reason, "Client Request: %s",
                    args[1] ? (const HChar*)args[1] : "(null)");
      dump_profile(reason);
      break;
   case kReqZeroStats:
      zero_profile();
      break;
   case kReqToggleCollect:
      toggle_collection();
      break;
   case kReqStartInstrumentation:
   case kReqStopInstrumentation:
      set_instrumentation(req == kReqStartInstrumentation);
      break;
   case kReqCurrentContext:
      *ret = current_context_id(tid);
      break;
   case kReqCurrentSiteContext:
      *ret = current_site_context_id(tid);
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

} // namespace

Bool handle_client_request(ThreadId tid, UWord* args, UWord* ret)
{
   UWord code = args[0];
   if (VG_IS_TOOL_USERREQ('K', 'G', code) && code - VG_USERREQ_TOOL_BASE('K', 'G') <= kReqCurrentSiteContext) {
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

} // namespace kg
