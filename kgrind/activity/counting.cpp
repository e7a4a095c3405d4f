// Counting control for regions of interest: counters start, stop, are
// settled and zeroed while the stacks and forests go on.
//
// Dumps, zeroing and collection switched off (kg_dumps.cpp, kg_collection.cpp) act on the
// counters only: the shadow stacks and forests always follow the program, so
// the contexts are right whenever counting resumes. A frame's inclusive cost
// is the thread's clock (kg_now->ir) less its entry's reading; these
// functions settle frames and restart their entries. The clock itself only
// runs forward: they may be called from helpers in the middle of a
// superblock, which keeps its value in temporaries
// (instrument/pending_counts.cpp); what it ran uncounted is kept apart (ir_uncounted).


namespace kg {

Bool kg_counting = True;


// Calls f(s, top) for each of t's stacks with its top frame.
template <typename F> static void for_each_stack(ThreadState* t, F f)
{
   f(t->stack, now_of(t).top);
   for (ShadowStack* s = t->suspended; s; s = s->next) f(s, s->top);
}

// __root__'s frame closes now (its inclusive cost is the thread's run so
// far), and its clock restarts.
static void settle_root(ThreadState* t, ULong now)
{
   Frame& root = t->own->frames[0];
   ForestNode* root_node = ctx_of(child_of(root.tr));
   if (!counts_derived()) root_node->incl += now - root.ir_at_entry;
   if (t->view != t->forest) root_node->excl += now - root.ir_at_entry;   // as flush_transitions
   root.ir_at_entry = now;
   ClockReading ev_now(t);
   close_frame_events(t->own, &root, root.tr, True, ev_now.at);
   restart_events(t->own, &root, &root, ev_now.at);
}

// Each stack is settled as its own pops would close its frames: with only
// its frames counted in `active`, so a suspended stack's frame in a node
// where the running stack has one too is outermost on its stack and counts
// what it ran (the running stack's frames are counted out meanwhile, as a
// switch away from it would).
static void settle_thread(ThreadState* t)
{
   ULong ir = now_of(t).ir;
   ClockReading ev_now(t);
   with_running_frames_out(t, [&] {
      for_each_stack(t, [&](ShadowStack* s, Frame* top) {
         if (s == t->stack) settle_frames(s, top, ir, ev_now.at);
         else settle_frames(s, top, s->suspended_at, s->ev_suspended_at);
      });
   });
   settle_root(t, ir);
}

// Thread t's frames (and stacks) start their clocks at its clock's reading:
// what they ran so far is counted no more.
static void restart_frames(ThreadState* t)
{
   ULong ir = now_of(t).ir;
   ClockReading ev_now(t);
   for_each_stack(t, [&](ShadowStack* s, Frame* top) {
      for (Frame* f = s->frames; f <= top; f++) f->ir_at_entry = ir;
      s->suspended_at = ir;
      restart_events(s, s->frames, top, ev_now.at);
      if (s != t->stack) note_suspended_events(s, ev_now.at);
   });
   t->ir_at_pause = ir;
}

// Where calls count from the last zeroing on (counts_derived): thread t's
// transitions' calls as counting pauses, to be put back when what ran
// since is discarded.
static void save_calls_at_pause(ThreadState* t)
{
   if (!counts_derived()) return;
   UWord n = 0;
   for_each_transition(t, [&](Transition* tr) { n += tr->kind == kActivation && tr->calls; });
   t->calls_at_pause = (TransitionCalls*)kg::alloc((n + 1) * sizeof(TransitionCalls));
   t->n_calls_at_pause = 0;
   for_each_transition(t, [&](Transition* tr) {
      if (tr->kind == kActivation && tr->calls) t->calls_at_pause[t->n_calls_at_pause++] = { tr, tr->calls };
   });
}

static void forget_calls_at_pause(ThreadState* t)
{
   kg::release(t->calls_at_pause);
   t->calls_at_pause = nullptr;
   t->n_calls_at_pause = 0;
}

// While counting is off: forgets what thread t ran since it paused (calls
// and inclusive costs; exclusive costs went to no counter).
static void discard_uncounted(ThreadState* t)
{
   zero_transitions(t);
   for (UWord i = 0; i < t->n_calls_at_pause; i++) t->calls_at_pause[i].tr->calls = t->calls_at_pause[i].calls;
   t->ir_uncounted += now_of(t).ir - t->ir_at_pause;
   restart_frames(t);
}

void settle_open_frames()
{
   for (ThreadState* t = all_threads; t; t = t->next) {
      // Settled when counting paused: what ran since is not counted.
      if (kg_counting) settle_thread(t);
      else discard_uncounted(t);
   }
}

// A thread's own k-SF (or the joined one) back to zero: its nodes' counts
// and inclusive events.
static void reset_own_forest(Forest* f)
{
   forest_reset(f);
   zero_incl_events(f);
}

void zero_counters()
{
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (!clo.join_threads) reset_own_forest(t->forest);
      if (!clo.join_threads && t->view != t->forest) forest_reset(t->view);
      zero_transitions(t);
      forget_calls_at_pause(t);   // zero too
      t->ir_uncounted = now_of(t).ir;
      restart_frames(t);
   }
   zero_ended_threads();
   zero_frameless_records();
   if (joined_forest) reset_own_forest(joined_forest);
   if (joined_view && joined_view != joined_forest) forest_reset(joined_view);
   reset_costs();
}

void pause_counting()
{
   if (!kg_counting) return;
   derive_frameless_levels();
   for (ThreadState* t = all_threads; t; t = t->next) {
      settle_thread(t);
      flush_transitions(t, False);   // what follows can be told apart and discarded
      save_calls_at_pause(t);
      t->ir_at_pause = now_of(t).ir;
   }
   kg_counting = False;
   forget_cached_counters();
   note_counting_for_events();
}

void resume_counting()
{
   if (kg_counting) return;
   for (ThreadState* t = all_threads; t; t = t->next) {
      discard_uncounted(t);
      forget_calls_at_pause(t);
   }
   kg_counting = True;
   forget_cached_counters();
   note_counting_for_events();
}

ULong ir_elapsed()
{
   ULong ir = 0;
   for (ThreadState* t = all_threads; t; t = t->next) ir += now_of(t).ir;
   return ir + ended_threads_clock();
}

// The Ir counted of thread t.
static ULong counted_ir(ThreadState* t) { return now_of(t).ir - t->ir_uncounted; }

ULong ir_counted()
{
   ULong ir = 0;
   for (ThreadState* t = all_threads; t; t = t->next) ir += counted_ir(t);
   return ir;
}

} // namespace kg
