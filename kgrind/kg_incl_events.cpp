#include "kg_incl_events.h"
#include "kg_events.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

namespace {

// Apart from the edges and nodes: nothing of theirs grows without events.
struct InclEvents {
   const void* a;   // the edge or node
   const void* b;   // null
   ULong* counts;
};
PairMap<InclEvents> incl_events;

} // namespace

ULong* incl_events_of(const void* edge_or_node, Bool make)
{
   if (!make) {
      InclEvents* e = incl_events.find(edge_or_node, nullptr);
      return e ? e->counts : nullptr;
   }
   InclEvents* e = incl_events.get(edge_or_node, nullptr);
   if (!e->counts) {
      SizeT bytes = extra_event_count() * sizeof(ULong);
      e->counts = (ULong*)alloc_permanent(bytes);
      VG_(memset)(e->counts, 0, bytes);
   }
   return e->counts;
}

void reset_incl_events()
{
   UInt n = extra_event_count();
   incl_events.for_each([n](InclEvents* e) { VG_(memset)(e->counts, 0, n * sizeof(ULong)); });
}

} // namespace kg
