// Shadow stacks keyed by the stack pointer.
//
// Every frame records the SP at its activation's entry (just after the call
// pushed the return address). A frame whose recorded SP lies below the
// current SP has returned, one way or another: by ret, longjmp, an exception
// unwinding several frames, or _dl_runtime_resolve jumping to the resolved
// function. Such frames are popped, with their inclusive cost closed, before
// anything else happens; instrumented code checks `SP > kg_now.top_sp`
// inline and calls kg_unwind only when it holds.
#include "kg_activity.h"
#include "kg_blocks.h"
#include "kg_options.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

Now kg_now = { ~(Addr)0, 0, 0, nullptr, 0 };

namespace {

// Frames that are not activations: the interrupted code's boundary while a
// signal handler runs, and the boundary of a stack switch.
enum FrameKind : UChar { kActivation, kTransparent, kSignalFence, kAltSignalFence };

// An SP jump larger than this is a stack switch, not a mass return
// (Valgrind's own --max-stackframe default).
const Addr kMaxStackFrame = 2000000;

struct Frame {
   Addr sp;
   Activation act;          // the activation costs go to (a traced ancestor's when transparent)
   ForestNode* ctx;         // canonical node of act
   FnInfo* fn;              // the function running in this frame
   ULong ir_at_entry;
   CallEdge* edge;          // caller context -> this context
   UWord* active;           // activations of ctx on this thread's stack
   FrameKind kind;
};

// Block modes, intra: the block activation of one function frame. It belongs
// to the frame at the same depth only if (sp, ir_at_entry, fn) match, so
// pushing frames costs nothing in any mode.
struct BlockFrame {
   Addr sp;
   ULong ir_at_entry;
   FnInfo* fn;
   BlockForest* forest;     // of (thread, fn), or of fn when threads are joined
   Activation cur;          // the last block of this activation
   ULong serial;            // activation number in the thread (--dump-blocks)
};

struct ThreadState {
   ThreadId tid;
   UInt serial;             // 1, 2, ... in order of creation (tids are reused)
   ThreadState* next;       // all threads ever seen, newest first
   Frame* frames;           // frames[0] is __root__
   UInt depth;              // frames in use
   UInt cap;
   Forest* forest;
   Now saved;               // kg_now while another thread runs
   // Block modes.
   BlockFrame* bb;          // intra: indexed by frame depth
   UInt bb_cap;
   BlockForest** fn_forests;   // intra: by function id (not joined)
   UInt n_fn_forests;
   ULong bb_activations;
   BlockForest* inter_forest;  // inter
   Activation inter_cur;
};

ThreadState** by_tid;      // VG_N_THREADS entries (a run-time setting)
ThreadState* all_threads;  // every thread that ran, newest first
UInt thread_serials;

// How many frames of the running threads are activations of a node now.
struct ActiveCount {
   const void* a;           // ForestNode*
   const void* b;           // ThreadState*: threads may share a joined forest
   UWord n;
};
PairMap<ActiveCount> active_counts;

ThreadState* current = nullptr;

ActiveCount* active_count(ForestNode* n) { return active_counts.get(n, current); }
Forest* joined_forest = nullptr;
BlockForest** joined_fn_forests = nullptr;   // intra, joined: by function id
UInt n_joined_fn_forests = 0;
BlockForest* joined_inter_forest = nullptr;  // inter, joined

void update_now_from_top(ThreadState* t)
{
   const Frame& top = t->frames[t->depth - 1];
   kg_now.top_sp = top.sp;
   kg_now.ctx = top.ctx;
}

ThreadState* thread_state(ThreadId tid)
{
   if (by_tid[tid]) return by_tid[tid];
   ThreadState* t = (ThreadState*)alloc_zeroed(sizeof(ThreadState));
   by_tid[tid] = t;
   t->tid = tid;
   t->serial = ++thread_serials;
   t->next = all_threads;
   all_threads = t;
   t->cap = 64;
   t->frames = (Frame*)kg::alloc(t->cap * sizeof(Frame));
   if (clo.join_threads) {
      if (!joined_forest) joined_forest = forest_new();
      t->forest = joined_forest;
   } else {
      t->forest = forest_new();
   }
   Frame& root = t->frames[0];
   root.sp = ~(Addr)0;
   root.act = forest_root(t->forest);
   root.ctx = forest_canonical(root.act);
   root.fn = nullptr;
   root.ir_at_entry = 0;
   root.edge = nullptr;
   root.kind = kActivation;
   t->depth = 1;
   t->saved.top_sp = root.sp;
   t->saved.pending_call = 0;
   t->saved.call_site = 0;
   t->saved.ctx = root.ctx;
   t->saved.ir = 0;
   if (clo.mode == kModeInter) {
      if (clo.join_threads) {
         if (!joined_inter_forest) joined_inter_forest = block_forest_new(nullptr, 0, 0);
         t->inter_forest = joined_inter_forest;
      } else {
         t->inter_forest = block_forest_new(nullptr, t->serial, 0);
      }
      t->inter_cur = t->inter_forest->forest.sf.enter_root();
   }
   return t;
}

void switch_to(ThreadId tid)
{
   if (current && current == by_tid[tid]) return;
   if (current) current->saved = kg_now;
   current = thread_state(tid);
   kg_now = current->saved;
}

Frame* push_frame(ThreadState* t)
{
   if (t->depth == t->cap) {
      UInt cap = t->cap * 2;
      Frame* frames = (Frame*)kg::alloc(cap * sizeof(Frame));
      VG_(memcpy)(frames, t->frames, t->depth * sizeof(Frame));
      kg::release(t->frames);
      t->frames = frames;
      t->cap = cap;
   }
   return &t->frames[t->depth++];
}

void close_frame(ThreadState* t)
{
   Frame& f = t->frames[t->depth - 1];
   if (f.kind == kActivation) {
      ULong incl = kg_now.ir - f.ir_at_entry;
      if (f.edge) f.edge->incl += incl;
      // A recursive activation of the same context is already measured by
      // the outermost one: add inclusive cost only when that one ends.
      if (--*f.active == 0) f.ctx->incl += incl;
   }
   t->depth--;
}

// Pops every frame that died, given the current SP.
void unwind_to_sp(ThreadState* t, Addr sp)
{
   while (t->depth > 1) {
      const Frame& f = t->frames[t->depth - 1];
      if (f.kind == kAltSignalFence) {
         // The handler runs on another stack: only a return to the
         // interrupted stack, above the interrupted point, ends it.
         if (!(sp > f.sp && sp - f.sp <= kMaxStackFrame)) break;
      } else {
         if (sp <= f.sp) break;
         if (f.kind != kSignalFence && sp - f.sp > kMaxStackFrame) {
            // A stack switch (makecontext/swapcontext, coroutines): the
            // frames are suspended, not returned.
            break;
         }
      }
      close_frame(t);
   }
   update_now_from_top(t);
   // Above the top frame after a stack switch: stop checking until a new
   // frame is pushed.
   if (sp > kg_now.top_sp) kg_now.top_sp = ~(Addr)0;
}

// The last activation a block started: a function entered again from the
// same parent activation (the common case: a call in a loop) reuses it and
// skips the forest walk and two hash lookups.
struct EntryCache {
   ThreadState* thread;
   FnInfo* fn;
   Activation parent;
   Activation child;
   CallEdge* edge;
   UWord* active;
};

Bool same_activation(const Activation& a, const Activation& b)
{
   return a.top == b.top && a.bottom == b.bottom && a.depth == b.depth;
}

// A new activation of a traced function under `parent`.
void enter_traced(ThreadState* t, const Frame& parent, Frame* f, EntryCache* cache)
{
   f->kind = kActivation;
   if (cache->thread == t && cache->fn == f->fn && same_activation(cache->parent, parent.act)) {
      // What forest_enter would do: count the activation in top and bottom.
      f->act = cache->child;
      f->act.top->calls++;
      if (f->act.bottom) f->act.bottom->calls++;
      f->ctx = forest_canonical(f->act);
      f->edge = cache->edge;
      f->active = cache->active;
   } else {
      f->act = forest_enter(t->forest, parent.act, f->fn->id + 1);
      f->ctx = forest_canonical(f->act);
      f->edge = call_edge(parent.ctx, f->ctx);
      f->active = &active_count(f->ctx)->n;
      if (!f->edge->call_site) f->edge->call_site = kg_now.call_site;
      *cache = { t, f->fn, parent.act, f->act, f->edge, f->active };
   }
   ++*f->active;
   f->edge->calls++;
}

void push_activation(ThreadState* t, FnInfo* fn, Addr sp, BlockInfo* blk)
{
   const Frame parent = t->frames[t->depth - 1];   // a copy: push may move the stack
   Frame* f = push_frame(t);
   f->sp = sp;
   f->fn = fn;
   f->ir_at_entry = kg_now.ir;
   if (fn_traced(fn)) {
      if (!blk->entry_cache) blk->entry_cache = alloc_zeroed(sizeof(EntryCache));
      enter_traced(t, parent, f, (EntryCache*)blk->entry_cache);
   } else {
      f->kind = kTransparent;
      f->act = parent.act;
      f->ctx = parent.ctx;
      f->edge = nullptr;
   }
   kg_now.top_sp = sp;
   kg_now.ctx = f->ctx;
}

// The function the thread is running now (the top frame's).
FnInfo* running_function(ThreadState* t)
{
   for (UInt i = t->depth; i-- > 1;)
      if (t->frames[i].kind == kActivation || t->frames[i].kind == kTransparent)
         return t->frames[i].fn;
   return nullptr;
}

} // namespace

