#include "kg_ksf_records.h"
#include "kg_activity.h"
#include "kg_blocks.h"
#include "kg_context_names.h"
#include "kg_events.h"
#include "kg_options.h"
#include "kg_profile_header.h"
#include "kg_runtime.h"
#include "core/ksf_nodes.h"

namespace kg {

namespace {

// Record lines longer than this are continued on a new line of the same
// kind (a name longer than it gets a line of its own). Long: each line
// repeats its 10-12 byte prefix (240 bytes spent 5 % of the records on it).
const UInt kMaxRecordLine = 2000;

// For each label, the fn= id (1-based) of a context of the body whose
// innermost function it is and whose name the body wrote, or 0.
UInt* body_names_of_labels(const Writer& w)
{
   UInt* ids = (UInt*)alloc_zeroed((function_count() + 1) * sizeof(UInt));
   for (UWord i = 0; i < w.n_slots; i++) {
      const ContextSlot& s = w.slots[i];
      UInt label = s.node->label;
      UInt id = written_name_id(w, s);
      // the smallest id: the shortest reference
      if (label <= function_count() && (!ids[label] || id + 1 < ids[label]) && w.contexts.written(id))
         ids[label] = id + 1;
   }
   return ids;
}

// A ksf-fns entry: the name, or "@<id>" (version 3) when the body's context
// (id) begins with it and that is shorter: the name is then the body name
// up to its first "'" (a name holding "'" is always written out). A name
// beginning with "@" is written with a second "@". Returns the entry's
// length; ref holds the reference, or "" for the name.
UInt function_entry(const HChar* name, UInt body_id, HChar* ref)
{
   UInt len = (UInt)VG_(strlen)(name);
   UInt ref_len = body_id ? (UInt)VG_(sprintf)(ref, "@%u", body_id) : 0;
   if (ref_len && ref_len < len && !VG_(strchr)(name, '\'')) return ref_len;
   ref[0] = 0;
   return len + (name[0] == '@');
}

// "# ksf-fns": the function table, several entries per line separated by
// tabs (ids are implicit: 0 is __root__). Function mode lists the labels
// some record names (list_named_labels), block modes every function
// (id: function id + 1, which ksf-block records use).
void write_function_table(Writer& w)
{
   FileWriter& out = w.out;
   UInt* body_ids = body_names_of_labels(w);
   UInt line_len = 0;
   UInt n = w.label_written_at ? w.n_listed_labels : function_count() + 1;
   for (UInt id = 0; id < n; id++) {
      UInt i = w.label_written_at ? w.label_written_at[id] : id;
      const HChar* name = label_name(i);
      if (!*name) name = "???";   // an empty field would end the table's syntax
      HChar ref[16];
      UInt len = function_entry(name, i == kRootLabel ? 0 : body_ids[i], ref);
      if (line_len && line_len + 1 + len > kMaxRecordLine) {
         out.put_char('\n');
         line_len = 0;
      }
      if (line_len) out.put_char('\t');
      else out.put("# ksf-fns ");
      if (ref[0]) out.put(ref);
      else {
         if (name[0] == '@') out.put_char('@');
         out.put_escaped(name);
      }
      line_len += len + 1;
   }
   out.put_char('\n');
   kg::release(body_ids);
}

// Whether the records carry each node's exclusive events beyond Ir: in
// function mode, with the k-SF's own counters (a separate view counts in
// the view's contexts).
Bool records_have_events(const Writer& w) { return w.n_events && !block_mode() && !separate_view(); }

void write_records_header(Writer& w, Bool recursion_rolled)
{
   FileWriter& out = w.out;
   out.put("\n# ksf-version: 3\n# ksf-options: k=");
   write_k(out, clo.k);
   out.put(" view-k=");
   write_k(out, clo.view_k);
   out.printf(" mode=%s rolling=%s joined=%s", mode_name(), recursion_rolled ? "yes" : "no",
              clo.join_threads ? "yes" : "no");
   if (block_mode()) out.printf(" roll-loops=%s", clo.roll_loops ? "yes" : "no");
   if (records_have_events(w)) {
      for (UInt c = 0; c < w.n_events; c++) out.printf("%s%s", c ? "," : " events=", extra_event_name(c));
      out.put(" events-incl=yes");
   }
   out.put_char('\n');
   write_function_table(w);
}

// Lines "# <kind> <base64>" of whole runs of BER numbers (core/ksf_nodes.h):
// a run (of at most kMaxRunBytes) is begun on a new line where it might
// pass kMaxRecordLine.
template <UInt kMaxRunBytes> class BerLines {
public:
   BerLines(FileWriter& out, const HChar* prefix) : out_(out), prefix_(prefix) {}

   void begin_run()
   {
      if (used_ > kLineBytes) flush_line();
   }
   void put_ber(ULong v) { used_ += core::put_ber(v, bytes_ + used_); }
   void flush_line()
   {
      if (!used_) return;
      out_.put(prefix_);
      text_[core::base64_encode(bytes_, used_, text_)] = '\0';
      out_.put(text_);
      out_.put_char('\n');
      used_ = 0;
   }

private:
   static const UInt kLineBytes = kMaxRecordLine / 4 * 3 - kMaxRunBytes;

   FileWriter& out_;
   const HChar* prefix_;
   UChar bytes_[kLineBytes + kMaxRunBytes];
   HChar text_[(kLineBytes + kMaxRunBytes + 2) / 3 * 4 + 1];   // bytes_ in base64
   UInt used_ = 0;
};

// "# ksf-nodes" (version 3): one forest in pre-order, each node a run of
// unsigned integers in BER (Perl's pack "w": 7 bits a byte, most
// significant first, the high bit set on all but the last byte), each line
// the standard base64 of whole nodes (core/ksf_nodes.h). A node is
// "shape label [calls - 7] [excl] [incl]": shape's bits 0-2 are the calls,
// or 7 when calls - 7 follows; bit 3 says excl follows (else 0), bit 4 incl
// (else excl), bit 5 that the node's children follow it; shape >> 6 is the
// number of lists that close after it. Siblings come in increasing order
// of label, and a label is written less the previous sibling's (tree roots
// as they are). Decimal nested lists (version 2) spent 11-12 bytes a node,
// this 6.6 (sqlite3 k=2).
class NodeStreamWriter {
public:
   explicit NodeStreamWriter(FileWriter& out) : lines_(out, "# ksf-nodes ") {}

