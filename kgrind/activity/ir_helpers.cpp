// The helpers instrumented code calls (kg_hotpath.h): a block that may start
// an activation, a frame that died, a stub or a signal restorer.

namespace kg {

HelperCalls helper_calls;

void print_helper_call_stats()
{
   const HelperCalls& c = helper_calls;
   VG_(dmsg)("kgrind helpers: kg_inline_enter %llu, kg_inline_leave %llu, kg_run_counters %llu, kg_block_start %llu, "
             "kg_block_counters %llu, kg_entry_counters %llu\n",
             c.inline_enter, c.inline_leave, c.run_counters, c.block_start, c.block_counters, c.entry_counters);
   VG_(dmsg)("kgrind helpers: kg_block_entry %llu, kg_entry_fixup %llu, kg_unwind %llu, kg_frame_events_close %llu, "
             "kg_tail_jump %llu\n",
             c.block_entry, c.entry_fixup, c.unwind, c.frame_events_close, c.tail_jump);
   if (frameless_levels_on())
      VG_(dmsg)("kgrind helpers: kg_frameless_find %llu (%llu variants), kg_frameless_start %llu, "
                "kg_frameless_call %llu, kg_frameless_return %llu\n",
                c.frameless_find, c.frameless_variants, c.frameless_start, c.frameless_call, c.frameless_return);
}

namespace {

// A new activation of fn, entered from call_site (0: not known).
void push_activation(ThreadState* t, FnInfo* fn, Addr sp, BlockInfo* blk, Addr call_site)
{
   if (fn->resolver) t->resolver_call_site = call_site;
   push_running_levels(t);   // a tail call from inlined code, or a jump out
   Transition* tr = fn_traced(fn) ? entered_transition(t, fn, blk, call_site)
                                  : transparent_transition(t, child_of(kg_now->top->tr), fn);
   push_frame(t, sp, tr);
   kg_now->top_sp = sp;
}

} // namespace

// Code without symbols: the function is named by the address it was called
// at, found again by that address and the code's own (object's) function,
// which tells apart objects mapped at one address in turn (a field in every
// BlockInfo was 1.6 MB on cc1plus, whose few called entries this table
// holds).
struct NamedEntry {
   const void* a;   // the address
   const void* b;   // the block's FnInfo (no symbol)
   FnInfo* fn;
};
static PairTable<NamedEntry, 64> named_entries;

FnInfo* activated_function(BlockInfo* blk)
{
   if (!blk->fn()->no_symbol) return blk->fn();
   NamedEntry* e = named_entries.get((const void*)blk->addr, blk->fn());
   if (!e->fn) e->fn = function_named_by_address(blk->addr, blk->fn());
   return e->fn;
}

// An ended coroutine's __start_context called setcontext(uc_link), which
// entered a function by its final ret: a coroutine that starts now, on a
// stack that may share the ended one's mapping (adjacent mmaps merge), so
// SP need not have left the running stack's memory. Only the call to
// setcontext may be open: a handler's fence above it is not this.
static Bool linked_to_new_coroutine(const ThreadState* t)
{
   const Transition* top = kg_now->top->tr;
   return coroutine_ended(t) && kg_now->top == t->stack->frames + 2 && frame_fn(top) &&
          frame_fn(top)->context_set;
}

extern "C" void VG_REGPARM(1) kg_unwind(Addr sp)
{
   helper_calls.unwind++;
   unwind_to_sp(current, sp);
}

// A function entered without a call below the top frame's SP, on a
// coroutine stack in a mapping: a tail call enters at the top frame's SP (a
// signal's handler above its fence), so the program switched to a new
// coroutine's stack below this one (its first function entered by a `ret`
// or a jump, as makecontext's and boost.context's are).
static Bool entered_below_top(const ThreadState* t, Addr sp)
{
   const Frame* top = kg_now->top;
   return in_shared_mapping(t, t->stack) && top > t->stack->frames && sp < top->sp && !t->stack->alt_fences &&
          (top->tr->kind == kActivation || top->tr->kind == kTransparent);
}

// A coroutine stack's first function was entered at sp without a call
// (rose_off_coroutine_stack).
static void note_coroutine_entry(ThreadState* t, Addr sp)
{
   ShadowStack* s = t->stack;
   if (s != t->own && kg_now->top == s->frames + 1 && !s->entry_sp) s->entry_sp = sp;
}

static ULong* block_counters_now(BlockInfo* blk);

// The site of blk's entry without a call: the last computed jump's when it
// went to blk or to a PLT stub (which jumped on to blk), or a signal's;
// else none (that jump landed elsewhere: a longjmp into a setjmp point).
static Addr jump_site_of(const BlockInfo* blk)
{
   Addr to = kg_now->jump_target;
   return to == blk->addr || to == kAnyJumpTarget || is_plt_stub(to) ? kg_now->jump_site : 0;
}

// A block that may start an activation, after a call or not. Returns its
// counters in the context it runs in. callee: the function a call into blk
// activates, when the caller knows it (activated_function).
static ULong* block_entry(BlockInfo* blk, Addr sp, UWord after_call, FnInfo* callee = nullptr)
{
   ThreadState* t = current;
   if (after_call) {
      push_activation(t, callee ? callee : activated_function(blk), sp, blk, kg_now->call_site);
   } else if (blk->fn_entry && !runs(physical_frame()->tr, blk->fn())) {
      Addr site = jump_site_of(blk);
      note_tail_jump(site, blk, sp);
      if (linked_to_new_coroutine(t) || entered_below_top(t, sp)) switch_stack(t, sp, blk);
      // A jump to a function's first instruction from another function is a
      // tail call; a jump back to its own entry is a loop. (Direct jumps
      // left the call pending: instrument/frames_ir.cpp, add_tail_call.) Here by an
      // indirect jump, or by a signal's delivery (its site then: the
      // interrupted instruction, signal_delivered).
      push_activation(t, blk->fn(), sp, blk, site);
      note_coroutine_entry(t, sp);
   } else if (blk->fn_entry && top_chain() && !inline_chain_at(blk->addr, blk->fn())) {
      // A jump back to the function's first instruction, its own code, from
      // an inlined level: a function's first block checks no levels
      // (instrument/prologue.cpp, add_prologue), so they end here.
      leave_levels(t);
   }
   kg_now->jump_site = 0;
   return block_counters_now(blk);
}

// A new coroutine's first function (entered by a ret, not a call) comes
// through kg_entry_fixup or kg_block_entry, and so may a call made after a
// handler left its alternate stack (left_alt_stack); kg_block_start checks
// in unwind_at_block_start.
static void follow_stack_switch(Addr sp, BlockInfo* blk)
{
   if (left_running_stack(current, sp)) switch_stack(current, sp, blk);
   else if (left_alt_stack(current, sp)) unwind_to_sp(current, sp, blk);
}

extern "C" void VG_REGPARM(3) kg_entry_fixup(BlockInfo* blk, Addr sp, ForestNode* ctx_before, FnInfo* callee)
{
   helper_calls.entry_fixup++;
   Transition* tr = kg_now->top->tr;
   tr->calls--;
   count_out(tr);
   kg_now->top--;
   kg_now->ctx = ctx_before;
   update_now_from_top();
   // A handler on an alternate stack runs below no frame (signal_delivered).
   if (kg_now->top->tr->kind == kAltSignalFence) kg_now->top_sp = ~(Addr)0;
   follow_stack_switch(sp, blk);
   block_entry(blk, sp, ctx_before == kCallPending, callee);
}

extern "C" void VG_REGPARM(3) kg_block_entry(BlockInfo* blk, Addr sp, ForestNode* ctx_before, FnInfo* callee)
{
   helper_calls.block_entry++;
   follow_stack_switch(sp, blk);
   block_entry(blk, sp, ctx_before == kCallPending, callee);
}

// blk, outside the function of the top frame below any inlined levels
// (physical_frame), runs where a suspended coroutine
// stack resumes (resumed_frame), or resumes moved (moved_stack), while a
// coroutine stack in a mapping runs: a switch to that stack, below (one
// above raised SP: kg_unwind). A moved stack's resume is seen here when the
// switch raised SP before it jumped (Go's runtime.gogo loads SP, then jumps
// to the goroutine's pc): kg_unwind took it for a new stack, left empty. Code runs
// outside its top frame's function after such a switch (the top frame is
// the switch's, the resumed code the switch's caller); a normal return pops
// the top frame inline and leaves blk in the new top frame's function.
// The levels inlined into that function (--inline-frames) are not its
// frame: a block of the function that starts outside the top level's
// chain, as a fiber's landing after jump_fcontext may, runs in its own
// frame (taken for a switch, a suspended fiber of the same shape was
// moved onto the running fiber's memory, ended as overlapped, and resumed
// freed).
static void follow_resume_below(ThreadState* t, BlockInfo* blk, Addr sp)
{
   if (!in_shared_mapping(t, t->stack) || t->stack->alt_fences || runs(physical_frame()->tr, blk->fn())) return;
   Landing l = landing_at(sp, blk);
   ShadowStack* s = resumed_stack(t, l);
   if (!s) s = moved_stack(t, l);
   if (!s) return;
   switch_to_stack(t, s, sp);
   note_goroutine(t, l);
}

// Pops the frames that died, by SP at the start of the running superblock
// (helpers called there: the guest state holds it, as no statement of the
// superblock ran yet), or follows a switch to another stack (a resumed
// coroutine's first block misses its cached context, so it gets here).
// Returns that SP.
static Addr unwind_at_block_start(BlockInfo* blk)
{
   Addr sp = VG_(get_SP)(current->tid);
   if (sp > kg_now->top_sp || left_running_stack(current, sp) || left_alt_stack(current, sp))
      unwind_to_sp(current, sp, blk);
   else if (current->suspended) follow_resume_below(current, blk, sp);
   return sp;
}

extern "C" void VG_REGPARM(1) kg_block_start(BlockInfo* blk)
{
   helper_calls.block_start++;
   Addr sp = unwind_at_block_start(blk);
   UWord after_call = kg_now->ctx == kCallPending;
   if (after_call || blk->fn_entry)
      block_entry(blk, sp, after_call);
   else
      point_block_at(blk, kg_now->ctx);
}

// The counters of blk in kg_now->ctx, in its array or else its way 0.
static ULong* block_counters_now(BlockInfo* blk)
{
   ULong* counters = array_counters(kg_now->ctx, blk);
   if (counters) return counters;
   point_block_at(blk, kg_now->ctx);
   return blk->ways[0].counters;
}

extern "C" void VG_REGPARM(1) kg_block_counters(UWord block_id)
{
   helper_calls.block_counters++;
   BlockInfo* blk = block_with_id((UInt)block_id);
   Addr sp = unwind_at_block_start(blk);
   UWord after_call = kg_now->ctx == kCallPending;
   kg_now->found_counters = after_call || blk->fn_entry ? block_entry(blk, sp, after_call) : block_counters_now(blk);
}

extern "C" void VG_REGPARM(1) kg_entry_counters(UWord block_id)
{
   helper_calls.entry_counters++;
   kg_now->found_counters = block_counters_now(block_with_id((UInt)block_id));
}

extern "C" void VG_REGPARM(2) kg_jump_out(Addr target, Addr jump_instr)
{
   // ld.so's resolver jumping to the function it resolved: already pending.
   if (kg_now->ctx == kCallPending || !is_unnamed_object_code(target)) return;
   push_running_levels(current);
   kg_now->call_site = jump_instr;
   kg_now->ctx = kCallPending;
}

// How far below the top frame a jump into another function's middle looks
// for that function's activation.
constexpr UWord kRetJumpFrames = 16;

extern "C" void VG_REGPARM(1) kg_jump_into(FnInfo* fn)
{
   ThreadState* t = current;
   if (kg_now->ctx == kCallPending) return;
   // Among the frames just below the top (a jump returns through the
   // frames that jumps entered, the thesis's "forward jumps"): a walk of
   // the whole stack at every such jump that returns nowhere (stripped
   // python3: 200,000 at scale 1) would cost as much as the stack is deep.
   for (UWord i = 1; i <= kRetJumpFrames && kg_now->top - i > base_frame(t); i++) {
      Frame* f = kg_now->top - i;
      UWord kind = f->tr->kind;
      // Not past a signal's fence or a stack segment's: the jump stays
      // in the top frame, as any jump into other code without a frame.
      if (kind != kActivation && kind != kTransparent) return;
      if (!runs(f->tr, fn)) continue;
      while (kg_now->top > f) pop_frame(t);
      update_now_from_top();
      return;
   }
}

// The instructions of a superblock with one flush point.
static UWord block_instructions(const BlockInfo* blk)
{
   if (clo.count_instr) return blk->n_instrs;   // per-instruction counters
   UWord n = 0;
   for (UInt i = 0; i < blk->n_runs; i++) n += blk->runs()[i].n;
   return n;
}

extern "C" void VG_REGPARM(1) kg_sigreturn_code(BlockInfo* blk)
{
   unwind_at_block_start(blk);
   Transition* top = kg_now->top->tr;
   Bool fence = top->kind == kSignalFence || top->kind == kAltSignalFence;
   if (!fence || kg_now->ctx == kCallPending) {
      kg_block_start(blk);
      blk->ways[0].counters[0]++;   // its flush point, reached
      return;
   }
   // A handler returned into the restorer: as a PLT stub's instructions
   // are charged to its call, these go to the interrupted instruction.
   BlockInfo* at = position_block(top->interrupted);
   point_block_at(at, transition_ctx(top));
   at->ways[0].counters[0] += block_instructions(blk);
}

extern "C" void VG_REGPARM(1) kg_plt_start(BlockInfo* blk)
{
   unwind_at_block_start(blk);
   point_block_at(blk, transition_ctx(kg_now->top->tr));
}

} // namespace kg
