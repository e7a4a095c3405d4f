// Threads: their state made on first use, switches between them, and the
// core's callbacks (thread start and exit, signals, fork, stacks
// registered, memory unmapped); the monitor command's status.

namespace kg {

static void add_registered_stack(Addr start, Addr end);

namespace {

ThreadState* thread_state(ThreadId tid)
{
   if (by_tid[tid]) return by_tid[tid];
   ThreadState* t = (ThreadState*)alloc_zeroed(sizeof(ThreadState));
   by_tid[tid] = t;
   t->tid = tid;
   t->serial = ++thread_serials;
   t->next = all_threads;
   all_threads = t;
   if (clo.join_threads) {
      if (!joined_forest) joined_forest = forest_new(clo.k, node_payload_bytes());
      if (!joined_view) joined_view = separate_view() ? forest_new(clo.view_k) : joined_forest;
      t->forest = joined_forest;
      t->view = joined_view;
   } else {
      // The first thread's forests and tables as they always were (its
      // node addresses order its call edges in the body); the others' small.
      Bool small = t->serial > 1;
      t->forest = forest_new(clo.k, node_payload_bytes(), small);
      t->view = separate_view() ? forest_new(clo.view_k, view_payload_bytes(), small) : t->forest;
   }
   if (t->serial > 1) {
      t->transitions.start_with(kThreadFirstCap);
      if (!acts_in_nodes()) t->acts.start_with(kThreadFirstCap);
      if (separate_view()) t->view_acts.start_with(kThreadFirstCap);
   }
   // The root frame is the base of the thread's own stack.
   auto is_root = [](const Transition* tr) { return tr->kind == kActivation && tr->fn_id == kNoFunction; };
   Transition* root = transition(t, nullptr, nullptr, is_root, [t](Transition* tr) {
      Activation root_act = forest_root(t->forest);
      Activation view_root = t->view == t->forest ? root_act : forest_root(t->view);
      set_child(t, tr, act_node(t, root_act, view_root), nullptr, kActivation);
   });
   Addr lo, hi;
   Bool go = own_stack_memory(tid, &lo, &hi);
   t->own = t->stack = new_shadow_stack(root, lo, hi, kThreadFrames);
   // The goroutines' stacks in its mapping do not hold a Go thread's stack.
   if (go) add_registered_stack(lo, hi);
   t->own->registered = go;
   t->own->frames[0].ir_at_entry = 0;
   const ULong no_events[kEventIds] = {};
   restart_events(t->own, t->own->frames, t->own->frames, no_events);   // its clock starts at 0 too
   Frame* frames = t->own->frames;
   t->saved = { ~(Addr)0, 0, transition_ctx(root), 0, frames, frames + t->own->cap - 1 };
   t->saved.ev_rows = frame_rows_bias(t->own);
   if (clo.mode == kModeInter) {
      if (clo.join_threads) {
         if (!joined_inter_forest) joined_inter_forest = block_forest_new(nullptr, 0, 0);
         t->inter_forest = joined_inter_forest;
      } else {
         t->inter_forest = block_forest_new(nullptr, t->serial, 0);
      }
      t->inter_state = enter_block_root(t->inter_forest);
      t->saved.bb_state = &t->inter_state;
      t->saved.bb_forest = t->inter_forest;
   }
   return t;
}

// What a thread that ended keeps is what its profile needs: its forests
// and its transitions (flushed into them for each profile), and its own
// stack's base frame (__root__'s, settled by dumps). Its activation indexes
// (lookups for new calls) go, its own stack's other frames, and its
// forests' dense roots arrays (8 bytes a function id up to its largest
// root's). The block modes' frames (bb_top) stay as they are.
void release_ended_thread(ThreadState* t)
{
   t->acts.forget_index();
   t->view_acts.forget_index();
   if (!block_mode() && t->stack == t->own && t->saved.top == t->own->frames) {
      shrink_to_base(t->own);
      t->saved.top = t->saved.frames_last = t->own->frames;
      t->saved.ev_rows = frame_rows_bias(t->own);
   }
   if (clo.join_threads) return;   // the forests are every thread's
   forest_compact(t->forest);
   if (t->view != t->forest) forest_compact(t->view);
}

void switch_to(ThreadId tid)
{
   if (current && current == by_tid[tid]) return;
   if (current) {
      run_trace();   // the trace holds the outgoing thread's runs
      current->saved = *kg_now;
   }
   current = thread_state(tid);
   *kg_now = current->saved;
   kg_event_clock = current->ev_clock;
}

} // namespace

void for_each_live_thread(void (*f)(UInt thread, ThreadId tid, const ForestNode* ctx, UInt depth, void* arg),
                          void* arg)
{
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (!by_tid[t->tid] || by_tid[t->tid] != t) continue;
      const Now& now = now_of(t);
      f(t->serial, t->tid, ctx_of(child_of(now.top->tr)), (UInt)(now.top - t->stack->frames), arg);
   }
}