void activity_init()
{
   by_tid = (ThreadState**)alloc_zeroed(VG_N_THREADS * sizeof(ThreadState*));
}

// Code without symbols: the function is named by the address it was called at.
static FnInfo* activated_function(BlockInfo* blk)
{
   if (!blk->fn->no_symbol) return blk->fn;
   if (!blk->entry_fn) blk->entry_fn = function_named_by_address(blk->addr, blk->fn);
   return blk->entry_fn;
}

extern "C" void VG_REGPARM(1) kg_unwind(Addr sp)
{
   unwind_to_sp(current, sp);
}

extern "C" void VG_REGPARM(3) kg_block_entry(BlockInfo* blk, Addr sp, UWord after_call)
{
   ThreadState* t = current;
   kg_now.pending_call = 0;
   if (blk->in_plt) {
      // A call into a PLT stub waits for the stub's jump to the real function.
      kg_now.pending_call = after_call;
      return;
   }
   if (after_call) {
      push_activation(t, activated_function(blk), sp, blk);
   } else if (blk->fn_entry && running_function(t) != blk->fn) {
      // A jump to a function's first instruction from another function is a
      // tail call (or PLT/resolver jump); a jump back to its own entry is a loop.
      push_activation(t, blk->fn, sp, blk);
   } else {
      return;
   }
   // The context changed: point the block at its counters now, which saves
   // the instrumented code a second helper call.
   if (blk->cached_ctx != kg_now.ctx) kg_refresh_counters(blk);
}

