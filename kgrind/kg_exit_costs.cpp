#include "kg_exit_costs.h"
#include "kg_array_ops.h"
#include "kg_counter_store.h"
#include "kg_counters.h"
#include "kg_events.h"
#include "kg_runtime.h"

namespace kg {

namespace {

ArrayGroups array_groups;

} // namespace

static Int compare_context_costs(const void* pa, const void* pb)
{
   const ContextLineCost* a = (const ContextLineCost*)pa;
   const ContextLineCost* b = (const ContextLineCost*)pb;
   if (a->ctx != b->ctx) return (UWord)a->ctx < (UWord)b->ctx ? -1 : 1;
   return (Int)compare_lines((UWord)a->line, (UWord)b->line);
}

static Int compare_instr_costs(const void* pa, const void* pb)
{
   const ContextLineCost* a = (const ContextLineCost*)pa;
   const ContextLineCost* b = (const ContextLineCost*)pb;
   if (a->ctx != b->ctx) return (UWord)a->ctx < (UWord)b->ctx ? -1 : 1;
   if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
   return 0;
}

static void add_ir(ContextLineCost& into, const ContextLineCost& from) { into.ir += from.ir; }

// One group of ExitCosts: the context its counters are reported in (set
// by regroup), and where they are: a table, or (tagged) the context whose
// counter array holds them, with the number of refs it holds above the
// address (at exit).
struct CostGroup {
   const void* a;
   UWord where;
};
static const UWord kArrayTag = 1;   // contexts and tables are aligned
static const UInt kHeldShift = 48;  // user-space addresses fit in 48 bits

static CostGroup array_group(const ForestNode* ctx, UInt held)
{
   tl_assert((UWord)ctx >> kHeldShift == 0);
   return { ctx, (UWord)ctx | kArrayTag | (UWord)held << kHeldShift };
}

static Int compare_group_contexts(const void* pa, const void* pb)
{
   const void* a = ((const CostGroup*)pa)->a;
   const void* b = ((const CostGroup*)pb)->a;
   return a == b ? 0 : (UWord)a < (UWord)b ? -1 : 1;
}

static CostGroup table_group(const ContextBlocks* c) { return { c->a, (UWord)c }; }

// The costs an entry's block can have: one per line run, or per instruction
// (and its called PLT stub's).
static UInt cost_items(const BlockInfo* blk, Bool per_instruction)
{
   return per_instruction ? blk->n_instrs + blk->stub_counter : blk->n_runs;
}


// One (context, block)'s counters at exit.
struct CountedBlock {
   const BlockInfo* blk;
   ULong* counters;
};

// Calls f(line, addr, ir) for each non-zero cost of the entry: each line
// run's instructions (per line) or each instruction (--dump-instr, block modes) ran
// as often as execution reached its flush point.
template <typename F>
static void for_each_cost(const CountedBlock& e, Bool per_instruction, F f)
{
   const BlockInfo* blk = e.blk;
   const ULong* reached = e.counters;
   if (!per_instruction) {
      for (UInt i = 0; i < blk->n_runs; i++) {
         const LineRun& r = blk->runs()[i];
         if (reached[r.point]) f(blk->lines()[r.line], (Addr)0, reached[r.point] * r.n);
      }
      return;
   }
   for (UInt i = 0; i < blk->n_instrs; i++) {
      const InstrPos& in = blk->instrs()[i];
      if (reached[in.point]) f(in.line, in.addr, reached[in.point]);
   }
   // A called PLT stub's instructions, at the call (as callgrind charges them).
   const InstrPos& call = blk->instrs()[blk->n_instrs - 1];
   if (blk->stub_counter && reached[blk->n_slots - 1]) f(call.line, call.addr, reached[blk->n_slots - 1]);
}

// A block that counts where execution left it (counts_leaving): execution
// reached a flush point as often as it left there or at a later point.
// (Such a block is a loop, which calls no PLT stub: every counter is a
// point's.)
static void count_reached(const CountedBlock& e)
{
   const BlockInfo* blk = e.blk;
   if (!blk->counts_leaving) return;
   for (UInt p = blk->n_slots; p-- > 1;) e.counters[p - 1] += e.counters[p];
}

ContextBlocks ExitCosts::blocks(UWord g) const { return blocks_at(groups_[g].where); }

ContextBlocks ExitCosts::blocks_at(UWord where) const
{
   if (where & kArrayTag) {
      UWord address = where & ((1UL << kHeldShift) - 1) & ~kArrayTag;
      return array_groups.describe((const ForestNode*)address, (UInt)(where >> kHeldShift));
   }
   return *(const ContextBlocks*)where;
}

CountedBlock ExitCosts::entry(const ContextBlocks& c, UInt i) const
{
   CountersRef ref = c.slots[i];
   UInt offset = c.base + ref_offset(ref);
   return { block_with_id(ref_block_id(ref)), copied_counters_ ? copied_counters_ + offset : counter_store.at(offset) };
}

void ExitCosts::take(Bool per_instruction, Bool by_line)
{
   per_instruction_ = per_instruction;
   by_line_ = by_line;
   UWord n_tables;
   ContextBlocks** tables = block_counters.take_contexts(&n_tables);
   // The arrays' groups after the tables'.
   array_groups.make();
   groups_ = (CostGroup*)kg::alloc((n_tables + array_context_count() + 1) * sizeof(CostGroup), "kg.exit");
   for (n_groups_ = 0; n_groups_ < n_tables; n_groups_++) groups_[n_groups_] = table_group(tables[n_groups_]);
   kg::release(tables);
   for (UWord c = 0; c < array_context_count(); c++)
      groups_[n_groups_++] = array_group(array_context(c), array_groups.refs_held(array_context(c)));
   for_each_entry([](const CountedBlock& e) { count_reached(e); });
}

void ExitCosts::snapshot(Bool per_instruction, Bool by_line)
{
   per_instruction_ = per_instruction;
   by_line_ = by_line;
   UWord n_groups = 0, n = 0, n_counters = 0;
   block_counters.for_each([&](const ContextBlocks*, CountersRef ref) {
      n++;
      n_counters += counter_count(block_with_id(ref_block_id(ref)));
   });
   block_counters.for_each_context([&](ContextBlocks*) { n_groups++; });
   for (UWord c = 0; c < array_context_count(); c++) n_counters += array_capacity(array_context(c));
   tl_assert(n_counters >> 32 == 0);
   // One block: the copied tables, their refs, the counters (refs are
   // offsets into these).
   copies_ = (UChar*)kg::alloc((n_groups + array_context_count()) * sizeof(ContextBlocks) + (n + n_counters) * sizeof(UWord) + 1,
                               "kg.dump");
   groups_ = (CostGroup*)kg::alloc((n_groups + array_context_count() + 1) * sizeof(CostGroup), "kg.dump");
   ContextBlocks* group = (ContextBlocks*)copies_;
   CountersRef* refs = (CountersRef*)(group + n_groups + array_context_count());
   copied_counters_ = (ULong*)(refs + n);
   UInt copied = 0;
   n_groups_ = 0;
   block_counters.for_each_context([&](ContextBlocks* c) {
      ContextBlocks* copy = group++;
      *copy = { c->a, refs, { 0 }, 0 };
      for (UInt i = 0; i < c->cap; i++) {
         CountersRef ref = c->slots[i];
         if (!ref) continue;
         UInt m = counter_count(block_with_id(ref_block_id(ref)));
         VG_(memcpy)(copied_counters_ + copied, counter_store.at(ref_offset(ref)), m * sizeof(ULong));
         copy->slots[copy->used++] = counters_ref(ref_block_id(ref), copied);
         copied += m;
      }
      refs += copy->used;
      groups_[n_groups_++] = table_group(copy);
   });
   // The arrays' groups, with copies of their counters.
   array_groups.make();
   for (UWord c = 0; c < array_context_count(); c++) {
      ForestNode* ctx = array_context(c);
      UInt cap = array_capacity(ctx);
      VG_(memcpy)(copied_counters_ + copied, counter_array(ctx), cap * sizeof(ULong));
      *group = array_groups.describe(ctx, copied, array_groups.refs_held(ctx));
      copied += cap;
      groups_[n_groups_++] = table_group(group++);
   }
   for_each_entry([](const CountedBlock& e) { count_reached(e); });
}

template <typename F> void ExitCosts::for_each_entry(F f) const
{
   for (UWord g = 0; g < n_groups_; g++) {
      ContextBlocks c = blocks(g);
      for (UInt i = 0; i < c.used; i++) f(entry(c, i));
   }
}

// Sorts the contexts' tables by the context they are reported in, and
// makes the scratch room for the widest context's costs.
void ExitCosts::sort_by_context()
{
   VG_(ssort)(groups_, n_groups_, sizeof(CostGroup), compare_group_contexts);
   UWord widest = 0;
   for (UWord g = 0, h; g < n_groups_; g = h) {
      UWord w = 0;
      for (h = g; h < n_groups_ && groups_[h].a == groups_[g].a; h++) {
         ContextBlocks c = blocks(h);
         for (UInt i = 0; i < c.used; i++) w += cost_items(block_with_id(ref_block_id(c.slots[i])), per_instruction_);
      }
      if (w > widest) widest = w;
   }
   kg::release(scratch_);
   scratch_ = (ContextLineCost*)kg::alloc((widest + 1) * sizeof(ContextLineCost));
   n_events_ = extra_event_count();
   kg::release(events_);
   events_ = n_events_ ? (ULong*)kg::alloc((widest + 1) * n_events_ * sizeof(ULong), "kg.exit") : nullptr;
}

// Calls f(line, addr, column, count) for each non-zero event counter of the
// entry: at its line (addr 0), or per instruction at its instruction.
template <typename F>
static void for_each_event(const CountedBlock& e, Bool per_instruction, F f)
{
   const BlockInfo* blk = e.blk;
   // Counted by their flush points: reached counts (count_reached ran).
   for_each_block_event(blk, e.counters, [&](UInt pos, UShort event, ULong count) {
      UInt col = event_column((EventId)event);
      if (per_instruction) {
         const InstrPos& in = blk->instrs()[pos];
         f(in.line, in.addr, col, count);
      } else {
         f(blk->lines()[pos], (Addr)0, col, count);
      }
   });
}

// The index of line's cost among n folded costs sorted by line, or n.
static UWord folded_index(const ContextLineCost* costs, UWord n, const SourceLine* line)
{
   UWord lo = 0, hi = n;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if (compare_lines((UWord)costs[mid].line, (UWord)line) < 0) lo = mid + 1;
      else hi = mid;
   }
   return lo < n && costs[lo].line == line ? lo : n;
}

