#include "kg_costs.h"
#include "kg_activity.h"
#include "kg_pairmap.h"
#include "kg_options.h"
#include "kg_runtime.h"

namespace kg {

// The counters of one (context, block): one per block slot, right after the
// key, so that finding them in the index brings them into the cache.
struct BlockCounters {
   const void* a;      // ForestNode* context
   const void* b;      // BlockInfo*
   ULong* counters() { return (ULong*)(this + 1); }
   const ULong* counters() const { return (const ULong*)(this + 1); }
};

// One context's blocks: while the run goes on, tagged pointers to their
// counters (as PairIndex: 16 bits of the block's hash above the address),
// open addressing, load at most 7/8 (the tags keep probes in the slots; 3/4
// was as fast and 2.7 MB bigger on cc1plus); at exit (ExitCosts), the plain
// pointers in slots[0, used), and `a` the context they are reported in.
const UWord kContextTagMask = ~(UWord)0 << 48;
struct ContextBlocks {
   const void* a;        // ForestNode* context
   UWord* slots;
   UInt cap;             // a power of two
   UInt used;
   BlockCounters* entry(UInt i) const { return (BlockCounters*)slots[i]; }
};

namespace {

// Interned source lines, keyed by (fn, file and line in one word).
struct SourceLineKeys {
   static const void* a(const SourceLine* l) { return l->fn; }
   static const void* b(const SourceLine* l) { return (const void*)((UWord)l->file << 32 | l->line); }
};
PairIndex<SourceLine, SourceLineKeys> lines;

Word compare_lines(UWord a, UWord b)
{
   const SourceLine* x = (const SourceLine*)a;
   const SourceLine* y = (const SourceLine*)b;
   if (x->fn->id != y->fn->id) return x->fn->id < y->fn->id ? -1 : 1;
   if (x->file != y->file) return x->file < y->file ? -1 : 1;
   if (x->line != y->line) return x->line < y->line ? -1 : 1;
   return 0;
}


// The (context, block) counters, indexed per context: a block that misses
// its inline ways (a function run in many contexts: cc1plus, 130 M misses)
// probes its context's own small table, whose slots stay in the cache while
// the context and its callers run, instead of one table of every pair (1.5 M
// pairs on cc1plus: two cache misses a probe, 19 % of the run's time; 9 %
// less CPU time with these tables, docs/performance.md). A context's table
// is found through a small cache of recent contexts: misses come in runs,
// from the blocks of one activation and of its caller.
class BlockCountersIndex {
public:
   // The counters of (ctx, blk), created zeroed with room for n_counters.
   BlockCounters* get(const ForestNode* ctx, const BlockInfo* blk, UInt n_counters)
   {
      ContextBlocks* c = blocks_of(ctx);
      UWord h = hash(blk);
      UWord tag = h & kTagMask;
      UWord mask = c->cap - 1;
      for (UWord i = (h >> 32) & mask; c->slots[i]; i = (i + 1) & mask) {
         if ((c->slots[i] & kTagMask) != tag) continue;
         BlockCounters* e = (BlockCounters*)(c->slots[i] & ~kTagMask);
         if (e->b == blk) return e;
      }
      BlockCounters* e = (BlockCounters*)alloc_permanent(sizeof(BlockCounters) + n_counters * sizeof(ULong));
      e->a = ctx;
      e->b = blk;
      if ((c->used + 1) * 8 > c->cap * 7) grow(c);
      put(c, e);
      c->used++;
      return e;
   }

   template <typename F> void for_each(F f) const
   {
      contexts_.for_each([&](ContextBlocks* c) {
         for (UInt i = 0; i < c->cap; i++)
            if (c->slots[i]) f((BlockCounters*)(c->slots[i] & ~kTagMask));
      });
   }

   template <typename F> void for_each_context(F f) const { contexts_.for_each(f); }

