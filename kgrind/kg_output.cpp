// The profile file: callgrind format with k-contexts as functions, one part
// per thread, and the k-SF records in comment lines (docs/output-format.md).
#include "kg_output.h"
#include "kg_activity.h"
#include "kg_callgrind_body.h"
#include "kg_context_names.h"
#include "kg_events.h"
#include "kg_ksf_records.h"
#include "kg_options.h"
#include "kg_profile_header.h"
#include "kg_profile_writer.h"
#include "kg_runtime.h"

namespace kg {

namespace {

// What every file of the profile reads: the costs, call edges and jumps of
// every thread (taken once; a thread's file writes its own contexts').
void gather(Writer& w)
{
   w.instr = clo.dump_instr;
   w.n_jumps = clo.collect_jumps ? collect_jumps(&w.jumps) : 0;
   if (w.dump->during_run) w.costs.snapshot(clo.count_instr, !w.instr);
   else w.costs.take(clo.count_instr, !w.instr);
   w.n_edges = collect_call_edges(!w.dump->during_run, &w.edges, &w.edge_copies);
   // The k-SF records' exclusive costs, from the counters before folding
   // (with a separate view they follow from the transitions instead).
   if (!separate_view()) w.costs.set_exclusive_costs();
}

void release_gathered(Writer& w)
{
   w.costs.release();
   kg::release(w.edges);
   kg::release(w.edge_copies);
   kg::release(w.jumps);
}

// Each event's total in a thread's own file (--separate-threads): its
// forest's nodes' counts (the counters' contexts are the k-SF's with events).
void thread_event_totals(Writer& w, const ThreadProfile& t)
{
   for (UInt c = 0; c < w.n_events; c++) w.event_totals[c] = 0;
   core::visit_preorder(thread_forest(t), [&](const core::VisitInfo& v) {
      if (const ULong* ev = w.costs.node_events(v.node))
         for (UInt c = 0; c < w.n_events; c++) w.event_totals[c] += ev[c];
   });
}

// One file: the threads' contexts, costs and calls, and their records.
// `thread`: the file of that thread alone (--separate-threads), or 0.
void write_body(Writer& w, ULong total, const ThreadProfile* threads, UInt n_threads, UInt thread)
{
   w.only_thread = thread;
   number_contexts(w, threads, n_threads);
   name_callers(w);
   fold_contexts(w);
   if (!w.instr) order_jumps_by_line(w.jumps, w.n_jumps);
   rank_names_by_use(w);
   select_thread_nodes(w, threads, n_threads);
   w.n_events = extra_event_count();
   tl_assert(w.n_events <= sizeof w.event_totals / sizeof w.event_totals[0]);
   if (w.n_events && thread) thread_event_totals(w, threads[0]);
   else if (w.n_events) w.costs.event_totals(w.event_totals);
   write_header(w, total, threads, n_threads);
   w.last_object = kNoFile;
   w.last_file = kNoFile;
   w.objects.init(object_count());
   w.files.init(file_count());
   w.contexts.init((UInt)w.n_slots);
   write_contexts(w);
   if (block_mode()) write_block_records(w);
   else write_ksf_records(w, threads, n_threads);
   write_context_ids(w);
   w.out.printf("\ntotals: %llu", total);
   write_all_event_counts(w.out, w);
   w.out.put_char('\n');
   w.objects.done();
   w.files.done();
   w.contexts.done();
   kg::release(w.slots);
   kg::release(w.reps);
   release_caller_names(w);
   kg::release(w.name_rank);
   kg::release(w.written_label);
   kg::release(w.listed_id);
   kg::release(w.label_written_at);
   release_thread_nodes(w, n_threads);
   w.slots = nullptr;
   w.reps = nullptr;
   w.name_rank = w.written_label = w.listed_id = w.label_written_at = nullptr;
   w.thread_nodes = nullptr;
}

ULong total_ir_of(const ThreadProfile* threads, UInt n)
{
   ULong sum = 0;
   for (UInt i = 0; i < n; i++) sum += threads[i].ir;
   return sum;
}

} // namespace

ULong total_ir()
{
   ThreadProfile* threads = (ThreadProfile*)kg::alloc(thread_profile_count() * sizeof(ThreadProfile));
   UInt n = thread_profiles(threads);
   ULong total = total_ir_of(threads, n);
   kg::release(threads);
   return total;
}

const HChar* output_file_name()
{
   return VG_(expand_file_name)("--kgrind-out-file", clo.out_file);
}

Bool create_output_file(const HChar* path)
{
   FileWriter* out = new FileWriter;
   const HChar* why = nullptr;
   Bool ok = out->open(path, &why);
   if (ok) {
      write_placeholder(*out);
      ok = out->close();
      if (!ok) VG_(umsg)("kgrind: error writing output file '%s': %s\n", path, out->write_error());
   } else {
      VG_(umsg)("kgrind: cannot create output file '%s': %s\n", path, why);
   }
   delete out;
   return ok;
}

namespace {

// The profiles written so far whose k-SF records failed the writer's
// checks (Writer::findings): their number, and the first one's file and
// findings (allocated when found: a static of a type with default member
// values would need a constructor, which the core never runs).
UInt inconsistent_profiles;
HChar* first_inconsistent_path;
RecordFindings* first_inconsistent;

void note_findings(const HChar* path, const RecordFindings& found)
{
   if ((!found.threads && !found.event_sums_off) || inconsistent_profiles++) return;
   first_inconsistent_path = VG_(strdup)("kg.findings", path);
   first_inconsistent = new RecordFindings(found);
}

// One warning for the profiles written inconsistent (a bug of kgrind's:
// kgrind_annotate refuses them), even with -q.
void warn_inconsistent_profiles()
{
   if (!inconsistent_profiles) return;
   const RecordFindings& f = *first_inconsistent;
   const core::RecordCheck& c = f.first;
   VG_(umsg)("kgrind: warning: a bug of kgrind's left %s inconsistent (kgrind_annotate refuses it): ",
             first_inconsistent_path);
   if (!f.threads)
      VG_(umsg)("the k-SF nodes' %s does not sum to its total (%u events)", extra_event_name(f.first_event),
                f.event_sums_off);
   else if (c.below())
      VG_(umsg)("thread %u: %llu k-SF nodes' inclusive Ir below their exclusive Ir (node %llu: inclusive "
                "Ir %llu, exclusive Ir %llu)", f.first_tid, (ULong)c.below(), (ULong)c.first_below(),
                (ULong)c.first_incl(), (ULong)c.first_excl());
   else
      VG_(umsg)("thread %u: its nodes' exclusive Ir sums to %llu, its __root__'s inclusive Ir is %llu, "
                "not its ir=", f.first_tid, (ULong)c.excl_sum(), (ULong)c.root_incl());
   if (f.threads > 1) VG_(umsg)("; %u threads", f.threads);
   if (inconsistent_profiles > 1) VG_(umsg)("; %u profiles", inconsistent_profiles);
   VG_(umsg)("\n");
   inconsistent_profiles = 0;
}

} // namespace

void report_profile_written(const HChar* path, const HChar* ended_by)
{
   warn_inconsistent_profiles();
   if (VG_(clo_verbosity) == 0) return;
   VG_(umsg)("\n");
   if (ended_by) VG_(umsg)("Exec of %s\n", ended_by);
   VG_(umsg)("I   refs:      %'llu\n", total_ir());
   if (path && separate_thread_files())
      VG_(umsg)("Output written to %s-<thread> (--separate-threads=yes: one file a thread)\n", path);
   else if (path) VG_(umsg)("Output written to %s\n", path);
}

// "<path>-<thread>", callgrind's names of --separate-threads=yes files
// ("callgrind.out.1234-02"). Allocated.
const HChar* thread_file_name(const HChar* path, UInt thread)
{
   HChar* name = (HChar*)kg::alloc(VG_(strlen)(path) + 16, "kg.out");
   VG_(sprintf)(name, "%s-%02u", path, thread);
   return name;
}

namespace {

Bool write_file(Writer& w, const HChar* path, ULong total, const ThreadProfile* threads, UInt n_threads,
                UInt thread)
{
   const HChar* why = nullptr;
   if (!w.out.open(path, &why)) {
      VG_(umsg)("kgrind: cannot create output file '%s': %s\n", path, why);
      return False;
   }
   w.findings = RecordFindings();
   write_body(w, total, threads, n_threads, thread);
   Bool ok = w.out.close();
   note_findings(path, w.findings);
   if (!ok) VG_(umsg)("kgrind: error writing output file '%s': %s\n", path, w.out.write_error());
   return ok;
}

} // namespace

Bool separate_thread_files() { return clo.separate_threads && !clo.join_threads && !block_mode(); }

Bool write_profile(const HChar* path, const DumpInfo& dump, const ThreadProfile* threads, UInt n_threads)
{
   Writer* w = (Writer*)alloc_zeroed(sizeof(Writer));   // the file buffer: not on the stack
   w->dump = &dump;
   gather(*w);
   Bool ok = True;
   if (!separate_thread_files()) {
      ok = write_file(*w, path, total_ir(), threads, n_threads, 0);
   } else {
      // One file a thread, as callgrind's --separate-threads=yes; the
      // start-up file at `path` goes (the threads' files are the profile).
      for (UInt i = 0; i < n_threads; i++) {
         const HChar* name = thread_file_name(path, threads[i].tid);
         ok = write_file(*w, name, threads[i].ir, threads + i, 1, threads[i].tid) && ok;
         kg::release((void*)name);
      }
      if (ok) VG_(unlink)(path);
   }
   release_gathered(*w);
   kg::release(w);
   return ok;
}

} // namespace kg
