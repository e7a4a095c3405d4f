// Threads that ended, kept compact: a program that makes a thread per
// request makes thousands, and each one's record must reach the profile.
// A thread that ended (in function mode at finite k, its forest the body's
// contexts: compaction_on) keeps only what its record is made of, its k-SF
// encoded as numbers (EndedThread); its counters and call edges, which the
// body sums by context name anyway, are added into those of one shared
// forest of the ended threads' contexts (ended_view), and everything else
// it had goes back: its forest, transitions, activations, kid arrays,
// counter tables, counters, call edges and stack. Threads are compacted in
// batches of kCompactBatch, so that what every batch walks (the blocks'
// cached counters, the context and edge indexes) is walked once for many
// threads. docs/design/processes.md.

namespace kg {

// One thread's record once compact.
struct EndedThread {
   UInt serial;
   Bool zeroed;       // its counts zeroed since it ended (zero_counters): its record counts nothing
   ULong clock;       // its clock (ir_elapsed)
   ULong counted;     // its counted Ir: the record's ir=
   UChar* nodes;      // its k-SF (encode_forest)
   UInt n_bytes;
};

namespace {

const UInt kCompactBatch = 16;

EndedThread* ended_threads;
UWord n_ended_threads, ended_threads_cap;
ULong ended_clock;              // the sum of their clocks
Forest* ended_view;             // the body's contexts of the compacted threads
ThreadState* waiting[kCompactBatch];   // ended, to be compacted with the next batch
UInt n_waiting;

// Whether ended threads are compacted: function mode at finite k, threads
// not joined, the k-SF the body's contexts (no --view-k), none of the
// counters that ExitCosts reads per instruction (counter_arrays_on: no
// --dump-instr, --collect-jumps), and no events beyond Ir (a compact
// record keeps no node events, and moved call edges do not add their
// inclusive events: move_call_edges).
Bool compaction_on() { return counter_arrays_on() && !separate_view() && !extra_events_on(); }

// Whether thread t, which ended, left nothing but its forest's data: no
// other stack of its (suspended coroutines another thread may resume), no
// registered stack, no open frame.
Bool compactable(const ThreadState* t)
{
   return t->stack == t->own && !t->suspended && !t->unindexed && !t->spans && !t->own->registered &&
          t->saved.top == t->own->frames && !t->n_calls_at_pause;
}

// ---- The k-SF as numbers ----------------------------------------------------

// A thread's forest: its trees in order (the first one, then the others as
// core::Forest::tree numbers them), each in pre-order, its nodes packed
// (core/packed_nodes.h). A node's excl is its exclusive Ir (context_ir: the
// writer's set_exclusive_costs would give the same).
struct NodeBytes {
   UChar* bytes;
   UInt n, cap;
   Long depth;   // the last node's
   void put(const core::PackedNode& node)
   {
      if (n + core::kMaxPackedNodeBytes > cap) {
         UInt grown = cap ? 2 * cap : 256;
         UChar* b = (UChar*)kg::alloc(grown, "kg.ended");
         if (n) VG_(memcpy)(b, bytes, n);
         kg::release(bytes);
         bytes = b;
         cap = grown;
      }
      n += core::pack_node(node, depth, bytes + n);
      depth = node.depth;
   }
};

template <typename F> void for_each_tree_preorder(const core::Forest& sf, F f)
{
   core::Vec<const ForestNode*> stack;
   core::Vec<UInt> depths;
   stack.init(sf.allocator(), 64);
   depths.init(sf.allocator(), 64);
   core::for_each_tree(sf, [&](const ForestNode* root, size_t, bool) {
      stack.push_back(root);
      depths.push_back(0);
      while (!stack.empty()) {
         const ForestNode* n = stack.back();
         UInt depth = depths.back();
         stack.pop_back();
         depths.pop_back();
         f(n, depth);
         core::for_each_child(n, [&](const ForestNode* c) {
            stack.push_back(c);
            depths.push_back(depth + 1);
         });
      }
   });
   stack.destroy();
   depths.destroy();
}

void encode_forest(const core::Forest& sf, EndedThread* e)
{
   NodeBytes out = { nullptr, 0, 0, -1 };
   for_each_tree_preorder(sf, [&](const ForestNode* n, UInt depth) {
      out.put({ depth, n->label, n->calls, context_ir(n), n->incl });
   });
   // In a block of its own size: thousands of them stay.
   e->nodes = (UChar*)kg::alloc(out.n, "kg.ended");
   VG_(memcpy)(e->nodes, out.bytes, out.n);
   e->n_bytes = out.n;
   kg::release(out.bytes);
}

// The forest encode_forest wrote, into f (a new forest), its counts zero
// where the thread's were zeroed since.
void decode_forest(const EndedThread& e, core::Forest& f)
{
   core::Vec<ForestNode*> path;
   path.init(f.allocator(), 64);
   const UChar* p = e.nodes;
   Bool first = True;
   Long depth = -1;
   while (p < e.nodes + e.n_bytes) {
      core::PackedNode node = core::unpack_node(p, depth);
      depth = node.depth;
      ForestNode* n;
      if (node.depth == 0) n = first ? f.first_tree() : f.tree_root(node.label);
      else n = f.child(path[node.depth - 1], node.label);
      first = False;
      while (path.size() > node.depth) path.pop_back();
      path.push_back(n);
      if (e.zeroed) continue;
      n->calls = node.calls;
      n->excl = node.excl;
      n->incl = node.incl;
   }
   path.destroy();
}

// The forest a writer reads for an ended thread, decoded anew when another
// thread's is asked for (the writer reads the threads one after another),
// and after anything that may change a record or move the records.
Forest* decoded;
const EndedThread* decoded_of;

void forget_decoded() { decoded_of = nullptr; }

// ---- Compaction ---------------------------------------------------------------

// A batch's nodes and where their counters and edges go, sorted by node.
struct NodeMove {
   const ForestNode* from;
   ForestNode* to;
};

struct Moves {
   NodeMove* m;
   UWord n;
};

Int compare_moves(const void* pa, const void* pb)
{
   UWord a = (UWord)((const NodeMove*)pa)->from, b = (UWord)((const NodeMove*)pb)->from;
   return a < b ? -1 : a > b ? 1 : 0;
}

ForestNode* moved_to(const void* node, void* arg)
{
   const Moves& moves = *(const Moves*)arg;
   UWord lo = 0, hi = moves.n;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)moves.m[mid].from < (UWord)node) lo = mid + 1;
      else hi = mid;
   }
   return lo < moves.n && moves.m[lo].from == node ? moves.m[lo].to : nullptr;
}