   // Every context's table as an array of *n (the caller releases it), in
   // the index's own memory, each table holding its plain entry pointers in
   // slots[0, used): at exit, where an array of every entry could set the
   // peak RSS (cc1plus: 12 MB). The index is empty afterwards.
   ContextBlocks** take_contexts(UWord* n)
   {
      contexts_.for_each([](ContextBlocks* c) {
         UInt m = 0;
         for (UInt i = 0; i < c->cap; i++)
            if (c->slots[i]) c->slots[m++] = c->slots[i] & ~kTagMask;
         c->used = m;
      });
      VG_(memset)(recent_, 0, sizeof recent_);
      return contexts_.take_entries(n);
   }

private:
   struct ContextKeys {
      static const void* a(const ContextBlocks* c) { return c->a; }
      static const void* b(const ContextBlocks*) { return nullptr; }
   };
   static const UInt kFirstCap = 4;
   static const UWord kTagMask = kContextTagMask;
   static const UInt kSizeClasses = 32;

   static UWord hash(const BlockInfo* blk) { return (UWord)blk * 0x9E3779B97F4A7C15ULL; }

   ContextBlocks* blocks_of(const ForestNode* ctx)
   {
      ContextBlocks*& recent = recent_[((UWord)ctx >> 4) & (kRecent - 1)];
      if (recent && recent->a == ctx) return recent;
      ContextBlocks* c = contexts_.find(ctx, nullptr);
      if (!c) {
         c = (ContextBlocks*)alloc_permanent(sizeof(ContextBlocks));
         c->a = ctx;
         c->cap = kFirstCap;
         c->slots = new_slots(c->cap);
         contexts_.insert(c);
      }
      return recent = c;
   }

   static void put(ContextBlocks* c, BlockCounters* e)
   {
      UWord h = hash((const BlockInfo*)e->b);
      UWord mask = c->cap - 1;
      UWord i = (h >> 32) & mask;
      while (c->slots[i]) i = (i + 1) & mask;
      c->slots[i] = (h & kTagMask) | (UWord)e;
   }

   void grow(ContextBlocks* c)
   {
      UWord* old = c->slots;
      UInt old_cap = c->cap;
      c->cap = 2 * old_cap;
      c->slots = new_slots(c->cap);
      for (UInt i = 0; i < old_cap; i++)
         if (old[i]) put(c, (BlockCounters*)(old[i] & ~kTagMask));
      free_slots(old, old_cap);
   }

   // Slot arrays come from permanent memory and are recycled by size (a
   // power of two): most are a few dozen bytes, where VG_(malloc)'s 32
   // bytes of headers a block would add half to the index.
   static UInt size_class(UInt cap) { return 31 - __builtin_clz(cap); }
   UWord* new_slots(UInt cap)
   {
      UWord*& head = free_[size_class(cap)];
      UWord* s = head;
      if (!s) return (UWord*)alloc_permanent(cap * sizeof(UWord));
      head = (UWord*)s[0];
      VG_(memset)(s, 0, cap * sizeof(UWord));
      return s;
   }
   void free_slots(UWord* s, UInt cap)
   {
      UWord*& head = free_[size_class(cap)];
      s[0] = (UWord)head;
      head = s;
   }

