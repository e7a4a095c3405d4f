// The profile file: callgrind format with k-contexts as functions, one part
// per thread, and the k-SF records in comment lines (docs/output-format.md).
#include "kg_output.h"
#include "kg_activity.h"
#include "kg_blocks.h"
#include "kg_costs.h"
#include "kg_exit_costs.h"
#include "kg_options.h"
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
   Bool written(UInt id) const { return id < count_ && written_[id]; }
   void emit(FileWriter& out, const HChar* key, UInt id, const HChar* name)
   {
      if (emit_id(out, key, id)) out.put_escaped(name);
      out.put_char('\n');
   }

private:
   UInt count_ = 0;
   Bool* written_ = nullptr;
};

const HChar* label_name(UInt label)
{
   return label == kRootLabel ? "__root__" : display_name(function_by_id(label - 1));
}

// A canonical node of some thread's forest and the context it reports
// under. One k-context can have several canonical nodes (it is reached at
// different depths mod k, and in every thread): the body names it once
// and sums them, as callgrind sums a context over threads, under its first
// node visited (Writer::reps). 16 bytes: one per node, at exit, where the
// peak RSS may be reached.
struct ContextSlot {
   const ForestNode* node;
   UInt name_id;              // 1-based fn= id of the context
   UInt preorder_id;          // 1-based, within its forest (names of cut chains)
};

// The nodes of a forest that its records hold: those on a path to a count
// (core::mark_counted_paths). A fork child's forest is its parent's with
// every counter zeroed: written whole, a python3 subprocess child of 9,242 Ir
// listed 75,268 nodes at k=inf, 65 of them counting.
struct WrittenNodes {
   core::Vec<uint8_t> keep;   // by preorder id - 1, children by written label
   ULong count;
   ULong left_out;
};

struct Writer {
   FileWriter out;
   NameCompressor objects, files, contexts;
   ContextSlot* slots;        // sorted by node
   UWord n_slots;
   const ForestNode** reps;   // by name id - 1: the context's first node visited
   ExitCosts costs;
   CallEdge** edges;          // sorted by caller, callee and site
   CallEdge* edge_copies;     // what edges point to in a dump during the run
   UWord n_edges;
   Bool instr;                // positions: instr line (--dump-instr; block modes)
   ContextJump* jumps;        // --collect-jumps
   UWord n_jumps;
   UInt last_object;          // ob= in force, to write it only when it changes
   UInt last_file;            // fl= in force, or kNoFile after fi=/fe= lines
   Addr last_addr;            // position of the last cost line (file address,
   UInt last_line;            // positions: instr line) and its line
   Bool last_line_known;      // False after fn=, fl=, fi=, fe=: next one absolute
   const DumpInfo* dump;      // why and what this file covers
   UInt n_names;              // distinct contexts (name ids 1..n_names)
   UInt* name_rank;           // 0-based fn= id written for each name id - 1
   UInt* written_label;       // each label's rank: the records' order of
                              // labels (function mode; null: the label)
   UInt* listed_id;           // each rank's ksf-fns id, for the ranks some
                              // record names (function mode)
   UInt* label_written_at;    // the label of each ksf-fns id (function
   UInt n_listed_labels;      // mode; null: the same), and their number
   WrittenNodes* thread_nodes; // function mode: what each thread's records hold
};

// How often an id is used, to number the most used first (short numbers):
// uses of labels by nodes, of names by contexts and calls (fewer than 2^32).
struct IdUse {
   UInt uses;
   UInt id;
};

Int compare_id_use(const void* pa, const void* pb)
{
   const IdUse* a = (const IdUse*)pa;
   const IdUse* b = (const IdUse*)pb;
   if (a->uses != b->uses) return a->uses > b->uses ? -1 : 1;
   return a->id < b->id ? -1 : a->id > b->id ? 1 : 0;
}

