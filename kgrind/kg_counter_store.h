// Where the (context, block) counters live: one store of every counter, and
// a small table per context of its blocks' counters. The lookup
// (kg_counters.cpp) fills them; the exit's costs (kg_exit_costs.cpp) and
// the jumps (kg_jumps.cpp) read them.
#pragma once
#include "kg_block_info.h"
#include "kg_debuginfo.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

// The counters of one (context, block), as a context's table holds them:
// the block's id above a 32-bit offset into the counter store (a slot needs
// no key in the counters' memory, and a probe compares ids without following
// a pointer: the 16-byte (context, block) key took 24 MB on cc1plus,
// docs/design/counting.md). 0 is a free slot (ids start at 1).
typedef UWord CountersRef;
inline CountersRef counters_ref(UInt block_id, UInt offset) { return (UWord)block_id << 32 | offset; }
inline UInt ref_block_id(CountersRef r) { return (UInt)(r >> 32); }
inline UInt ref_offset(CountersRef r) { return (UInt)r; }

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

// Every (context, block)'s counters, back to back in 64 KB chunks that
// never move (blocks cache pointers to them), each found by a 32-bit offset
// in counters of type Counter.
template <typename Counter>
class CounterStoreOf {
public:
   // Room for n zeroed counters (n at most a chunk); its offset.
   UInt add(UInt n)
   {
      tl_assert(n <= kChunkCounters);
      if (n < kRecycledSizes && free_[n]) {
         UInt offset = free_[n] - 1;
         Counter* c = at(offset);
         free_[n] = (UInt)c[0];
         VG_(memset)(c, 0, n * sizeof(Counter));
         return offset;
      }
      if (n > room_) new_chunk();
      UInt offset = next_;
      next_ += n;
      room_ -= n;
      return offset;
   }
   Counter* at(UInt offset) const { return chunks_[offset >> kChunkShift] + (offset & (kChunkCounters - 1)); }
   // n counters at offset that nothing counts into any more (their
   // context went: a thread that ended), for the next add(n). Runs of
   // kRecycledSizes counters and more stay where they are.
   void recycle(UInt offset, UInt n)
   {
      if (!n || n >= kRecycledSizes) return;
      at(offset)[0] = free_[n];
      free_[n] = offset + 1;
   }
   // Every counter given back and zeroed (all of them were reset); the
   // chunks stay for the next adds.
   void rewind()
   {
      for (UWord c = 0; c < n_chunks_; c++) VG_(memset)(chunks_[c], 0, kChunkCounters * sizeof(Counter));
      n_chunks_ = 0;
      next_ = room_ = 0;
      VG_(memset)(free_, 0, sizeof free_);
   }

private:
   static const UInt kRecycledSizes = 256;
   static const UInt kChunkShift = sizeof(Counter) == 8 ? 13 : 14;   // 64 KB chunks, as alloc_permanent's
   static const UInt kChunkCounters = 1u << kChunkShift;

   void new_chunk()
   {
      UWord chunk = n_chunks_++;
      if (chunk >> (32 - kChunkShift))
         VG_(tool_panic)((HChar*)"kgrind: more than 2^32 counters: too many (context, block) pairs");
      next_ = (UInt)(chunk << kChunkShift);
      room_ = kChunkCounters;
      if (chunk < n_made_) return;   // zeroed by rewind
      n_made_++;
      if (chunk == chunks_cap_) {
         UWord cap = chunks_cap_ ? 2 * chunks_cap_ : 64;
         Counter** bigger = (Counter**)kg::alloc(cap * sizeof(Counter*), "kg.counters");
         if (chunk) VG_(memcpy)(bigger, chunks_, chunk * sizeof(Counter*));
         kg::release(chunks_);
         chunks_ = bigger;
         chunks_cap_ = cap;
      }
      chunks_[chunk] = (Counter*)alloc_zeroed(kChunkCounters * sizeof(Counter), "kg.counters");
   }

   Counter** chunks_ = nullptr;
   UWord chunks_cap_ = 0;
   UWord n_chunks_ = 0;  // in use
   UWord n_made_ = 0;    // allocated (rewind keeps them)
   UInt next_ = 0;       // offset of the next free counter
   UInt room_ = 0;       // free counters left in the last chunk
   UInt free_[kRecycledSizes] = {};   // recycled runs by size: offset + 1, linked through their first counter
};
using CounterStore = CounterStoreOf<ULong>;
extern CounterStore counter_store;