Bool moved(const ForestNode* node, void* arg) { return moved_to(node, arg) != nullptr; }

// Each node of src's trees and the node of the same path in dst, made if
// missing (core::join's walk, without its counts: ended_view's nodes only
// key counters and edges).
void join_paths(core::Forest& dst, const core::Forest& src, Moves* moves)
{
   core::Vec<ForestNode*> path;
   path.init(dst.allocator(), 64);
   Bool first = True;
   for_each_tree_preorder(src, [&](const ForestNode* n, UInt depth) {
      ForestNode* d;
      if (depth == 0) d = first ? dst.first_tree() : dst.tree_root(n->label);
      else d = dst.child(path[depth - 1], n->label);
      first = False;
      while (path.size() > depth) path.pop_back();
      path.push_back(d);
      moves->m[moves->n++] = { n, d };
   });
   path.destroy();
}

void free_ended_thread(ThreadState* t)
{
   // The inclusive events' caches (event_clocks.cpp) key transitions by
   // address and never forget one: a transition given back for reuse would
   // add to the arrays of the context it had. Compaction, the only giver,
   // is off with events beyond Ir (counter_arrays_on).
   tl_assert(!extra_events_on());
   t->transitions.for_each([](Transition* tr) {
      *(Transition**)tr = free_transitions;
      free_transitions = tr;
   });
   t->transitions.clear();
   t->acts.for_each([](ActEntry* e) {
      if (e->node.shared_kids) release_kids(e->node.shared_kids, kKidSlots);
      PairMap<ActEntry, kDenseLoad>::recycle(e);
   });
   t->acts.forget_index();
   release_stack(t->own);
   t->forest->sf.destroy();
   kg::release(t->forest);
   ThreadState** at = &all_threads;
   while (*at != t) at = &(*at)->next;
   *at = t->next;
   kg::release(t);
}

