// The profile file: callgrind format with k-contexts as functions, one part
// per thread, and the k-SF records in comment lines (docs/output-format.md).
#include "kg_output.h"
#include "kg_activity.h"
#include "kg_blocks.h"
#include "kg_costs.h"
#include "kg_options.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"
#include "kg_version.h"
#include "kg_writer.h"

namespace kg {

namespace {

// Context names longer than this many callers are cut, with the node id
// appended so that they stay unique (k = inf can make chains very long).
const UInt kMaxNamedCallers = 16;

// callgrind's name compression: "(id) name" on first use, "(id)" afterwards.
class NameCompressor {
public:
   void init(UInt count)
   {
      count_ = count;
      written_ = count ? (Bool*)VG_(calloc)("kg.out", count, sizeof(Bool)) : nullptr;
   }
   void done() { if (written_) VG_(free)(written_); written_ = nullptr; }

   // Writes "key=(id)", then " name" the first time; the caller ends the line.
   Bool emit_id(FileWriter& out, const HChar* key, UInt id)
   {
      out.printf("%s=(%u)", key, id + 1);
      if (id >= count_ || written_[id]) return False;
      written_[id] = True;
      out.put_char(' ');
      return True;
   }
   void emit(FileWriter& out, const HChar* key, UInt id, const HChar* name)
   {
      if (emit_id(out, key, id)) out.put(name);
      out.put_char('\n');
   }

private:
   UInt count_ = 0;
   Bool* written_ = nullptr;
};

const HChar* label_name(UInt label)
{
   return label == kRootLabel ? "__root__" : function_by_id(label - 1)->name;
}

// Numbering of one forest's nodes (pre-order, as in the k-SF records).
struct NodeId {
   const void* a;        // ForestNode*
   const void* b;
   UWord id;             // 1-based pre-order number within its forest
   UWord name_id;        // 1-based fn= id of the context, 0 until assigned
};

struct Writer {
   FileWriter out;
   NameCompressor objects, files, contexts;
   PairMap<NodeId> ids;
   UInt next_context_id;
   ContextLineCost* costs;
   UWord n_costs;
   CallEdge** edges;
   UWord n_edges;
   UInt last_object;          // ob= in force, to write it only when it changes
   UInt last_file;            // fl= in force, or kNoFile after fi=/fe= lines
};

const UInt kNoFile = 0xFFFFFFFFu;

void write_command_line(FileWriter& out)
{
   out.put("cmd: ");
   out.put(VG_(args_the_exename) ? VG_(args_the_exename) : "???");
   for (Word i = 0; i < VG_(sizeXA)(VG_(args_for_client)); i++) {
      out.put_char(' ');
      out.put(*(HChar**)VG_(indexXA)(VG_(args_for_client), i));
   }
   out.put_char('\n');
}

const HChar* mode_name()
{
   return clo.mode == kModeIntra ? "intra" : clo.mode == kModeInter ? "inter" : "func";
}

void write_k(FileWriter& out)
{
   if (clo.k == kInfiniteK) out.put("inf");
   else out.printf("%u", clo.k);
}

void write_header(Writer& w, ULong total, const ThreadProfile* threads, UInt n_threads)
{
   FileWriter& out = w.out;
   out.put("# callgrind format\n");
   out.put("version: 1\n");
   out.put("creator: kgrind-" KG_VERSION_STRING "\n");
   out.printf("pid: %d\n", VG_(getpid)());
   write_command_line(out);
   out.put("\ndesc: Tool: kgrind, a k-calling-context profiler\n");
   out.put("desc: k: ");
   write_k(out);
   out.printf("\ndesc: mode: %s\n", mode_name());
   if (block_mode()) out.printf("desc: loops rolled: %s\n", clo.roll_loops ? "yes" : "no");
   out.printf("desc: recursion rolling: %s\n", clo.unroll_simple_rec ? "no" : "yes");
   out.printf("desc: threads joined: %s\n", clo.join_threads ? "yes" : "no");
   for (UInt i = 0; i < n_threads; i++) {
      if (clo.join_threads) out.put("desc: thread all: ");
      else out.printf("desc: thread %u: ", threads[i].tid);
      out.printf("k-SF nodes %llu\n", (ULong)threads[i].forest->sf.node_count());
   }
   out.put("positions: line\n");
   out.put("events: Ir\n");
   out.printf("summary: %llu\n", total);
}

// The innermost labels of the node's root path inside its tree.
UInt node_context(const ForestNode* n, UInt* labels, UInt max)
{
   UInt count = 0;
   for (const ForestNode* p = n; p && count < max; p = p->parent) labels[count++] = p->label;
   return count;
}

void write_context_name(Writer& w, const ForestNode* n, UWord node_id)
{
   UInt labels[kMaxNamedCallers + 2];
   UInt wanted = clo.k == kInfiniteK ? kMaxNamedCallers + 2 : clo.k + 1;
   if (wanted > kMaxNamedCallers + 2) wanted = kMaxNamedCallers + 2;
   UInt count = node_context(n, labels, wanted);
   Bool cut = count > kMaxNamedCallers + 1;
   if (cut) count = kMaxNamedCallers + 1;
   for (UInt i = 0; i < count; i++) {
      if (i) w.out.put_char('\'');
      w.out.put(label_name(labels[i]));
   }
   if (cut) w.out.printf("'...#%lu", node_id);
}

NodeId* node_id(Writer& w, const ForestNode* n) { return w.ids.get(n, nullptr); }

// fn= / cfn= for a context, with compression.
void write_context_ref(Writer& w, const HChar* key, const ForestNode* n)
{
   NodeId* id = node_id(w, n);
   if (!id->name_id) id->name_id = ++w.next_context_id;
   if (w.contexts.emit_id(w.out, key, (UInt)id->name_id - 1)) write_context_name(w, n, id->id);
   w.out.put_char('\n');
}

FnInfo* label_function(UInt label) { return label == kRootLabel ? nullptr : function_by_id(label - 1); }

UInt context_file(const ForestNode* n)
{
   FnInfo* fn = label_function(n->label);
   return fn ? fn->file : 0;
}

// First index of ctx's entries in the sorted cost array (or n if none).
UWord first_cost(const Writer& w, const ForestNode* ctx)
{
   UWord lo = 0, hi = w.n_costs;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)w.costs[mid].ctx < (UWord)ctx) lo = mid + 1;
      else hi = mid;
   }
   return lo;
}

