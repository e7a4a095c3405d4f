#include "kg_counters.h"
#include "kg_hotpath.h"
#include "kg_array_ops.h"
#include "kg_counter_store.h"
#include "kg_debuginfo.h"
#include "kg_events.h"
#include "kg_runtime.h"

namespace kg {

CounterStore counter_store;
CounterStoreOf<UInt> miss_store;
BlockCountersIndex block_counters;

// ---- Miss counts past 2^32 --------------------------------------------------

namespace {
struct WrappedCount {
   const void* a;   // the counter (miss_store's chunks never move)
   const void* b;   // unused
   ULong high;      // 2^32 times the wraps
};
PairTable<WrappedCount, 16> wrapped_counts;
} // namespace
Bool miss_counts_wrapped;

void count_wrapped(const UInt* slot)
{
   wrapped_counts.get(slot, nullptr)->high += 1ULL << 32;
   miss_counts_wrapped = True;
}

ULong wrapped_part(const UInt* slot)
{
   const WrappedCount* w = wrapped_counts.find(slot, nullptr);
   return w ? w->high : 0;
}

// For tests: with KGRIND_TEST_MISS_WRAPS=1 in Valgrind's environment every
// miss counter starts 3 below 2^32 with its high part 2^32 - 3 below zero,
// so that its third count wraps and every count past it takes the path of
// counts past 2^32: the profile must be the same as without
// (tests/test_events.py).
static Bool test_wraps = False;
void miss_counters_init()
{
   const HChar* v = VG_(getenv)("KGRIND_TEST_MISS_WRAPS");
   test_wraps = v && VG_STREQ(v, "1");
}

ULong make_miss_counters(UInt n)
{
   UInt offset = miss_store.add(n);
   if (__builtin_expect(test_wraps, 0)) {
      const UInt kBelow = 3;
      UInt* c = miss_store.at(offset);
      for (UInt j = 0; j < n; j++) {
         c[j] = (UInt)(0 - kBelow);
         wrapped_counts.get(&c[j], nullptr)->high = (ULong)kBelow - (1ULL << 32);
      }
      miss_counts_wrapped = True;
   }
   return offset + 1ULL;
}

// n miss counters at `from` added into `into`'s, their high parts too;
// from's high parts are dropped (its counters are given back).
static void add_miss_counts(UInt* into, UInt* from, UInt n)
{
   for (UInt j = 0; j < n; j++) {
      UInt before = into[j];
      into[j] += from[j];
      if (into[j] < before) count_wrapped(&into[j]);
   }
   if (!miss_counts_wrapped) return;
   for (UInt j = 0; j < n; j++)
      if (WrappedCount* w = wrapped_counts.find(&from[j], nullptr)) {
         ULong high = w->high;
         w->high = 0;
         if (high) wrapped_counts.get(&into[j], nullptr)->high += high;
      }
}

// n miss counters at offset, which nothing counts into any more, given back.
static void recycle_misses(UInt offset, UInt n)
{
   if (miss_counts_wrapped)
      for (UInt j = 0; j < n; j++)
         if (WrappedCount* w = wrapped_counts.find(miss_store.at(offset) + j, nullptr)) w->high = 0;
   miss_store.recycle(offset, n);
}

void add_block_counters(const BlockInfo* blk, ULong* into, ULong* from)
{
   UInt n = counter_count(blk), anchor = miss_anchor_index(blk);
   for (UInt j = 0; j < n; j++)
      if (j != anchor) into[j] += from[j];
   if (anchor == kNoMissAnchor || !from[anchor]) return;
   if (!into[anchor]) {
      into[anchor] = from[anchor];
   } else {
      UInt n_miss = events_of(blk)->n_miss;
      add_miss_counts(miss_counters_of(into[anchor]), miss_counters_of(from[anchor]), n_miss);
      recycle_misses((UInt)from[anchor] - 1, n_miss);
   }
   from[anchor] = 0;
}

void recycle_miss_counters(const BlockInfo* blk, const ULong* counters)
{
   UInt anchor = miss_anchor_index(blk);
   if (anchor != kNoMissAnchor && counters[anchor]) recycle_misses((UInt)counters[anchor] - 1, events_of(blk)->n_miss);
}

static void mark_counter_arrays();

// counters_in's recent answers from the table, valid while the ways are (a
// generation of forget_cached_counters): a run of inlined levels misses the
// block's ways by design.
namespace {
struct RecentCounters {
   const ForestNode* ctx;
   const BlockInfo* blk;
   ULong* counters;
   UInt generation;
};
// 1,024 answers (32 KB, every page touched at start-up, as the hash
// spreads them): cc1plus at k = 2 missed 94 k of 1.44 M lookups with
// these, 38 k with 4,096; cppvirt and sqlite3 about 1 k either way.
const UInt kRecentCounters = 1024;
RecentCounters recent_counters[kRecentCounters];
UInt counters_generation = 1;
ULong recent_lookups, recent_misses;   // counters_in's (--stats)
// The runs' ways (new_run_way), in chunks.
const UInt kRunWayChunk = 1024;
CounterWay** run_way_chunks;
UWord n_run_way_chunks, run_way_chunks_cap;
UInt run_ways_in_last = kRunWayChunk;
} // namespace
CounterWay* new_run_way()
{
   if (run_ways_in_last == kRunWayChunk) {
      CounterWay* chunk = (CounterWay*)alloc_permanent(kRunWayChunk * sizeof(CounterWay));
      VG_(memset)(chunk, 0, kRunWayChunk * sizeof(CounterWay));
      append(run_way_chunks, n_run_way_chunks, run_way_chunks_cap, chunk, 64, "kg.runways");
      run_ways_in_last = 0;
   }
   return &run_way_chunks[n_run_way_chunks - 1][run_ways_in_last++];
}
void forget_cached_counters()
{
   forget_frameless_caches();
   counters_generation++;   // counters_in's recent answers
   mark_counter_arrays();
   for (UWord c = 0; c < n_run_way_chunks; c++)
      VG_(memset)(run_way_chunks[c], 0, kRunWayChunk * sizeof(CounterWay));
   for (UInt id = 1; id <= block_info_count(); id++)
      for (UInt w = 0; w < kCounterWays; w++) block_with_id(id)->ways[w] = { nullptr, nullptr };
}

// While counting is off every block counts into this scratch memory
// (never read; its pages are touched as far as blocks reach).
ULong uncounted_sink[kUncountedSinkCounters];
static ULong* uncounted_counters(UInt n_slots)
{
   tl_assert(n_slots <= kUncountedSinkCounters);
   return uncounted_sink;
}

void point_block_at_table(BlockInfo* blk, ForestNode* ctx)
{
   if (!kg_counting) {
      blk->ways[1] = blk->ways[0];
      blk->ways[0] = { ctx, uncounted_counters(counter_count(blk) + 1) };
      return;
   }
   ULong* counters = block_counters.get(ctx, blk, counter_count(blk));
   blk->ways[1] = blk->ways[0];   // the least recent way makes room
   blk->ways[0] = { ctx, counters };
}


// (ctx, blk)'s counters in ctx's table, which never move.
static ULong* table_counters(BlockInfo* blk, ForestNode* ctx)
{
   if (!kg_counting) return uncounted_counters(counter_count(blk) + 1);
   RecentCounters& r = recent_counters[((UWord)ctx >> 4 ^ (UWord)blk >> 3) % kRecentCounters];
   recent_lookups++;
   if (r.ctx == ctx && r.blk == blk && r.generation == counters_generation) return r.counters;
   recent_misses++;
   ULong* counters = block_counters.get(ctx, blk, counter_count(blk));
   r = { ctx, blk, counters, counters_generation };
   return counters;
}

ULong* counters_in(BlockInfo* blk, ForestNode* ctx)
{
   // An array moves when it grows: not kept.
   if (ULong* in_array = array_counters(ctx, blk)) return in_array;
   return table_counters(blk, ctx);
}

// Whether ctx is an inlined level's context (its label an inlined function).
static Bool level_context(const ForestNode* ctx)
{
   return ctx->label != kRootLabel && function_by_id(ctx->label - 1)->inlined;
}

ULong* run_way_counters(CounterWay* way, BlockInfo* blk, ForestNode* ctx)
{
   // A level's context's array is for the runs that check it inline; a run
   // with a way keeps its counters there in the table, where they do not
   // move, as the way holds them (the profile adds a context's table and
   // array).
   if (!level_context(ctx))
      if (ULong* in_array = array_counters(ctx, blk)) return in_array;
   *way = { ctx, table_counters(blk, ctx) };
   return way->counters;
}

void print_counter_stats()
{
   if (recent_lookups)
      VG_(dmsg)("kgrind counters: %llu lookups of a block's counters in a context, %llu not among the last %u\n",
                recent_lookups, recent_misses, kRecentCounters);
}

extern "C" void VG_REGPARM(1) kg_refresh_counters(BlockInfo* blk)
{
   point_block_at(blk, kg_now->ctx);
}

// ---- Counter arrays (kg_counters.h) ---------------------------------------------

// The contexts that have an array (each once), for dumps, zeroing and
// switching counting on and off.
static ForestNode** array_contexts;
static UWord n_array_contexts, array_contexts_cap;

ULong* counter_array(ForestNode* ctx) { return *counter_array_word(ctx); }
// The array's key (array_key) as its limit holds it.
static UInt array_key_of(const ForestNode* ctx) { return (*array_limit_word((ForestNode*)ctx) >> 8) & (2 * kLevelArrayFlag - 1); }
UInt array_function_id(const ForestNode* ctx) { return array_key_of(ctx) & ~kLevelArrayFlag; }
UInt array_capacity(ForestNode* ctx) { return *array_limit_word(ctx) & 0xFF; }
// The limit (cap: counters); its top bit fails every block's
// check while counting is off.
static UInt array_limit(UInt key, UInt cap)
{
   return (key << 8 | cap) | (kg_counting ? 0 : 1u << 31);
}

static void remember_array_context(ForestNode* ctx)
{
   append(array_contexts, n_array_contexts, array_contexts_cap, ctx, 1024, "kg.arrays");
}

// Arrays a context grew out of, by capacity, for other contexts' arrays:
// linked through their first counter, indexed by capacity.
static ULong* free_arrays[kArrayRoom + 1];

static ULong* new_counter_array(UInt cap)
{
   ULong*& free = free_arrays[cap];
   ULong* arr = free;
   if (arr) {
      free = (ULong*)arr[0];
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
// growths.) Events beyond Ir add a block's inline slots and miss anchor
// alone (kg_block_info.h), so arrays grow exactly with events too: cc1plus
// at k=2 --cache-sim=yes peaked at 518 MB so, 535 MB with arrays counted in
// units of eight counters that grew by half at least.
static ULong* grow_counter_array(ForestNode* ctx, UInt key, UInt end)
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
   *array_limit_word(ctx) = array_limit(key, cap);
   return arr;
}

// The key of ctx's array if it holds fn's blocks, else ~0u: the array's
// function, before its first array the context's own, or for an inlined
// level's context (whose code is a physical function's) the function of
// the first block that asks.
static UInt array_key_for(ForestNode* ctx, const FnInfo* fn)
{
   Bool level = level_context(ctx);
   UInt key = array_key(fn->id, level);
   if (counter_array(ctx)) return array_key_of(ctx) == key ? key : ~0u;
   return level || ctx->label == fn->id + 1 ? key : ~0u;
}

ULong* array_counters(ForestNode* ctx, BlockInfo* blk)
{
   if (!kg_counting || ctx == kCallPending || blk->array_offset == kNoArrayOffset) return nullptr;
   UInt key = array_key_for(ctx, blk->fn());
   if (key == ~0u) return nullptr;
   UInt end = blk->array_offset + counter_count(blk);
   ULong* arr = counter_array(ctx);
   if (array_capacity(ctx) < end) arr = grow_counter_array(ctx, key, end);
   return arr + blk->array_offset;
}

UWord array_context_count() { return n_array_contexts; }
ForestNode* array_context(UWord i) { return array_contexts[i]; }

// Counting switched on or off: every array's limit says so.
static void mark_counter_arrays()
{
   for (UWord c = 0; c < n_array_contexts; c++) {
      ForestNode* ctx = array_contexts[c];
      *array_limit_word(ctx) = array_limit(array_key_of(ctx), array_capacity(ctx));
   }
}

static void zero_counter_arrays()
{
   for (UWord c = 0; c < n_array_contexts; c++)
      VG_(memset)(counter_array(array_contexts[c]), 0, array_capacity(array_contexts[c]) * sizeof(ULong));
}

void move_context_counters(ForestNode* from, ForestNode* into, const ArrayGroups& groups)
{
   if (const ContextBlocks* c = block_counters.table_of(from)) {
      for (UInt i = 0; i < c->cap; i++) {
         CountersRef ref = c->slots[i];
         if (!ref) continue;
         BlockInfo* blk = block_with_id(ref_block_id(ref));
         add_block_counters(blk, block_counters.get(into, blk, counter_count(blk)), counter_store.at(ref_offset(ref)));
      }
   }
   ULong* arr = counter_arrays_on() ? counter_array(from) : nullptr;
   if (!arr) return;
   UInt cap = array_capacity(from);
   UInt key = array_key_of(from);
   if (!counter_array(into)) {   // the array itself moves
      *counter_array_word(into) = arr;
      *array_limit_word(into) = *array_limit_word(from);
      remember_array_context(into);
   } else {
      // Block by block (a block's miss anchor is no count): into's array
      // when it is the same function's, else (an inlined level's context
      // whose array holds another function's blocks: the two threads'
      // first blocks there were of two functions) into's table.
      ULong* dst = nullptr;
      if (array_key_of(into) == key) dst = array_capacity(into) < cap ? grow_counter_array(into, key, cap) : counter_array(into);
      const CountersRef* refs = groups.function_refs(from);
      for (UInt i = 0, held = groups.refs_held(from); i < held; i++) {
         BlockInfo* blk = block_with_id(ref_block_id(refs[i]));
         UInt offset = ref_offset(refs[i]);
         add_block_counters(blk, dst ? dst + offset : block_counters.get(into, blk, counter_count(blk)), arr + offset);
      }
      free_counter_array(arr, cap);
   }
   *counter_array_word(from) = nullptr;
   *array_limit_word(from) = 0;
}

void forget_counters_of(Bool (*gone)(const ForestNode* ctx, void* arg), void* arg)
{
   block_counters.forget_contexts([&](const ForestNode* ctx) { return gone(ctx, arg); });
   UWord kept = 0;
   for (UWord c = 0; c < n_array_contexts; c++)
      if (!gone(array_contexts[c], arg)) array_contexts[kept++] = array_contexts[c];
   n_array_contexts = kept;
   forget_cached_counters();
}

void reset_counters()
{
   zero_counter_arrays();
   block_counters.for_each([](const ContextBlocks*, CountersRef ref) {
      VG_(memset)(counter_store.at(ref_offset(ref)), 0, counter_count(block_with_id(ref_block_id(ref))) * sizeof(ULong));
   });
   miss_store.rewind();   // every anchor is 0 now
   wrapped_counts.clear();
   miss_counts_wrapped = False;
}

} // namespace kg
