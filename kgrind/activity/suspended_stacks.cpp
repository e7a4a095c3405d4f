// The index of a thread's suspended stacks, and suspending and resuming them.

namespace kg {

namespace {

// A program may keep thousands of coroutines suspended, and every switch
// looks for the stack it lands on, which is one whose open frames lie near
// the landing SP (resumed_frame, landing_distance, end_stacks_overlapped_by).
// Once a thread has kept more than kIndexedFrom stacks suspended, its
// suspended stacks with open frames are ordered by the lowest SP of those
// frames (span_lo), and a search visits only the ones whose span
// [span_lo, span_hi] may meet the SPs it asks about. Empty stacks, and
// stacks whose frames spread wider than kWideSpan (the thread's own stack
// when deep, -fsplit-stack segments' fences at SP 0), are in a list that
// every search visits. Searches pick among what they visit by the rules'
// own order (`listed`, `suspension`), so they find what a scan would.
//
// Fewer stacks are scanned: the index's upkeep at every switch made a ring
// of four coroutines 60 % slower (co_ring.c, 4 M switches, k=2: 1.35 s
// without the index, 2.17 s with it).
const UInt kIndexedFrom = 16;
const Addr kWideSpan = 64 * 1024;

struct SpanKey {
   Addr lo;
   ULong listed;   // tells apart stacks of one span_lo
};
struct SpanEntry {
   SpanKey key;
   ShadowStack* s;
};

Word compare_spans(const void* key, const void* elem)
{
   const SpanKey* a = (const SpanKey*)key;
   const SpanKey* b = &((const SpanEntry*)elem)->key;
   if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
   if (a->listed != b->listed) return a->listed < b->listed ? -1 : 1;
   return 0;
}

// Stacks put in a thread's suspended stacks so far (ShadowStack::listed).
ULong stacks_listed;

void link_unindexed(ThreadState* t, ShadowStack* s)
{
   s->unindexed_prev = nullptr;
   s->unindexed_next = t->unindexed;
   if (t->unindexed) t->unindexed->unindexed_prev = s;
   t->unindexed = s;
}

void unlink_unindexed(ThreadState* t, ShadowStack* s)
{
   if (s->unindexed_prev) s->unindexed_prev->unindexed_next = s->unindexed_next;
   else t->unindexed = s->unindexed_next;
   if (s->unindexed_next) s->unindexed_next->unindexed_prev = s->unindexed_prev;
}

// Suspended stack s joins t's index: by its span, or in the list.
void index_stack(ThreadState* t, ShadowStack* s)
{
   s->indexed = False;
   if (s->top == s->frames) {
      link_unindexed(t, s);
      return;
   }
   s->span_lo = ~(Addr)0;
   s->span_hi = 0;
   for (const Frame* f = s->frames + 1; f <= s->top; f++) {
      if (f->sp < s->span_lo) s->span_lo = f->sp;
      if (f->sp > s->span_hi) s->span_hi = f->sp;
   }
   if (s->span_hi - s->span_lo > kWideSpan) {
      link_unindexed(t, s);
      return;
   }
   SpanEntry* e = (SpanEntry*)VG_(OSetGen_AllocNode)(t->spans, sizeof(SpanEntry));
   e->key = { s->span_lo, s->listed };
   e->s = s;
   VG_(OSetGen_Insert)(t->spans, e);
   s->indexed = True;
   if (s->span_hi - s->span_lo > t->widest_span) t->widest_span = s->span_hi - s->span_lo;
}

void unindex_stack(ThreadState* t, ShadowStack* s)
{
   if (!s->indexed) {
      unlink_unindexed(t, s);
      return;
   }
   SpanKey key = { s->span_lo, s->listed };
   VG_(OSetGen_FreeNode)(t->spans, VG_(OSetGen_Remove)(t->spans, &key));
}

// s joins t's suspended stacks, first (the newest); t's stacks are
// indexed from the (kIndexedFrom + 1)th on.
void list_suspended(ThreadState* t, ShadowStack* s)
{
   s->listed = ++stacks_listed;
   s->prev = nullptr;
   s->next = t->suspended;
   if (t->suspended) t->suspended->prev = s;
   t->suspended = s;
   if (t->spans) {
      index_stack(t, s);
   } else if (++t->n_suspended > kIndexedFrom) {
      t->spans = VG_(OSetGen_Create)(offsetof(SpanEntry, key), compare_spans, VG_(malloc), "kg.spans", VG_(free));
      for (ShadowStack* o = t->suspended; o; o = o->next) index_stack(t, o);
   }
}

// s leaves t's suspended stacks.
void unlist_suspended(ThreadState* t, ShadowStack* s)
{
   if (s->prev) s->prev->next = s->next;
   else t->suspended = s->next;
   if (s->next) s->next->prev = s->prev;
   if (t->spans) unindex_stack(t, s);
   else t->n_suspended--;
   s->listed = 0;
}

Bool is_suspended(const ShadowStack* s) { return s->listed != 0; }

Addr minus(Addr a, Addr b) { return a > b ? a - b : 0; }
Addr plus(Addr a, Addr b) { return a < ~(Addr)0 - b ? a + b : ~(Addr)0; }

// Calls f(s) for each of t's suspended stacks that every search visits:
// all of them while t's are not indexed, else the empty and the widely
// spread ones. f must not change t's suspended stacks.
template <typename F> void for_each_unindexed(ThreadState* t, F f)
{
   for (ShadowStack* s = t->spans ? t->unindexed : t->suspended; s; s = t->spans ? s->unindexed_next : s->next) f(s);
}

// The same, and for each indexed one whose open frames may lie in
// [lo, hi] (span_lo <= hi and span_hi >= lo).
template <typename F> void for_each_suspended_near(ThreadState* t, Addr lo, Addr hi, F f)
{
   for_each_unindexed(t, f);
   if (!t->spans) return;
   SpanKey from = { minus(lo, t->widest_span), 0 };
   VG_(OSetGen_ResetIterAt)(t->spans, &from);
   while (const SpanEntry* e = (const SpanEntry*)VG_(OSetGen_Next)(t->spans)) {
      if (e->key.lo > hi) break;
      if (e->s->span_hi >= lo) f(e->s);
   }
}

// Ends suspended stack s of thread t: its frames close where they paused
// (as at the thread's end), so a new stack in that memory does not resume
// them (a new coroutine would go on in the dead one's frames).
void end_suspended_stack(ThreadState* t, ShadowStack* s)
{
   unlist_suspended(t, s);
   settle_frames(s, s->top, s->suspended_at, s->ev_suspended_at);
   while (StackSegment* g = s->segment) {
      s->segment = g->outer;
      kg::release(g);
   }
   release_stack(s);
}

// Ends the suspended stacks of thread t for which dies(s) holds (not its
// own stack's), newest first.
template <typename Dies>
void end_suspended_stacks(ThreadState* t, Dies dies)
{
   ShadowStack* next;
   for (ShadowStack* s = t->suspended; s; s = next) {
      next = s->next;
      if (s != t->own && dies(s)) end_suspended_stack(t, s);
   }
}

// The open frames of a coroutine stack in a mapping span [*lo, *hi]
// (the SPs of its top and bottom frames); False if it has none, or a
// handler's frames on an alternate stack.
Bool open_frames_span(const ThreadState* t, const ShadowStack* s, Addr* lo, Addr* hi)
{
   if (!in_shared_mapping(t, s) || s->top == s->frames || s->alt_fences) return False;
   *lo = s->top->sp;
   *hi = s->frames[1].sp;
   return True;
}

// Ends t's suspended coroutine stacks in a mapping whose open frames lie
// where s's do: two live stacks never share memory, so theirs are a dead
// coroutine's, whose stack was freed (unseen: kgrind does not replace
// malloc) and given to s's coroutine. Keeps the suspended stacks to the
// live ones where coroutines reuse memory, which a resume searches.
void end_stacks_overlapped_by(ThreadState* t, const ShadowStack* s)
{
   Addr lo, hi;
   if (!open_frames_span(t, s, &lo, &hi)) return;
   // Newest first, as end_suspended_stacks (ending one moves no other).
   for (;;) {
      ShadowStack* newest = nullptr;
      for_each_suspended_near(t, lo, hi, [&](ShadowStack* o) {
         Addr o_lo, o_hi;
         if (o != s && o != t->own && open_frames_span(t, o, &o_lo, &o_hi) && o_lo <= hi && lo <= o_hi &&
             (!newest || o->listed > newest->listed))
            newest = o;
      });
      if (!newest) return;
      end_suspended_stack(t, newest);
   }
}

// Suspensions of stacks in the process so far (ShadowStack::suspension).
ULong stack_suspensions;

// Leaves the running stack: its frames' clocks and activity pause.
void suspend_stack(ThreadState* t)
{
   ShadowStack* s = t->stack;
   s->top = kg_now->top;
   s->suspended_at = kg_now->ir;
   if (clock_events) {
      ClockReading ev_now(t);
      note_suspended_events(s, ev_now.at);
   }
   s->suspension = ++stack_suspensions;
   s->resume_pc = top_return_address(s);
   s->shape = kCallsPush && s != t->own && s->resume_pc ? stack_shape(s, 0) : 0;
   for (Frame* f = s->frames + 1; f <= s->top; f++)
      if (f->tr->kind == kActivation) count_out(f->tr);
   // (With none of the thread's frames active: the ended ones close as
   // the outermost of their contexts, as at the thread's end.)
   end_stacks_overlapped_by(t, s);
   list_suspended(t, s);
}

// Makes s the thread's running stack.
void run_on(ThreadState* t, ShadowStack* s)
{
   t->stack = s;
   kg_now->top = s->top;
   kg_now->frames_last = s->frames + s->cap - 1;
   kg_now->ev_rows = frame_rows_bias(s);
   update_now_from_top();
}

// Makes suspended stack s the running one: its frames go on where they
// paused.
void resume_stack(ThreadState* t, ShadowStack* s)
{
   unlist_suspended(t, s);
   ULong paused = kg_now->ir - s->suspended_at;
   shift_events_past_pause(t, s);
   for (Frame* f = s->frames + 1; f <= s->top; f++) {
      f->ir_at_entry += paused;
      if (f->tr->kind == kActivation) count_in(f->tr);
   }
   if (s->top == s->frames) s->entry_sp = 0;   // an ended coroutine's, reused by a new one
   run_on(t, s);
}

// Leaves the running stack for suspended stack s, SP now sp. An empty
// coroutine stack left so was a switch taken for a new stack before its
// landing told which one it resumes: it ends.
void switch_to_stack(ThreadState* t, ShadowStack* s, Addr sp)
{
   ShadowStack* left = t->stack;
   if (left != t->own && kg_now->top == left->frames && !left->registered) {
      left->top = left->frames;
      release_stack(left);
   } else {
      suspend_stack(t);
   }
   resume_stack(t, s);
   pop_dead_frames(t, sp);
}

} // namespace

} // namespace kg