UWord first_edge(const Writer& w, const ForestNode* caller)
{
   UWord lo = 0, hi = w.n_edges;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)w.edges[mid]->a < (UWord)caller) lo = mid + 1;
      else hi = mid;
   }
   return lo;
}

void write_file_switch(Writer& w, UInt* current, UInt file, UInt home)
{
   if (file == *current) return;
   *current = file;
   w.files.emit(w.out, file == home ? "fe" : "fi", file, file_name(file));
}

void write_calls(Writer& w, const ForestNode* caller, UInt* current_file, UInt home)
{
   for (UWord e = first_edge(w, caller); e < w.n_edges && w.edges[e]->a == caller; e++) {
      const CallEdge* edge = w.edges[e];
      SourceLoc site = { nullptr, 0, 0 };
      if (edge->call_site) source_loc(edge->call_site, &site);
      write_file_switch(w, current_file, site.fn ? site.file : home, home);
      const ForestNode* callee = (const ForestNode*)edge->b;
      UInt callee_file = context_file(callee);
      // Readers take the caller's file when cfi= is missing (callgrind omits
      // it the same way).
      if (callee_file != home) w.files.emit(w.out, "cfi", callee_file, file_name(callee_file));
      write_context_ref(w, "cfn", callee);
      w.out.printf("calls=%llu 0\n%u %llu\n", edge->calls, site.line, edge->incl);
   }
}

// One context: its exclusive cost per line, then its calls.
void write_context(Writer& w, const ForestNode* n)
{
   UWord c = first_cost(w, n);
   Bool has_costs = c < w.n_costs && w.costs[c].ctx == n;
   Bool has_calls = first_edge(w, n) < w.n_edges && w.edges[first_edge(w, n)]->a == n;
   if (!has_costs && !has_calls) return;
   UInt home = context_file(n);
   FnInfo* fn = label_function(n->label);
   UInt object = fn ? fn->object : 0;
   // ob= and fl= stay in force across fn= lines: write them on change only.
   if (object != w.last_object) w.objects.emit(w.out, "ob", object, object_name(object));
   if (home != w.last_file) w.files.emit(w.out, "fl", home, file_name(home));
   w.last_object = object;
   write_context_ref(w, "fn", n);
   UInt current = home;
   for (; c < w.n_costs && w.costs[c].ctx == n; c++) {
      write_file_switch(w, &current, w.costs[c].line->file, home);
      w.out.printf("%u %llu\n", w.costs[c].line->line, w.costs[c].ir);
   }
   write_calls(w, n, &current, home);
   // After fi=/fe= lines the next context states its file again.
   w.last_file = current == home ? home : kNoFile;
   w.out.put_char('\n');
}