void for_each_live_stack(void (*f)(UInt thread, ThreadId tid, ULong counted_ir, const ForestNode* const* frames,
                                   UInt depth, void* arg), void* arg)
{
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (!by_tid[t->tid] || by_tid[t->tid] != t) continue;
      const Now& now = now_of(t);
      UInt depth = (UInt)(now.top - t->stack->frames);
      const ForestNode** frames = (const ForestNode**)kg::alloc((depth + 1) * sizeof(ForestNode*));
      UInt n = 0;
      for (const Frame* fr = now.top; fr > t->stack->frames; fr--) frames[n++] = ctx_of(child_of(fr->tr));
      f(t->serial, t->tid, counted_ir(t), frames, n, arg);
      kg::release(frames);
   }
}

void thread_starts_running(ThreadId tid, ULong blocks_done)
{
   switch_to(tid);
}

// Every stack's frames end now, the suspended ones' where they paused;
// but at the thread's exit (keep_fibers) its suspended coroutine stacks
// with frames stay suspended: another thread may resume them (a fiber
// scheduler's worker ended; move_stack). What is left of them ends with
// the run (finish_all_threads).
void close_thread(ThreadState* t, Bool keep_fibers)
{
   if (block_mode()) run_trace();
   for (;;) {
      while (kg_now->top > base_frame(t)) pop_frame(t);
      ShadowStack* done = t->stack;
      done->top = done->frames;
      if (done != t->own) release_stack(done);
      ShadowStack* next = !keep_fibers ? t->suspended : done != t->own ? t->own : nullptr;
      if (!next) break;
      resume_stack(t, next);
   }
   end_suspended_stacks(t, [](const ShadowStack* s) { return s->top == s->frames; });
   run_on(t, t->own);
   // __root__'s inclusive cost is the thread's whole run.
   settle_root(t, kg_now->ir);
   update_now_from_top();
}

void thread_exits(ThreadId tid)
{
   if (!by_tid[tid]) return;
   switch_to(tid);
   if (!kg_counting) discard_uncounted(current);
   derive_frameless_levels_of(current);
   drop_frameless_records_of(current);
   close_thread(current, True);
   // The tid will be reused by a new thread, which gets its own state.
   current->saved = *kg_now;
   by_tid[tid] = nullptr;
   ThreadState* t = current;
   current = nullptr;
   end_thread(t);
}

// A thread that registers the stack it runs on (its own, or a coroutine's
// seen before as part of a mapping) tells where that stack is: else SP
// would seem to have left it for another stack.
static void tie_running_stack(Addr start, Addr end)
{
   ThreadId tid = VG_(get_running_tid)();
   if (tid == VG_INVALID_THREADID) return;
   Addr sp = VG_(get_SP)(tid);
   if (sp < start || sp > end) return;
   switch_to(tid);
   ShadowStack* s = current->stack;
   s->lo = start;
   s->hi = end;
   s->registered = True;
   s->mapped = False;
}