// The same per instruction: the index of addr's cost (sorted by address).
static UWord folded_instr_index(const ContextLineCost* costs, UWord n, Addr addr)
{
   UWord lo = 0, hi = n;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if (costs[mid].addr < addr) lo = mid + 1;
      else hi = mid;
   }
   return lo < n && costs[lo].addr == addr ? lo : n;
}

void ExitCosts::event_totals(ULong* out) const
{
   for (UInt i = 0; i < n_events_; i++) out[i] = 0;
   for_each_entry([&](const CountedBlock& e) {
      for_each_event(e, per_instruction_, [&](SourceLine*, Addr, UInt col, ULong n) { out[col] += n; });
   });
}

void ExitCosts::set_exclusive_costs()
{
   index_groups_by_node();
   for (UWord g = 0; g < n_groups_; g++) ((ForestNode*)groups_[g].a)->excl = 0;
   for (UWord g = 0; g < n_groups_; g++) {
      ForestNode* ctx = (ForestNode*)groups_[g].a;
      ContextBlocks c = blocks(g);
      for (UInt i = 0; i < c.used; i++)
         for_each_cost(entry(c, i), per_instruction_, [ctx](SourceLine*, Addr, ULong ir) { ctx->excl += ir; });
   }
}

// The groups by the contexts they count for (a context may have a table
// and an array), for node_events.
void ExitCosts::index_groups_by_node()
{
   if (!extra_event_count()) return;
   node_groups_ = (CostGroup*)kg::alloc((n_groups_ + 1) * sizeof(CostGroup), "kg.exit");
   VG_(memcpy)(node_groups_, groups_, n_groups_ * sizeof(CostGroup));
   VG_(ssort)(node_groups_, n_groups_, sizeof(CostGroup), compare_group_contexts);
   node_sums_ = (ULong*)kg::alloc(extra_event_count() * sizeof(ULong), "kg.exit");
}

