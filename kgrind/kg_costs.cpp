#include "kg_costs.h"
#include "kg_activity.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

namespace {

WordFM* line_index;    // SourceLine* (key: fn, file, line) -> SourceLine*

Word compare_lines(UWord a, UWord b)
{
   const SourceLine* x = (const SourceLine*)a;
   const SourceLine* y = (const SourceLine*)b;
   if (x->fn->id != y->fn->id) return x->fn->id < y->fn->id ? -1 : 1;
   if (x->file != y->file) return x->file < y->file ? -1 : 1;
   if (x->line != y->line) return x->line < y->line ? -1 : 1;
   return 0;
}

struct BlockCounters {
   const void* a;      // ForestNode* context
   const void* b;      // BlockInfo*
   ULong* counters;    // one per block slot
};

PairMap<BlockCounters> block_counters;
PairMap<CallEdge> call_edges;

} // namespace

void costs_init()
{
   line_index = VG_(newFM)(VG_(malloc), "kg.lines", VG_(free), compare_lines);
}

SourceLine* source_line(const SourceLoc& loc)
{
   SourceLine probe = { loc.fn, loc.file, loc.line };
   UWord key, val;
   if (VG_(lookupFM)(line_index, &key, &val, (UWord)&probe)) return (SourceLine*)val;
   SourceLine* sl = (SourceLine*)kg::alloc(sizeof(SourceLine));
   *sl = probe;
   VG_(addToFM)(line_index, (UWord)sl, (UWord)sl);
   return sl;
}

BlockInfo* block_info_new(Addr addr, UInt n_slots, SourceLine** slots)
{
   BlockInfo* b = (BlockInfo*)alloc_zeroed(sizeof(BlockInfo));
   b->addr = addr;
   b->n_slots = n_slots;
   b->slots = (SourceLine**)kg::alloc(n_slots * sizeof(SourceLine*) + 1);
   for (UInt i = 0; i < n_slots; i++) b->slots[i] = slots[i];
   return b;
}

extern "C" void VG_REGPARM(1) kg_refresh_counters(BlockInfo* blk)
{
   BlockCounters* e = block_counters.get(kg_now.ctx, blk);
   if (!e->counters)
      e->counters = (ULong*)alloc_zeroed((blk->n_slots ? blk->n_slots : 1) * sizeof(ULong));
   blk->cached_ctx = kg_now.ctx;
   blk->cached_counters = e->counters;
}

static Int compare_context_costs(const void* pa, const void* pb)
{
   const ContextLineCost* a = (const ContextLineCost*)pa;
   const ContextLineCost* b = (const ContextLineCost*)pb;
   if (a->ctx != b->ctx) return (UWord)a->ctx < (UWord)b->ctx ? -1 : 1;
   return (Int)compare_lines((UWord)a->line, (UWord)b->line);
}

UWord merge_line_costs(ContextLineCost* all, UWord n)
{
   VG_(ssort)(all, n, sizeof(ContextLineCost), compare_context_costs);
   UWord merged = 0;
   for (UWord i = 0; i < n; i++) {
      if (merged && all[merged - 1].ctx == all[i].ctx && all[merged - 1].line == all[i].line)
         all[merged - 1].ir += all[i].ir;
      else
         all[merged++] = all[i];
   }
   return merged;
}

UWord collect_line_costs(ContextLineCost** out)
{
   // Sized to the non-zero counters: this runs at exit, when peak RSS may be reached.
   UWord n = 0, cap = 0;
   block_counters.for_each([&](BlockCounters* e) {
      const BlockInfo* blk = (const BlockInfo*)e->b;
      for (UInt i = 0; i < blk->n_slots; i++) cap += e->counters[i] != 0;
   });
   ContextLineCost* all = (ContextLineCost*)kg::alloc((cap + 1) * sizeof(ContextLineCost));
   block_counters.for_each([&](BlockCounters* e) {
      const BlockInfo* blk = (const BlockInfo*)e->b;
      for (UInt i = 0; i < blk->n_slots; i++) {
         if (e->counters[i] == 0) continue;
         all[n].ctx = (ForestNode*)e->a;
         all[n].line = blk->slots[i];
         all[n].ir = e->counters[i];
         n++;
      }
   });
   *out = all;
   return merge_line_costs(all, n);
}

CallEdge* call_edge(ForestNode* caller, ForestNode* callee)
{
   return call_edges.get(caller, callee);
}

static Int compare_edges(const void* pa, const void* pb)
{
   const CallEdge* a = (const CallEdge*)pa;
   const CallEdge* b = (const CallEdge*)pb;
   if (a->a != b->a) return (UWord)a->a < (UWord)b->a ? -1 : 1;
   if (a->b != b->b) return (UWord)a->b < (UWord)b->b ? -1 : 1;
   if (a->call_site != b->call_site) return a->call_site < b->call_site ? -1 : 1;
   return 0;
}

UWord merge_call_edges(CallEdge* all, UWord n)
{
   VG_(ssort)(all, n, sizeof(CallEdge), compare_edges);
   UWord merged = 0;
   for (UWord i = 0; i < n; i++) {
      if (merged && compare_edges(&all[merged - 1], &all[i]) == 0) {
         all[merged - 1].calls += all[i].calls;
         all[merged - 1].incl += all[i].incl;
      } else {
         all[merged++] = all[i];
      }
   }
   return merged;
}

UWord collect_call_edges(CallEdge** out)
{
   UWord cap = 0, n = 0;
   call_edges.for_each([&](CallEdge* e) { cap += e->calls || e->incl; });
   CallEdge* all = (CallEdge*)kg::alloc((cap + 1) * sizeof(CallEdge));
   call_edges.for_each([&](CallEdge* e) { if (e->calls || e->incl) all[n++] = *e; });
   *out = all;
   return merge_call_edges(all, n);
}

void reset_costs()
{
   block_counters.for_each([](BlockCounters* e) {
      const BlockInfo* blk = (const BlockInfo*)e->b;
      for (UInt i = 0; i < blk->n_slots; i++) e->counters[i] = 0;
   });
   call_edges.for_each([](CallEdge* e) { e->calls = 0; e->incl = 0; });
}

} // namespace kg
