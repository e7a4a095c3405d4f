#include "kg_profile_header.h"
#include "kg_activity.h"
#include "kg_events.h"
#include "kg_options.h"
#include "kg_version.h"

namespace kg {

namespace {

void write_command_line(FileWriter& out)
{
   out.put("cmd: ");
   out.put_escaped(VG_(args_the_exename) ? VG_(args_the_exename) : "???", True);
   for (Word i = 0; i < VG_(sizeXA)(VG_(args_for_client)); i++) {
      out.put_char(' ');
      out.put_escaped(*(HChar**)VG_(indexXA)(VG_(args_for_client), i), True);
   }
   out.put_char('\n');
}

// The header's first lines: format, creator, process.
void write_identity(FileWriter& out)
{
   out.put("# callgrind format\n");
   out.put("version: 1\n");
   out.put("creator: kgrind-" KG_VERSION_STRING "\n");
   out.printf("pid: %d\n", VG_(getpid)());
   write_command_line(out);
}

} // namespace

// The totals' event counts after Ir, every column written (summary: and
// totals: must have one count per event).
void write_all_event_counts(FileWriter& out, const Writer& w)
{
   for (UInt i = 0; i < w.n_events; i++) out.printf(" %llu", w.event_totals[i]);
}

const HChar* mode_name()
{
   return clo.mode == kModeIntra ? "intra" : clo.mode == kModeInter ? "inter" : "func";
}

void write_k(FileWriter& out, UInt k)
{
   if (k == kInfiniteK) out.put("inf");
   else out.printf("%u", k);
}

// The output file until the profile replaces it at exit (create_output_file).
// callgrind_annotate prints its desc: line; kgrind_annotate recognizes the
// key "Incomplete profile".
void write_placeholder(FileWriter& out)
{
   write_identity(out);
   out.put("desc: Incomplete profile: no data: the process did not exit normally under kgrind"
           " (killed by a signal that cannot be caught, such as SIGKILL, replaced by exec"
           " in a block mode, or stopped by Valgrind itself, e.g. on an unsupported clone())\n");
   out.put("positions: line\nevents: Ir\n");
}

void write_header(Writer& w, ULong total, const ThreadProfile* threads, UInt n_threads)
{
   FileWriter& out = w.out;
   write_identity(out);
   // A thread's own file (--separate-threads), as callgrind names its part.
   if (w.only_thread) out.printf("part: 1\nthread: %u\n", w.only_thread);
   out.put("\ndesc: Tool: kgrind, a k-calling-context profiler\n");
   out.put("desc: k: ");
   write_k(out, clo.k);
   if (separate_view()) {
      // The body's contexts are shallower than the k-SF's (--view-k).
      out.put("\ndesc: body contexts: ");
      write_k(out, clo.view_k);
      out.put(" callers (the k-SF records: ");
      write_k(out, clo.k);
      out.put(")");
   }
   out.printf("\ndesc: mode: %s\n", mode_name());
   if (block_mode()) out.printf("desc: loops rolled: %s\n", clo.roll_loops ? "yes" : "no");
   // Which frames the contexts are made of (profiles from before the
   // option have no line: physical frames).
   out.printf("desc: inline frames: %s\n", inline_frames_on() ? "yes" : "no");
   out.printf("desc: recursion rolling: %s\n", clo.unroll_simple_rec ? "no" : "yes");
   out.printf("desc: threads joined: %s\n", clo.join_threads ? "yes" : "no");
   out.put("desc: Trigger: ");
   out.put_escaped(w.dump->trigger);
   out.printf("\ndesc: Ir range: %llu - %llu\n", w.dump->ir_from, w.dump->ir_to);
   for (UInt i = 0; i < n_threads; i++) {
      if (clo.join_threads) out.put("desc: thread all: ");
      else out.printf("desc: thread %u: ", threads[i].tid);
      out.printf("k-SF nodes %llu\n", w.thread_nodes[i].count);
   }
   for (UInt i = 0; i < n_threads; i++) {
      if (!w.thread_nodes[i].left_out) continue;
      // Said, so that nothing is dropped silently; readers key desc: lines
      // by their text before ':' ("thread 1 left out").
      if (clo.join_threads) out.put("desc: thread all left out: ");
      else out.printf("desc: thread %u left out: ", threads[i].tid);
      out.printf("%llu k-SF nodes whose subtrees count nothing\n", w.thread_nodes[i].left_out);
   }
   write_cache_descs(out);
   out.put(w.instr ? "positions: instr line\n" : "positions: line\n");
   write_events_line(out);
   out.printf("summary: %llu", total);
   write_all_event_counts(out, w);
   out.put_char('\n');
}

} // namespace kg