// The blocks' miss counters (kg_block_info.h, BlockEvents): a (context,
// block)'s, made at its first miss, are named by its anchor counter,
// their offset here plus one. Most (context, block)s of a large program
// never miss (cc1plus at k = 2 with --cache-sim: 74 % of them), and a
// miss is counted in 6 % of the slots. 32 bits a counter: a count's high
// part, past a wrap (4 G misses in one (context, line, event)), is kept
// aside (count_wrapped, below), so that the store is half the size
// (cc1plus at k = 2 --cache-sim=yes: 32 MB of 64-bit counters).
extern CounterStoreOf<UInt> miss_store;
inline UInt* miss_counters_of(ULong anchor) { return anchor ? miss_store.at((UInt)anchor - 1) : nullptr; }
// The counters every block counts into while counting is off: blocks of
// every layout share them, so an anchor there names nothing.
const UInt kUncountedSinkCounters = 16384;   // more than a block's (kMaxEventSlots, flush points)
extern ULong uncounted_sink[kUncountedSinkCounters];
inline Bool in_uncounted_sink(const ULong* c) { return (UWord)(c - uncounted_sink) < kUncountedSinkCounters; }
// Reads the tests' setting (make_miss_counters), at start.
void miss_counters_init();
// n new miss counters: their offset in miss_store plus 1.
ULong make_miss_counters(UInt n);
// The anchor's miss counters, n of them, made if there are none yet.
inline UInt* miss_counters(ULong* anchor, UInt n)
{
   if (__builtin_expect(!*anchor, 0)) *anchor = make_miss_counters(n);
   return miss_store.at((UInt)*anchor - 1);
}
// The high parts of miss counts past 2^32 (none in most runs): by counter.
// count_wrapped: the counter at `slot` went from 2^32 - 1 to 0.
void count_wrapped(const UInt* slot);
extern Bool miss_counts_wrapped;   // whether any has
ULong wrapped_part(const UInt* slot);
inline ULong miss_count(const UInt* slot) { return *slot + (__builtin_expect(miss_counts_wrapped, 0) ? wrapped_part(slot) : 0); }
// One more in the miss counter at `slot`.
inline void add_one_miss(UInt* slot)
{
   if (__builtin_expect(++*slot == 0, 0)) count_wrapped(slot);
}
// The (context, block) counters `from` added into `into` (blk's): flush
// points and inline slots, and the miss counters (moved where `into` has
// none). `from` no longer names its miss counters afterwards.
void add_block_counters(const BlockInfo* blk, ULong* into, ULong* from);
// Gives back the miss counters of a (context, block) nothing counts into
// any more.
void recycle_miss_counters(const BlockInfo* blk, const ULong* counters);

// Calls f(pos, event, count) for each non-zero event count of a (context,
// block)'s counters (blk's): its inline slots, its miss counters and the
// events its flush points count (counters holding reached counts). pos:
// the slot's position (EventSlot::line).
template <typename F>
void for_each_block_event(const BlockInfo* blk, const ULong* counters, F f)
{
   const BlockEvents* ev = events_of(blk);
   if (!ev) return;
   const ULong* c = counters + event_base(blk);
   for (UInt s = 0; s < ev->n_inline; s++)
      if (c[s]) f(ev->slots[s].line, ev->slots[s].event, c[s]);
   if (const UInt* misses = ev->n_miss ? miss_counters_of(c[ev->n_inline]) : nullptr) {
      const EventSlot* slots = ev->slots + ev->n_inline;
      for (UInt s = 0; s < ev->n_miss; s++)
         if (ULong count = miss_count(&misses[s])) f(slots[s].line, slots[s].event, count);
   }
   for (UInt i = 0; i < ev->n_by_point; i++) {
      const PointEvent& p = ev->by_point[i];
      if (ULong reached = counters[p.point]) f(p.line, p.event, reached * p.times);
   }
}

// The (context, block) counters, indexed per context: a block that misses
// its inline ways (a function run in many contexts: cc1plus, 130 M misses)
// probes its context's own small table, whose slots stay in the cache while
// the context and its callers run, instead of one table of every pair (1.5 M
// pairs on cc1plus: two cache misses a probe, 19 % of the run's time; 9 %
// less CPU time with these tables, docs/design/counting.md). A context's table
// is found through a small cache of recent contexts: misses come in runs,
// from the blocks of one activation and of its caller.
class BlockCountersIndex {
public:
   // The counters of (ctx, blk), created zeroed with room for n_counters.
   // Inlined into its one caller, point_block_at_table (a block's way miss).
   __attribute__((always_inline)) ULong* get(const ForestNode* ctx, const BlockInfo* blk, UInt n_counters)
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

