#include "kg_context_names.h"
#include "kg_activity.h"
#include "kg_display_names.h"
#include "kg_options.h"
#include "kg_runtime.h"
#include "kg_short_names.h"

namespace kg {

const HChar* label_name(UInt label)
{
   return label == kRootLabel ? "__root__" : display_name(function_by_id(label - 1));
}

FnInfo* label_function(UInt label) { return label == kRootLabel ? nullptr : function_by_id(label - 1); }

namespace {

Int compare_id_use(const void* pa, const void* pb)
{
   const IdUse* a = (const IdUse*)pa;
   const IdUse* b = (const IdUse*)pb;
   if (a->uses != b->uses) return a->uses > b->uses ? -1 : 1;
   return a->id < b->id ? -1 : a->id > b->id ? 1 : 0;
}

} // namespace

// use[0..n) sorted by use; *rank_of (new array) maps an id to its rank.
void rank_by_use(IdUse* use, UInt n, UInt** rank_of)
{
   VG_(ssort)(use, n, sizeof(IdUse), compare_id_use);
   *rank_of = (UInt*)kg::alloc((n + 1) * sizeof(UInt));
   for (UInt r = 0; r < n; r++) (*rank_of)[use[r].id] = r;
}

namespace {

Int compare_slot_nodes(const void* pa, const void* pb)
{
   UWord a = (UWord)((const ContextSlot*)pa)->node, b = (UWord)((const ContextSlot*)pb)->node;
   return a < b ? -1 : a > b ? 1 : 0;
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

// The function's full name, then its callers' (short where unique:
// Writer::caller_names), joined by ' as callgrind's --separate-callers.
void write_context_name(Writer& w, const ForestNode* n, UWord node_id)
{
   UInt labels[kMaxChain];
   Bool cut;
   UInt count = context_chain(n, labels, &cut);
   for (UInt i = 0; i < count; i++) {
      if (i) w.out.put_char('\'');
      const HChar* caller = i && labels[i] < w.n_labels ? w.caller_names[labels[i]] : nullptr;
      w.out.put_escaped(caller ? caller : label_name(labels[i]));
   }
   if (cut) w.out.printf("'...#%lu", node_id);
}

} // namespace

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

namespace {

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

} // namespace

// One slot per canonical node of every thread; nodes with the same context
// share the first one's name id. Cut chains (k = inf) stay apart.
void number_contexts(Writer& w, const ThreadProfile* threads, UInt n_threads)
{
   // The compact threads' contexts are ended_threads_view's, after the others'.
   Forest* ended = ended_threads_view();
   UInt n_views = n_threads + (ended ? 1 : 0);
   auto view = [&](UInt i) { return i < n_threads ? threads[i].view : ended; };
   UWord total = 0;
   for (UInt i = 0; i < n_views; i++)
      if (view(i)) total += canonical_node_count(view(i)->sf);
   w.slots = (ContextSlot*)kg::alloc((total + 1) * sizeof(ContextSlot));
   ContextTable table;
   table.init(total);
   UInt next_name = 0;
   w.n_slots = 0;
   for (UInt i = 0; i < n_views; i++) {
      if (!view(i)) continue;
      core::visit_preorder(view(i)->sf, [&](const core::VisitInfo& v) {
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

namespace {

struct ShortName {
   const HChar* name;
   UInt label;
};

Int compare_short_names(const void* pa, const void* pb)
{
   return VG_(strcmp)(((const ShortName*)pa)->name, ((const ShortName*)pb)->name);
}

} // namespace

// Every function of the body's contexts (the labels of their chains) gets
// its short name; two functions with the same short name (overloads,
// namesakes) keep their full names, so that context names stay unique.
void name_callers(Writer& w)
{
   w.n_labels = function_count() + 1;
   w.caller_names = (HChar**)alloc_zeroed(w.n_labels * sizeof(HChar*));
   Bool* used = (Bool*)alloc_zeroed(w.n_labels * sizeof(Bool));
   UInt n_used = 0;
   for (UWord i = 0; i < w.n_slots; i++) {
      UInt labels[kMaxChain];
      Bool cut;
      UInt count = context_chain(w.slots[i].node, labels, &cut);
      for (UInt j = 0; j < count; j++)
         if (labels[j] != kRootLabel && labels[j] < w.n_labels && !used[labels[j]]) {
            used[labels[j]] = True;
            n_used++;
         }
   }
   ShortName* names = (ShortName*)kg::alloc((n_used + 1) * sizeof(ShortName));
   UInt n = 0;
   for (UInt l = 1; l < w.n_labels; l++)
      if (used[l]) names[n++] = { short_name(label_name(l)), l };
   VG_(ssort)(names, n, sizeof(ShortName), compare_short_names);
   for (UInt i = 0; i < n;) {
      UInt j = i + 1;
      while (j < n && VG_STREQ(names[j].name, names[i].name)) j++;
      for (UInt m = i; m < j; m++) {
         if (j - i == 1) w.caller_names[names[m].label] = (HChar*)names[m].name;
         else kg::release((void*)names[m].name);
      }
      i = j;
   }
   kg::release(names);
   kg::release(used);
}

void release_caller_names(Writer& w)
{
   for (UInt l = 0; l < w.n_labels; l++) kg::release(w.caller_names[l]);
   kg::release(w.caller_names);
   w.caller_names = nullptr;
   w.n_labels = 0;
}

// fn= ids by use: a context's name is written once, then its id at its fn=
// line and at every call into it; the most used get the shortest ids
// (sqlite3: 2.6 KB). After fold_contexts: the calls are the body's.
void rank_names_by_use(Writer& w)
{
   IdUse* use = (IdUse*)kg::alloc((w.n_names + 1) * sizeof(IdUse));
   for (UInt i = 0; i < w.n_names; i++) use[i] = { 1, i };   // its fn= line
   for (UWord e = 0; e < w.n_edges; e++) {
      const ContextSlot* s = find_slot(w, (const ForestNode*)w.edges[e]->b);
      if (s) use[s->name_id - 1].uses++;   // else another thread's (--separate-threads)
   }
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

} // namespace kg