void add_ended_thread(const EndedThread& e)
{
   forget_decoded();
   append(ended_threads, n_ended_threads, ended_threads_cap, e, 256, "kg.ended");
   ended_clock += e.clock;
}

// The waiting threads compacted: each one's deferred counts flushed into
// its forest and edges, its forest encoded, its nodes' counters and edges
// moved to ended_view's, then all it had given back. Where the counters
// cannot be read now (counting paused: the blocks count into scratch) or a
// context id names a node, they are released as any ended thread is.
void compact_waiting()
{
   UInt n = n_waiting;
   n_waiting = 0;
   if (!kg_counting || n_context_ids) {
      for (UInt i = 0; i < n; i++) release_ended_thread(waiting[i]);
      return;
   }
   if (!ended_view) ended_view = forest_new(clo.k, node_payload_bytes());
   UWord nodes = 0;
   for (UInt i = 0; i < n; i++) nodes += waiting[i]->forest->sf.node_count();
   Moves moves = { (NodeMove*)kg::alloc((nodes + 1) * sizeof(NodeMove), "kg.ended"), 0 };
   context_ir_begin();
   for (UInt i = 0; i < n; i++) {
      ThreadState* t = waiting[i];
      flush_transitions(t, False);
      EndedThread e = { t->serial, False, t->saved.ir, counted_ir(t), nullptr, 0 };
      encode_forest(t->forest->sf, &e);
      add_ended_thread(e);
      join_paths(ended_view->sf, t->forest->sf, &moves);
   }
   context_ir_end();
   VG_(ssort)(moves.m, moves.n, sizeof(NodeMove), compare_moves);
   ArrayGroups groups;
   if (counter_arrays_on()) groups.make();
   for (UWord i = 0; i < moves.n; i++) move_context_counters((ForestNode*)moves.m[i].from, moves.m[i].to, groups);
   groups.release();
   move_call_edges(moved_to, &moves);
   forget_counters_of(moved, &moves);
   kg::release(moves.m);
   for (UInt i = 0; i < n; i++) free_ended_thread(waiting[i]);
}

} // namespace

// Thread t ended (thread_exits): compacted with the next batch, or
// released now.
static void end_thread(ThreadState* t)
{
   if (!compaction_on() || !compactable(t)) {
      release_ended_thread(t);
      return;
   }
   waiting[n_waiting++] = t;
   if (n_waiting == kCompactBatch) compact_waiting();
}

// A fork child has none of its parent's ended threads: what they had
// stays where it is, as the parent's other threads' does.
static void forget_ended_threads()
{
   forget_decoded();
   n_waiting = 0;
   n_ended_threads = 0;
   ended_clock = 0;
   ended_view = nullptr;
}

static void zero_ended_threads()
{
   forget_decoded();
   for (UInt i = 0; i < n_ended_threads; i++) {
      ended_threads[i].zeroed = True;
      ended_threads[i].counted = 0;
   }
}

static ULong ended_threads_clock() { return ended_clock; }

Forest* ended_threads_view() { return ended_view; }

const core::Forest& thread_forest(const ThreadProfile& t)
{
   if (!t.ended) return t.forest->sf;
   if (decoded_of != t.ended) {
      if (decoded) {
         decoded->sf.destroy();
         kg::release(decoded);
      }
      decoded = forest_new(clo.k, 0, True);
      decode_forest(*t.ended, decoded->sf);
      decoded_of = t.ended;
   }
   return decoded->sf;
}

} // namespace kg