const ULong* ExitCosts::node_events(const ForestNode* ctx) const
{
   if (!node_groups_) return nullptr;
   UWord lo = 0, hi = n_groups_;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)node_groups_[mid].a < (UWord)ctx) lo = mid + 1;
      else hi = mid;
   }
   if (lo == n_groups_ || node_groups_[lo].a != ctx) return nullptr;
   ULong* sums = node_sums_;
   for (UInt c = 0; c < extra_event_count(); c++) sums[c] = 0;
   for (UWord g = lo; g < n_groups_ && node_groups_[g].a == ctx; g++) {
      ContextBlocks c = blocks_at(node_groups_[g].where);
      for (UInt i = 0; i < c.used; i++)
         for_each_event(entry(c, i), per_instruction_, [sums](SourceLine*, Addr, UInt col, ULong n) { sums[col] += n; });
   }
   return sums;
}

void ExitCosts::regroup(const ForestNode* (*rep)(const void* ctx, const void* arg), const void* arg)
{
   // The tables are the index's no longer: their key may change.
   for (UWord g = 0; g < n_groups_; g++) groups_[g].a = rep(groups_[g].a, arg);
   sort_by_context();
}

UWord ExitCosts::first_group(const ForestNode* ctx) const
{
   UWord lo = 0, hi = n_groups_;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)groups_[mid].a < (UWord)ctx) lo = mid + 1;
      else hi = mid;
   }
   return lo;
}