   PairIndex<ContextBlocks, ContextKeys> contexts_;
   // The tables of recently run contexts, by a hash of the context.
   static const UInt kRecent = 256;
   ContextBlocks* recent_[kRecent] = {};
   UWord* free_[kSizeClasses] = {};
};

BlockCountersIndex block_counters;   // probed at every context change of a block
PairMap<CallEdge> call_edges;

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

SourceLine* source_line(const SourceLoc& loc)
{
   SourceLine probe = { loc.fn, loc.file, loc.line };
   SourceLine* sl = lines.find(SourceLineKeys::a(&probe), SourceLineKeys::b(&probe));
   if (sl) return sl;
   sl = (SourceLine*)alloc_permanent(sizeof(SourceLine));
   *sl = probe;
   lines.insert(sl);
   return sl;
}

// Every BlockInfo, for forget_cached_counters (translations are rare: a
// list costs nothing on the hot path).
static BlockInfo** all_blocks;
static UWord n_blocks, blocks_cap;

static void remember_block(BlockInfo* b)
{
   if (n_blocks == blocks_cap) {
      blocks_cap = blocks_cap ? 2 * blocks_cap : 4096;
      BlockInfo** bigger = (BlockInfo**)kg::alloc(blocks_cap * sizeof(BlockInfo*), "kg.blocks");
      if (n_blocks) VG_(memcpy)(bigger, all_blocks, n_blocks * sizeof(BlockInfo*));
      kg::release(all_blocks);
      all_blocks = bigger;
   }
   all_blocks[n_blocks++] = b;
}

void forget_cached_counters()
{
   for (UWord i = 0; i < n_blocks; i++)
      for (UInt w = 0; w < kCounterWays; w++) all_blocks[i]->ways[w] = { nullptr, nullptr };
}

// While counting is off every block counts into this scratch memory
// (never read); it only grows, since blocks may still point into it.
static ULong* uncounted_counters(UInt n_slots)
{
   static ULong* sink;
   static UInt sink_slots;
   if (n_slots > sink_slots) {
      sink_slots = n_slots < 64 ? 64 : n_slots;
      sink = (ULong*)alloc_permanent(sink_slots * sizeof(ULong));
   }
   return sink;
}

BlockInfo* block_info_new(Addr addr, UInt n_slots, SourceLine** slots)
{
   BlockInfo* b = (BlockInfo*)alloc_permanent(sizeof(BlockInfo));
   remember_block(b);
   b->addr = addr;
   b->n_slots = n_slots;
   b->slots = (SourceLine**)alloc_permanent(n_slots * sizeof(SourceLine*));
   for (UInt i = 0; i < n_slots; i++) b->slots[i] = slots[i];
   return b;
}

struct PositionBlock {
   const void* a;     // the address
   const void* b;     // unused
   BlockInfo* blk;
};
static PairTable<PositionBlock, 16> position_blocks;

BlockInfo* position_block(Addr at)
{
   PositionBlock* e = position_blocks.get((const void*)at, nullptr);
   if (e->blk) return e->blk;
   SourceLoc loc;
   source_loc(at, &loc);
   SourceLine* line = source_line(loc);
   BlockInfo* b = block_info_new(at, 1, &line);
   b->fn = loc.fn;
   if (clo.dump_instr) {   // per-instruction positions (the block modes: always)
      b->n_instrs = 1;
      b->instrs = (InstrPos*)alloc_permanent(sizeof(InstrPos));
      *b->instrs = { at, line, 0, 0, False };
      b->points = (FlushPoint*)alloc_permanent(sizeof(FlushPoint));
      *b->points = { 0, 0 };
   } else {
      b->n_runs = 1;
      b->runs = (LineRun*)alloc_permanent(sizeof(LineRun));
      *b->runs = { 0, 0, 1 };
   }
   e->blk = b;
   return b;
}

void point_block_at_table(BlockInfo* blk, ForestNode* ctx)
{
   if (!kg_counting) {
      blk->ways[1] = blk->ways[0];
      blk->ways[0] = { ctx, uncounted_counters(blk->n_slots + 1) };
      return;
   }
   BlockCounters* e = block_counters.get(ctx, blk, blk->n_slots ? blk->n_slots : 1);
   blk->ways[1] = blk->ways[0];   // the least recent way makes room
   blk->ways[0] = { ctx, e->counters() };
}

extern "C" void VG_REGPARM(1) kg_refresh_counters(BlockInfo* blk)
{
   point_block_at(blk, kg_now->ctx);
}

// Not the next instruction after a direct exit (a fall-through; a computed
// jump there is a jump, as callgrind counts it), not a function's first
// instruction and not another object or section: callgrind counts those as
// calls (tail calls, PLT stubs).
Addr jump_target(const InstrPos& x, Addr target, Bool computed)
{
   if (!target || (!computed && target == x.addr + x.len)) return 0;
   const HChar* name;
   if (VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), target, &name)) return 0;
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
   const InstrPos& x = blk->instrs[blk->n_instrs - 1];
   e->targets[e->n++] = { target, 1, jump_target(x, target, True) != 0 };
}

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