// ---- Block modes ------------------------------------------------------------

static BlockForest** grow_forest_table(BlockForest** table, UInt* n, UInt id)
{
   UInt cap = *n ? *n : 16;
   while (cap <= id) cap *= 2;
   BlockForest** bigger = (BlockForest**)alloc_zeroed(cap * sizeof(BlockForest*));
   if (*n) VG_(memcpy)(bigger, table, *n * sizeof(BlockForest*));
   kg::release(table);
   *n = cap;
   return bigger;
}

// The block forest of (thread, fn); a new one is rooted at root_label.
static BlockForest* intra_forest(ThreadState* t, FnInfo* fn, UInt root_label)
{
   BlockForest*** table = clo.join_threads ? &joined_fn_forests : &t->fn_forests;
   UInt* n = clo.join_threads ? &n_joined_fn_forests : &t->n_fn_forests;
   if (fn->id >= *n) *table = grow_forest_table(*table, n, fn->id);
   BlockForest*& f = (*table)[fn->id];
   if (!f) f = block_forest_new(fn, clo.join_threads ? 0 : t->serial, root_label);
   return f;
}

static inline Activation next_block(core::Forest& sf, const Activation& cur, UInt label)
{
   return clo.roll_loops ? sf.enter_loop(cur, label) : sf.enter(cur, label);
}

