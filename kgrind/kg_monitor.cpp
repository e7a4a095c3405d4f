#include "kg_monitor.h"
#include "kg_activity.h"
#include "kg_collection.h"
#include "kg_display_names.h"
#include "kg_dumps.h"
#include "kg_options.h"
#include "kg_runtime.h"
extern "C" {
#include "pub_tool_gdbserver.h"
}

namespace kg {

namespace {

void print_monitor_help()
{
   VG_(gdb_printf)(
"kgrind monitor commands:\n"
"  dump [<reason>]            write a profile of what was counted since the last\n"
"                             dump or zeroing (kgrind.out.<pid>.<n>), then zero\n"
"  zero                       zero the counters\n"
"  instrumentation [on|off]   show, or switch, instrumentation (counting)\n"
"  status                     each thread's current k-context and shadow stack depth\n"
"  stack                      each thread's whole shadow stack, innermost frame first\n"
"  events                     the events counted since the last dump or zeroing:\n"
"                             their totals, and each thread's Ir\n");
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

// callgrind_control -b's form: "Backtrace for thread N", then a line per
// frame, "[depth] context", the innermost (depth 0) first.
void print_thread_stack(UInt thread, ThreadId tid, ULong, const ForestNode* const* frames, UInt depth, void*)
{
   VG_(gdb_printf)("Backtrace for thread %u (Valgrind tid %u), %u frames, innermost first:\n", thread, tid, depth);
   for (UInt i = 0; i < depth; i++) {
      VG_(gdb_printf)("  [%2u] %s   (", i, label_name(frames[i]->label));
      print_context(frames[i]);
      VG_(gdb_printf)(")\n");
   }
}

void print_thread_events(UInt thread, ThreadId tid, ULong counted_ir, const ForestNode* const*, UInt, void*)
{
   VG_(gdb_printf)("thread %u (Valgrind tid %u): Ir %llu\n", thread, tid, counted_ir);
}

// callgrind_control -e's: the events and their totals since the last dump
// or zeroing (the threads that ended included), then the running threads'.
void print_events()
{
   VG_(gdb_printf)("events: Ir\ntotals: %llu\n", ir_counted());
   for_each_live_stack(print_thread_events, nullptr);
}

void print_status()
{
   VG_(gdb_printf)("kgrind: k=");
   if (clo.k == kInfiniteK) VG_(gdb_printf)("inf");
   else VG_(gdb_printf)("%u", clo.k);
   VG_(gdb_printf)(", instrumentation %s, collection %s, Ir run %llu (counted since the last"
                   " dump or zeroing: from %llu), dumps written %u\n",
                   instrumentation_on() ? "on" : "off", collection_on() ? "on" : "off", ir_elapsed(),
                   last_zero_ir(), dumps_written_so_far());
   for_each_live_thread(print_thread_status, nullptr);
}

} // namespace

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
      dump_profile(reason);
   } else if (VG_STREQ(word, "zero")) {
      if (*rest) VG_(gdb_printf)("kgrind: 'zero' takes no argument\n");
      else zero_profile();
   } else if (VG_STREQ(word, "instrumentation")) {
      if (VG_STREQ(rest, "on") || VG_STREQ(rest, "off")) {
         set_instrumentation(VG_STREQ(rest, "on"));
      } else if (*rest) {
         VG_(gdb_printf)("kgrind: 'instrumentation' takes on or off, not '%s'\n", rest);
      }
      VG_(gdb_printf)("instrumentation: %s\n", instrumentation_on() ? "on" : "off");
   } else if (VG_STREQ(word, "status")) {
      print_status();
   } else if (VG_STREQ(word, "stack")) {
      for_each_live_stack(print_thread_stack, nullptr);
   } else if (VG_STREQ(word, "events")) {
      print_events();
   } else {
      VG_(gdb_printf)("kgrind: unknown monitor command '%s' (kgrind's: dump [reason], zero,"
                      " instrumentation [on|off], status, stack, events, help)\n", word);
   }
   replying_to_gdb = False;
   kg::release(copy);
   return handled;
}

} // namespace kg