UWord ExitCosts::costs_of(const ForestNode* ctx, const ContextLineCost** out)
{
   UWord m = 0;
   for (UWord g = first_group(ctx); g < n_groups_ && groups_[g].a == ctx; g++) {
      ContextBlocks c = blocks(g);
      for (UInt i = 0; i < c.used; i++) {
         for_each_cost(entry(c, i), per_instruction_, [&](SourceLine* line, Addr addr, ULong ir) {
            scratch_[m++] = { (ForestNode*)ctx, line, by_line_ ? (Addr)0 : addr, ir };
         });
      }
   }
   *out = scratch_;
   Bool by_instr = per_instruction_ && !by_line_;
   UWord n = sort_and_fold(scratch_, m, by_instr ? compare_instr_costs : compare_context_costs, add_ir);
   if (!n_events_) return n;
   // Each event to its line's (or instruction's) folded cost. Every line
   // with events ran, so has Ir, unless its instructions faulted before
   // their flush point: those are dropped.
   VG_(memset)(events_, 0, (n + 1) * n_events_ * sizeof(ULong));
   for (UWord g = first_group(ctx); g < n_groups_ && groups_[g].a == ctx; g++) {
      ContextBlocks c = blocks(g);
      for (UInt i = 0; i < c.used; i++) {
         for_each_event(entry(c, i), per_instruction_, [&](SourceLine* line, Addr addr, UInt col, ULong count) {
            UWord at = per_instruction_ ? folded_instr_index(scratch_, n, addr) : folded_index(scratch_, n, line);
            events_[at * n_events_ + col] += count;
         });
      }
   }
   return n;
}

namespace {
ArrayGroups context_ir_groups;   // context_ir's, between context_ir_begin and context_ir_end
} // namespace

void context_ir_begin() { if (counter_arrays_on()) context_ir_groups.make(); }
void context_ir_end() { context_ir_groups.release(); }

// Every cost of one (context, block)'s counters, as the exit reads them
// (count_reached on a copy: the counters go on).
static ULong block_ir(const BlockInfo* blk, const ULong* counters)
{
   UInt n = counter_count(blk);
   ULong local[64];
   ULong* copy = n <= 64 ? local : (ULong*)kg::alloc(n * sizeof(ULong));
   VG_(memcpy)(copy, counters, n * sizeof(ULong));
   CountedBlock e = { blk, copy };
   count_reached(e);
   ULong ir = 0;
   for_each_cost(e, False, [&](SourceLine*, Addr, ULong cost) { ir += cost; });
   if (copy != local) kg::release(copy);
   return ir;
}

ULong context_ir(const ForestNode* ctx)
{
   ULong ir = 0;
   if (const ContextBlocks* c = block_counters.table_of(ctx)) {
      for (UInt i = 0; i < c->cap; i++)
         if (c->slots[i]) ir += block_ir(block_with_id(ref_block_id(c->slots[i])), counter_store.at(ref_offset(c->slots[i])));
   }
   ULong* arr = counter_arrays_on() ? counter_array((ForestNode*)ctx) : nullptr;
   if (!arr) return ir;
   ContextBlocks c = context_ir_groups.describe(ctx, context_ir_groups.refs_held(ctx));
   for (UInt i = 0; i < c.used; i++)
      ir += block_ir(block_with_id(ref_block_id(c.slots[i])), counter_store.at(c.base + ref_offset(c.slots[i])));
   return ir;
}

void ExitCosts::release()
{
   array_groups.release();
   kg::release(copies_);
   copies_ = nullptr;
   copied_counters_ = nullptr;
   kg::release(groups_);
   kg::release(scratch_);
   kg::release(events_);
   kg::release(node_groups_);
   kg::release(node_sums_);
   node_groups_ = nullptr;
   node_sums_ = nullptr;
   groups_ = nullptr;
   scratch_ = nullptr;
   events_ = nullptr;
   n_groups_ = 0;
}

} // namespace kg