void write_part(Writer& w, UInt part, const ThreadProfile& t)
{
   // callgrind_annotate rejects part: lines after the header, so threads are
   // marked by comments; readers sum a context over threads by its name.
   if (clo.join_threads) w.out.printf("\n# part %u: thread all\n", part);
   else w.out.printf("\n# part %u: thread %u\n", part, t.tid);
   core::visit_preorder(t.forest->sf, [&](const core::VisitInfo& v) {
      if (!v.cleared) write_context(w, v.node);
   });
}

// Exclusive cost of each canonical node: the sum of its lines.
void fill_exclusive_costs(const Writer& w)
{
   for (UWord i = 0; i < w.n_costs; i++) w.costs[i].ctx->excl = 0;
   for (UWord i = 0; i < w.n_costs; i++) w.costs[i].ctx->excl += w.costs[i].ir;
}

void number_nodes(Writer& w, const ThreadProfile& t)
{
   core::visit_preorder(t.forest->sf, [&](const core::VisitInfo& v) {
      node_id(w, v.node)->id = (UWord)v.id;
   });
}

void write_ksf_records(Writer& w, const ThreadProfile* threads, UInt n_threads)
{
   FileWriter& out = w.out;
   out.put("\n# ksf-version: 1\n# ksf-options: k=");
   write_k(out);
   out.printf(" mode=func rolling=%s joined=%s\n", clo.unroll_simple_rec ? "no" : "yes",
              clo.join_threads ? "yes" : "no");
   out.put("# ksf-fn 0 __root__\n");
   for (UInt i = 0; i < function_count(); i++) {
      out.printf("# ksf-fn %u ", i + 1);
      out.put(function_by_id(i)->name);
      out.put_char('\n');
   }
   for (UInt i = 0; i < n_threads; i++) {
      const ThreadProfile& t = threads[i];
      if (clo.join_threads) out.put("# ksf-thread all");
      else out.printf("# ksf-thread %u", t.tid);
      out.printf(" nodes=%llu ir=%llu\n", (ULong)t.forest->sf.node_count(), t.ir);
      core::visit_preorder(t.forest->sf, [&](const core::VisitInfo& v) {
         const ForestNode* n = v.node;
         out.printf("# ksf-node %llu ", (ULong)(v.id - 1));
         if (v.parent_id) out.printf("%llu", (ULong)(v.parent_id - 1));
         else out.put_char('-');
         out.printf(" %u %llu %llu %llu\n", n->label, (ULong)n->calls, (ULong)n->excl, (ULong)n->incl);
      });
      if (clo.join_threads) out.put("# ksf-end-thread all\n");
      else out.printf("# ksf-end-thread %u\n", t.tid);
   }
   out.put("# ksf-end\n");
}

// Block modes: the block k-SFs (docs/output-format.md, section 5).
void write_block_records(Writer& w)
{
   FileWriter& out = w.out;
   out.put("\n# ksf-version: 1\n# ksf-options: k=");
   write_k(out);
   out.printf(" mode=%s rolling=no joined=%s roll-loops=%s\n", mode_name(),
              clo.join_threads ? "yes" : "no", clo.roll_loops ? "yes" : "no");
   out.put("# ksf-fn 0 __root__\n");
   for (UInt i = 0; i < function_count(); i++) {
      out.printf("# ksf-fn %u ", i + 1);
      out.put(function_by_id(i)->name);
      out.put_char('\n');
   }
   for (UInt i = 0; i < file_count(); i++) {
      out.printf("# ksf-file %u ", i);
      out.put(file_name(i));
      out.put_char('\n');
   }
   for (UInt l = 0; l < block_count(); l++) {
      const BBInfo* b = block_by_label(l);
      out.printf("# ksf-block %u 0x%lx %u %u %u %u %llu ", l, (unsigned long)b->addr,
                 b->fn ? b->fn->id + 1 : 0, b->offset, b->file, b->line, b->count);
      out.put(b->name);
      out.put_char('\n');
   }
   UInt max = 1024;
   BlockForest** forests = nullptr;
   UInt n;
   for (;;) {
      forests = (BlockForest**)kg::alloc(max * sizeof(BlockForest*));
      n = block_forests(forests, max);
      if (n < max) break;
      kg::release(forests);
      max *= 4;
   }
   for (UInt i = 0; i < n; i++) {
      const core::Forest& sf = forests[i]->forest.sf;
      ULong ir = 0;
      core::visit_preorder(sf, [&](const core::VisitInfo& v) { if (!v.cleared) ir += v.node->excl; });
      if (forests[i]->tid == 0) out.put("# ksf-thread all");
      else out.printf("# ksf-thread %u", forests[i]->tid);
      out.printf(" nodes=%llu ir=%llu", (ULong)sf.node_count(), ir);
      if (forests[i]->fn) out.printf(" fn=%u", forests[i]->fn->id + 1);
      out.put_char('\n');
      core::visit_preorder(sf, [&](const core::VisitInfo& v) {
         const ForestNode* nd = v.node;
         out.printf("# ksf-node %llu ", (ULong)(v.id - 1));
         if (v.parent_id) out.printf("%llu", (ULong)(v.parent_id - 1));
         else out.put_char('-');
         out.printf(" %u %llu %llu %llu\n", nd->label, (ULong)nd->calls, (ULong)nd->excl,
                    (ULong)nd->excl);
      });
      if (forests[i]->tid == 0) out.put("# ksf-end-thread all\n");
      else out.printf("# ksf-end-thread %u\n", forests[i]->tid);
   }
   kg::release(forests);
   out.put("# ksf-end\n");
}