   ~NodeStreamWriter() { kg::release(labels_); }

   // Siblings come in increasing order of label: a node's label is written
   // less its previous sibling's (tree roots: as they are).
   void node(UInt level, UInt label, ULong calls, ULong excl, ULong incl)
   {
      Bool has_sibling_before = pending_ && level <= level_ && level > 0;
      if (pending_) put_pending(level > level_ ? 0 : level_ - level, level > level_);
      pending_ = True;
      label_ = has_sibling_before ? label - labels_[level] : label;
      remember_label(level, label);
      level_ = level;
      calls_ = calls;
      excl_ = excl;
      incl_ = incl;
   }

   void finish()
   {
      if (pending_) put_pending(level_, False);
      lines_.flush_line();
   }

private:
   static const ULong kCallsInShape = 7;              // calls 0-6: in the shape

   // labels_[level]: the label of the last node at that level.
   void remember_label(UInt level, UInt label)
   {
      if (level >= cap_) {
         UInt cap = cap_ ? cap_ : 64;
         while (cap <= level) cap *= 2;
         UInt* grown = (UInt*)kg::alloc(cap * sizeof(UInt));
         if (cap_) VG_(memcpy)(grown, labels_, cap_ * sizeof(UInt));
         kg::release(labels_);
         labels_ = grown;
         cap_ = cap;
      }
      labels_[level] = label;
   }

   void put_pending(ULong closes, Bool opens)
   {
      ULong shape = (closes << 6) | (opens ? 32 : 0) | (incl_ != excl_ ? 16 : 0) | (excl_ ? 8 : 0)
                  | (calls_ < kCallsInShape ? calls_ : kCallsInShape);
      lines_.begin_run();
      put_ber(shape);
      put_ber(label_);
      if (calls_ >= kCallsInShape) put_ber(calls_ - kCallsInShape);
      if (excl_) put_ber(excl_);
      if (incl_ != excl_) put_ber(incl_);
   }
   void put_ber(ULong v) { lines_.put_ber(v); }

