#include "kg_jumps.h"
#include "kg_hotpath.h"
#include "kg_array_ops.h"
#include "kg_counter_store.h"
#include "kg_options.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

namespace {

// --collect-jumps: the targets of one (context, superblock)'s computed jump.
struct IndirectTarget {
   Addr target;
   ULong count;
   Bool jump;            // a jump in callgrind's sense (see jump_target)
};
struct IndirectJumps {
   const void* a;        // ForestNode* context
   const void* b;        // BlockInfo*
   UInt n, cap;
   IndirectTarget* targets;
};
PairTable<IndirectJumps> indirect_jumps;

} // namespace

// Not the next instruction after a direct exit (a fall-through; a computed
// jump there is a jump, as callgrind counts it), not a function's first
// instruction and not another object or section: callgrind counts those as
// calls (tail calls, PLT stubs).
Addr jump_target(const InstrPos& x, Addr target, Bool computed)
{
   if (!target || (!computed && target == x.addr + x.len)) return 0;
   if (is_function_entry(target)) return 0;
   if (VG_(DebugInfo_sect_kind)(nullptr, target) != VG_(DebugInfo_sect_kind)(nullptr, x.addr)) return 0;
   SourceLoc to;
   source_loc(target, &to);
   if (!to.fn || to.fn->object != x.line->fn->object) return 0;
   return target;
}

extern "C" void VG_REGPARM(2) kg_indirect_jump(BlockInfo* blk, Addr target)
{
   if (!kg_counting) return;   // outside the collected region (function mode's --collect-atstart)
   IndirectJumps* e = indirect_jumps.get(kg_now->ctx, blk);
   for (UInt i = 0; i < e->n; i++) {
      if (e->targets[i].target != target) continue;
      e->targets[i].count++;
      return;
   }
   if (e->n == e->cap) {
      e->cap = e->cap ? 2 * e->cap : 4;
      IndirectTarget* bigger = (IndirectTarget*)kg::alloc(e->cap * sizeof(IndirectTarget));
      if (e->n) VG_(memcpy)(bigger, e->targets, e->n * sizeof(IndirectTarget));
      kg::release(e->targets);
      e->targets = bigger;
   }
   const InstrPos& x = blk->instrs()[blk->n_instrs - 1];
   e->targets[e->n++] = { target, 1, jump_target(x, target, True) != 0 };
}

// The block's counters that are flush points' (block modes: points).
static UInt flush_points(const BlockInfo* blk)
{
   return blk->n_slots - blk->stub_counter;
}

static Int compare_jumps(const void* pa, const void* pb)
{
   const ContextJump* a = (const ContextJump*)pa;
   const ContextJump* b = (const ContextJump*)pb;
   if (a->ctx != b->ctx) return (UWord)a->ctx < (UWord)b->ctx ? -1 : 1;
   if (a->from != b->from) return a->from < b->from ? -1 : 1;
   if (a->to != b->to) return a->to < b->to ? -1 : 1;
   if (a->superblock != b->superblock) return a->superblock < b->superblock ? -1 : 1;
   return 0;
}

// The jumps one (context, superblock) made: exit j was taken as often as
// execution reached flush point j but not flush point j + 1. A conditional
// jump that this translation ran but never took is kept too: its runs
// count in the jump's executions when another translation of the same
// superblock took it (a superblock translated again: tiers, discards);
// collect_jumps drops what no translation of the superblock took, as
// callgrind counts a branch's executions in the blocks that took it.
static UWord superblock_jumps(const ForestNode* ctx, const BlockInfo* blk, const ULong* counters, ContextJump* out)
{
   UWord n = 0;
   UInt points = flush_points(blk);
   for (UInt j = 0; j < points; j++) {
      const FlushPoint& p = blk->points()[j];
      if (!p.jump_target) continue;
      ULong taken = counters[j] - (j + 1 < points ? counters[j + 1] : 0);
      const InstrPos& x = blk->instrs()[p.instr];
      ULong executed = x.cond ? counters[x.point] : taken;
      if (!executed) continue;
      out[n++] = { (ForestNode*)ctx, x.addr, x.line, p.jump_target, x.cond, taken, executed, blk->addr };
   }
   return n;
}

UWord collect_jumps(ContextJump** out)
{
   UWord n = 0, cap = 0;
   block_counters.for_each([&](const ContextBlocks*, CountersRef ref) { cap += block_with_id(ref_block_id(ref))->n_slots; });
   indirect_jumps.for_each([&](IndirectJumps* e) { cap += e->n; });
   ContextJump* all = (ContextJump*)kg::alloc((cap + 1) * sizeof(ContextJump));
   block_counters.for_each([&](const ContextBlocks* c, CountersRef ref) {
      const BlockInfo* blk = block_with_id(ref_block_id(ref));
      if (clo.count_instr) n += superblock_jumps((const ForestNode*)c->a, blk, counter_store.at(ref_offset(ref)), all + n);
   });
   indirect_jumps.for_each([&](IndirectJumps* e) {
      const BlockInfo* blk = (const BlockInfo*)e->b;
      const InstrPos& x = blk->instrs()[blk->n_instrs - 1];
      for (UInt i = 0; i < e->n; i++) {
         const IndirectTarget& t = e->targets[i];
         if (t.jump && t.count) all[n++] = { (ForestNode*)e->a, x.addr, x.line, t.target, False, t.count, t.count, 0 };
      }
   });
   *out = all;
   // Per superblock first (its translations' counts summed), then across
   // superblocks, of the jumps some translation took.
   n = merge_jumps(all, n);
   UWord kept = 0;
   for (UWord i = 0; i < n; i++) {
      if (!all[i].taken) continue;
      all[kept] = all[i];
      all[kept++].superblock = 0;
   }
   return merge_jumps(all, kept);
}

UWord merge_jumps(ContextJump* all, UWord n)
{
   return sort_and_fold(all, n, compare_jumps, [](ContextJump& into, const ContextJump& from) {
      into.taken += from.taken;
      into.executed += from.executed;
      // The same branch may end one superblock and be a side exit of
      // another: conditional if it is one anywhere (whichever came first).
      into.cond = into.cond || from.cond;
   });
}

static Int compare_jumps_by_line(const void* pa, const void* pb)
{
   const ContextJump* a = (const ContextJump*)pa;
   const ContextJump* b = (const ContextJump*)pb;
   if (a->ctx != b->ctx) return (UWord)a->ctx < (UWord)b->ctx ? -1 : 1;
   Word by_line = compare_lines((UWord)a->from_line, (UWord)b->from_line);
   if (by_line) return by_line < 0 ? -1 : 1;
   if (a->from != b->from) return a->from < b->from ? -1 : 1;
   return a->to < b->to ? -1 : a->to > b->to ? 1 : 0;
}

void order_jumps_by_line(ContextJump* all, UWord n)
{
   VG_(ssort)(all, n, sizeof(ContextJump), compare_jumps_by_line);
}

void reset_indirect_jumps()
{
   indirect_jumps.for_each([](IndirectJumps* e) {
      for (UInt i = 0; i < e->n; i++) e->targets[i].count = 0;
   });
}

} // namespace kg
