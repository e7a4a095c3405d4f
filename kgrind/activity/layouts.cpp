// Activation layouts: where ActNodes, transitions and frame counts live
// in each mode (the table in kg_hotpath.h), the empty kid slots, and
// kg_now.

namespace kg {

Now* kg_now;

// What a transition's empty kid slots hold: a transition that matches no
// function, so that inline IR may read through it.
// Its `active` (activity_init): in the payload layout a view
// pair or an ActNode after a node, which inline IR reads the context
// through before it knows the kid is the one.
static ViewPair no_view_pair;
static struct {
   ForestNode node;
   ActNode act;
} no_node = {};
static Transition* no_kids[kKidSlots];
// With the room of its events' arrays, which an inline pop reads before it
// knows whether it popped (no arrays: the pop adds to the sink).
static struct {
   Transition tr;
   TransitionEvents events;
} no_transition_room = { { {0}, {0}, nullptr /* activity_init */, 0, kActivation, 0, 0, 0, 0, kNoFunction, no_kids,
                           nullptr, 0, nullptr, nullptr },
                         { nullptr, nullptr } };
static Transition& no_transition = no_transition_room.tr;


Bool acts_in_nodes() { return clo.k == kInfiniteK && !clo.join_threads; }

// Whether a thread's k-SF nodes keep no inclusive cost and no count of
// calls during the run: in the payload layout with the body in a
// separate view, a node's exclusive cost is its activations' inclusive cost
// less their callees' (flush_transitions), so its inclusive cost is its
// exclusive cost plus its children's inclusive costs; and its calls are its
// transitions' calls, which count since the counters were last zeroed
// (flush_transitions). Both are found when a profile is written
// (flush_all_transitions, derive_node_counts). The node's last two words, `calls` and `incl`, are
// then the first two of its payload (act_offset), its first transition's
// `calls` and `edge_incl`: 16 bytes a k-SF node (cc1plus at k=inf: 46 MB).
static Bool counts_derived() { return acts_in_nodes() && separate_view(); }

// Where node counts are derived: whether the transitions' calls are in the
// nodes and call edges for good (finish_all_threads, which forgets the
// index of transitions), or only while a profile is written.
static Bool calls_added_for_good = False;

// In the payload layout: the bytes from a node to its ActNode
// (its first transition), which overlaps the node's `calls` and `incl`
// where those are derived.
static UWord act_offset() { return counts_derived() ? offsetof(ForestNode, calls) : sizeof(ForestNode); }
static ActNode* act_after(const ForestNode* node) { return (ActNode*)((char*)node + act_offset()); }
static ForestNode* node_before(const ActNode* n) { return (ForestNode*)((char*)n - act_offset()); }

Bool kids_grow() { return clo.k == kInfiniteK; }

namespace {

const ActEntry* entry_of(const ActNode* n)
{
   return (const ActEntry*)((const char*)n - offsetof(ActEntry, node));
}

// n's activation. A payload's has depth and phase 0: at k = inf they do
// not steer the forest (the phase never reaches k) and nothing else reads
// them.
Activation act_of(const ActNode* n)
{
   if (acts_in_nodes()) return { node_before(n), nullptr, 0, 0 };
   return entry_of(n)->act();
}

// canonical(act_of(n)): where its calls and costs go.
ForestNode* ctx_of(const ActNode* n)
{
   return acts_in_nodes() ? node_before(n) : entry_of(n)->ctx();
}

// In the payload layout, the payload is the node's first
// transition (if one was made), whatever fields an ActNode has.
Transition* first_transition(const ActNode* n) { return (Transition*)n; }

// n's view pair (none where the view is the k-SF): in the payload
// layout, the `active` of the node's payload transition, which act_node
// sets before the transition is made (or for a root, which has none).
const ViewPair* view_of(const ActNode* n)
{
   if (!acts_in_nodes()) return n->view;
   return separate_view() ? (const ViewPair*)first_transition(n)->active : nullptr;
}

// n's activation in the view forest, and its context.
Activation view_act_of(const ActNode* n) { return view_of(n) ? view_of(n)->act() : act_of(n); }
ForestNode* view_ctx_of(const ActNode* n) { return view_of(n) ? view_of(n)->ctx() : ctx_of(n); }

// The view pair of view_act, made on first use.
const ViewPair* view_pair(ThreadState* t, const Activation& view_act)
{
   ViewPair* v = t->view_acts.get(view_act.top, view_act.bottom);
   v->depth = view_act.depth;
   v->phase = view_act.phase;
   v->view_ctx = v->ctx();
   return v;
}

// The ActNode of act, made (zeroed) on first use: in acts, or the node's payload.
ActNode* find_act_node(ThreadState* t, const Activation& act)
{
   if (acts_in_nodes()) return act_after(act.top);
   ActEntry* e = t->acts.get(act.top, act.bottom);
   e->depth = act.depth;
   e->phase = act.phase;
   return &e->node;
}

// The activation's node; view_act is its activation in the view forest (a
// function of act: --view-k divides --k).
ActNode* act_node(ThreadState* t, const Activation& act, const Activation& view_act)
{
   ActNode* n = find_act_node(t, act);
   if (acts_in_nodes()) {
      // What the transitions into n point to (Transition::active).
      UWord*& active = first_transition(n)->active;
      if (!active) active = separate_view() ? (UWord*)view_pair(t, view_act) : (UWord*)n;
   } else if (!n->view && t->view != t->forest) {
      n->view = view_pair(t, view_act);
   }
   return n;
}

// Whether the count of a thread's frames in a context is the context's
// forest node's payload: at finite k in a thread's own forest (8 bytes a
// node instead of a table entry of 24 and its index slot: cc1plus k=2
// 119 k entries, about 3 MB).
Bool counts_in_nodes() { return clo.k != kInfiniteK && !clo.join_threads; }

// The count of thread t's frames now in n's context.
UWord* active_count(ThreadState* t, ActNode* n)
{
   // At k = inf a node has one activation pair: no other pair of the
   // thread shares the count (3 M fewer table entries for cc1plus).
   if (clo.k == kInfiniteK) return &n->own_active;
   if (counts_in_nodes()) return (UWord*)core::Forest::payload(ctx_of(n));
   return &active_counts.get(ctx_of(n), t)->n;
}

// A transition's `active`: the count of frames in its child's context, or
// in the payload layout (nothing is counted) what inline IR finds
// the child's context from (act_node).
UWord* active_of(ThreadState* t, ActNode* child)
{
   return acts_in_nodes() ? first_transition(child)->active : active_count(t, child);
}

// A frame of tr's enters (leaves) its child's context: the count of frames
// there, where one is kept (after a leave: whether the frame was the
// outermost one).
void count_in(const Transition* tr)
{
   if (!acts_in_nodes()) ++*tr->active;
}
Bool count_out(const Transition* tr)
{
   return !acts_in_nodes() && --*tr->active == 0;
}

// Whether a transition's child is found from its `active` (k = inf: the
// child's own_active), with no `child` field.
Bool child_from_active() { return clo.k == kInfiniteK; }

// A transition's bytes: the fields that its mode has (Transition).
UWord transition_bytes()
{
   if (acts_in_nodes()) return offsetof(Transition, ctx);
   return child_from_active() ? offsetof(Transition, child) : sizeof(Transition);
}

// A transition's bytes and, with events beyond Ir, where its frames add
// their inclusive events (TransitionEvents).
UWord transition_room()
{
   return transition_bytes() + (extra_events_on() ? sizeof(TransitionEvents) : 0);
}

// In the payload layout, the first transition made into a node
// from its parent node (not a rolled-in one) is the node's payload: at
// k = inf most nodes are entered from one call site (cc1plus: 3.21 M
// transitions for 2.89 M nodes), so most transitions need no block and no
// index slot of their own; they are found as their child's
// (find_first_transition). The others are in the thread's index, each
// after its child ActNode's address (TransitionRecord).
// A made transition has kids (no_kids at least).
Bool has_first_transition(const ActNode* n) { return first_transition(n)->kids != nullptr; }
// A thread's own k-SF's (or the joined forest's) node payload before the
// node's inclusive events: at k = inf the first transition (the node and
// it are 80 bytes, 96 with the view in the k-SF: act_offset), at finite k
// the count of frames in the node (active_count).
UInt node_payload_before_events()
{
   if (acts_in_nodes()) return transition_room() - (sizeof(ForestNode) - act_offset());
   if (!counts_in_nodes()) return 0;
   // The count of frames, and the counter array and its limit (counter_array_word).
   return counter_arrays_on() && !separate_view() ? 3 * sizeof(UWord) : sizeof(UWord);
}

// The payload, then the node's inclusive events beyond Ir (no table
// keyed by node: cc1plus k=2 has 348 k arrays of edges and nodes, whose
// table entries and index took 12.6 MB).
UInt node_payload_bytes() { return node_payload_before_events() + incl_events_bytes(); }

// A thread's own view forest's node payload at finite k (--view-k, the
// default at even k > 2): the counter array and its limit (counter_array_word).
UInt view_payload_bytes() { return counter_arrays_on() ? 2 * sizeof(UWord) : 0; }

} // namespace

// The counters' contexts are the view forest's nodes: a thread's own
// k-SF's at finite k without --view-k, else its own view forest's, whose
// payload holds nothing else. At k = inf only a separate view's (a k-SF
// node's payload is its first transition there: node_payload_bytes): not
// with events beyond Ir, whose counters' contexts are the k-SF's nodes
// (check_view_k). cc1plus k=inf 57.4 -> 43.8 s (docs/design/ksf.md).
Bool counter_arrays_on()
{
   return clo.mode == kModeFunc && !clo.dump_instr && !clo.collect_jumps &&
          (counts_in_nodes() || (acts_in_nodes() && separate_view()));
}

static UWord call_pending_node[(sizeof(ForestNode) + 3 * sizeof(UWord)) / sizeof(UWord)];
ForestNode* const kCallPending = (ForestNode*)call_pending_node;

void activity_init()
{
   by_tid = (ThreadState**)alloc_zeroed(VG_N_THREADS * sizeof(ThreadState*));
   kg_now = (Now*)alloc_permanent(sizeof(Now), 64);
   for (UInt i = 0; i < kKidSlots; i++) no_kids[i] = &no_transition;
   // What inline IR reads the context through: as active_of's.
   if (acts_in_nodes())
      no_transition.active = separate_view() ? (UWord*)&no_view_pair : (UWord*)&no_node.act;
   else
      no_transition.active = &no_node.act.own_active;
   kg_now->top_sp = ~(Addr)0;
   event_clocks_init();
}

UWord transition_events_offset() { return transition_bytes(); }

ULong* node_incl_events(const ForestNode* n)
{
   return (ULong*)((char*)core::Forest::payload(const_cast<ForestNode*>(n)) + node_payload_before_events());
}

const ULong* node_incl_events_in(const core::Forest& sf, const ForestNode* n)
{
   Bool has = incl_events_bytes() && sf.payload_bytes() == node_payload_bytes();
   return has ? node_incl_events(n) : nullptr;
}

void zero_incl_events(Forest* f)
{
   if (!incl_events_bytes() || f->sf.payload_bytes() != node_payload_bytes()) return;
   core::visit_preorder(f->sf, [](const core::VisitInfo& v) {
      VG_(memset)(node_incl_events(v.node), 0, incl_events_bytes());
   });
}

} // namespace kg
