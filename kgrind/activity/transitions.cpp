// Transitions: the records of the calls from one call site of one activation,
// found and made per thread, and flushed into the forests and call edges.

namespace kg {

namespace {

// In the payload layout, a transition that is not a node's
// payload and its child: child_of reads the word before the transition.
struct TransitionRecord {
   ActNode* child;
   Transition tr;
};

} // namespace

// The activation of tr's frames.
static ActNode* child_of(const Transition* tr)
{
   if (acts_in_nodes()) {
      if (tr->in_payload) return (ActNode*)tr;
      return ((ActNode* const*)tr)[-1];
   }
   if (child_from_active()) return (ActNode*)((char*)tr->active - offsetof(ActNode, own_active));
   return tr->child;
}

// In the payload layout a transition keeps no parent: a node is
// its whole call chain, so an activation's parent is its node's parent's
// (none for a thread's root), or its own node's when it is rolled in; an
// untraced function's frame's is its child (set_child); a fence's is kept
// in fence_parent.
static const void* parent_of(const Transition* tr)
{
   if (!acts_in_nodes()) return tr->parent;
   switch (tr->kind) {
   case kActivation: {
      if (tr->rolled_in) return child_of(tr);
      ForestNode* up = ctx_of(child_of(tr))->parent;
      return up ? act_after(up) : nullptr;
   }
   case kTransparent: return child_of(tr);
   default: return tr->fence_parent;
   }
}

// In the payload layout a transition keeps no context: its
// child's view context (the view pair's view_ctx, or the node itself).
ForestNode* transition_ctx(const Transition* tr)
{
   return acts_in_nodes() ? view_ctx_of(child_of(tr)) : tr->ctx;
}

// A transition keeps its function's id only (fn_id: 8 bytes a transition,
// 1.9 MB on cc1plus at k=2).
FnInfo* frame_fn(const Transition* tr)
{
   return tr->fn_id == kNoFunction ? nullptr : function_by_id(tr->fn_id);
}

namespace {

// Transitions of threads that ended, given back (ended_threads.cpp),
// linked through their first word: at finite k all are transition_room().
Transition* free_transitions;

// Whether tr's frames run fn (frame_fn(tr) == fn, with no lookup).
Bool runs(const Transition* tr, const FnInfo* fn) { return tr->fn_id == fn->id; }

// The transition of thread t from `parent` (an ActNode, or a Transition for
// fences) for which same(transition) holds, hashed by `key`
// (transition_key), or when there is none a new one with zero counts, whose
// key fields (kind, function, site) init sets.
template <typename Same, typename Init>
Transition* transition(ThreadState* t, const void* parent, const void* key, Same same, Init init)
{
   // The fields first: parent_of is a call, and at k = inf it is found from
   // the node.
   Transition* tr = t->transitions.find_where(parent, key, [&](const Transition* x) {
      return same(x) && parent_of(x) == parent;
   });
   if (tr) return tr;
   TransitionRecord record = {};
   Transition& made = record.tr;
   made.kids = no_kids;
   init(&made);
   if (!acts_in_nodes()) made.parent = parent;
   else if (made.kind == kActivation) made.rolled_in = child_of(&made) == parent;
   else if (made.kind != kTransparent) made.fence_parent = (const Transition*)parent;
   tl_assert(parent_of(&made) == parent && transition_key(&made) == key && same(&made));
   ActNode* child = acts_in_nodes() ? record.child : child_of(&made);
   Bool first = acts_in_nodes() && made.kind == kActivation && parent && !made.rolled_in
                && !has_first_transition(child);
   if (first) {
      tr = first_transition(child);
      made.in_payload = 1;
   } else if (acts_in_nodes()) {
      TransitionRecord* r = (TransitionRecord*)alloc_permanent(offsetof(TransitionRecord, tr) + transition_room());
      r->child = child;
      tr = &r->tr;
   } else if (free_transitions) {
      tr = free_transitions;
      free_transitions = *(Transition**)tr;
   } else {
      tr = (Transition*)alloc_permanent(transition_room());
   }
   VG_(memcpy)(tr, &made, transition_bytes());
   VG_(memset)((char*)tr + transition_bytes(), 0, transition_room() - transition_bytes());
   if (!first) t->transitions.insert(tr);
   return tr;
}

// In the payload layout: the transition into fn from parent at
// site if it is the first one made into its child (first_transition).
Transition* find_first_transition(const ActNode* parent, FnInfo* fn, Addr site)
{
   if (!acts_in_nodes() || !parent) return nullptr;
   ForestNode* child = core::find_child(ctx_of(parent), fn->id + 1);
   if (!child) return nullptr;
   ActNode* n = act_after(child);
   return has_first_transition(n) && first_transition(n)->site == site ? first_transition(n) : nullptr;
}

// f(tr) for every transition of thread t: those of its index, and where
// ActNodes are node payloads the nodes' first ones.
template <typename F>
void for_each_transition(ThreadState* t, F f)
{
   t->transitions.for_each(f);
   if (!acts_in_nodes()) return;
   core::visit_preorder(t->forest->sf, [&](const core::VisitInfo& v) {
      ActNode* n = act_after(v.node);
      if (has_first_transition(n)) f(first_transition(n));
   });
}

// tr is a TransitionRecord's in the payload layout (transition).
void set_child(ThreadState* t, Transition* tr, ActNode* child, FnInfo* fn, FrameKind kind)
{
   if (acts_in_nodes()) ((ActNode**)tr)[-1] = child;
   else if (!child_from_active()) tr->child = child;
   if (!acts_in_nodes()) tr->ctx = view_ctx_of(child);
   tr->active = active_of(t, child);
   tr->fn_id = fn ? fn->id : kNoFunction;
   tr->kind = (UChar)kind;
}

} // namespace

// The index key of an activation's transition from its call site and the
// id of the function it calls: a hash of the two, not a unique word (the
// lookups compare the fields themselves: transition()), so no table of
// (site, callee) pairs is probed on the way (the kid-slot miss path: perl's
// runloop calls hundreds of functions from one site).
static const void* site_callee_key(Addr site, UInt fn_id)
{
   return (const void*)(site ^ ((UWord)fn_id * 0x9E3779B97F4A7C15ULL));
}

// A transition's key is found from its fields, not kept in it (8 bytes a
// k-SF node at k=inf): an activation's is its site and callee's hash (none
// for a thread's root), an untraced function's frame's its function, a
// fence's its kind.
static const void* transition_key(const Transition* tr)
{
   switch (tr->kind) {
   case kActivation: return tr->fn_id == kNoFunction ? nullptr : site_callee_key(tr->site, tr->fn_id);
   case kTransparent: return frame_fn(tr);
   default: return (const void*)(UWord)tr->kind;
   }
}

namespace {

void own_kids_before_new_child(const ActNode* parent, UInt label);

// The transition into traced function fn from parent at call site `site`
// (0: not known; a signal handler's: the interrupted instruction), with the
// call edge of that site; entry: fn's first instruction run (the block
// modes' calls= target position; 0: not known).
Transition* activation_transition(ThreadState* t, ActNode* parent, FnInfo* fn, Addr entry, Addr site)
{
   if (Transition* first = find_first_transition(parent, fn, site)) return first;
   auto same = [&](const Transition* tr) { return tr->kind == kActivation && tr->site == site && runs(tr, fn); };
   return transition(t, parent, site_callee_key(site, fn->id), same, [&](Transition* tr) {
      own_kids_before_new_child(parent, fn->id + 1);
      Activation act = forest_enter(t->forest, act_of(parent), fn->id + 1);
      // forest_enter counted this activation in top and bottom; transitions
      // count every activation themselves (flush_transitions).
      act.top->calls--;
      if (act.bottom) act.bottom->calls--;
      Activation view_act = t->view == t->forest ? act : forest_enter(t->view, view_act_of(parent), fn->id + 1);
      set_child(t, tr, act_node(t, act, view_act), fn, kActivation);
      tr->site = site;
      CallEdge* edge = call_edge(view_ctx_of(parent), transition_ctx(tr), site);
      // The calls= target position of the block modes' body.
      if (!edge->target) edge->target = entry;
   });
}

// The parent activation of an activation's transition (none for the root's).
const ActNode* parent_activation(const Transition* tr)
{
   return (const ActNode*)parent_of(tr);
}

// The call edge of an activation's transition, made when the transition was.
CallEdge* transition_edge(const Transition* tr)
{
   return call_edge(view_ctx_of(parent_activation(tr)), transition_ctx(tr), tr->site);
}

// A frame of an untraced function: costs stay in the parent activation's.
Transition* transparent_transition(ThreadState* t, ActNode* parent, FnInfo* fn)
{
   auto same = [&](const Transition* tr) { return tr->kind == kTransparent && runs(tr, fn); };
   return transition(t, parent, fn, same, [&](Transition* tr) { set_child(t, tr, parent, fn, kTransparent); });
}

// A signal fence over the top frame (keyed by the top frame's transition,
// whose function the handler interrupted).
Transition* fence_transition(ThreadState* t, Transition* top, FrameKind kind)
{
   auto same = [&](const Transition* tr) { return tr->kind == kind; };
   return transition(t, top, (const void*)(UWord)kind, same,
                     [&](Transition* tr) { set_child(t, tr, child_of(top), frame_fn(top), kind); });
}

// Whether tr enters its parent's own context (rolled simple recursion).
Bool rolled(const Transition* tr) { return acts_in_nodes() ? tr->rolled_in : parent_activation(tr) == child_of(tr); }

// The part of tr's edge_incl in outermost activations of its child's
// context. In the payload layout a thread's frames in one node
// on its running stack are rolled ones above an outermost one (a node is
// its whole call chain), so that is all of it unless tr is rolled
// (close_frame).
ULong outermost_incl(const Transition* tr)
{
   if (!acts_in_nodes()) return tr->ctx_incl;
   return rolled(tr) ? 0 : tr->edge_incl;
}

void zero_counts(Transition* tr)
{
   if (tr->kind != kActivation) return;   // no counts (a fence's interrupted instruction)
   tr->calls = tr->edge_incl = 0;
   if (!acts_in_nodes()) tr->ctx_incl = 0;
}

// Where node counts are derived (counts_derived): the calls of thread t's
// transitions that are not their node's first to the node (whose first
// one's `calls` is the node's), sign 1, or back, -1; and every
// transition's calls to its call edge, or back. Nodes last: a first
// transition's calls are its own only while the others' are not in them.
void add_calls_to_nodes(ThreadState* t, Long sign)
{
   t->transitions.for_each([sign](Transition* tr) {
      if (tr->kind == kActivation && tr->calls) ctx_of(child_of(tr))->calls += sign * tr->calls;
   });
}

void add_calls_to_edges(ThreadState* t, Long sign)
{
   for_each_transition(t, [sign](Transition* tr) {
      if (tr->kind == kActivation && tr->calls && parent_activation(tr)) transition_edge(tr)->calls += sign * tr->calls;
   });
}

// Adds every transition's deferred counters to the forest and the edges.
// Where a node's counts are derived, a transition's calls stay where they
// are: they count from the last zeroing on, and a node's first
// transition's `calls` is the node's; with add_calls they are added to the
// edges and nodes too, for a profile's writer (add_calls_to_nodes).
void flush_transitions(ThreadState* t, Bool add_calls)
{
   Bool calls_flushed = !counts_derived();
   Bool calls_added = counts_derived() && add_calls;
   for_each_transition(t, [=](Transition* tr) {
      Bool calls_move = (calls_flushed || calls_added) && tr->calls;
      if (tr->kind != kActivation || (!calls_move && !tr->edge_incl)) return;
      const ActNode* parent = parent_activation(tr);
      CallEdge* edge = parent ? transition_edge(tr) : nullptr;
      if (edge && calls_move) edge->calls += tr->calls;
      if (calls_flushed) {
         Activation act = act_of(child_of(tr));
         act.top->calls += tr->calls;
         if (act.bottom) act.bottom->calls += tr->calls;
         tr->calls = 0;
      }
      if (edge) edge->incl += tr->edge_incl;
      ForestNode* node = ctx_of(child_of(tr));
      if (!counts_derived()) node->incl += outermost_incl(tr);
      if (t->view != t->forest) {
         // The body's counters are the view's: a k-SF node's exclusive cost
         // is its activations' inclusive cost less their callees'.
         node->excl += tr->edge_incl;
         if (parent) ctx_of(parent)->excl -= tr->edge_incl;
      }
      tr->edge_incl = 0;
      if (!acts_in_nodes()) tr->ctx_incl = 0;
   });
   if (calls_added) add_calls_to_nodes(t, 1);
}

void zero_transitions(ThreadState* t)
{
   for_each_transition(t, zero_counts);
}

} // namespace

} // namespace kg