extern "C" void VG_REGPARM(2) kg_block_intra(BBInfo* b, UWord n)
{
   ThreadState* t = current;
   UInt d = t->depth - 1;
   const Frame& f = t->frames[d];
   // Only blocks run by an activation of a traced function are recorded.
   if (f.kind != kActivation || !f.fn) return;
   if (d >= t->bb_cap) {
      UInt cap = t->bb_cap ? t->bb_cap : 64;
      while (cap <= d) cap *= 2;
      BlockFrame* bb = (BlockFrame*)alloc_zeroed(cap * sizeof(BlockFrame));
      if (t->bb_cap) VG_(memcpy)(bb, t->bb, t->bb_cap * sizeof(BlockFrame));
      kg::release(t->bb);
      t->bb = bb;
      t->bb_cap = cap;
   }
   BlockFrame& s = t->bb[d];
   if (!s.forest || s.sp != f.sp || s.ir_at_entry != f.ir_at_entry || s.fn != f.fn) {
      // The first block of a new activation: it starts again at the root of
      // the function's forest (normally the function's first block).
      s.sp = f.sp;
      s.ir_at_entry = f.ir_at_entry;
      s.fn = f.fn;
      s.forest = intra_forest(t, f.fn, b->label);
      s.serial = ++t->bb_activations;
      core::Forest& sf = s.forest->forest.sf;
      s.cur = sf.enter_root();
      if (sf.root_label() != b->label) s.cur = next_block(sf, s.cur, b->label);
   } else {
      s.cur = next_block(s.forest->forest.sf, s.cur, b->label);
   }
   core::Forest::canonical(s.cur)->excl += n;
   b->count++;
   dump_block(t->serial, s.serial, f.fn->id + 1, b);
}

extern "C" void VG_REGPARM(2) kg_block_inter(BBInfo* b, UWord n)
{
   ThreadState* t = current;
   t->inter_cur = next_block(t->inter_forest->forest.sf, t->inter_cur, b->label);
   core::Forest::canonical(t->inter_cur)->excl += n;
   b->count++;
   dump_block(t->serial, 0, b->fn->id + 1, b);
}

UInt block_forests(BlockForest** out, UInt max)
{
   UInt n = 0;
   auto add = [&](BlockForest* f) { if (f && n < max) out[n++] = f; };
   auto add_table = [&](BlockForest** table, UInt size) {
      for (UInt i = 0; i < size; i++) add(table[i]);
   };
   if (clo.mode == kModeInter && clo.join_threads) {
      add(joined_inter_forest);
      return n;
   }
   if (clo.mode == kModeIntra && clo.join_threads) {
      add_table(joined_fn_forests, n_joined_fn_forests);
      return n;
   }
   // Oldest thread first.
   UInt threads = 0;
   for (ThreadState* t = all_threads; t; t = t->next) threads++;
   for (UInt serial = 1; serial <= threads; serial++) {
      for (ThreadState* t = all_threads; t; t = t->next) {
         if (t->serial != serial) continue;
         if (clo.mode == kModeInter) add(t->inter_forest);
         else add_table(t->fn_forests, t->n_fn_forests);
      }
   }
   return n;
}

