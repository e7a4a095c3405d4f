// Stack switches.
//
// A thread may run on several stacks (makecontext/swapcontext, coroutine
// libraries): it has one shadow stack per stack it ran on, each tied to the
// memory it lies in (the thread's own stack, or the stack the program
// registered there with VALGRIND_STACK_REGISTER, else the mapping of the
// first SP seen on it). When SP leaves the running stack's memory, the thread
// switched: the running shadow stack is suspended and the one whose frames
// SP lands on (just below one of them) resumes, or a new one starts (a new
// coroutine: its first function is a root of the thread's forest, as a
// thread's first function is). However far SP moves within one stack's
// memory, it is a return or an unwind (longjmp, exceptions), never a switch.
// Coroutine stacks that share a mapping (malloc'd, carved from one mmap) are
// told apart by what the program does, not by distance: SP rising above a
// coroutine's first frame, a function entered below the top frame without
// a call, code reached as a return from a suspended stack's frame.
// A suspended stack's frames are paused: their inclusive costs count only
// what ran on their own stack, so no instruction is in the inclusive cost of
// two coroutines.

namespace kg {

namespace {

// Is pc a function's first instruction? A switch that lands there starts a
// coroutine (its function entered by a `ret` or a jump).
Bool function_entry_at(Addr pc)
{
   return pc && is_function_entry(pc);
}

// Where a switch goes on: SP, and the block that runs next where a block
// start's helper saw it, else the address in the slot below SP (where a
// `ret` went, or boost.context's jump), on arm64 the link register
// (landing_return_address).
struct Landing {
   Addr sp;
   Addr pc;
   const FnInfo* fn;   // pc's function, if known
   Bool starting;      // pc is a function's first instruction: a new coroutine
   Addr g;             // the goroutine it goes on (goroutine_at), if known
   Addr g_lo, g_hi;    // and its stack's bounds
};

Landing landing_at(Addr sp, BlockInfo* blk)
{
   Addr lo, hi;
   Addr g = goroutine_at(current->tid, sp, &lo, &hi);
   if (blk) return { sp, blk->addr, blk->fn(), blk->fn_entry, g, lo, hi };
   Addr pc = landing_return_address(current->tid, sp);
   return { sp, pc, nullptr, function_entry_at(pc), g, lo, hi };
}

// Did another goroutine run on stack s than the one a switch landing at l
// goes on? Goroutines at one depth of one recursion have stacks of one
// shape, and a goroutine's stack copied to new memory may lie as far from
// its end as a suspended one's lay in the same memory, freed since by that
// one's copy, which has not run yet: SP, the return address and every
// frame's slot match either.
Bool other_goroutine(const ShadowStack* s, const Landing& l)
{
   return l.g && s->goroutine && s->goroutine != l.g;
}

// Does suspended stack s lie outside the stack of the goroutine a landing
// at l goes on? A goroutine's frames lie within its stack's bounds, so its
// shadow stack left in the memory morestack copied it from goes on moved
// (moved_stack), never in place: a copy just below the old memory would
// otherwise fit the old frames (within kLandingGap of the landing SP).
Bool outside_goroutine_stack(const ShadowStack* s, const Landing& l)
{
   return l.g && s->top > s->frames && (s->top->sp < l.g_lo || s->top->sp > l.g_hi);
}

// The running stack, landed on at l, is l's goroutine's.
void note_goroutine(ThreadState* t, const Landing& l)
{
   if (l.g && t->stack != t->own) t->stack->goroutine = l.g;
}

// The frame of suspended stack s that a switch landing at l returns from,
// if any (its frames above died): the call that suspended s (its top frame:
// SP just above the return address in its slot, and pc that address:
// swapcontext and asm switches `ret` through that slot, boost.context
// jumps to what it holds), or a frame whose caller's function pc is in, SP
// as that caller's call left it (longjmp to a setjmp point: the caller
// called setjmp and then the switch at one SP).
const Frame* resumed_frame(const ShadowStack* s, const Landing& l)
{
   if (l.starting || other_goroutine(s, l) || !in_grown_memory_of(s, l.sp)) return nullptr;
   const Frame* f = s->top;
   while (f > s->frames && f->sp + kReturnSlot < l.sp) f--;
   if (f == s->frames || f->sp + kReturnSlot != l.sp) return nullptr;
   if (f == s->top && s->resume_pc && s->resume_pc == l.pc) return f;
   const Transition* caller = f[-1].tr;
   Bool called = f - 1 > s->frames && (caller->kind == kActivation || caller->kind == kTransparent);
   return l.fn && called && runs(caller, l.fn) ? f : nullptr;
}

// How well sp fits suspended stack s, besides resumed_frame: a resume lands
// just above its top frame (a longjmp-like switch returns near its own
// call), or else just below a live frame (setcontext to a point saved by
// getcontext); any other sp in the memory of an empty stack, or of the
// thread's own stack (as an unwind would), fits last. ~0: it does not fit.
// A new coroutine (starting: the switch lands on a function's entry) goes
// on no other stack's frames: they would be a dead coroutine's, whose
// stack was freed (unseen) and given to the new one.
const Addr kResumeGap = 256;      // bytes above the top frame
const Addr kLandingGap = 4096;    // bytes below the nearest live frame
const Addr kFitsLast = (Addr)1 << 32;

Addr landing_distance(const ThreadState* t, const ShadowStack* s, const Landing& l)
{
   Addr sp = l.sp;
   Bool starting = l.starting;
   if (!in_grown_memory_of(s, sp) || (s != t->own && (other_goroutine(s, l) || outside_goroutine_stack(s, l))))
      return ~(Addr)0;
   if (s->top == s->frames) return kFitsLast;
   if (starting && s != t->own) return ~(Addr)0;
   const Frame* f = s->top;
   if (f > s->frames && f->sp < sp && sp - f->sp <= kResumeGap) return sp - f->sp;
   for (; f > s->frames; f--) {
      if (f->sp >= sp) {
         if (f->sp - sp <= kLandingGap) return kResumeGap + (f->sp - sp);
         break;
      }
   }
   return s == t->own ? kFitsLast : ~(Addr)0;
}

// Runs f with thread t's running frames counted out of `active`, as a
// switch away from its stack would: a stack settled meanwhile closes as
// its own pops would (close_frame: its outermost frame in a context counts).
template <typename F> void with_running_frames_out(ThreadState* t, F f)
{
   Frame* running_top = now_of(t).top;
   Frame* running_first = t->stack->frames + 1;
   for (Frame* fr = running_first; fr <= running_top; fr++)
      if (fr->tr->kind == kActivation) count_out(fr->tr);
   f();
   for (Frame* fr = running_first; fr <= running_top; fr++)
      if (fr->tr->kind == kActivation) count_in(fr->tr);
}

template <typename Entry>
Transition* kid_transition(ThreadState* t, Transition* from, FnInfo* fn, Addr call_site, Entry entry);

// Whether a fiber moved from one thread to another (move_stack): then a
// landing searches every thread's suspended stacks.
Bool fibers_moved;

// The transition of thread t that a frame of `old` (another thread's) has
// when the frame below it has `below`: the same kind, function and call
// site, in t's forest. No call is counted.
Transition* same_transition_in(ThreadState* t, Transition* below, const Transition* old)
{
   switch (old->kind) {
   case kActivation:
      return kid_transition(t, below, frame_fn(old), old->site, [old] { return transition_edge(old)->target; });
   case kTransparent: return transparent_transition(t, child_of(below), frame_fn(old));
   default: {
      Transition* tr = fence_transition(t, below, (FrameKind)old->kind);
      tr->interrupted = old->interrupted;
      return tr;
   }
   }
}

// A fiber moved between threads (job systems, work-stealing fiber
// schedulers resume a fiber on whichever worker is free): thread t resumes
// stack s, which thread `from` left suspended. Its frames close in `from`
// where they paused, with what they ran there (as at a thread's end), and
// go on in t in the same contexts, found again in t's forest from t's
// root, their clocks starting now. A frame's call counts in the thread that
// made it; its costs in the threads that ran them. s joins t's suspended
// stacks, to be resumed.
void move_stack(ThreadState* t, ThreadState* from, ShadowStack* s)
{
   unlist_suspended(from, s);
   with_running_frames_out(from, [&] { settle_frames(s, s->top, s->suspended_at, s->ev_suspended_at); });
   Transition* below = t->own->frames[0].tr;
   s->frames[-1].tr = s->frames[0].tr = below;
   for (Frame* f = s->frames; f <= s->top; f++) {
      if (f > s->frames) f->tr = below = same_transition_in(t, below, f->tr);
      f->ir_at_entry = kg_now->ir;
   }
   s->suspended_at = kg_now->ir;
   ClockReading ev_now(t);
   restart_events(s, s->frames, s->top, ev_now.at);
   note_suspended_events(s, ev_now.at);
   list_suspended(t, s);
   fibers_moved = True;
}

// The suspended stack of thread t that a switch landing at l resumes
// (resumed_frame), if any: the most recently suspended first (a dead
// coroutine's stack whose memory a new one reuses ties with it, and the
// new one was suspended later).
ShadowStack* own_resumed_stack(ThreadState* t, const Landing& l)
{
   ShadowStack* newest = nullptr;
   if (l.starting) return newest;
   for_each_suspended_near(t, l.sp - kReturnSlot, l.sp - kReturnSlot, [&](ShadowStack* s) {
      if ((!newest || s->listed > newest->listed) && resumed_frame(s, l)) newest = s;
   });
   return newest;
}

// The suspended stack a switch landing at l resumes, if any: thread t's,
// or another thread's, which moves to t (move_stack); the most recently
// suspended of them. Other threads' stacks are searched when t has none
// that fits, or once a fiber has moved: a dead fiber's stack, left
// suspended in one thread, ties with a live one in its memory, suspended
// later in another. (A new coroutine resumes nothing.)
ShadowStack* resumed_stack(ThreadState* t, const Landing& l)
{
   ShadowStack* own = own_resumed_stack(t, l);
   if ((own && !fibers_moved) || l.starting) return own;
   ThreadState* from = nullptr;
   ShadowStack* moved = nullptr;
   ULong latest = own ? own->suspension : 0;
   for (ThreadState* o = all_threads; o; o = o->next) {
      if (o == t) continue;
      for_each_suspended_near(o, l.sp - kReturnSlot, l.sp - kReturnSlot, [&](ShadowStack* s) {
         if (s != o->own && s->suspension > latest && resumed_frame(s, l)) {
            from = o;
            moved = s;
            latest = s->suspension;
         }
      });
   }
   if (!moved) return own;
   move_stack(t, from, moved);
   return moved;
}

// How far a switch landing at l finds suspended coroutine stack s moved
// (0: it is not s's copy): l returns from s's top frame (pc is the return
// address in its slot, SP just above it) in other memory, and what s's
// frames' slots held lies there, each as far from the top (stack_shape).
Addr moved_by(const ShadowStack* s, const Landing& l)
{
   if (!s->shape || s->resume_pc != l.pc || other_goroutine(s, l)) return 0;
   Addr delta = l.sp - (s->top->sp + kReturnSlot);
   return delta && stack_shape(s, delta) == s->shape ? delta : 0;
}

// A suspended stack was copied to other memory, every frame moved by delta
// (Go's runtime.morestack: copystack moves a goroutine's stack to a larger
// one and restarts the function that ran out of stack at its entry, on the
// copy; the garbage collector shrinks a parked goroutine's stack the same
// way): its frames go on there, the same activations, re-keyed to the new
// SPs; the stack is tied to the memory sp lies in.
void relocate_stack(ShadowStack* s, Addr delta, Addr sp)
{
   for (Frame* f = s->frames + 1; f <= s->top; f++)
      if (f->sp) f->sp += delta;
   if (s->entry_sp) s->entry_sp += delta;
   if (!in_memory_of(s, sp)) tie_to_memory_at(s, sp);
}

// The suspended stack that a switch landing at l resumes moved (moved_by),
// if any: thread t's, else another thread's (which moves to t), the most
// recently suspended of them. Only where no stack resumes at SP itself.
// Goroutines at one depth of one recursion have stacks of one shape: the
// thread that ran runtime.morestack copies the stack and resumes it, so
// its own stacks come first.
ShadowStack* moved_stack(ThreadState* t, const Landing& l)
{
   if (l.starting) return nullptr;
   ThreadState* from = nullptr;
   ShadowStack* moved = nullptr;
   Addr delta = 0;
   auto consider = [&](ThreadState* o) {
      for (ShadowStack* s = o->suspended; s; s = s->next) {
         if (s == o->own || (moved && s->suspension < moved->suspension)) continue;
         if (Addr d = moved_by(s, l)) {
            from = o;
            moved = s;
            delta = d;
         }
      }
   };
   consider(t);
   if (!moved)
      for (ThreadState* o = all_threads; o; o = o->next)
         if (o != t) consider(o);
   if (!moved) return nullptr;
   if (from != t) move_stack(t, from, moved);
   relocate_stack(moved, delta, l.sp);
   return moved;
}

// The suspended stack a switch landing at l lands on, if any: the one it
// resumes, else the one it resumes moved, else the best fit.
ShadowStack* stack_landed_on(ThreadState* t, const Landing& l)
{
   if (ShadowStack* resumed = resumed_stack(t, l)) return resumed;
   if (ShadowStack* moved = moved_stack(t, l)) return moved;
   // The nearest, the newest of those as near. What fits but the thread's
   // own stack is empty (unindexed), or not starting and has open frames
   // just below sp (kResumeGap) or a little above it (kLandingGap).
   ShadowStack* best = nullptr;
   Addr best_distance = ~(Addr)0;
   auto consider = [&](ShadowStack* s) {
      Addr d = landing_distance(t, s, l);
      if (d < best_distance || (d == best_distance && d != ~(Addr)0 && s->listed > best->listed)) {
         best = s;
         best_distance = d;
      }
   };
   if (is_suspended(t->own)) consider(t->own);
   if (l.starting) for_each_unindexed(t, consider);
   else for_each_suspended_near(t, minus(l.sp, kResumeGap), plus(l.sp, kLandingGap), consider);
   return best;
}

// A makecontext coroutine whose function returned has ended: glibc's
// __start_context, entered by that return, switches to uc_link or exits.
Bool coroutine_ended(const ThreadState* t)
{
   const ShadowStack* s = t->stack;
   return s != t->own && kg_now->top > s->frames && frame_fn(s->frames[1].tr) &&
          frame_fn(s->frames[1].tr)->context_start;
}

// -fsplit-stack code ran out of stack: __morestack moved SP to a new
// segment (other memory) and goes on there, calling its caller's body. The
// segment continues the stack: a fence over __morestack's frame marks where
// it starts, below the frames pushed there before a helper saw SP move
// (inline pushes), and the frames above it compare SPs in its memory only.
Bool enter_segment(ThreadState* t, Addr sp)
{
   ShadowStack* s = t->stack;
   Frame* below = kg_now->top;
   while (below > s->frames && !in_memory_of(s, below->sp)) below--;
   Transition* morestack = below->tr;
   if (below == s->frames || !frame_fn(morestack) || !frame_fn(morestack)->stack_segment ||
       (morestack->kind != kActivation && morestack->kind != kTransparent))
      return False;
   UWord at = (UWord)(below - s->frames) + 1;
   ForestNode* ctx = kg_now->ctx;   // a pending call stays pending
   Frame fence = *push_frame(t, 0, fence_transition(t, morestack, kStackSegment));
   Frame* f = s->frames + at;       // push_frame may have moved the frames
   VG_(memmove)(f + 1, f, (SizeT)(kg_now->top - f) * sizeof(Frame));
   *f = fence;
   move_frame_events_up(s, f, kg_now->top);
   // The segment reaches up to the SP __morestack switched to (its first
   // call pushed just below it) and down without a bound but the memory it
   // came from: Valgrind places adjacent mmaps, and merges them into one
   // mapping, so the mapping does not tell segments apart.
   StackSegment* g = (StackSegment*)kg::alloc(sizeof(StackSegment));
   Addr first_sp = sp;
   for (const Frame* above = f + 1; above <= kg_now->top; above++)
      if (above->sp > first_sp) first_sp = above->sp;
   g->lo = 0;
   g->hi = first_sp + sizeof(Addr);
   Addr outer_lo = memory_lo(s), outer_hi = memory_hi(s);
   if (sp > outer_hi) g->lo = outer_hi + 1;
   if (sp < outer_lo && g->hi >= outer_lo) g->hi = outer_lo - 1;
   g->outer = s->segment;
   s->segment = g;
   kg_now->ctx = ctx;
   update_now_from_top();
   return True;
}

// Is SP back in memory the running stack's innermost segment came from (a
// return from __morestack's call, or a longjmp out of the segment)?
Bool returned_to_outer_memory(const ShadowStack* s, Addr sp)
{
   if (!s->segment) return False;
   for (const StackSegment* g = s->segment->outer; g; g = g->outer)
      if (sp >= g->lo && sp <= g->hi) return True;
   return sp >= s->lo && sp <= s->hi;
}

// Ends the segments SP left: their frames, then their fences.
void leave_segments(ThreadState* t, Addr sp)
{
   while (!in_memory_of(t->stack, sp)) {
      while (kg_now->top->tr->kind != kStackSegment) pop_frame(t);
      pop_frame(t);
   }
   update_now_from_top();
}

// SP left the running stack's memory, or left a coroutine's stack for
// another one in the same mapping: the thread switched stacks (blk: the
// block that runs next, if known), or -fsplit-stack code entered or left a
// segment of it.
void switch_stack(ThreadState* t, Addr sp, BlockInfo* blk)
{
   if (returned_to_outer_memory(t->stack, sp)) {
      leave_segments(t, sp);
      pop_dead_frames(t, sp);
      return;
   }
   if (enter_segment(t, sp)) {
      pop_dead_frames(t, sp);
      return;
   }
   if (coroutine_ended(t))
      while (kg_now->top > base_frame(t)) pop_frame(t);
   suspend_stack(t);
   Landing l = landing_at(sp, blk);
   ShadowStack* s = stack_landed_on(t, l);
   if (s) {
      resume_stack(t, s);
   } else {
      s = new_shadow_stack(t->own->frames[0].tr, 0, 0, kCoroutineFrames);
      tie_to_memory_at(s, sp);
      run_on(t, s);
   }
   note_goroutine(t, l);
   pop_dead_frames(t, sp);
}

// Do [a_lo, a_hi] and [b_lo, b_hi] share more than an end? Programs
// register a stack as [base, base + size]: stacks side by side share one.
static Bool overlap(Addr a_lo, Addr a_hi, Addr b_lo, Addr b_hi) { return a_lo < b_hi && b_lo < a_hi; }

// Does suspended stack s lie in memory [lo, hi] that was freed or given to
// another stack? Its top frame does, or it is empty or a registered stack
// whose memory overlaps.
Bool stack_dies_with(const ShadowStack* s, Addr lo, Addr hi)
{
   if (s->top > s->frames) {
      if (s->top->sp >= lo && s->top->sp <= hi) return True;
      if (!s->registered) return False;
   }
   return overlap(s->lo, s->hi, lo, hi);
}

// Ends the suspended stacks of every thread that lay in [lo, hi].
void end_stacks_in(Addr lo, Addr hi)
{
   for (ThreadState* t = all_threads; t; t = t->next)
      end_suspended_stacks(t, [&](const ShadowStack* s) { return stack_dies_with(s, lo, hi); });
}

// Has SP left the running stack's memory (which follows its mapping's
// growth)? Not while a handler runs on an alternate signal stack (its
// frames sit on the interrupted stack's).
Bool left_running_stack(ThreadState* t, Addr sp)
{
   return !t->stack->alt_fences && !in_memory_following_mapping(t->stack, sp);
}

// Has a handler on an alternate signal stack left it for the interrupted
// stack (siglongjmp out of the handler, as crash handlers and stack-overflow
// recovery do)? SP is back in the interrupted stack's memory while the top
// frame, the handler's, lies outside it. An alternate stack above the
// interrupted one in memory puts SP below the handler's frames: the rise
// that pops frames (pop_dead_frames) never comes.
Bool left_alt_stack(const ThreadState* t, Addr sp)
{
   const ShadowStack* s = t->stack;
   if (!s->alt_fences) return False;
   const Frame* top = kg_now->top;
   UWord kind = top->tr->kind;
   return (kind == kActivation || kind == kTransparent) && !in_memory_of(s, top->sp) && in_memory_of(s, sp);
}

// Pops the frames that lie outside the running stack's memory: a handler's
// on an alternate signal stack that SP left (left_alt_stack), with the
// fences of handlers nested there, down to the fence on the interrupted
// stack; the SP rule then decides on that fence and the interrupted frames.
void pop_alt_stack_frames(ThreadState* t)
{
   const ShadowStack* s = t->stack;
   while (kg_now->top > base_frame(t) && kg_now->top->tr->kind != kStackSegment && !in_memory_of(s, kg_now->top->sp))
      pop_frame(t);
}

// SP rose above the return address of the first function of a coroutine
// stack in a mapping while frames of it are open. An unwind cannot leave
// the stack it runs on, and nothing of the coroutine lies above: the thread
// switched to a stack above (in the mapping, so SP stayed in the running
// stack's memory). Not after the first function returned into glibc's
// __start_context, which may raise SP to uc_link's slot.
Bool rose_off_coroutine_stack(const ThreadState* t, Addr sp)
{
   const ShadowStack* s = t->stack;
   return in_shared_mapping(t, s) && s->entry_sp && kg_now->top > s->frames && sp > s->entry_sp + kReturnSlot &&
          !s->alt_fences && !coroutine_ended(t);
}

} // namespace

FramesWatch kg_frames_watch = { False, nullptr };

namespace {

// Pops the frames that died, or follows a switch to another stack (blk: as
// switch_stack's).
void unwind_to_sp(ThreadState* t, Addr sp, BlockInfo* blk = nullptr)
{
   if (left_running_stack(t, sp) || rose_off_coroutine_stack(t, sp)) {
      switch_stack(t, sp, blk);
   } else {
      if (left_alt_stack(t, sp)) pop_alt_stack_frames(t);
      pop_dead_frames(t, sp);
   }
   if (kg_frames_watch.on) kg_frames_watch.stack_rose(t->tid, sp);
}

} // namespace

} // namespace kg
