// Frames of a shadow stack: push and pop. Inline IR does the same for the
// common cases (instrument/frames_ir.cpp).
//
// Every frame records the SP at its activation's entry (just after the call
// pushed the return address). A frame whose recorded SP lies below the
// current SP has returned, one way or another: by ret, longjmp, an exception
// unwinding several frames, or _dl_runtime_resolve jumping to the resolved
// function. Such frames are popped, with their inclusive cost closed, before
// anything else happens; instrumented code checks `SP > kg_now->top_sp`
// inline and calls kg_unwind only when it holds.

namespace kg {

namespace {

void update_now_from_top()
{
   const Frame* top = kg_now->top;
   kg_now->top_sp = top->sp;
   // A pending call stays pending (the resolver's frame dies before the
   // call reaches the resolved function).
   if (kg_now->ctx != kCallPending) kg_now->ctx = transition_ctx(top->tr);
}

// The top frame below the inlined levels (--inline-frames) on top of the
// running stack: the frame of the function whose code runs.
const Frame* physical_frame()
{
   const Frame* f = kg_now->top;
   while (f->tr->kind == kActivation && is_inline_site(f->tr->site)) f--;
   return f;
}

// A frame of transition tr's closes (pops, or is settled) with inclusive
// cost incl. A recursive activation of the same context is already
// measured by the outermost one: its inclusive cost counts only there.
// Frame f of stack s; its events close with the event clock at ev_now.
void close_frame(const ShadowStack* s, const Frame* f, ULong incl, const ULong* ev_now)
{
   Transition* tr = f->tr;
   tr->edge_incl += incl;
   Bool outermost = count_out(tr);
   // In the payload layout the node's inclusive cost comes from
   // the transitions that are not rolled (outermost_incl): frames close one
   // stack at a time (pops on the running stack, settle_thread stack by
   // stack), and a stack's frames in one node are an outermost one with
   // rolled ones above it.
   if (!acts_in_nodes() && outermost) tr->ctx_incl += incl;
   close_frame_events(s, f, tr, acts_in_nodes() ? !rolled(tr) : outermost, ev_now);
}

// A new top frame (the stack grows when full).
Frame* push_frame(ThreadState* t, Addr sp, Transition* tr)
{
   if (kg_now->top + 1 > kg_now->frames_last) {
      ShadowStack* s = t->stack;
      UInt d = depth(t);
      UInt cap = s->cap * 2;
      Frame* base = (Frame*)kg::alloc((cap + 2) * sizeof(Frame));
      VG_(memcpy)(base, s->frames - 1, (d + 1) * sizeof(Frame));
      kg::release(s->frames - 1);
      set_frames(s, base, cap);
      frame_events_moved(s, d + 1);
      kg_now->top = s->frames + d - 1;
      kg_now->frames_last = s->frames + cap - 1;
      kg_now->ev_rows = frame_rows_bias(s);
   }
   Frame* f = ++kg_now->top;
   f->sp = sp;
   f->ir_at_entry = kg_now->ir;
   f->tr = tr;
   start_frame_events(t, t->stack, f);
   if (tr->kind == kActivation) {
      tr->calls++;
      count_in(tr);
   }
   kg_now->ctx = transition_ctx(tr);
   return f;
}

// Pops the top frame, an activation, its inclusive cost closed with the
// event clock at ev_now (one reading serves the pops of one helper call).
void pop_activation(const ThreadState* t, const ULong* ev_now)
{
   const Frame* f = kg_now->top;
   close_frame(t->stack, f, kg_now->ir - f->ir_at_entry, ev_now);
   kg_now->top--;
}

// The chain of the inlined levels on top of the running stack (0: the top
// frame is no inlined level).
UInt top_chain()
{
   const Transition* tr = kg_now->top->tr;
   return tr->kind == kActivation && is_inline_site(tr->site) ? site_chain(tr->site) : 0;
}

// The levels on top are popped: a run of the function's own code starts.
void leave_levels(ThreadState* t)
{
   if (kg_now->ctx == kCallPending) return;
   if (top_chain()) {
      note_levels_left();
      ClockReading ev_now(t);
      do pop_activation(t, ev_now.at);
      while (top_chain());
   }
   update_now_from_top();
}

// Pops the top frame; its activation's inclusive cost is closed. (Inline IR
// does the same for a return that pops one frame: instrument/frames_ir.cpp.)
void pop_frame(ThreadState* t)
{
   Transition* tr = kg_now->top->tr;
   if (tr->kind == kActivation) {
      ClockReading ev_now(t);
      pop_activation(t, ev_now.at);
      return;
   }
   if (tr->kind == kAltSignalFence) {
      t->stack->alt_fences--;
   } else if (tr->kind == kStackSegment) {
      StackSegment* left = t->stack->segment;
      t->stack->segment = left->outer;
      kg::release(left);
   }
   kg_now->top--;
}

// Pops every frame of the running stack that died, given the current SP.
void pop_dead_frames(ThreadState* t, Addr sp)
{
   const Transition* popped = nullptr;
   while (kg_now->top > base_frame(t)) {
      const Frame& f = *kg_now->top;
      if (f.tr->kind == kAltSignalFence) {
         // The handler runs on another stack: only a return to the
         // interrupted stack's memory, above the interrupted point, ends it.
         if (!(sp > f.sp && sp <= memory_hi(t->stack))) break;
      } else if (f.tr->kind == kStackSegment) {
         break;   // its segment ends when SP leaves it (leave_segments)
      } else if (sp < f.sp || (sp == f.sp && (kCallsPush || !popped))) {
         // Without a push (arm64), a frame entered at this very SP (a
         // function called from the code SP now runs in) is dead too once
         // SP rose above the frames on top of it: a longjmp or an
         // exception landed in its caller (docs/design/shadow-stacks.md, "arm64").
         break;
      }
      popped = f.tr;
      pop_frame(t);
   }
   // Frameless inlined levels: the code SP returned to runs the chain that
   // level frames left on top say (leave_levels), else its own code's.
   if (popped) kg_now->chain = 0;
   if (popped && (popped->kind == kActivation || popped->kind == kTransparent) && frame_fn(popped) &&
       frame_fn(popped)->resolver) {
      // ld.so's trampoline dies at its jump to the function it resolved:
      // the call that entered it goes on there.
      kg_now->ctx = kCallPending;
      kg_now->call_site = t->resolver_call_site;
      kg_now->jump_site = 0;
   }
   update_now_from_top();
   // Above the top frame (the base, or a handler's fence on an alternate
   // stack): stop checking until a new frame is pushed. A segment's fence
   // (SP 0) keeps every rise checked: one leaves the segment.
   if (sp > kg_now->top_sp && kg_now->top->tr->kind != kStackSegment) kg_now->top_sp = ~(Addr)0;
}

} // namespace

// Adds the inclusive cost that the frames of stack s up to top have run up
// to `now` (the events to ev_now), as their pops would (a recursive
// context's only in its outermost frame), and starts their clocks at now.
// The stack's frames are not counted in `active` (as a suspended stack's:
// suspend_stack) and are counted in only while they settle.
static void settle_frames(const ShadowStack* s, Frame* top, ULong now, const ULong* ev_now)
{
   Frame* first = s->frames + 1;
   for (Frame* f = first; f <= top; f++)
      if (f->tr->kind == kActivation) count_in(f->tr);
   for (Frame* f = top; f >= first; f--) {
      if (f->tr->kind != kActivation) continue;
      close_frame(s, f, now - f->ir_at_entry, ev_now);
   }
   for (Frame* f = first; f <= top; f++) f->ir_at_entry = now;
   restart_events(s, first, top, ev_now);
}

} // namespace kg
