#include "kg_call_edges.h"
#include "kg_events.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

namespace {

PairMap<CallEdge> call_edges;

} // namespace

void call_edges_init()
{
   PairMap<CallEdge>::set_entry_room(incl_events_bytes());
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
   CallEdge* e = PairMap<CallEdge>::new_entry();
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

// A new array of a's events plus b's (a may be null).
static const ULong* summed_events(const ULong* a, const ULong* b)
{
   UInt n = extra_event_count();
   ULong* sum = (ULong*)kg::alloc(n * sizeof(ULong), "kg.out");
   for (UInt c = 0; c < n; c++) sum[c] = (a ? a[c] : 0) + b[c];
   return sum;
}

// e's inclusive events plus `more`: added in e's own array where e has
// it (the index's edges at exit, which nothing reads afterwards: cc1plus at
// k=2 merged 98,693 edges of contexts with the same name, whose new arrays
// took 6.3 MB with --cache-sim), else in a new one (a dump's copies, whose
// arrays are the running edges').
static const ULong* summed_into(CallEdge* e, const ULong* more)
{
   ULong* own = edge_incl_events(e);
   if (e->incl_events != own) return summed_events(e->incl_events, more);
   for (UInt c = 0, n = extra_event_count(); c < n; c++) own[c] += more[c];
   return own;
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
         CallEdge* into = all[merged - 1];
         into->calls += all[i]->calls;
         into->incl += all[i]->incl;
         if (all[i]->incl_events) into->incl_events = summed_into(into, all[i]->incl_events);
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
      for (UWord i = 0; i < n; i++) (*out)[i]->incl_events = extra_events_on() ? edge_incl_events((*out)[i]) : nullptr;
      return merge_call_edges(*out, n);
   }
   UWord cap = 0, n = 0;
   for_each_edge([&](CallEdge* e) { cap += edge_used(e); });
   CallEdge** all = (CallEdge**)kg::alloc((cap + 1) * sizeof(CallEdge*), "kg.out");
   CallEdge* copy = (CallEdge*)kg::alloc((cap + 1) * sizeof(CallEdge), "kg.dump");
   for_each_edge([&](CallEdge* e) {
      if (!edge_used(e)) return;
      copy[n] = *e;
      copy[n].incl_events = extra_events_on() ? edge_incl_events(e) : nullptr;
      all[n] = &copy[n];
      n++;
   });
   *out = all;
   *copies = copy;
   return merge_call_edges(all, n);
}

void move_call_edges(ForestNode* (*moved)(const void* node, void* arg), void* arg)
{
   tl_assert(!incl_events_bytes());   // compaction_on: no events beyond Ir
   UWord n = 0;
   call_edges.for_each([&](CallEdge* first) { n += moved(first->a, arg) || moved(first->b, arg); });
   if (!n) return;
   CallEdge** chains = (CallEdge**)kg::alloc(n * sizeof(CallEdge*));
   UWord m = 0;
   call_edges.for_each([&](CallEdge* first) {
      if (moved(first->a, arg) || moved(first->b, arg)) chains[m++] = first;
   });
   call_edges.remove_if([&](CallEdge* first) { return moved(first->a, arg) || moved(first->b, arg); });
   for (UWord i = 0; i < m; i++) {
      for (CallEdge* e = chains[i], *next; e; e = next) {
         next = e->next_site;
         ForestNode* a = moved(e->a, arg);
         ForestNode* b = moved(e->b, arg);
         CallEdge* into = call_edge(a ? a : (ForestNode*)e->a, b ? b : (ForestNode*)e->b, e->call_site);
         into->calls += e->calls;
         into->incl += e->incl;
         if (!into->target) into->target = e->target;
         PairMap<CallEdge>::recycle(e);
      }
   }
   kg::release(chains);
}

void reset_call_edges()
{
   for_each_edge([](CallEdge* e) {
      e->calls = 0;
      e->incl = 0;
      VG_(memset)(edge_incl_events(e), 0, incl_events_bytes());
   });
}

} // namespace kg