// Sorts, then folds entries that compare equal into the first (the same
// instruction or line reached through several superblocks).
template <typename T, typename Fold>
static UWord sort_and_fold(T* all, UWord n, Int (*cmp)(const void*, const void*), Fold fold)
{
   VG_(ssort)(all, n, sizeof(T), cmp);
   UWord merged = 0;
   for (UWord i = 0; i < n; i++) {
      if (merged && cmp(&all[merged - 1], &all[i]) == 0) fold(all[merged - 1], all[i]);
      else all[merged++] = all[i];
   }
   return merged;
}

static void add_ir(ContextLineCost& into, const ContextLineCost& from) { into.ir += from.ir; }

static Int compare_group_contexts(const void* pa, const void* pb)
{
   const void* a = (*(const ContextBlocks* const*)pa)->a;
   const void* b = (*(const ContextBlocks* const*)pb)->a;
   return a == b ? 0 : (UWord)a < (UWord)b ? -1 : 1;
}

// The costs an entry's block can have: one per line run, or per instruction
// (and its called PLT stub's).
static UInt cost_items(const BlockInfo* blk, Bool per_instruction)
{
   return per_instruction ? blk->n_instrs + blk->stub_counter : blk->n_runs;
}

// The block's counters that are flush points' (block modes: points).
static UInt flush_points(const BlockInfo* blk)
{
   return blk->n_slots - blk->stub_counter;
}

// Calls f(line, addr, ir) for each non-zero cost of the entry: each line
// run's instructions (per line) or each instruction (--dump-instr, block modes) ran
// as often as execution reached its flush point.
template <typename F>
static void for_each_cost(const BlockCounters* e, Bool per_instruction, F f)
{
   const BlockInfo* blk = (const BlockInfo*)e->b;
   const ULong* reached = e->counters();
   if (!per_instruction) {
      for (UInt i = 0; i < blk->n_runs; i++) {
         const LineRun& r = blk->runs[i];
         if (reached[r.point]) f(blk->slots[r.line], (Addr)0, reached[r.point] * r.n);
      }
      return;
   }
   for (UInt i = 0; i < blk->n_instrs; i++) {
      const InstrPos& in = blk->instrs[i];
      if (reached[in.point]) f(in.line, in.addr, reached[in.point]);
   }
   // A called PLT stub's instructions, at the call (as callgrind charges them).
   const InstrPos& call = blk->instrs[blk->n_instrs - 1];
   if (blk->stub_counter && reached[blk->n_slots - 1]) f(call.line, call.addr, reached[blk->n_slots - 1]);
}

// A block that counts where execution left it (counts_leaving): execution
// reached a flush point as often as it left there or at a later point.
// (Such a block is a loop, which calls no PLT stub: every counter is a
// point's.)
static void count_reached(BlockCounters* e)
{
   const BlockInfo* blk = (const BlockInfo*)e->b;
   if (!blk->counts_leaving) return;
   ULong* counters = e->counters();
   for (UInt p = blk->n_slots; p-- > 1;) counters[p - 1] += counters[p];
}

void ExitCosts::take(Bool per_instruction)
{
   per_instruction_ = per_instruction;
   groups_ = block_counters.take_contexts(&n_groups_);
   for_each_entry([](BlockCounters* e) { count_reached(e); });
}

// Bytes of an entry: its key and counters.
static UWord entry_size(const BlockCounters* e)
{
   return sizeof(BlockCounters) + ((const BlockInfo*)e->b)->n_slots * sizeof(ULong);
}