   // ctx's table, or null.
   const ContextBlocks* table_of(const ForestNode* ctx) const { return contexts_.find(ctx, nullptr); }

   // Drops the tables of the contexts for which gone(ctx) holds, giving
   // back their slots and counters (their contexts' nodes are about to be
   // freed, and new ones may get their addresses).
   template <typename Gone> void forget_contexts(Gone gone)
   {
      VG_(memset)(recent_, 0, sizeof recent_);
      contexts_.remove_if([&](ContextBlocks* c) {
         if (!gone((const ForestNode*)c->a)) return False;
         for (UInt i = 0; i < c->cap; i++)
            if (c->slots[i]) {
               const BlockInfo* blk = block_with_id(ref_block_id(c->slots[i]));
               recycle_miss_counters(blk, counter_store.at(ref_offset(c->slots[i])));
               counter_store.recycle(ref_offset(c->slots[i]), counter_count(blk));
            }
         free_slots(c->slots, c->cap);
         c->slots = (CountersRef*)free_tables_;
         free_tables_ = c;
         return True;
      });
   }

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
         c = free_tables_;
         if (c) {
            free_tables_ = (ContextBlocks*)c->slots;
            VG_(memset)(c, 0, sizeof(ContextBlocks));
         } else {
            c = (ContextBlocks*)alloc_permanent(sizeof(ContextBlocks));
         }
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
   ContextBlocks* free_tables_ = nullptr;   // given back (forget_contexts), linked through slots
};
extern BlockCountersIndex block_counters;   // probed at every context change of a block

// The contexts that have a counter array (kg_counters.h), each once, and
// their arrays.
UWord array_context_count();
ForestNode* array_context(UWord i);
ULong* counter_array(ForestNode* ctx);
// The function whose blocks ctx's array holds (its label's, or for an
// inlined level's context a physical function's).
UInt array_function_id(const ForestNode* ctx);
UInt array_capacity(ForestNode* ctx);
// An array's offset in the counter store.
inline UInt array_store_offset(const ULong* arr) { return (UInt)arr[-1]; }

// The blocks of each function's counter arrays, to read an array as a group
// of (context, block) counters: at exit and at a dump (one more group of
// ExitCosts), and when a context's counters move. A group's refs are its
// function's blocks that have an offset (shared by the function's arrays,
// in the order of their offsets, so that those within an array's capacity
// are a prefix), its base the array's offset in the counter store (or in a
// dump's copy). At exit a group is described when it is read, from its
// context and its number of refs (a ContextBlocks each was 2.4 MB of
// cc1plus's k=2 peak).
class ArrayGroups {
public:
   void make()
   {
      UInt n_fns = function_count();
      first_ = (UInt*)alloc_zeroed((n_fns + 2) * sizeof(UInt), "kg.arrays");
      UWord n_refs = 0;
      for (UInt id = 1; id <= block_info_count(); id++) {
         if (block_with_id(id)->array_offset == kNoArrayOffset) continue;
         first_[block_with_id(id)->fn()->id + 2]++;
         n_refs++;
      }
      for (UInt f = 1; f <= n_fns; f++) first_[f + 1] += first_[f];
      // Blocks are made in the order their offsets were given.
      refs_ = (CountersRef*)kg::alloc((n_refs + 1) * sizeof(CountersRef), "kg.arrays");
      for (UInt id = 1; id <= block_info_count(); id++) {
         const BlockInfo* blk = block_with_id(id);
         if (blk->array_offset != kNoArrayOffset) refs_[first_[blk->fn()->id + 1]++] = counters_ref(blk->id, blk->array_offset);
      }
      // first_[f] is where function f's refs start, first_[f + 1] where they end.
   }
   // How many of its function's refs ctx's array holds (at most
   // kArrayRoom).
   UInt refs_held(const ForestNode* ctx) const
   {
      const CountersRef* refs = function_refs(ctx);
      UInt fn_id = array_function_id(ctx);
      UInt n = first_[fn_id + 1] - first_[fn_id];
      UInt held = 0;
      while (held < n && ref_offset(refs[held]) + counter_count(block_with_id(ref_block_id(refs[held]))) <=
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

   // The refs of the function whose blocks ctx's array holds.
   CountersRef* function_refs(const ForestNode* ctx) const { return refs_ + first_[array_function_id(ctx)]; }

private:
   UInt* first_ = nullptr;
   CountersRef* refs_ = nullptr;
};

} // namespace kg