// use[0..n) sorted by use; *rank_of (new array) maps an id to its rank.
void rank_by_use(IdUse* use, UInt n, UInt** rank_of)
{
   VG_(ssort)(use, n, sizeof(IdUse), compare_id_use);
   *rank_of = (UInt*)kg::alloc((n + 1) * sizeof(UInt));
   for (UInt r = 0; r < n; r++) (*rank_of)[use[r].id] = r;
}

const UInt kNoFile = 0xFFFFFFFFu;
const UInt kNoObject = 0xFFFFFFFFu;

Int compare_slot_nodes(const void* pa, const void* pb)
{
   UWord a = (UWord)((const ContextSlot*)pa)->node, b = (UWord)((const ContextSlot*)pb)->node;
   return a < b ? -1 : a > b ? 1 : 0;
}


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

const HChar* mode_name()
{
   return clo.mode == kModeIntra ? "intra" : clo.mode == kModeInter ? "inter" : "func";
}

void write_k(FileWriter& out, UInt k)
{
   if (k == kInfiniteK) out.put("inf");
   else out.printf("%u", k);
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
   out.put("\ndesc: Tool: kgrind, a k-calling-context profiler\n");
   out.put("desc: k: ");
   write_k(out, clo.k);
   if (separate_view()) {
      // The body's contexts are shallower than the k-SF's (--view-k).
      out.put("\ndesc: body contexts: ");
      write_k(out, clo.view_k);
      out.put(" callers (the k-SF records: k)");
   }
   out.printf("\ndesc: mode: %s\n", mode_name());
   if (block_mode()) out.printf("desc: loops rolled: %s\n", clo.roll_loops ? "yes" : "no");
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
   out.put(w.instr ? "positions: instr line\n" : "positions: line\n");
   out.put("events: Ir\n");
   out.printf("summary: %llu\n", total);
}

const UInt kMaxChain = kMaxNamedCallers + 2;

// The labels of the node's context, innermost first: the node and up to
// view_k callers inside its tree. *cut says the chain has more than
// kMaxNamedCallers callers (then only that many are returned).
UInt context_chain(const ForestNode* n, UInt* labels, Bool* cut)
{
   UInt k = clo.view_k;
   UInt wanted = k == kInfiniteK || k + 1 > kMaxChain ? kMaxChain : k + 1;
   UInt count = 0;
   for (const ForestNode* p = n; p && count < wanted; p = p->parent) labels[count++] = p->label;
   *cut = count > kMaxNamedCallers + 1;
   return *cut ? kMaxNamedCallers + 1 : count;
}

void write_context_name(Writer& w, const ForestNode* n, UWord node_id)
{
   UInt labels[kMaxChain];
   Bool cut;
   UInt count = context_chain(n, labels, &cut);
   for (UInt i = 0; i < count; i++) {
      if (i) w.out.put_char('\'');
      w.out.put_escaped(label_name(labels[i]));
   }
   if (cut) w.out.printf("'...#%lu", node_id);
}

const ContextSlot* find_slot(const Writer& w, const ForestNode* n)
{
   UWord lo = 0, hi = w.n_slots;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)w.slots[mid].node < (UWord)n) lo = mid + 1;
      else hi = mid;
   }
   return lo < w.n_slots && w.slots[lo].node == n ? &w.slots[lo] : nullptr;
}

const ForestNode* rep_of(const Writer& w, const ContextSlot& s) { return w.reps[s.name_id - 1]; }

// The node a canonical node's costs and calls are reported under.
const ForestNode* reported_node(const Writer& w, const void* n)
{
   const ContextSlot* s = find_slot(w, (const ForestNode*)n);
   return s ? rep_of(w, *s) : (const ForestNode*)n;
}

UInt written_name_id(const Writer& w, const ContextSlot& s) { return w.name_rank[s.name_id - 1]; }

// fn= / cfn= for a context, with compression.
void write_context_ref(Writer& w, const HChar* key, const ForestNode* n)
{
   const ContextSlot* s = find_slot(w, n);
   if (w.contexts.emit_id(w.out, key, written_name_id(w, *s))) write_context_name(w, n, s->preorder_id);
   w.out.put_char('\n');
}