void stack_registered(Addr start, Addr end)
{
   if (start > end) {   // as the core takes it
      Addr swap = start;
      start = end;
      end = swap;
   }
   add_registered_stack(start, end);
   tie_running_stack(start, end);
}

// [start, end] is a stack (registered, or a thread's carved stack): the
// registrations it overlaps end, and the suspended stacks in that memory.
static void add_registered_stack(Addr start, Addr end)
{
   UInt at = forget_registered_stacks(start, end);
   end_stacks_in(start, end);
   if (n_registered_stacks == registered_stacks_cap) {
      registered_stacks_cap = registered_stacks_cap ? 2 * registered_stacks_cap : 16;
      StackRange* grown = (StackRange*)kg::alloc(registered_stacks_cap * sizeof(StackRange));
      if (n_registered_stacks) VG_(memcpy)(grown, registered_stacks, n_registered_stacks * sizeof(StackRange));
      if (registered_stacks) kg::release(registered_stacks);
      registered_stacks = grown;
   }
   VG_(memmove)(registered_stacks + at + 1, registered_stacks + at,
                (n_registered_stacks - at) * sizeof(StackRange));
   registered_stacks[at] = { start, end };
   n_registered_stacks++;
}

void memory_unmapped(Addr a, SizeT len)
{
   if (!len) return;
   forget_registered_stacks(a, a + len - 1);
   end_stacks_in(a, a + len - 1);
}

void signal_delivered(ThreadId tid, Int sig, Bool alt_stack)
{
   switch_to(tid);
   ThreadState* t = current;
   FrameKind kind = alt_stack ? kAltSignalFence : kSignalFence;
   push_running_levels(t);   // the interrupted code's inlined levels
   Transition* tr = fence_transition(t, kg_now->top->tr, kind);
   tr->interrupted = VG_(get_IP)(tid);   // where the signal restorer is charged
   Frame* f = push_frame(t, VG_(get_SP)(tid), tr);
   if (alt_stack) t->stack->alt_fences++;
   // The handler's first block is entered by the core, not by a call:
   // push_frame made ctx the fence's, so no call is pending. Its call edge
   // is at the interrupted instruction (the next one to run when the handler
   // returns), as the jump site of its entry: a line of the interrupted
   // context rather than line 0 (docs/design/shadow-stacks.md, "Signals").
   kg_now->jump_site = VG_(get_IP)(tid);
   kg_now->jump_target = kAnyJumpTarget;
   kg_now->top_sp = alt_stack ? ~(Addr)0 : f->sp;
}

void signal_returned(ThreadId tid, Int sig)
{
   switch_to(tid);
   ThreadState* t = current;
   // Pop the handler's frames and its fence (the innermost one).
   while (kg_now->top > base_frame(t)) {
      UWord kind = kg_now->top->tr->kind;
      pop_frame(t);
      if (kind == kSignalFence || kind == kAltSignalFence) break;
   }
   update_now_from_top();
}

// A fork child runs only the thread that forked: the parent's other threads,
// finished or running, are not the child's and leave its profile.
static void forget_other_threads(ThreadId tid)
{
   switch_to(tid);
   for (UInt i = 0; i < VG_N_THREADS; i++)
      if (by_tid[i] != current) by_tid[i] = nullptr;
   current->next = nullptr;
   all_threads = current;
   forget_ended_threads();
}

void fork_child(ThreadId tid)
{
   forget_other_threads(tid);
   drop_frameless_records_except(current);
   // The child starts from zero: forests, line costs, call edges, and the
   // clocks (this runs between superblocks: no temporary holds them).
   for (ThreadState* t = all_threads; t; t = t->next) {
      now_of(t).ir = 0;
      VG_(memset)(t->ev_clock, 0, sizeof t->ev_clock);
   }
   zero_counters();
   if (block_mode()) reset_block_state();
}

} // namespace kg