   BerLines<5 * core::kMaxBerBytes> lines_;   // a node: five 64-bit numbers
   Bool pending_ = False;   // the last node, written once its successor shows its shape
   UInt level_ = 0;
   UInt label_ = 0;         // as written: less the previous sibling's
   ULong calls_ = 0, excl_ = 0, incl_ = 0;
   UInt* labels_ = nullptr;
   UInt cap_ = 0;
};

void write_thread_open(FileWriter& out, UInt tid, ULong nodes, ULong ir)
{
   if (tid == 0) out.put("# ksf-thread all");
   else out.printf("# ksf-thread %u", tid);
   out.printf(" nodes=%llu ir=%llu", nodes, ir);
}

void write_thread_close(FileWriter& out, UInt tid)
{
   if (tid == 0) out.put("# ksf-end-thread all\n");
   else out.printf("# ksf-end-thread %u\n", tid);
}

UInt written_label(const Writer& w, const ForestNode* n)
{
   return w.written_label ? w.written_label[n->label] : n->label;
}

// The ksf-fns id a record writes for a node's label.
UInt record_label(const Writer& w, const ForestNode* n)
{
   return w.listed_id ? w.listed_id[written_label(w, n)] : written_label(w, n);
}

// Block forests' nodes hold no inclusive cost of their own (a block calls
// nothing): incl = excl.
ULong written_incl(const ForestNode* n, Bool incl_is_excl) { return incl_is_excl ? n->excl : n->incl; }

// Which nodes of one forest its records hold (after order_labels: the
// preorder ids follow the written labels). Where every node counts (a
// profile without fork, regions or zeroing), all, and keep stays empty:
// that check skips the marking's sorted traversal.
void select_written_nodes(const Writer& w, const core::Forest& sf, Bool incl_is_excl, WrittenNodes* out)
{
   out->keep.init(sf.allocator(), 0);
   auto counted = [&](const ForestNode* n) { return n->calls || n->excl || written_incl(n, incl_is_excl); };
   Bool all_count = True;
   core::visit_preorder(sf, [&](const core::VisitInfo& v) { all_count = all_count && counted(v.node); });
   out->left_out = 0;
   if (all_count) {
      out->count = sf.node_count();
      return;
   }
   auto key = [&](const ForestNode* n) { return written_label(w, n); };
   out->count = core::mark_counted_paths(sf, counted, key, True, out->keep);
   out->left_out = out->keep.size() - out->count;
}

Bool is_written(const WrittenNodes& selected, const core::VisitInfo& v)
{
   return selected.keep.empty() || selected.keep[v.id - 1];
}

// The selected nodes of one forest, in pre-order: a left-out node's
// subtree is left out too, so the kept nodes' levels stay their own. check:
// the numbers a reader checks, node by node (function mode).
void write_forest_nodes(Writer& w, const core::Forest& sf, Bool incl_is_excl, const WrittenNodes& selected,
                        core::RecordCheck* check)
{
   NodeStreamWriter list(w.out);
   auto key = [&](const ForestNode* n) { return written_label(w, n); };
   core::visit_preorder_by(sf, [&](const core::VisitInfo& v) {
      if (!is_written(selected, v)) return;
      const ForestNode* n = v.node;
      list.node(v.level, record_label(w, n), n->calls, n->excl, written_incl(n, incl_is_excl));
      if (check) check->node(written_incl(n, incl_is_excl), n->excl);
   }, key, True);
   list.finish();
}

// "# ksf-events" (function mode, events on): the same nodes' exclusive and
// inclusive events, in the same order, each node "mask [count]...": for E
// events in ksf-options' events=, mask's bit c says the exclusive count of
// the c-th event follows (else 0), then bit E + c that its inclusive count
// follows (else it equals the exclusive one), the exclusive counts first.
// sums: each event's exclusive sum over the nodes, added to.
void write_forest_events(Writer& w, const core::Forest& sf, const WrittenNodes& selected, ULong* sums)
{
   BerLines<(2 * kMaxEventColumns + 1) * core::kMaxBerBytes> lines(w.out, "# ksf-events ");
   auto key = [&](const ForestNode* n) { return written_label(w, n); };
   core::visit_preorder_by(sf, [&](const core::VisitInfo& v) {
      if (!is_written(selected, v)) return;
      const ULong* ev = w.costs.node_events(v.node);
      const ULong* incl = node_incl_events_in(sf, v.node);
      UInt n = w.n_events;
      ULong mask = 0;
      for (UInt c = 0; c < n; c++) {
         ULong excl = ev ? ev[c] : 0;
         mask |= (excl != 0 ? 1ULL : 0) << c;
         mask |= (incl && incl[c] != excl ? 1ULL : 0) << (n + c);
      }
      lines.begin_run();
      lines.put_ber(mask);
      for (UInt c = 0; c < n; c++)
         if (mask >> c & 1) {
            lines.put_ber(ev[c]);
            sums[c] += ev[c];
         }
      for (UInt c = 0; c < n; c++)
         if (mask >> (n + c) & 1) lines.put_ber(incl[c]);
   }, key, True);
   lines.flush_line();
}

// Function mode numbers the functions in the records by how many k-SF
// nodes they label, most first, so that the common labels take one BER
// byte (7 % of sqlite3's records); 0 stays __root__.
void order_labels(Writer& w, const ThreadProfile* threads, UInt n_threads)
{
   UInt n = function_count() + 1;
   IdUse* use = (IdUse*)alloc_zeroed(n * sizeof(IdUse));
   for (UInt i = 0; i < n; i++) use[i].id = i;
   for (UInt t = 0; t < n_threads; t++)
      core::visit_preorder(thread_forest(threads[t]), [&](const core::VisitInfo& v) {
         if (v.node->label < n) use[v.node->label].uses++;
      });
   use[kRootLabel].uses = ~0u;   // stays first
   rank_by_use(use, n, &w.written_label);
   w.label_written_at = (UInt*)kg::alloc(n * sizeof(UInt));
   for (UInt id = 0; id < n; id++) w.label_written_at[id] = use[id].id;
   w.n_listed_labels = n;
   kg::release(use);
}

// Calls f(node, arg) for the nodes of a KGRIND_CURRENT_CONTEXT() context's
// kgrind-context record: the k-context's labels, innermost first.
void for_context_nodes(const ForestNode* node, void (*f)(const ForestNode*, void*), void* arg)
{
   UInt count = 0;
   for (const ForestNode* p = node; p && (clo.k == kInfiniteK || count <= clo.k); p = p->parent, count++)
      f(p, arg);
}

struct NamedRanks {
   const Writer* w;
   Bool* named;
};

void name_rank_of(const ForestNode* n, void* arg)
{
   NamedRanks& r = *(NamedRanks*)arg;
   r.named[written_label(*r.w, n)] = True;
}

void name_context_ranks(const ContextIdInfo& c, void* arg)
{
   for_context_nodes(c.node, name_rank_of, arg);
}

// Function mode lists in ksf-fns only the labels some record names (the
// written nodes', the kgrind-context records'): a fork child's forest is
// its parent's, zeroed, so most functions the parent knew label only
// nodes left out (a python3 spawn child's table was 39 KB of its 50 KB).
// The listed ranks keep their order, numbered densely: siblings stay in
// order, so the selections' pre-order ids (by rank) hold.
void list_named_labels(Writer& w, const ThreadProfile* threads, UInt n_threads)
{
   UInt n = w.n_listed_labels;
   NamedRanks r = {&w, (Bool*)alloc_zeroed(n * sizeof(Bool))};
   r.named[0] = True;   // __root__, id 0
   auto key = [&](const ForestNode* node) { return written_label(w, node); };
   for (UInt t = 0; t < n_threads; t++) {
      const WrittenNodes& selected = w.thread_nodes[t];
      auto name = [&](const core::VisitInfo& v) {
         if (is_written(selected, v)) r.named[written_label(w, v.node)] = True;
      };
      // every node written: any order will do (the sorted walk costs more)
      if (selected.keep.empty()) core::visit_preorder(thread_forest(threads[t]), name);
      else core::visit_preorder_by(thread_forest(threads[t]), name, key, True);
   }
   for_each_context_id(name_context_ranks, &r);
   w.listed_id = (UInt*)kg::alloc(n * sizeof(UInt));
   UInt listed = 0;
   for (UInt rank = 0; rank < n; rank++) {
      w.listed_id[rank] = listed;
      if (r.named[rank]) w.label_written_at[listed++] = w.label_written_at[rank];
   }
   w.n_listed_labels = listed;
   kg::release(r.named);
}

} // namespace

void select_thread_nodes(Writer& w, const ThreadProfile* threads, UInt n_threads)
{
   w.thread_nodes = (WrittenNodes*)alloc_zeroed((n_threads + 1) * sizeof(WrittenNodes));
   if (block_mode()) {
      for (UInt i = 0; i < n_threads; i++) w.thread_nodes[i].count = threads[i].forest->sf.node_count();
      return;
   }
   order_labels(w, threads, n_threads);
   for (UInt i = 0; i < n_threads; i++) select_written_nodes(w, thread_forest(threads[i]), False, &w.thread_nodes[i]);
   list_named_labels(w, threads, n_threads);
}

void release_thread_nodes(Writer& w, UInt n_threads)
{
   if (!w.thread_nodes) return;
   for (UInt i = 0; i < n_threads; i++) w.thread_nodes[i].keep.destroy();
   kg::release(w.thread_nodes);
}

void write_ksf_records(Writer& w, const ThreadProfile* threads, UInt n_threads)
{
   FileWriter& out = w.out;
   write_records_header(w, !clo.unroll_simple_rec);
   ULong event_sums[kMaxEventColumns] = {};
   for (UInt i = 0; i < n_threads; i++) {
      const ThreadProfile& t = threads[i];
      UInt tid = clo.join_threads ? 0 : t.tid;
      write_thread_open(out, tid, w.thread_nodes[i].count, t.ir);
      out.put_char('\n');
      core::RecordCheck check;
      const core::Forest& sf = thread_forest(t);
      write_forest_nodes(w, sf, False, w.thread_nodes[i], &check);
      if (records_have_events(w)) write_forest_events(w, sf, w.thread_nodes[i], event_sums);
      write_thread_close(out, tid);
      check.finish(t.ir, True);
      if (!check.consistent() && w.findings.threads++ == 0) {
         w.findings.first_tid = tid;
         w.findings.first = check;
      }
   }
   // Every event counter is some context's: the nodes' events sum to the totals.
   for (UInt c = 0; records_have_events(w) && c < w.n_events; c++)
      if (event_sums[c] != w.event_totals[c] && !w.findings.event_sums_off++) w.findings.first_event = c;
   out.put("# ksf-end\n");
}

namespace {

void write_block_table(FileWriter& out)
{
   for (UInt i = 0; i < file_count(); i++) {
      out.printf("# ksf-file %u ", i);
      out.put_escaped(file_name(i));
      out.put_char('\n');
   }
   for (UInt l = 0; l < block_count(); l++) {
      const BBInfo* b = block_by_label(l);
      out.printf("# ksf-block %u 0x%lx %u %u %u %u %llu ", l, (unsigned long)b->addr,
                 b->fn ? b->fn->id + 1 : 0, b->offset, b->file, b->line, b->count);
      out.put_escaped(b->name);
      out.put_char('\n');
   }
}

} // namespace

void write_block_records(Writer& w)
{
   FileWriter& out = w.out;
   write_records_header(w, False);   // block forests never roll recursion
   write_block_table(out);
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
      WrittenNodes selected;
      select_written_nodes(w, sf, True, &selected);
      write_thread_open(out, forests[i]->tid, selected.count, ir);
      if (forests[i]->fn) out.printf(" fn=%u", forests[i]->fn->id + 1);
      out.put_char('\n');
      write_forest_nodes(w, sf, True, selected, nullptr);
      selected.keep.destroy();
      write_thread_close(out, forests[i]->tid);
   }
   kg::release(forests);
   out.put("# ksf-end\n");
}