FnInfo* label_function(UInt label) { return label == kRootLabel ? nullptr : function_by_id(label - 1); }

UInt context_file(const ForestNode* n)
{
   FnInfo* fn = label_function(n->label);
   return fn ? fn->file : 0;
}

UInt context_object(const ForestNode* n)
{
   FnInfo* fn = label_function(n->label);
   return fn ? fn->object : 0;
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
   w.last_line_known = False;
}

// A position: "line", or "0xaddr line" with positions: instr line (the
// address in the object file, where KCachegrind's objdump finds it).
void write_position(Writer& w, Addr addr, UInt line)
{
   if (w.instr) w.out.printf("0x%lx %u", (unsigned long)file_address(addr), line);
   else w.out.printf("%u", line);
}

// One subposition relative to the previous one: "+3", "-12", "*" (same).
void write_relative(FileWriter& out, ULong value, ULong last)
{
   if (value == last) out.put_char('*');
   else if (value > last) out.printf("+%llu", value - last);
   else out.printf("-%llu", last - value);
}

// The position of a cost line, relative to the previous cost line's as
// callgrind compresses positions (both subpositions with positions: instr
// line); the first one after fn=/fl=/fi=/fe= is absolute. Line numbers of
// big sources (sqlite3.c has 250 k lines) shrink from 5-6 characters to
// 1-2, instruction addresses from 6-10 to 1-3.
void write_cost_position(Writer& w, Addr addr, UInt line)
{
   Addr at = w.instr ? file_address(addr) : 0;
   if (!w.last_line_known) write_position(w, addr, line);
   else {
      if (w.instr) {
         write_relative(w.out, at, w.last_addr);
         w.out.put_char(' ');
      }
      write_relative(w.out, line, w.last_line);
   }
   w.last_addr = at;
   w.last_line = line;
   w.last_line_known = True;
}

// after_costs: the caller's cost lines came right before its calls.
void write_calls(Writer& w, const ForestNode* caller, UInt* current_file, UInt home, Bool after_costs)
{
   // gprof2dot keeps a cob= until the next cost line of the caller's own
   // (not for one call, as the format says): a callee in the caller's
   // object after one in another gets cob= too.
   UInt cob_in_force = after_costs ? w.last_object : kNoObject;
   for (UWord e = first_edge(w, caller); e < w.n_edges && w.edges[e]->a == caller; e++) {
      const CallEdge* edge = w.edges[e];
      SourceLoc site = { nullptr, 0, 0 };
      if (edge->call_site) source_loc(edge->call_site, &site);
      write_file_switch(w, current_file, site.fn ? site.file : home, home);
      const ForestNode* callee = (const ForestNode*)edge->b;
      // Readers take the object and file in force (fi= included) when cob=
      // or cfi= is missing, and bind a function to the first ones they see
      // it with: written whenever the callee's differ, as callgrind does.
      UInt callee_object = context_object(callee);
      if (callee_object != w.last_object || callee_object != cob_in_force) {
         w.objects.emit(w.out, "cob", callee_object, object_name(callee_object));
         cob_in_force = callee_object;
      }
      UInt callee_file = context_file(callee);
      if (callee_file != *current_file) w.files.emit(w.out, "cfi", callee_file, file_name(callee_file));
      write_context_ref(w, "cfn", callee);
      // The target position: the callee's first instruction (line 0 without
      // instruction positions, as before).
      SourceLoc target = { nullptr, 0, 0 };
      if (w.instr && edge->target) source_loc(edge->target, &target);
      w.out.printf("calls=%llu ", edge->calls);
      write_position(w, edge->target, target.line);
      w.out.put_char('\n');
      write_cost_position(w, edge->call_site, site.line);
      w.out.printf(" %llu\n", edge->incl);
   }
}

