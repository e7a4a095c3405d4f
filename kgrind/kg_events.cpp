#include "kg_events.h"
#include "core/branch_model.h"
#include "core/cache_model.h"
#include "kg_counter_store.h"
#include "kg_options.h"
#include "kg_runtime.h"

namespace kg {

namespace {

const HChar* const kEventNames[kEventIds] = {
   "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim", "Ge",
   "sysCount", "sysTime", "sysCpuTime",
};

// The caches' tags: fresh anonymous pages (zeroed, and touched only where
// the program's lines fall: a 512 MB LL has 64 MB of tags), each mapping's
// length in a header before the tags.
const SizeT kTagsHeader = 64;
void* tags_alloc(void*, size_t n)
{
   SizeT len = VG_PGROUNDUP(n + kTagsHeader);
   UChar* p = (UChar*)VG_(am_shadow_alloc)(len);
   if (!p) VG_(out_of_memory_NORETURN)((HChar*)"kg.cache", len);
   *(SizeT*)p = len;
   return p + kTagsHeader;
}
void tags_free(void*, void* p)
{
   UChar* start = (UChar*)p - kTagsHeader;
   VG_(am_munmap_valgrind)((Addr)start, *(SizeT*)start);
}
const core::Allocator kTagsAllocator = { nullptr, tags_alloc, tags_free, true };

core::CacheHierarchy caches;
core::BranchPredictor* predictor;

struct Geometry {
   const HChar* name;   // "I1", "D1", "LL"
   core::CacheGeometry g;
};
Geometry i1 = { "I1", {} }, d1 = { "D1", {} }, ll = { "LL", {} };

// cachegrind's fallback where the host says nothing: a model 3/4 Athlon's.
const core::CacheGeometry kFallbackI1 = { 65536, 2, 64 };
const core::CacheGeometry kFallbackD1 = { 65536, 2, 64 };
const core::CacheGeometry kFallbackLL = { 262144, 8, 64 };

core::CacheGeometry of_vex(const VexCache& c) { return { c.sizeB, c.assoc, c.line_sizeB }; }

// The host's caches as VEX read them (CPUID): I1 and D1 the first level's
// instruction and data caches (or its unified one), LL the highest level's.
void host_geometry()
{
   VexArch arch;
   VexArchInfo info;
   VG_(machine_get_VexArchInfo)(&arch, &info);
   const VexCacheInfo& ci = info.hwcache_info;
   Bool have_i1 = False, have_d1 = False, have_ll = False;
   UInt ll_level = 0;
   for (UInt i = 0; i < ci.num_caches; i++) {
      const VexCache& c = ci.caches[i];
      if (c.level == 1 && (c.kind == INSN_CACHE || c.kind == UNIFIED_CACHE)) { i1.g = of_vex(c); have_i1 = True; }
      if (c.level == 1 && (c.kind == DATA_CACHE || c.kind == UNIFIED_CACHE)) { d1.g = of_vex(c); have_d1 = True; }
      if (c.level >= 2 && c.level > ll_level && c.kind != INSN_CACHE) {
         ll.g = of_vex(c);
         ll_level = c.level;
         have_ll = True;
      }
   }
   if (!have_i1 || !have_d1 || !have_ll) {
      VG_(umsg)("Warning: the host's cache configuration is unknown: simulating a model 3/4 Athlon's "
                "(give --I1, --D1 and --LL to choose)\n");
      i1.g = kFallbackI1;
      d1.g = kFallbackD1;
      ll.g = kFallbackLL;
   }
}

// A host cache whose number of sets is not a power of two cannot be
// simulated as it is. Sets of 3 x 2^n (6, 12, 24 MB caches) become 2^(n+1)
// sets of 1.5 times the ways, the size kept; any other count (a virtual
// machine's 508 MB, direct-mapped) the next power of two in size with twice
// the ways, which is what cachegrind 3.19 simulates on such a host (the one
// case measured: tests/test_events.py). Said in a warning, as cachegrind does.
void adjust_host_cache(Geometry& c)
{
   core::CacheGeometry g = c.g;
   if (!g.assoc || !g.line || !g.size || g.size % g.line) return;
   ULong lines = g.size / g.line;
   if (lines % g.assoc == 0 && core::is_power_of_two(lines / g.assoc)) return;
   ULong sets = lines / g.assoc;
   if (lines % g.assoc == 0 && sets % 3 == 0 && core::is_power_of_two(sets / 3) && g.assoc % 2 == 0) {
      c.g.assoc = g.assoc * 3 / 2;
   } else {
      ULong size = 1;
      while (size < g.size) size *= 2;
      c.g.size = size;
      c.g.assoc = 2 * g.assoc;
   }
   if (VG_(clo_verbosity) > 0)
      VG_(umsg)("Warning: the host's %s cache (%llu B, %llu-way, %llu B lines) has a number of sets that is "
                "not a power of two: simulating %llu B, %llu-way\n", c.name, (ULong)g.size, (ULong)g.assoc,
                (ULong)g.line, (ULong)c.g.size, (ULong)c.g.assoc);
}

void choose(Geometry& c, const CacheOption& given)
{
   if (given.given) c.g = { given.size, given.assoc, given.line };
   else adjust_host_cache(c);
   const HChar* error = core::cache_geometry_error(c.g);
   if (!error) return;
   if (given.given) {
      HChar opt[96];
      VG_(snprintf)(opt, sizeof opt, "--%s=%llu,%llu,%llu", c.name, given.size, given.assoc, given.line);
      VG_(fmsg_bad_option)(opt, "%s: %s\n", opt, error);
   } else {
      VG_(fmsg_bad_option)("--cache-sim=yes", "the host's %s cache (%llu B, %llu-way, %llu B lines) cannot be "
                           "simulated: %s; give --%s=<size>,<associativity>,<line size>\n",
                           c.name, (ULong)c.g.size, (ULong)c.g.assoc, (ULong)c.g.line, error, c.name);
   }
   VG_(exit)(1);
}

void write_cache_desc(FileWriter& out, const Geometry& c)
{
   out.printf("desc: %s cache: %llu B, %llu B, ", c.name, (ULong)c.g.size, (ULong)c.g.line);
   if (c.g.assoc == 1) out.put("direct-mapped\n");
   else out.printf("%llu-way associative\n", (ULong)c.g.assoc);
}

// Before any thread runs.
ULong no_thread_clock[kEventIds];

// The miss counters of a helper's site (its first slot), made at the
// (context, block)'s first miss. While counting is off the block's
// counters are scratch that every block shares (its anchor may be another
// block's count: the sink, or frameless inlined levels' scratch records):
// its misses go to more scratch. Not for a block's one
// miss slot, which is inline (count_branch).
UInt uncounted_misses[4];
inline UInt* miss_slots(ULong* counters, UWord site)
{
   ULong* anchor = counters + EventSite::anchor(site);
   if (__builtin_expect(in_uncounted_sink(anchor) || kg_events_paused, 0)) return uncounted_misses;
   return miss_counters(anchor, EventSite::n_miss(site)) + EventSite::first_slot(site);
}

// A miss counted in `slots`, the access's two (I1mr ILmr, D1mr DLmr or
// D1mw DLmw), and on the clock: bit 0 of m is a first-level miss, bit 1 a
// last-level one (core::CacheMiss).
inline void count_miss_slots(UInt* slots, core::CacheMiss m, EventId l1, EventId ll)
{
   ULong* clock = kg_event_clock;
   add_one_miss(&slots[0]);
   clock[l1]++;
   if (m == core::kLLMiss) {
      add_one_miss(&slots[1]);
      clock[ll]++;
   }
}

// An access's misses, from its site's slots (made at the first), `skip`
// slots on. Most accesses hit: one test.
inline void count_misses(ULong* counters, UWord site, UInt skip, core::CacheMiss m, EventId l1, EventId ll)
{
   if (__builtin_expect(m == core::kHit, 1)) return;
   count_miss_slots(miss_slots(counters, site) + skip, m, l1, ll);
}

// A guarded access: its count (e: Dr or Dw) and its misses.
inline void count_access(ULong* counters, UWord site, core::CacheMiss m, EventId e, EventId l1, EventId ll)
{
   UInt* slots = miss_slots(counters, site);
   add_one_miss(&slots[0]);
   kg_event_clock[e]++;
   if (m != core::kHit) count_miss_slots(slots + 1, m, l1, ll);
}

// A branch: its count on the clock (the count itself is its flush
// point's), and its mispredict: in the block's one miss slot, inline
// where its anchor would be (a counter of the block's), or among its miss
// counters.
inline void count_branch(ULong* counters, UWord site, Bool mispredicted, EventId e, EventId miss)
{
   ULong* clock = kg_event_clock;
   clock[e]++;
   if (!mispredicted) return;
   if (EventSite::n_miss(site)) add_one_miss(miss_slots(counters, site));
   else counters[EventSite::anchor(site)]++;
   clock[miss]++;
}

} // namespace

ULong* kg_event_clock = no_thread_clock;

Bool event_on(UInt e)
{
   if (e <= kEvDw) return clo.cache_sim || clo.collect_data;
   if (e <= kEvDLmw) return clo.cache_sim;
   if (e <= kEvBim) return clo.branch_sim;
   if (e == kEvGe) return clo.collect_bus;
   if (e == kEvSysCpuTime) return clo.collect_systime == kSysTimeNsec;
   return clo.collect_systime != kSysTimeNo;
}

Bool extra_events_on() { return events_asked(); }

Bool event_is_rare(EventId e) { return e != kEvDr && e != kEvDw && e != kEvBc && e != kEvBi; }

Bool rare_column_pair(UInt c)
{
   if (!event_is_rare(extra_event_id(c))) return False;
   return c + 1 >= extra_event_count() || event_is_rare(extra_event_id(c + 1));
}

Bool pops_test_rare_events()
{
   UInt pairs = 0;
   for (UInt c = 0; c < extra_event_count(); c += 2) pairs += rare_column_pair(c);
   return pairs >= 2;
}

UInt extra_event_count() { return event_column(kEventIds); }

UInt incl_events_bytes() { return extra_events_on() ? extra_event_count() * sizeof(ULong) : 0; }

UInt event_column(EventId e)
{
   UInt column = 0;
   for (UInt f = 0; f < e; f++) column += event_on(f);
   return column;
}

void events_init()
{
   if (!extra_events_on()) return;
   miss_counters_init();
   if (clo.cache_sim) {
      host_geometry();
      choose(i1, clo.i1);
      choose(d1, clo.d1);
      choose(ll, clo.ll);
      caches.init(kTagsAllocator, i1.g, d1.g, ll.g);
   }
   if (clo.branch_sim) predictor = (core::BranchPredictor*)alloc_zeroed(sizeof(core::BranchPredictor), "kg.branch");
}

UInt i1_line_bits() { return core::log2_of_power(i1.g.line); }
UInt d1_line_bits() { return core::log2_of_power(d1.g.line); }
const ULong* i1_most_recent_of(Addr addr) { return (const ULong*)caches.i1_most_recent_of(addr >> i1_line_bits()); }
ULong i1_tag_of(Addr addr) { return core::CacheLevel::tag_of(addr >> i1_line_bits()); }

void write_cache_descs(FileWriter& out)
{
   if (!clo.cache_sim) return;
   write_cache_desc(out, i1);
   write_cache_desc(out, d1);
   write_cache_desc(out, ll);
}

void write_events_line(FileWriter& out)
{
   out.put("events: Ir");
   for (UInt e = 0; e < kEventIds; e++)
      if (event_on(e)) out.printf(" %s", kEventNames[e]);
   out.put_char('\n');
}

const HChar* extra_event_name(UInt column)
{
   for (UInt e = 0; e < kEventIds; e++)
      if (event_on(e) && column-- == 0) return kEventNames[e];
   tl_assert(0);
   return "";
}

EventId extra_event_id(UInt column)
{
   for (UInt e = 0; e < kEventIds; e++)
      if (event_on(e) && column-- == 0) return (EventId)e;
   tl_assert(0);
   return kEventIds;
}

void write_event_costs(FileWriter& out, const ULong* counts, UInt n)
{
   while (n && !counts[n - 1]) n--;
   for (UInt i = 0; i < n; i++) out.printf(" %llu", counts[i]);
}

extern "C" void kg_sim_fetch(ULong* counters, UWord site, Addr addr)
{
   count_misses(counters, site, 0, caches.fetch(addr, EventSite::fetch_len(site)), kEvI1mr, kEvILmr);
}

extern "C" void kg_sim_read(ULong* counters, UWord site, Addr addr)
{
   kg_event_clock[kEvDr]++;
   count_misses(counters, site, 0, caches.data(addr, EventSite::size(site)), kEvD1mr, kEvDLmr);
}

extern "C" void kg_sim_write(ULong* counters, UWord site, Addr addr)
{
   kg_event_clock[kEvDw]++;
   count_misses(counters, site, 0, caches.data(addr, EventSite::size(site)), kEvD1mw, kEvDLmw);
}

extern "C" void kg_sim_read_guarded(ULong* counters, UWord site, Addr addr)
{
   count_access(counters, site, caches.data(addr, EventSite::size(site)), kEvDr, kEvD1mr, kEvDLmr);
}

extern "C" void kg_sim_write_guarded(ULong* counters, UWord site, Addr addr)
{
   count_access(counters, site, caches.data(addr, EventSite::size(site)), kEvDw, kEvD1mw, kEvDLmw);
}

extern "C" void kg_sim_read_lines(ULong* counters, UWord site, Addr addr)
{
   count_misses(counters, site, 0, caches.data(addr, EventSite::size(site)), kEvD1mr, kEvDLmr);
}

extern "C" void kg_sim_write_lines(ULong* counters, UWord site, Addr addr)
{
   count_misses(counters, site, 0, caches.data(addr, EventSite::size(site)), kEvD1mw, kEvDLmw);
}

extern "C" void kg_sim_fetch_read(ULong* counters, UWord site, Addr iaddr, Addr addr)
{
   count_misses(counters, site, 0, caches.fetch(iaddr, EventSite::fetch_len(site)), kEvI1mr, kEvILmr);
   kg_event_clock[kEvDr]++;
   count_misses(counters, site, 2, caches.data(addr, EventSite::size(site)), kEvD1mr, kEvDLmr);
}

extern "C" void kg_sim_fetch_write(ULong* counters, UWord site, Addr iaddr, Addr addr)
{
   count_misses(counters, site, 0, caches.fetch(iaddr, EventSite::fetch_len(site)), kEvI1mr, kEvILmr);
   kg_event_clock[kEvDw]++;
   count_misses(counters, site, 2, caches.data(addr, EventSite::size(site)), kEvD1mw, kEvDLmw);
}

extern "C" void kg_sim_cond(ULong* counters, UWord site, Addr addr, UWord taken)
{
   count_branch(counters, site, predictor->conditional(addr, taken != 0), kEvBc, kEvBcm);
}

extern "C" void VG_REGPARM(1) kg_count_bus(ULong* slot)
{
   slot[0]++;
   kg_event_clock[kEvGe]++;
}

extern "C" void kg_sim_indirect(ULong* counters, UWord site, Addr addr, Addr target)
{
   count_branch(counters, site, predictor->indirect(addr, target), kEvBi, kEvBim);
}

} // namespace kg