static void reset_block_state()
{
   // Every forest's counters back to zero (fork child).
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (t->inter_forest && t->inter_forest != joined_inter_forest) forest_reset(&t->inter_forest->forest);
      for (UInt i = 0; i < t->n_fn_forests; i++)
         if (t->fn_forests[i]) forest_reset(&t->fn_forests[i]->forest);
   }
   if (joined_inter_forest) forest_reset(&joined_inter_forest->forest);
   for (UInt i = 0; i < n_joined_fn_forests; i++)
      if (joined_fn_forests[i]) forest_reset(&joined_fn_forests[i]->forest);
   for (UInt l = 0; l < block_count(); l++) block_by_label(l)->count = 0;
   dump_disable();
}

void thread_starts_running(ThreadId tid, ULong blocks_done)
{
   switch_to(tid);
}

void close_thread(ThreadState* t)
{
   while (t->depth > 1) close_frame(t);
   // __root__'s inclusive cost is the thread's whole run.
   Frame& root = t->frames[0];
   root.ctx->incl += kg_now.ir - root.ir_at_entry;
   root.ir_at_entry = kg_now.ir;
   update_now_from_top(t);
}

void thread_exits(ThreadId tid)
{
   if (!by_tid[tid]) return;
   switch_to(tid);
   close_thread(current);
   // The tid will be reused by a new thread, which gets its own state.
   current->saved = kg_now;
   by_tid[tid] = nullptr;
   current = nullptr;
}

void signal_delivered(ThreadId tid, Int sig, Bool alt_stack)
{
   switch_to(tid);
   ThreadState* t = current;
   const Frame parent = t->frames[t->depth - 1];
   Frame* f = push_frame(t);
   *f = parent;
   f->sp = VG_(get_SP)(tid);
   f->kind = alt_stack ? kAltSignalFence : kSignalFence;
   f->edge = nullptr;
   // The handler's first block is entered by the core, not by a call.
   kg_now.pending_call = 0;
   kg_now.top_sp = alt_stack ? ~(Addr)0 : f->sp;
}

void signal_returned(ThreadId tid, Int sig)
{
   switch_to(tid);
   ThreadState* t = current;
   // Pop the handler's frames and its fence (the innermost one).
   while (t->depth > 1) {
      FrameKind kind = t->frames[t->depth - 1].kind;
      close_frame(t);
      if (kind == kSignalFence || kind == kAltSignalFence) break;
   }
   update_now_from_top(t);
}

void fork_child(ThreadId tid)
{
   // The child starts from zero: forests, line costs, call edges, and the
   // entry snapshots of the frames it inherited.
   if (current) current->saved = kg_now;
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (!clo.join_threads) forest_reset(t->forest);
      for (UInt d = 0; d < t->depth; d++) t->frames[d].ir_at_entry = 0;
      t->saved.ir = 0;
   }
   if (joined_forest) forest_reset(joined_forest);
   kg_now.ir = 0;
   reset_costs();
   if (block_mode()) reset_block_state();
}

void finish_all_threads()
{
   for (UInt tid = 0; tid < VG_N_THREADS; tid++) {
      if (!by_tid[tid]) continue;
      switch_to(tid);
      close_thread(current);
   }
   if (current) current->saved = kg_now;
}

UInt thread_profiles(ThreadProfile* out, UInt max)
{
   if (current) current->saved = kg_now;
   UInt n = 0;
   if (clo.join_threads) {
      if (!joined_forest) return 0;
      ULong ir = 0;
      for (ThreadState* t = all_threads; t; t = t->next) ir += t->saved.ir;
      out[0].tid = 0;
      out[0].forest = joined_forest;
      out[0].ir = ir;
      return 1;
   }
   // Oldest first: the main thread is thread 1.
   for (ThreadState* t = all_threads; t; t = t->next) n++;
   if (n > max) n = max;
   UInt i = n;
   for (ThreadState* t = all_threads; t && i > 0; t = t->next) {
      i--;
      out[i].tid = t->serial;
      out[i].forest = t->forest;
      out[i].ir = t->saved.ir;
   }
   return n;
}

} // namespace kg