UWord first_jump(const Writer& w, const ForestNode* ctx)
{
   UWord lo = 0, hi = w.n_jumps;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)w.jumps[mid].ctx < (UWord)ctx) lo = mid + 1;
      else hi = mid;
   }
   return lo;
}

// callgrind's --collect-jumps lines: "jcnd=<taken>/<executed> <target>" or
// "jump=<count> <target>", then the jump's own position; jfi= when the target
// is in another file than the one in force.
void write_jump(Writer& w, const ContextJump& j, UInt current_file)
{
   SourceLoc to;
   source_loc(j.to, &to);
   if (to.fn && to.file != current_file) w.files.emit(w.out, "jfi", to.file, file_name(to.file));
   if (j.cond) w.out.printf("jcnd=%llu/%llu ", j.taken, j.executed);
   else w.out.printf("jump=%llu ", j.taken);
   write_position(w, j.to, to.line);     // targets stay absolute
   w.out.put_char('\n');
   write_cost_position(w, j.from, j.from_line->line);
   w.out.put_char('\n');
}

// One context: its exclusive cost per line (or per instruction, each
// followed by its jumps), then its calls.
void write_context(Writer& w, const ForestNode* n)
{
   const ContextLineCost* costs;
   UWord n_costs = w.costs.costs_of(n, &costs);
   Bool has_costs = n_costs > 0;
   Bool has_calls = first_edge(w, n) < w.n_edges && w.edges[first_edge(w, n)]->a == n;
   if (!has_costs && !has_calls) return;
   UInt home = context_file(n);
   UInt object = context_object(n);
   // ob= and fl= stay in force across fn= lines: write them on change only.
   if (object != w.last_object) w.objects.emit(w.out, "ob", object, object_name(object));
   if (home != w.last_file) w.files.emit(w.out, "fl", home, file_name(home));
   w.last_object = object;
   write_context_ref(w, "fn", n);
   w.last_line_known = False;
   UInt current = home;
   UWord j = w.instr ? first_jump(w, n) : 0;
   for (UWord c = 0; c < n_costs; c++) {
      const ContextLineCost& cost = costs[c];
      write_file_switch(w, &current, cost.line->file, home);
      write_cost_position(w, cost.addr, cost.line->line);
      w.out.printf(" %llu\n", cost.ir);
      for (; j < w.n_jumps && w.jumps[j].ctx == n && w.jumps[j].from <= cost.addr; j++)
         if (w.jumps[j].from == cost.addr) write_jump(w, w.jumps[j], current);
   }
   write_calls(w, n, &current, home, has_costs);
   // After fi=/fe= lines the next context states its file again. No blank
   // line between contexts: readers need none (3.9 KB of sqlite3's profile).
   w.last_file = current == home ? home : kNoFile;
}

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
   out.put_char('\n');
   write_function_table(w);
}

// "# ksf-nodes" (version 3): one forest in pre-order, each node a run of
// unsigned integers in BER (Perl's pack "w": 7 bits a byte, most
// significant first, the high bit set on all but the last byte), each line
// the standard base64 of whole nodes. A node is
// "shape label [calls - 7] [excl] [incl]": shape's bits 0-2 are the calls,
// or 7 when calls - 7 follows; bit 3 says excl follows (else 0), bit 4 incl
// (else excl), bit 5 that the node's children follow it; shape >> 6 is the
// number of lists that close after it. Siblings come in increasing order
// of label, and a label is written less the previous sibling's (tree roots
// as they are). Decimal nested lists (version 2) spent 11-12 bytes a node,
// this 6.6 (sqlite3 k=2).
class NodeStreamWriter {
public:
   explicit NodeStreamWriter(FileWriter& out) : out_(out) {}

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
      flush_line();
   }

