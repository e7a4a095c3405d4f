#include "kg_costs.h"
#include "kg_activity.h"
#include "kg_hotpath.h"
#include "kg_pairmap.h"
#include "kg_options.h"
#include "kg_runtime.h"

namespace kg {

// The counters of one (context, block), as a context's table holds them:
// the block's id above a 32-bit offset into the counter store (a slot needs
// no key in the counters' memory, and a probe compares ids without following
// a pointer: the 16-byte (context, block) key took 24 MB on cc1plus,
// docs/performance.md). 0 is a free slot (ids start at 1).
typedef UWord CountersRef;
static CountersRef counters_ref(UInt block_id, UInt offset) { return (UWord)block_id << 32 | offset; }
static UInt ref_block_id(CountersRef r) { return (UInt)(r >> 32); }
static UInt ref_offset(CountersRef r) { return (UInt)r; }

// One context's blocks: open addressing by the block's id, load at most 7/8
// (3/4 was as fast and 2.7 MB bigger on cc1plus); at exit (ExitCosts), the
// refs in slots[0, used), and `a` the context they are reported in.
struct ContextBlocks {
   const void* a;        // ForestNode* context
   CountersRef* slots;
   union {
      UInt cap;          // a power of two or 1.5 times one
      // At exit (ExitCosts), where refs' offsets are from: 0 for a table's
      // (their own), a counter array's (ArrayGroups) the array's.
      UInt base;
   };
   UInt used;
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


// Every (context, block)'s counters, back to back in chunks that never move
// (blocks cache pointers to them), each found by a 32-bit offset in counters.
class CounterStore {
public:
   // Room for n zeroed counters (n at most a chunk); its offset.
   UInt add(UInt n)
   {
      tl_assert(n <= kChunkCounters);
      if (n > room_) new_chunk();
      UInt offset = next_;
      next_ += n;
      room_ -= n;
      return offset;
   }
   ULong* at(UInt offset) const { return chunks_[offset >> kChunkShift] + (offset & (kChunkCounters - 1)); }

private:
   static const UInt kChunkShift = 13;   // 64 KB chunks, as alloc_permanent's
   static const UInt kChunkCounters = 1u << kChunkShift;

   void new_chunk()
   {
      UWord chunk = n_chunks_++;
      if (chunk >> (32 - kChunkShift))
         VG_(tool_panic)((HChar*)"kgrind: more than 2^32 counters (32 GB): too many (context, block) pairs");
      if (chunk == chunks_cap_) {
         UWord cap = chunks_cap_ ? 2 * chunks_cap_ : 64;
         ULong** bigger = (ULong**)kg::alloc(cap * sizeof(ULong*), "kg.counters");
         if (chunk) VG_(memcpy)(bigger, chunks_, chunk * sizeof(ULong*));
         kg::release(chunks_);
         chunks_ = bigger;
         chunks_cap_ = cap;
      }
      chunks_[chunk] = (ULong*)alloc_zeroed(kChunkCounters * sizeof(ULong), "kg.counters");
      next_ = (UInt)(chunk << kChunkShift);
      room_ = kChunkCounters;
   }

   ULong** chunks_ = nullptr;
   UWord chunks_cap_ = 0;
   UWord n_chunks_ = 0;
   UInt next_ = 0;       // offset of the next free counter
   UInt room_ = 0;       // free counters left in the last chunk
};
CounterStore counter_store;

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
   ULong* get(const ForestNode* ctx, const BlockInfo* blk, UInt n_counters)
   {
      ContextBlocks* c = blocks_of(ctx);
      UInt i = home(blk->id, c->cap);
      for (; c->slots[i]; i = next(c, i))
         if (ref_block_id(c->slots[i]) == blk->id) return counter_store.at(ref_offset(c->slots[i]));
      CountersRef ref = counters_ref(blk->id, counter_store.add(n_counters));
      if ((c->used + 1) * 8 > c->cap * 7) {
         grow(c);
         put(c, ref);
      } else {
         c->slots[i] = ref;
      }
      c->used++;
      return counter_store.at(ref_offset(ref));
   }