namespace {

void put_context_label(const ForestNode* n, void* arg)
{
   Writer& w = *(Writer*)arg;
   w.out.printf(" %u", record_label(w, n));
}

// "# kgrind-context <id> <thread> <label>...": the contexts whose ids
// KGRIND_CURRENT_CONTEXT() handed out, the k-context's ksf-fns labels
// innermost first (docs/regions.md); KGRIND_CURRENT_SITE_CONTEXT()'s add
// " sites <line>...", the line of each level's call from the next one,
// innermost first. Not a ksf- record: readers of the k-SF need not know it.
void write_context_id(const ContextIdInfo& c, void* arg)
{
   const Writer& w = *(const Writer*)arg;
   if (w.only_thread && c.thread != w.only_thread) return;   // another thread's file has it
   FileWriter& out = ((Writer*)arg)->out;
   out.printf("# kgrind-context %lu ", c.id);
   if (c.thread) out.printf("%u", c.thread);
   else out.put("all");
   for_context_nodes(c.node, put_context_label, arg);
   if (c.sites) {
      out.put(" sites");
      for (UInt i = 0; i < c.n_sites; i++) out.printf(" %u", c.site_lines[i]);
   }
   out.put_char('\n');
}

} // namespace

void write_context_ids(Writer& w)
{
   for_each_context_id(write_context_id, &w);
}

} // namespace kg