private:
   static const UInt kMaxNodeBytes = 5 * 10;          // five 64-bit numbers
   static const ULong kCallsInShape = 7;              // calls 0-6: in the shape
   static const UInt kLineBytes = kMaxRecordLine / 4 * 3 - kMaxNodeBytes;

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
      if (used_ > kLineBytes) flush_line();
      put_ber(shape);
      put_ber(label_);
      if (calls_ >= kCallsInShape) put_ber(calls_ - kCallsInShape);
      if (excl_) put_ber(excl_);
      if (incl_ != excl_) put_ber(incl_);
   }
   void put_ber(ULong v)
   {
      UChar groups[10];
      UInt n = 0;
      do {
         groups[n++] = (UChar)(v & 0x7F);
         v >>= 7;
      } while (v);
      while (n > 1) bytes_[used_++] = (UChar)(groups[--n] | 0x80);
      bytes_[used_++] = groups[0];
   }
   void flush_line()
   {
      if (!used_) return;
      static const HChar digits[] =
         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
      out_.put("# ksf-nodes ");
      for (UInt i = 0; i < used_; i += 3) {
         UInt rest = used_ - i;
         UInt v = (UInt)bytes_[i] << 16 | (rest > 1 ? (UInt)bytes_[i + 1] << 8 : 0)
                | (rest > 2 ? bytes_[i + 2] : 0);
         out_.put_char(digits[v >> 18]);
         out_.put_char(digits[(v >> 12) & 63]);
         out_.put_char(rest > 1 ? digits[(v >> 6) & 63] : '=');
         out_.put_char(rest > 2 ? digits[v & 63] : '=');
      }
      out_.put_char('\n');
      used_ = 0;
   }

   FileWriter& out_;
   UChar bytes_[kLineBytes + kMaxNodeBytes];
   UInt used_ = 0;
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
// subtree is left out too, so the kept nodes' levels stay their own.
void write_forest_nodes(Writer& w, const core::Forest& sf, Bool incl_is_excl, const WrittenNodes& selected)
{
   NodeStreamWriter list(w.out);
   auto key = [&](const ForestNode* n) { return written_label(w, n); };
   core::visit_preorder_by(sf, [&](const core::VisitInfo& v) {
      if (!is_written(selected, v)) return;
      const ForestNode* n = v.node;
      list.node(v.level, record_label(w, n), n->calls, n->excl, written_incl(n, incl_is_excl));
   }, key, True);
   list.finish();
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
      core::visit_preorder(threads[t].forest->sf, [&](const core::VisitInfo& v) {
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

void name_context_ranks(UWord, UInt, const ForestNode* node, void* arg)
{
   for_context_nodes(node, name_rank_of, arg);
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
      if (selected.keep.empty()) core::visit_preorder(threads[t].forest->sf, name);
      else core::visit_preorder_by(threads[t].forest->sf, name, key, True);
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

// The header's node counts. Function mode: the labels' order and the
// nodes each thread's records hold. Block modes write block forests: the
// header counts the function forests' nodes, none left out.
void select_thread_nodes(Writer& w, const ThreadProfile* threads, UInt n_threads)
{
   w.thread_nodes = (WrittenNodes*)alloc_zeroed((n_threads + 1) * sizeof(WrittenNodes));
   if (block_mode()) {
      for (UInt i = 0; i < n_threads; i++) w.thread_nodes[i].count = threads[i].forest->sf.node_count();
      return;
   }
   order_labels(w, threads, n_threads);
   for (UInt i = 0; i < n_threads; i++) select_written_nodes(w, threads[i].forest->sf, False, &w.thread_nodes[i]);
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
   for (UInt i = 0; i < n_threads; i++) {
      const ThreadProfile& t = threads[i];
      UInt tid = clo.join_threads ? 0 : t.tid;
      write_thread_open(out, tid, w.thread_nodes[i].count, t.ir);
      out.put_char('\n');
      write_forest_nodes(w, t.forest->sf, False, w.thread_nodes[i]);
      write_thread_close(out, tid);
   }
   out.put("# ksf-end\n");
}

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

// Block modes: the block k-SFs (docs/output-format.md, section 5).
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
      write_forest_nodes(w, sf, True, selected);
      selected.keep.destroy();
      write_thread_close(out, forests[i]->tid);
   }
   kg::release(forests);
   out.put("# ksf-end\n");
}

void put_context_label(const ForestNode* n, void* arg)
{
   Writer& w = *(Writer*)arg;
   w.out.printf(" %u", record_label(w, n));
}

// "# kgrind-context <id> <thread> <label>...": the contexts whose ids
// KGRIND_CURRENT_CONTEXT() handed out, the k-context's ksf-fns labels
// innermost first (docs/regions.md). Not a ksf- record: readers of the
// k-SF need not know it.
void write_context_id(UWord id, UInt thread, const ForestNode* node, void* arg)
{
   FileWriter& out = ((Writer*)arg)->out;
   out.printf("# kgrind-context %lu ", id);
   if (thread) out.printf("%u", thread);
   else out.put("all");
   for_context_nodes(node, put_context_label, arg);
   out.put_char('\n');
}

void write_context_ids(Writer& w)
{
   for_each_context_id(write_context_id, &w);
}

// Open addressing over the contexts seen so far (slot indexes + 1), keyed by
// their label chains: sized for every node at a load of at most 3/4, any
// size (not a power of two: 1/2 to 3/4 of a power of two's slots), at exit.
class ContextTable {
public:
   void init(UWord nodes)
   {
      cap_ = nodes + nodes / 3 + 1;
      index_ = (UInt*)alloc_zeroed(cap_ * sizeof(UInt));
   }
   void done() { kg::release(index_); }

   // The slot of the first node with labels[0..n), or -1 after adding `slot`.
   Word find_or_add(const ContextSlot* slots, const UInt* labels, UInt n, UWord slot)
   {
      UWord i = home(hash(labels, n));
      for (; index_[i]; i = i + 1 == cap_ ? 0 : i + 1) {
         const ContextSlot& s = slots[index_[i] - 1];
         if (s.node->label != labels[0]) continue;   // most probes: no chain to make
         UInt other[kMaxChain];
         Bool cut;
         if (context_chain(s.node, other, &cut) == n && same_labels(labels, other, n))
            return (Word)(index_[i] - 1);
      }
      index_[i] = (UInt)slot + 1;
      return -1;
   }

private:
   // The hash's top bits scaled to the capacity.
   UWord home(UWord h) const { return (UWord)(((unsigned __int128)h * cap_) >> 64); }
   static UWord hash(const UInt* labels, UInt n)
   {
      UWord h = n;
      for (UInt i = 0; i < n; i++) h = (h ^ labels[i]) * 0x9E3779B97F4A7C15ULL;
      return h ^ (h >> 29);
   }
   static Bool same_labels(const UInt* a, const UInt* b, UInt n)
   {
      for (UInt i = 0; i < n; i++)
         if (a[i] != b[i]) return False;
      return True;
   }
   UInt* index_ = nullptr;
   UWord cap_ = 0;
};

Int compare_body_order(const void* pa, const void* pb)
{
   const ContextSlot* a = *(const ContextSlot* const*)pa;
   const ContextSlot* b = *(const ContextSlot* const*)pb;
   const FnInfo* fa = label_function(a->node->label);
   const FnInfo* fb = label_function(b->node->label);
   UInt oa = fa ? fa->object : 0, ob = fb ? fb->object : 0;
   if (oa != ob) return oa < ob ? -1 : 1;
   UInt la = fa ? fa->file : 0, lb = fb ? fb->file : 0;
   if (la != lb) return la < lb ? -1 : 1;
   return a->name_id < b->name_id ? -1 : a->name_id > b->name_id ? 1 : 0;
}

// Each name's first node: the first slot (in visit order) with its id.
void find_reps(Writer& w)
{
   w.reps = (const ForestNode**)kg::alloc((w.n_names + 1) * sizeof(ForestNode*));
   UInt named = 0;
   for (UWord i = 0; i < w.n_slots; i++)
      if (w.slots[i].name_id > named) w.reps[named++] = w.slots[i].node;
}

// A forest's canonical nodes: all but the top regions of its non-first
// trees (core::in_cleared_top_region), which are all this visits. Room for
// every node would be touched when freed (Valgrind fills a freed block):
// 0.6 MB of cc1plus's k=2 peak.
UWord canonical_node_count(const core::Forest& sf)
{
   struct Pending {
      const ForestNode* node;
      UWord level;
   };
   core::Vec<Pending> stack;
   stack.init(sf.allocator(), 64);
   UWord cleared = 0;
   core::for_each_tree(sf, [&](const ForestNode* root, size_t, bool first) {
      if (first || !core::in_cleared_top_region(sf, False, 0)) return;
      stack.push_back({root, 0});
      while (!stack.empty()) {
         Pending p = stack.back();
         stack.pop_back();
         cleared++;
         if (!core::in_cleared_top_region(sf, False, (UInt)p.level + 1)) continue;
         core::for_each_child(p.node, [&](const ForestNode* c) { stack.push_back({c, p.level + 1}); });
      }
   });
   stack.destroy();
   return sf.node_count() - cleared;
}

// One slot per canonical node of every thread; nodes with the same context
// share the first one's name id. Cut chains (k = inf) stay apart.
void number_contexts(Writer& w, const ThreadProfile* threads, UInt n_threads)
{
   UWord total = 0;
   for (UInt i = 0; i < n_threads; i++) total += canonical_node_count(threads[i].view->sf);
   w.slots = (ContextSlot*)kg::alloc((total + 1) * sizeof(ContextSlot));
   ContextTable table;
   table.init(total);
   UInt next_name = 0;
   w.n_slots = 0;
   for (UInt i = 0; i < n_threads; i++) {
      core::visit_preorder(threads[i].view->sf, [&](const core::VisitInfo& v) {
         if (v.cleared) return;
         tl_assert(w.n_slots < total);
         ContextSlot& s = w.slots[w.n_slots];
         UInt labels[kMaxChain];
         Bool cut;
         UInt n = context_chain(v.node, labels, &cut);
         Word first = cut ? -1 : table.find_or_add(w.slots, labels, n, w.n_slots);
         s.node = v.node;
         s.name_id = first < 0 ? ++next_name : w.slots[first].name_id;
         s.preorder_id = (UInt)v.id;
         w.n_slots++;
      });
   }
   table.done();
   w.n_names = next_name;
   find_reps(w);   // in the table's memory, freed just now
   VG_(ssort)(w.slots, w.n_slots, sizeof(ContextSlot), compare_slot_nodes);
}

// fn= ids by use: a context's name is written once, then its id at its fn=
// line and at every call into it; the most used get the shortest ids
// (sqlite3: 2.6 KB). After fold_contexts: the calls are the body's.
void rank_names_by_use(Writer& w)
{
   IdUse* use = (IdUse*)kg::alloc((w.n_names + 1) * sizeof(IdUse));
   for (UInt i = 0; i < w.n_names; i++) use[i] = { 1, i };   // its fn= line
   for (UWord e = 0; e < w.n_edges; e++) use[find_slot(w, (const ForestNode*)w.edges[e]->b)->name_id - 1].uses++;
   rank_by_use(use, w.n_names, &w.name_rank);
   kg::release(use);
}

// Costs and calls of every node go to its context's first node.
void fold_contexts(Writer& w)
{
   w.costs.regroup([](const void* ctx, const void* writer) { return reported_node(*(const Writer*)writer, ctx); }, &w);
   for (UWord i = 0; i < w.n_jumps; i++) w.jumps[i].ctx = (ForestNode*)reported_node(w, w.jumps[i].ctx);
   w.n_jumps = merge_jumps(w.jumps, w.n_jumps);
   for (UWord i = 0; i < w.n_edges; i++) {
      w.edges[i]->a = reported_node(w, w.edges[i]->a);
      w.edges[i]->b = reported_node(w, w.edges[i]->b);
   }
   w.n_edges = merge_call_edges(w.edges, w.n_edges);
}

// The contexts in body order: grouped by object and file, as callgrind
// writes them (fewer ob=/fl= lines), then in forest pre-order.
UWord body_order(const Writer& w, const ContextSlot** order)
{
   UWord n = 0;
   for (UWord i = 0; i < w.n_slots; i++)
      if (rep_of(w, w.slots[i]) == w.slots[i].node) order[n++] = &w.slots[i];
   VG_(ssort)(order, n, sizeof(ContextSlot*), compare_body_order);
   return n;
}

// Function mode's body: one section for the whole process. Its costs are
// summed over threads by context (callgrind's readers would do the same);
// the per-thread figures are in the k-SF records.
void write_contexts(Writer& w)
{
   const ContextSlot** order = (const ContextSlot**)kg::alloc((w.n_names + 1) * sizeof(ContextSlot*));
   UWord n = body_order(w, order);
   w.out.put("\n");
   for (UWord i = 0; i < n; i++) write_context(w, order[i]->node);
   kg::release(order);
}

void write_body(Writer& w, ULong total)
{
   ThreadProfile* threads = (ThreadProfile*)kg::alloc(thread_profile_count() * sizeof(ThreadProfile));
   flush_all_transitions();
   UInt n_threads = thread_profiles(threads);
   derive_node_counts(threads, n_threads);
   w.instr = clo.dump_instr;
   w.n_jumps = clo.collect_jumps ? collect_jumps(&w.jumps) : 0;
   if (w.dump->during_run) w.costs.snapshot(w.instr);
   else w.costs.take(w.instr);
   w.n_edges = collect_call_edges(!w.dump->during_run, &w.edges, &w.edge_copies);
   // The k-SF records' exclusive costs, from the counters before folding
   // (with a separate view they follow from the transitions instead).
   if (!separate_view()) w.costs.set_exclusive_costs();
   number_contexts(w, threads, n_threads);
   fold_contexts(w);
   rank_names_by_use(w);
   select_thread_nodes(w, threads, n_threads);
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
   w.out.printf("\ntotals: %llu\n", total);
   w.objects.done();
   w.files.done();
   w.contexts.done();
   w.costs.release();
   kg::release(w.edges);
   kg::release(w.edge_copies);
   kg::release(w.jumps);
   kg::release(w.slots);
   kg::release(w.reps);
   kg::release(w.name_rank);
   kg::release(w.written_label);
   kg::release(w.listed_id);
   kg::release(w.label_written_at);
   release_thread_nodes(w, n_threads);
   forget_node_counts(threads, n_threads);
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
   UWord err = 0;
   Bool ok = out->open(path, &err);
   if (ok) {
      write_placeholder(*out);
      out->close();
   } else {
      VG_(umsg)("kgrind: cannot create output file '%s': %s\n", path, errno_text(err));
   }
   delete out;
   return ok;
}

void report_profile_written(const HChar* path, const HChar* ended_by)
{
   if (VG_(clo_verbosity) == 0) return;
   VG_(umsg)("\n");
   if (ended_by) VG_(umsg)("Exec of %s\n", ended_by);
   VG_(umsg)("I   refs:      %'llu\n", total_ir());
   if (path) VG_(umsg)("Output written to %s\n", path);
}

Bool write_profile(const HChar* path, const DumpInfo& dump)
{
   Writer* w = (Writer*)alloc_zeroed(sizeof(Writer));   // the file buffer: not on the stack
   UWord err = 0;
   if (!w->out.open(path, &err)) {
      VG_(umsg)("kgrind: cannot create output file '%s': %s\n", path, errno_text(err));
      kg::release(w);
      return False;
   }
   w->dump = &dump;
   write_body(*w, total_ir());
   Bool ok = w->out.close();
   if (!ok) VG_(umsg)("kgrind: error writing output file '%s'\n", path);
   kg::release(w);
   return ok;
}

} // namespace kg