void ExitCosts::snapshot(Bool per_instruction)
{
   per_instruction_ = per_instruction;
   UWord n_groups = 0, n = 0, bytes = 0;
   block_counters.for_each([&](BlockCounters* e) { n++; bytes += entry_size(e); });
   block_counters.for_each_context([&](ContextBlocks*) { n_groups++; });
   // One block: the copied tables, their entry pointers, the entries.
   copies_ = (UChar*)kg::alloc(n_groups * sizeof(ContextBlocks) + n * sizeof(UWord) + bytes + 1, "kg.dump");
   groups_ = (ContextBlocks**)kg::alloc((n_groups + 1) * sizeof(ContextBlocks*), "kg.dump");
   ContextBlocks* group = (ContextBlocks*)copies_;
   UWord* pointers = (UWord*)(group + n_groups);
   UChar* at = (UChar*)(pointers + n);
   n_groups_ = 0;
   block_counters.for_each_context([&](ContextBlocks* c) {
      ContextBlocks* copy = group++;
      *copy = { c->a, pointers, 0, 0 };
      for (UInt i = 0; i < c->cap; i++) {
         if (!c->slots[i]) continue;
         const BlockCounters* e = (const BlockCounters*)(c->slots[i] & ~kContextTagMask);
         VG_(memcpy)(at, e, entry_size(e));
         copy->slots[copy->used++] = (UWord)at;
         at += entry_size(e);
      }
      pointers += copy->used;
      groups_[n_groups_++] = copy;
   });
   for_each_entry([](BlockCounters* e) { count_reached(e); });
}

template <typename F> void ExitCosts::for_each_entry(F f) const
{
   for (UWord g = 0; g < n_groups_; g++)
      for (UInt i = 0; i < groups_[g]->used; i++) f(groups_[g]->entry(i));
}

// Sorts the contexts' tables by the context they are reported in, and
// makes the scratch room for the widest context's costs.
void ExitCosts::sort_by_context()
{
   VG_(ssort)(groups_, n_groups_, sizeof(ContextBlocks*), compare_group_contexts);
   UWord widest = 0;
   for (UWord g = 0, h; g < n_groups_; g = h) {
      UWord w = 0;
      for (h = g; h < n_groups_ && groups_[h]->a == groups_[g]->a; h++)
         for (UInt i = 0; i < groups_[h]->used; i++)
            w += cost_items((const BlockInfo*)groups_[h]->entry(i)->b, per_instruction_);
      if (w > widest) widest = w;
   }
   kg::release(scratch_);
   scratch_ = (ContextLineCost*)kg::alloc((widest + 1) * sizeof(ContextLineCost));
}

void ExitCosts::set_exclusive_costs() const
{
   for (UWord g = 0; g < n_groups_; g++) ((ForestNode*)groups_[g]->a)->excl = 0;
   for (UWord g = 0; g < n_groups_; g++) {
      ForestNode* ctx = (ForestNode*)groups_[g]->a;
      for (UInt i = 0; i < groups_[g]->used; i++)
         for_each_cost(groups_[g]->entry(i), per_instruction_, [ctx](SourceLine*, Addr, ULong ir) { ctx->excl += ir; });
   }
}

void ExitCosts::regroup(const ForestNode* (*rep)(const void* ctx, const void* arg), const void* arg)
{
   // The tables are the index's no longer: their key may change.
   for (UWord g = 0; g < n_groups_; g++) groups_[g]->a = rep(groups_[g]->a, arg);
   sort_by_context();
}

UWord ExitCosts::first_group(const ForestNode* ctx) const
{
   UWord lo = 0, hi = n_groups_;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)groups_[mid]->a < (UWord)ctx) lo = mid + 1;
      else hi = mid;
   }
   return lo;
}

UWord ExitCosts::costs_of(const ForestNode* ctx, const ContextLineCost** out)
{
   UWord m = 0;
   for (UWord g = first_group(ctx); g < n_groups_ && groups_[g]->a == ctx; g++) {
      for (UInt i = 0; i < groups_[g]->used; i++) {
         for_each_cost(groups_[g]->entry(i), per_instruction_, [&](SourceLine* line, Addr addr, ULong ir) {
            scratch_[m++] = { (ForestNode*)ctx, line, addr, ir };
         });
      }
   }
   *out = scratch_;
   return sort_and_fold(scratch_, m, per_instruction_ ? compare_instr_costs : compare_context_costs, add_ir);
}

void ExitCosts::release()
{
   kg::release(copies_);
   copies_ = nullptr;
   kg::release(groups_);
   kg::release(scratch_);
   groups_ = nullptr;
   scratch_ = nullptr;
   n_groups_ = 0;
}