Int compare_edges(const void* pa, const void* pb)
{
   const CallEdge* a = *(const CallEdge* const*)pa;
   const CallEdge* b = *(const CallEdge* const*)pb;
   if (a->a != b->a) return (UWord)a->a < (UWord)b->a ? -1 : 1;
   if (a->b != b->b) return (UWord)a->b < (UWord)b->b ? -1 : 1;
   return 0;
}

void write_body(Writer& w, ULong total)
{
   ThreadProfile* threads = (ThreadProfile*)kg::alloc(VG_N_THREADS * sizeof(ThreadProfile));
   UInt n_threads = thread_profiles(threads, VG_N_THREADS);
   w.n_costs = collect_line_costs(&w.costs);
   w.n_edges = collect_call_edges(&w.edges);
   VG_(ssort)(w.edges, w.n_edges, sizeof(CallEdge*), compare_edges);
   fill_exclusive_costs(w);
   write_header(w, total, threads, n_threads);
   ULong n_nodes = 0;
   for (UInt i = 0; i < n_threads; i++) n_nodes += threads[i].forest->sf.node_count();
   w.last_object = kNoFile;
   w.last_file = kNoFile;
   w.objects.init(object_count());
   w.files.init(file_count());
   w.contexts.init((UInt)n_nodes);
   for (UInt i = 0; i < n_threads; i++) number_nodes(w, threads[i]);
   for (UInt i = 0; i < n_threads; i++) write_part(w, i + 1, threads[i]);
   if (block_mode()) write_block_records(w);
   else write_ksf_records(w, threads, n_threads);
   w.out.printf("\ntotals: %llu\n", total);
   w.objects.done();
   w.files.done();
   w.contexts.done();
   kg::release(w.costs);
   kg::release(w.edges);
   kg::release(threads);
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
   ThreadProfile* threads = (ThreadProfile*)kg::alloc(VG_N_THREADS * sizeof(ThreadProfile));
   UInt n = thread_profiles(threads, VG_N_THREADS);
   ULong total = total_ir_of(threads, n);
   kg::release(threads);
   return total;
}

const HChar* output_file_name()
{
   return VG_(expand_file_name)("--kgrind-out-file", clo.out_file);
}

Bool check_output_file(const HChar* path)
{
   FileWriter* out = new FileWriter;
   UWord err = 0;
   Bool ok = out->open(path, &err);
   if (ok) out->close();
   else VG_(umsg)("kgrind: cannot create output file '%s': %s\n", path, errno_text(err));
   delete out;
   return ok;
}

Bool write_profile(const HChar* path)
{
   Writer* w = (Writer*)alloc_zeroed(sizeof(Writer));   // 64 KiB buffer: not on the stack
   UWord err = 0;
   if (!w->out.open(path, &err)) {
      VG_(umsg)("kgrind: cannot create output file '%s': %s\n", path, errno_text(err));
      kg::release(w);
      return False;
   }
   write_body(*w, total_ir());
   Bool ok = w->out.close();
   if (!ok) VG_(umsg)("kgrind: error writing output file '%s'\n", path);
   kg::release(w);
   return ok;
}

} // namespace kg