   // f(context's table, ref) for every (context, block).
   template <typename F> void for_each(F f) const
   {
      contexts_.for_each([&](ContextBlocks* c) {
         for (UInt i = 0; i < c->cap; i++)
            if (c->slots[i]) f(c, c->slots[i]);
      });
   }

   template <typename F> void for_each_context(F f) const { contexts_.for_each(f); }

   // Every context's table as an array of *n (the caller releases it), in
   // the index's own memory, each table holding its refs in slots[0, used):
   // at exit, where an array of every pair could set the peak RSS (cc1plus:
   // 12 MB). The index is empty afterwards.
   ContextBlocks** take_contexts(UWord* n)
   {
      contexts_.for_each([](ContextBlocks* c) {
         UInt m = 0;
         for (UInt i = 0; i < c->cap; i++)
            if (c->slots[i]) c->slots[m++] = c->slots[i];
         c->used = m;
         c->base = 0;   // no longer cap: the refs are in [0, used)
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
   static const UInt kSizeClasses = 64;

   // A block's first slot in a table of cap slots: its hash scaled to cap.
   static UInt home(UInt block_id, UInt cap)
   {
      UWord h = (UWord)block_id * 0x9E3779B97F4A7C15ULL >> 32;
      return (UInt)(h * cap >> 32);
   }
   static UInt next(const ContextBlocks* c, UInt i) { return i + 1 == c->cap ? 0 : i + 1; }
   // Tables grow by half or a third (4, 6, 8, 12, ...), not double: slots at
   // a load of about 0.7 instead of 0.55 (cc1plus: 2.2 M slots, not 2.8 M).
   static UInt next_cap(UInt cap) { return cap & (cap - 1) ? cap + cap / 3 : cap + cap / 2; }

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

   static void put(ContextBlocks* c, CountersRef ref)
   {
      UInt i = home(ref_block_id(ref), c->cap);
      while (c->slots[i]) i = next(c, i);
      c->slots[i] = ref;
   }

   void grow(ContextBlocks* c)
   {
      CountersRef* old = c->slots;
      UInt old_cap = c->cap;
      c->cap = next_cap(old_cap);
      c->slots = new_slots(c->cap);
      for (UInt i = 0; i < old_cap; i++)
         if (old[i]) put(c, old[i]);
      free_slots(old, old_cap);
   }

   // Slot arrays come from permanent memory and are recycled by size: most
   // are a few dozen bytes, where VG_(malloc)'s 32 bytes of headers a block
   // would add half to the index.
   static UInt size_class(UInt cap) { return 2 * (31 - __builtin_clz(cap)) + ((cap & (cap - 1)) != 0); }
   CountersRef* new_slots(UInt cap)
   {
      CountersRef*& head = free_[size_class(cap)];
      CountersRef* s = head;
      if (!s) return (CountersRef*)alloc_permanent(cap * sizeof(CountersRef));
      head = (CountersRef*)s[0];
      VG_(memset)(s, 0, cap * sizeof(CountersRef));
      return s;
   }
   void free_slots(CountersRef* s, UInt cap)
   {
      CountersRef*& head = free_[size_class(cap)];
      s[0] = (CountersRef)head;
      head = s;
   }

   PairIndex<ContextBlocks, ContextKeys> contexts_;
   // The tables of recently run contexts, by a hash of the context.
   static const UInt kRecent = 256;
   ContextBlocks* recent_[kRecent] = {};
   CountersRef* free_[kSizeClasses] = {};
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

// Appends x to items[0, n) of room cap, doubling it from `first`.
template <typename T>
static void append(T*& items, UWord& n, UWord& cap, T x, UWord first, const HChar* cc)
{
   if (n == cap) {
      cap = cap ? 2 * cap : first;
      T* bigger = (T*)kg::alloc(cap * sizeof(T), cc);
      if (n) VG_(memcpy)(bigger, items, n * sizeof(T));
      kg::release(items);
      items = bigger;
   }
   items[n++] = x;
}

static void remember_block(BlockInfo* b)
{
   append(all_blocks, n_blocks, blocks_cap, b, 4096, "kg.blocks");
   b->id = (UInt)n_blocks;
   tl_assert(b->id == n_blocks);
}

static const BlockInfo* block_by_id(UInt id) { return all_blocks[id - 1]; }
BlockInfo* block_with_id(UInt id) { return all_blocks[id - 1]; }

// Counters a (context, block) has: one per slot, at least one.
static UInt counter_count(const BlockInfo* blk) { return blk->n_slots ? blk->n_slots : 1; }

static void mark_counter_arrays();
void forget_cached_counters()
{
   mark_counter_arrays();
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

static SizeT block_info_bytes(UInt n_lines, UInt tail_bytes)
{
   return sizeof(BlockInfo) + n_lines * sizeof(SourceLine*) + tail_bytes;
}

BlockInfo* block_info_new(Addr addr, UInt n_lines, SourceLine** lines, UInt tail_bytes)
{
   tl_assert(n_lines > 0);   // every superblock has an instruction: fn() is its first line's
   BlockInfo* b = (BlockInfo*)alloc_permanent(block_info_bytes(n_lines, tail_bytes));
   remember_block(b);
   b->addr = addr;
   b->array_offset = kNoArrayOffset;
   b->n_slots = (UShort)n_lines;
   b->n_lines = (UShort)n_lines;
   SourceLine** after = (SourceLine**)(b + 1);
   for (UInt i = 0; i < n_lines; i++) after[i] = lines[i];
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
   // Per-instruction positions (the block modes: always), or per line.
   BlockInfo* b = block_info_new(at, 1, &line, clo.dump_instr ? sizeof(InstrPos) + sizeof(FlushPoint) : sizeof(LineRun));
   if (clo.dump_instr) {
      b->n_instrs = 1;
      *b->instrs() = { at, line, 0, 0, False };
      *b->points() = { 0, 0 };
   } else {
      b->n_runs = 1;
      *b->runs() = { 0, 0, 1 };
   }
   e->blk = b;
   return b;
}

void block_info_trim_runs(BlockInfo* blk, UInt n_runs)
{
   tl_assert(n_runs <= blk->n_runs);
   shrink_permanent(blk, block_info_bytes(blk->n_lines, blk->n_runs * sizeof(LineRun)),
                    block_info_bytes(blk->n_lines, n_runs * sizeof(LineRun)));
   blk->n_runs = (UShort)n_runs;
}

void point_block_at_table(BlockInfo* blk, ForestNode* ctx)
{
   if (!kg_counting) {
      blk->ways[1] = blk->ways[0];
      blk->ways[0] = { ctx, uncounted_counters(blk->n_slots + 1) };
      return;
   }
   ULong* counters = block_counters.get(ctx, blk, counter_count(blk));
   blk->ways[1] = blk->ways[0];   // the least recent way makes room
   blk->ways[0] = { ctx, counters };
}

extern "C" void VG_REGPARM(1) kg_refresh_counters(BlockInfo* blk)
{
   point_block_at(blk, kg_now->ctx);
}

// ---- Counter arrays (kg_costs.h) ---------------------------------------------

// The contexts that have an array (each once), for dumps, zeroing and
// switching counting on and off.
static ForestNode** array_contexts;
static UWord n_array_contexts, array_contexts_cap;

static ULong* counter_array(ForestNode* ctx) { return *counter_array_word(ctx); }
static UInt array_capacity(ForestNode* ctx) { return *array_limit_word(ctx) & 0xFF; }
static UInt array_store_offset(const ULong* arr) { return (UInt)arr[-1]; }
// The limit; its top bit fails every block's check while counting is off.
static UInt array_limit(UInt fn_id, UInt cap) { return (fn_id << 8 | cap) | (kg_counting ? 0 : 1u << 31); }

static void remember_array_context(ForestNode* ctx)
{
   append(array_contexts, n_array_contexts, array_contexts_cap, ctx, 1024, "kg.arrays");
}

// Arrays a context grew out of, by capacity, for other contexts' arrays:
// linked through their first counter.
static ULong* free_arrays[kArrayCounters + 1];

static ULong* new_counter_array(UInt cap)
{
   ULong* arr = free_arrays[cap];
   if (arr) {
      free_arrays[cap] = (ULong*)arr[0];
      VG_(memset)(arr, 0, cap * sizeof(ULong));
      return arr;
   }
   UInt offset = counter_store.add(cap + 1);
   arr = counter_store.at(offset) + 1;
   arr[-1] = offset + 1;
   return arr;
}

static void free_counter_array(ULong* arr, UInt cap)
{
   arr[0] = (ULong)free_arrays[cap];
   free_arrays[cap] = arr;
}

// ctx's array made anew with room for [0, end), its counters copied: an
// array holds its function's blocks up to the last one that ran in the
// context. (Room for every block of the function translated so far cost
// cc1plus 6 MB at k=2, 2 % of its peak RSS, for 2-3 % of its time: fewer
// growths.)
static ULong* grow_counter_array(ForestNode* ctx, const FnInfo* fn, UInt end)
{
   ULong* old = counter_array(ctx);
   UInt old_cap = array_capacity(ctx);
   UInt cap = end;
   ULong* arr = new_counter_array(cap);
   if (old) {
      VG_(memcpy)(arr, old, old_cap * sizeof(ULong));
      free_counter_array(old, old_cap);
   } else {
      remember_array_context(ctx);
   }
   *counter_array_word(ctx) = arr;
   *array_limit_word(ctx) = array_limit(fn->id, cap);
   return arr;
}

ULong* array_counters(ForestNode* ctx, BlockInfo* blk)
{
   if (!kg_counting || ctx == kCallPending || blk->array_offset == kNoArrayOffset || ctx->label != blk->fn()->id + 1)
      return nullptr;
   UInt end = blk->array_offset + counter_count(blk);
   ULong* arr = counter_array(ctx);
   if (array_capacity(ctx) < end) arr = grow_counter_array(ctx, blk->fn(), end);
   return arr + blk->array_offset;
}

// At exit and at a dump, each counter array is one more group of
// ExitCosts: its refs are its function's blocks that have an offset
// (shared by the function's arrays, in the order of their offsets, so that
// those within an array's capacity are a prefix), its base the array's
// offset in the counter store (or in a dump's copy). At exit a group is
// described when it is read, from its context and its number of refs (a
// ContextBlocks each was 2.4 MB of cc1plus's k=2 peak).
class ArrayGroups {
public:
   void make()
   {
      UInt n_fns = function_count();
      first_ = (UInt*)alloc_zeroed((n_fns + 2) * sizeof(UInt), "kg.arrays");
      UWord n_refs = 0;
      for (UWord i = 0; i < n_blocks; i++) {
         if (all_blocks[i]->array_offset == kNoArrayOffset) continue;
         first_[all_blocks[i]->fn()->id + 2]++;
         n_refs++;
      }
      for (UInt f = 1; f <= n_fns; f++) first_[f + 1] += first_[f];
      // Blocks are made in the order their offsets were given.
      refs_ = (CountersRef*)kg::alloc((n_refs + 1) * sizeof(CountersRef), "kg.arrays");
      for (UWord i = 0; i < n_blocks; i++) {
         const BlockInfo* blk = all_blocks[i];
         if (blk->array_offset != kNoArrayOffset) refs_[first_[blk->fn()->id + 1]++] = counters_ref(blk->id, blk->array_offset);
      }
      // first_[f] is where function f's refs start, first_[f + 1] where they end.
   }
   // How many of its function's refs ctx's array holds (at most
   // kArrayCounters).
   UInt refs_held(const ForestNode* ctx) const
   {
      const CountersRef* refs = function_refs(ctx);
      UInt n = first_[ctx->label] - first_[ctx->label - 1];
      UInt held = 0;
      while (held < n && ref_offset(refs[held]) + counter_count(block_by_id(ref_block_id(refs[held]))) <=
                            array_capacity((ForestNode*)ctx))
         held++;
      return held;
   }
   // The group of ctx's array, whose counters are at base.
   ContextBlocks describe(const ForestNode* ctx, UInt base, UInt held) const
   {
      return { ctx, function_refs(ctx), { base }, held };
   }
   // The same in the counter store.
   ContextBlocks describe(const ForestNode* ctx, UInt held) const
   {
      return describe(ctx, array_store_offset(counter_array((ForestNode*)ctx)), held);
   }
   void release()
   {
      kg::release(first_);
      kg::release(refs_);
      first_ = nullptr;
      refs_ = nullptr;
   }

private:
   CountersRef* function_refs(const ForestNode* ctx) const { return refs_ + first_[ctx->label - 1]; }

   UInt* first_ = nullptr;
   CountersRef* refs_ = nullptr;
};
ArrayGroups array_groups;

// Counting switched on or off: every array's limit says so.
static void mark_counter_arrays()
{
   for (UWord c = 0; c < n_array_contexts; c++) {
      ForestNode* ctx = array_contexts[c];
      *array_limit_word(ctx) = array_limit(ctx->label - 1, array_capacity(ctx));
   }
}

static void zero_counter_arrays()
{
   for (UWord c = 0; c < n_array_contexts; c++)
      VG_(memset)(counter_array(array_contexts[c]), 0, array_capacity(array_contexts[c]) * sizeof(ULong));
}

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

// The block's counters that are flush points' (block modes: points).
static UInt flush_points(const BlockInfo* blk)
{
   return blk->n_slots - blk->stub_counter;
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

ContextBlocks ExitCosts::blocks(UWord g) const
{
   UWord where = groups_[g].where;
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
   return { block_by_id(ref_block_id(ref)), copied_counters_ ? copied_counters_ + offset : counter_store.at(offset) };
}

void ExitCosts::take(Bool per_instruction)
{
   per_instruction_ = per_instruction;
   UWord n_tables;
   ContextBlocks** tables = block_counters.take_contexts(&n_tables);
   // The arrays' groups after the tables'.
   array_groups.make();
   groups_ = (CostGroup*)kg::alloc((n_tables + n_array_contexts + 1) * sizeof(CostGroup), "kg.exit");
   for (n_groups_ = 0; n_groups_ < n_tables; n_groups_++) groups_[n_groups_] = table_group(tables[n_groups_]);
   kg::release(tables);
   for (UWord c = 0; c < n_array_contexts; c++)
      groups_[n_groups_++] = array_group(array_contexts[c], array_groups.refs_held(array_contexts[c]));
   for_each_entry([](const CountedBlock& e) { count_reached(e); });
}

void ExitCosts::snapshot(Bool per_instruction)
{
   per_instruction_ = per_instruction;
   UWord n_groups = 0, n = 0, n_counters = 0;
   block_counters.for_each([&](const ContextBlocks*, CountersRef ref) {
      n++;
      n_counters += counter_count(block_by_id(ref_block_id(ref)));
   });
   block_counters.for_each_context([&](ContextBlocks*) { n_groups++; });
   for (UWord c = 0; c < n_array_contexts; c++) n_counters += array_capacity(array_contexts[c]);
   tl_assert(n_counters >> 32 == 0);
   // One block: the copied tables, their refs, the counters (refs are
   // offsets into these).
   copies_ = (UChar*)kg::alloc((n_groups + n_array_contexts) * sizeof(ContextBlocks) + (n + n_counters) * sizeof(UWord) + 1,
                               "kg.dump");
   groups_ = (CostGroup*)kg::alloc((n_groups + n_array_contexts + 1) * sizeof(CostGroup), "kg.dump");
   ContextBlocks* group = (ContextBlocks*)copies_;
   CountersRef* refs = (CountersRef*)(group + n_groups + n_array_contexts);
   copied_counters_ = (ULong*)(refs + n);
   UInt copied = 0;
   n_groups_ = 0;
   block_counters.for_each_context([&](ContextBlocks* c) {
      ContextBlocks* copy = group++;
      *copy = { c->a, refs, { 0 }, 0 };
      for (UInt i = 0; i < c->cap; i++) {
         CountersRef ref = c->slots[i];
         if (!ref) continue;
         UInt m = counter_count(block_by_id(ref_block_id(ref)));
         VG_(memcpy)(copied_counters_ + copied, counter_store.at(ref_offset(ref)), m * sizeof(ULong));
         copy->slots[copy->used++] = counters_ref(ref_block_id(ref), copied);
         copied += m;
      }
      refs += copy->used;
      groups_[n_groups_++] = table_group(copy);
   });
   // The arrays' groups, with copies of their counters.
   array_groups.make();
   for (UWord c = 0; c < n_array_contexts; c++) {
      ForestNode* ctx = array_contexts[c];
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
         for (UInt i = 0; i < c.used; i++) w += cost_items(block_by_id(ref_block_id(c.slots[i])), per_instruction_);
      }
      if (w > widest) widest = w;
   }
   kg::release(scratch_);
   scratch_ = (ContextLineCost*)kg::alloc((widest + 1) * sizeof(ContextLineCost));
}

void ExitCosts::set_exclusive_costs() const
{
   for (UWord g = 0; g < n_groups_; g++) ((ForestNode*)groups_[g].a)->excl = 0;
   for (UWord g = 0; g < n_groups_; g++) {
      ForestNode* ctx = (ForestNode*)groups_[g].a;
      ContextBlocks c = blocks(g);
      for (UInt i = 0; i < c.used; i++)
         for_each_cost(entry(c, i), per_instruction_, [ctx](SourceLine*, Addr, ULong ir) { ctx->excl += ir; });
   }
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
            scratch_[m++] = { (ForestNode*)ctx, line, addr, ir };
         });
      }
   }
   *out = scratch_;
   return sort_and_fold(scratch_, m, per_instruction_ ? compare_instr_costs : compare_context_costs, add_ir);
}

void ExitCosts::release()
{
   array_groups.release();
   kg::release(copies_);
   copies_ = nullptr;
   copied_counters_ = nullptr;
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
static UWord superblock_jumps(const ForestNode* ctx, const BlockInfo* blk, const ULong* counters, ContextJump* out)
{
   UWord n = 0;
   UInt points = flush_points(blk);
   for (UInt j = 0; j < points; j++) {
      const FlushPoint& p = blk->points()[j];
      if (!p.jump_target) continue;
      ULong taken = counters[j] - (j + 1 < points ? counters[j + 1] : 0);
      if (!taken) continue;
      const InstrPos& x = blk->instrs()[p.instr];
      ULong executed = x.cond ? counters[x.point] : taken;
      out[n++] = { (ForestNode*)ctx, x.addr, x.line, p.jump_target, x.cond, taken, executed };
   }
   return n;
}

UWord collect_jumps(ContextJump** out)
{
   UWord n = 0, cap = 0;
   block_counters.for_each([&](const ContextBlocks*, CountersRef ref) { cap += block_by_id(ref_block_id(ref))->n_slots; });
   indirect_jumps.for_each([&](IndirectJumps* e) { cap += e->n; });
   ContextJump* all = (ContextJump*)kg::alloc((cap + 1) * sizeof(ContextJump));
   block_counters.for_each([&](const ContextBlocks* c, CountersRef ref) {
      const BlockInfo* blk = block_by_id(ref_block_id(ref));
      if (clo.dump_instr) n += superblock_jumps((const ForestNode*)c->a, blk, counter_store.at(ref_offset(ref)), all + n);
   });
   indirect_jumps.for_each([&](IndirectJumps* e) {
      const BlockInfo* blk = (const BlockInfo*)e->b;
      const InstrPos& x = blk->instrs()[blk->n_instrs - 1];
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
   const CallEdge* a = *(const CallEdge* const*)pa;
   const CallEdge* b = *(const CallEdge* const*)pb;
   if (a->a != b->a) return (UWord)a->a < (UWord)b->a ? -1 : 1;
   if (a->b != b->b) return (UWord)a->b < (UWord)b->b ? -1 : 1;
   if (a->call_site != b->call_site) return a->call_site < b->call_site ? -1 : 1;
   return 0;
}

UWord merge_call_edges(CallEdge** all, UWord n)
{
   VG_(ssort)(all, n, sizeof(CallEdge*), compare_edges);
   UWord merged = 0;
   for (UWord i = 0; i < n; i++) {
      if (merged && compare_edges(&all[merged - 1], &all[i]) == 0) {
         all[merged - 1]->calls += all[i]->calls;
         all[merged - 1]->incl += all[i]->incl;
      } else {
         all[merged++] = all[i];
      }
   }
   return merged;
}

static Bool edge_used(const CallEdge* e) { return e->calls || e->incl; }

static UWord used_edges_in_chain(const CallEdge* first)
{
   UWord n = 0;
   for (const CallEdge* e = first; e; e = e->next_site) n += edge_used(e);
   return n;
}

// At exit: the used edges in the index's memory, each (caller, callee)'s
// chain in place of its first edge, in the index's order (an array of them
// was 1.9 MB of cc1plus's k=2 peak). Chains without a used edge are
// dropped first, so that each chain's edges land at or after its own slot:
// laid out from the back, they overwrite only chains already laid out.
static UWord take_used_edges(CallEdge*** out)
{
   UWord n_chains, room, kept = 0, n = 0;
   CallEdge** chains = call_edges.take_entries(&n_chains, &room);
   for (UWord i = 0; i < n_chains; i++) {
      UWord used = used_edges_in_chain(chains[i]);
      if (!used) continue;
      chains[kept++] = chains[i];
      n += used;
   }
   CallEdge** all = n < room ? chains : (CallEdge**)kg::alloc((n + 1) * sizeof(CallEdge*), "kg.out");
   UWord end = n;
   for (UWord c = kept; c-- > 0;) {
      CallEdge* first = chains[c];
      end -= used_edges_in_chain(first);
      UWord at = end;
      for (CallEdge* e = first; e; e = e->next_site)
         if (edge_used(e)) all[at++] = e;
   }
   if (all != chains) kg::release(chains);
   *out = all;
   return n;
}

UWord collect_call_edges(Bool at_exit, CallEdge*** out, CallEdge** copies)
{
   *copies = nullptr;
   if (at_exit) {   // their keys may change now: the index goes
      UWord n = take_used_edges(out);
      return merge_call_edges(*out, n);
   }
   UWord cap = 0, n = 0;
   for_each_edge([&](CallEdge* e) { cap += edge_used(e); });
   CallEdge** all = (CallEdge**)kg::alloc((cap + 1) * sizeof(CallEdge*), "kg.out");
   CallEdge* copy = (CallEdge*)kg::alloc((cap + 1) * sizeof(CallEdge), "kg.dump");
   for_each_edge([&](CallEdge* e) {
      if (!edge_used(e)) return;
      copy[n] = *e;
      all[n] = &copy[n];
      n++;
   });
   *out = all;
   *copies = copy;
   return merge_call_edges(all, n);
}

void reset_costs()
{
   zero_counter_arrays();
   block_counters.for_each([](const ContextBlocks*, CountersRef ref) {
      VG_(memset)(counter_store.at(ref_offset(ref)), 0, counter_count(block_by_id(ref_block_id(ref))) * sizeof(ULong));
   });
   for_each_edge([](CallEdge* e) { e->calls = 0; e->incl = 0; });
   indirect_jumps.for_each([](IndirectJumps* e) {
      for (UInt i = 0; i < e->n; i++) e->targets[i].count = 0;
   });
}

} // namespace kg