static Int compare_jumps(const void* pa, const void* pb)
{
   const ContextJump* a = (const ContextJump*)pa;
   const ContextJump* b = (const ContextJump*)pb;
   if (a->ctx != b->ctx) return (UWord)a->ctx < (UWord)b->ctx ? -1 : 1;
   if (a->from != b->from) return a->from < b->from ? -1 : 1;
   if (a->to != b->to) return a->to < b->to ? -1 : 1;
   return 0;
}

// The jumps one (context, superblock) made: exit j was taken as often as
// execution reached flush point j but not flush point j + 1.
static UWord superblock_jumps(const BlockCounters* e, ContextJump* out)
{
   const BlockInfo* blk = (const BlockInfo*)e->b;
   UWord n = 0;
   UInt points = flush_points(blk);
   for (UInt j = 0; j < points; j++) {
      const FlushPoint& p = blk->points[j];
      if (!p.jump_target) continue;
      ULong taken = e->counters()[j] - (j + 1 < points ? e->counters()[j + 1] : 0);
      if (!taken) continue;
      const InstrPos& x = blk->instrs[p.instr];
      ULong executed = x.cond ? e->counters()[x.point] : taken;
      out[n++] = { (ForestNode*)e->a, x.addr, x.line, p.jump_target, x.cond, taken, executed };
   }
   return n;
}

UWord collect_jumps(ContextJump** out)
{
   UWord n = 0, cap = 0;
   block_counters.for_each([&](BlockCounters* e) { cap += ((const BlockInfo*)e->b)->n_slots; });
   indirect_jumps.for_each([&](IndirectJumps* e) { cap += e->n; });
   ContextJump* all = (ContextJump*)kg::alloc((cap + 1) * sizeof(ContextJump));
   block_counters.for_each([&](BlockCounters* e) {
      if (((const BlockInfo*)e->b)->points) n += superblock_jumps(e, all + n);
   });
   indirect_jumps.for_each([&](IndirectJumps* e) {
      const BlockInfo* blk = (const BlockInfo*)e->b;
      const InstrPos& x = blk->instrs[blk->n_instrs - 1];
      for (UInt i = 0; i < e->n; i++) {
         const IndirectTarget& t = e->targets[i];
         if (t.jump && t.count) all[n++] = { (ForestNode*)e->a, x.addr, x.line, t.target, False, t.count, t.count };
      }
   });
   *out = all;
   return merge_jumps(all, n);
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

// The map holds each (caller, callee)'s first edge; the others, at other
// sites, are chained to it (edges are made when a transition is, not per
// call).
CallEdge* call_edge(ForestNode* caller, ForestNode* callee, Addr call_site)
{
   CallEdge* first = call_edges.find(caller, callee);
   if (!first) {
      first = call_edges.get(caller, callee);
      first->call_site = call_site;
      return first;
   }
   for (CallEdge* e = first; e; e = e->next_site)
      if (e->call_site == call_site) return e;
   CallEdge* e = (CallEdge*)alloc_permanent(sizeof(CallEdge));
   *e = { caller, callee, call_site, 0, 0, 0, first->next_site };
   first->next_site = e;
   return e;
}

// Every edge, at every site.
template <class F> void for_each_edge(F f)
{
   call_edges.for_each([&](CallEdge* first) {
      for (CallEdge* e = first; e; e = e->next_site) f(e);
   });
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
   for_each_edge([&](CallEdge* e) { cap += e->calls || e->incl; });
   CallEdge* all = (CallEdge*)kg::alloc((cap + 1) * sizeof(CallEdge));
   for_each_edge([&](CallEdge* e) { if (e->calls || e->incl) all[n++] = *e; });
   *out = all;
   return merge_call_edges(all, n);
}

void reset_costs()
{
   block_counters.for_each([](BlockCounters* e) {
      const BlockInfo* blk = (const BlockInfo*)e->b;
      for (UInt i = 0; i < blk->n_slots; i++) e->counters()[i] = 0;
   });
   for_each_edge([](CallEdge* e) { e->calls = 0; e->incl = 0; });
   indirect_jumps.for_each([](IndirectJumps* e) {
      for (UInt i = 0; i < e->n; i++) e->targets[i].count = 0;
   });
}

} // namespace kg
