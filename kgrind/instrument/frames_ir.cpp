// The IR twins of the frame code (activity/frames.cpp, activity/kids.cpp):
// a call made pending, a frame pushed from its kid slot, a frame popped by
// a return, and the check that calls kg_unwind when SP rose.

namespace kg {

namespace {

// The call is pending after this block: the callee's first block pushes it
// (with frameless inlined levels, onto the running chain's levels).
void make_call_pending(IRBuilder& b, Addr call_instr, IRExpr* guard)
{
   add_frameless_call(b, guard);
   b.store_if(guard, b.at(&kg_now->call_site), IRBuilder::u64(call_instr));
   b.store_if(guard, b.at(&kg_now->ctx), IRBuilder::u64((HWord)kCallPending));
}

// In the payload layout (acts_in_nodes) a transition's context
// is found from `active`, which points to the child's view pair (or the
// child ActNode, 48 bytes after its node, when the view is the k-SF);
// `active` is tr's when null.
IRExpr* child_active(IRBuilder& b, IRExpr* tr, IRExpr* active)
{
   return active ? active : b.load_field(tr, offsetof(Transition, active));
}

// Non-zero unless tr's frames run fn (frame_fn): its 32-bit `fn_id`.
IRExpr* function_mismatch(IRBuilder& b, IRExpr* tr, const FnInfo* fn)
{
   return b.op(Iop_Xor64, b.load_u32_field(tr, offsetof(Transition, fn_id)), IRBuilder::u64(fn->id));
}

// The context of tr's block counters (transition_ctx): its `ctx`, or where
// ActNodes are node payloads the child's view pair's view_ctx (`active`
// points to the pair), or the child node itself when the view is the k-SF.
IRExpr* load_transition_ctx(IRBuilder& b, IRExpr* tr, IRExpr* active = nullptr)
{
   if (!acts_in_nodes()) return b.load_field(tr, offsetof(Transition, ctx));
   if (!separate_view()) return b.op(Iop_Sub64, child_active(b, tr, active), IRBuilder::u64(sizeof(ForestNode)));
   return b.load_field(child_active(b, tr, active), offsetof(ViewPair, view_ctx));
}

// A direct jump of blk to `target` (when guard holds; nullptr: always) is a
// tail call if the target is another function's first instruction (one
// that starts a block with fn_entry) or a PLT stub: the jump makes the call
// pending as a call does, so that the target pushes inline (a stub passes a
// pending call on). Stubs' own jumps are not tail calls: the call that
// reached the stub stays pending through them. A jump into the running
// function's own first instruction is a loop, not a call, which happens
// where code of another function runs in its frame (a `.cold` part jumped
// to from the middle of its function): checked inline.
void add_tail_call(IRBuilder& b, const BlockInfo* blk, Addr target, const SourceLoc* loc, Addr jump_instr,
                   IRExpr* guard)
{
   if (!target || blk->in_plt) return;
   if (!is_plt_stub(target)) {
      if (loc->fn == blk->fn() || !function_entry(target, *loc)) return;
      IRExpr* running = b.load_field(b.load64(&kg_now->top), offsetof(Frame, tr));
      IRExpr* other = b.op(Iop_CmpNE64, function_mismatch(b, running, loc->fn), IRBuilder::u64(0), Ity_I1);
      guard = guard ? b.op(Iop_And1, guard, other, Ity_I1) : other;
   }
   make_call_pending(b, jump_instr, guard);
}

// A direct jump of blk into the middle of another function (not its first
// instruction: that is a tail call; a split part of blk's own function,
// such as its `.cold` code, is blk's function already, source_loc) returns
// to that function's activation when one is open below the top frame (the
// thesis's "ret-jump"): kg_jump_into pops the frames above it, called only
// when the top frame runs another function. Decided at instrumentation:
// only blocks with such a jump pay, one compare when it is taken.
// ir: the thread's Ir to store first, as for add_unwind_check.
void add_jump_into(IRBuilder& b, const BlockInfo* blk, Addr target, const SourceLoc* loc, IRExpr* guard, IRExpr* ir)
{
   if (!target || blk->in_plt || is_plt_stub(target)) return;
   if (!loc->fn || loc->fn == blk->fn() || loc->fn->no_symbol || function_entry(target, *loc)) return;
   IRExpr* running = b.load_field(b.load64(&kg_now->top), offsetof(Frame, tr));
   IRExpr* other = b.op(Iop_CmpNE64, function_mismatch(b, running, loc->fn), IRBuilder::u64(0), Ity_I1);
   guard = guard ? b.op(Iop_And1, guard, other, Ity_I1) : other;
   if (ir) b.store_if(guard, b.at(&kg_now->ir), ir);
   b.call("kg_jump_into", (void*)kg_jump_into, 1, mkIRExprVec_1(mkIRExpr_HWord((HWord)loc->fn)), guard);
}

// A direct jump of blk to target (when guard holds; nullptr: always): a
// tail call or a ret-jump, from one look-up of the target.
void add_direct_jump(IRBuilder& b, const BlockInfo* blk, Addr target, Addr jump_instr, IRExpr* guard, IRExpr* ir)
{
   if (!target || blk->in_plt) return;
   SourceLoc loc = {};
   if (!is_plt_stub(target)) source_loc(target, &loc);
   add_tail_call(b, blk, target, &loc, jump_instr, guard);
   add_jump_into(b, blk, target, &loc, guard, ir);
}

// A computed jump of blk (to `target`, SP then `sp`) to the function a
// tail call from it last entered (tail_jump_word) calls kg_tail_jump,
// which makes it a pending call, as a direct tail call is, when it jumps
// from an activation of blk's function at that activation's entry SP: the
// callee's first block then pushes its frame from its kid slot. Other
// computed jumps (switch tables, computed gotos: an interpreter's dispatch)
// pay one load and one compare; a tail call to another target, or from
// another frame, is left to the callee's fix-up as before, which records
// its target. Not for a function that sets a context (its jumps switch
// coroutines: ir_helpers.cpp, linked_to_new_coroutine).
void add_computed_tail_call(IRBuilder& b, const BlockInfo* blk, IRExpr* target, IRExpr* sp, Addr jump_instr)
{
   const FnInfo* fn = blk->fn();
   if (!fn_traced(fn) || fn->context_set) return;
   const Addr* cached = tail_jump_word(jump_instr, fn);
   IRExpr* to_cached = b.op(Iop_CmpEQ64, target, b.load64(cached), Ity_I1);
   b.call("kg_tail_jump", (void*)kg_tail_jump, 3,
          mkIRExprVec_3(sp, mkIRExpr_HWord(jump_instr), mkIRExpr_HWord(fn->id)), to_cached);
}

// A computed jump of a function with a symbol to outside its object's text
// calls kg_jump_out, which makes a jump into code without a symbol there a
// tail call (callgrind calls a jump into another object a call; a symbol's
// first instruction is one already, kg_block_entry). Jumps within the
// object (switch tables, computed gotos) pay one compare.
void add_jump_out(IRBuilder& b, const BlockInfo* blk, IRExpr* target, Addr jump_instr)
{
   Addr lo, hi;
   if (!object_text(blk->addr, &lo, &hi)) return;
   IRExpr* outside = b.op(Iop_CmpLE64U, IRBuilder::u64(hi - lo), b.op(Iop_Sub64, target, IRBuilder::u64(lo)), Ity_I1);
   b.call("kg_jump_out", (void*)kg_jump_out, 2, mkIRExprVec_2(target, mkIRExpr_HWord(jump_instr)), outside);
}

// A frame push in straight-line IR, as push_activation() does, of the top
// frame's kid in this block's function's slot (the transition that frame's
// calls into a function of that slot pushed last), if it is into this
// block's function.
// A function's first block pushes speculatively, and kg_entry_fixup undoes a
// wrong push and does what kg_block_entry does: a call from elsewhere, a full
// shadow stack, or a jump to the entry (a tail call, or a loop back to it).
// Any other block that direct calls target (code without symbols) pushes
// only when the prediction holds, and calls kg_block_entry after a call
// that it did not predict; entered by a jump, it runs no helper.
//
// The tests are 64-bit arithmetic, with one 1-bit result at the end: VEX
// turns each 1-bit value into a setcc and a test, so a chain of And1/Or1
// costs about three host instructions per link. A mismatch is a non-zero
// word: (x ^ y) | ...
// Returns the context the block runs in after it, for its counters' check.
IRExpr* add_inline_entry(IRBuilder& b, BlockInfo* blk, IRExpr* blk_at, IRExpr* sp, Bool speculative)
{
   IRExpr* ctx_before = b.load64(&kg_now->ctx);
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* next = b.op(Iop_Add64, top, IRBuilder::u64(sizeof(Frame)));   // always writable
   IRExpr* top_tr = b.load_field(top, offsetof(Frame, tr));
   FnInfo* callee = activated_function(blk);
   // The kid of (this function, the pending call's site): kid_slot's offset.
   IRExpr* site = b.load64(&kg_now->call_site);
   IRExpr* kid_offset = b.op(kids_grow() ? Iop_Xor64 : Iop_Add64, site, IRBuilder::u64(kid_key(callee->id, 0)));
   if (kids_grow()) {
      // The slot times 8 last: the load's address mode scales it.
      IRExpr* slot = b.op(Iop_And64,
                          b.op(Iop_Shr64, kid_offset, b.load(Ity_I8, b.field(top_tr, offsetof(Transition, kid_shift)))),
                          b.load_u8_field(top_tr, offsetof(Transition, kid_mask)));
      kid_offset = b.op(Iop_Shl64, slot, IRExpr_Const(IRConst_U8(3)));
   }
   else
      kid_offset = b.op(Iop_And64, kid_offset, IRBuilder::u64(kKidOffsetMask));
   IRExpr* kids = b.load_field(top_tr, offsetof(Transition, kids));
   IRExpr* tr = b.load_field(b.op(Iop_Add64, kids, kid_offset), 0);
   // Read once where the function and context are found from the child.
   IRExpr* active = acts_in_nodes() ? b.load_field(tr, offsetof(Transition, active)) : nullptr;
   IRExpr* mismatch = b.op(Iop_Or64,
                           function_mismatch(b, tr, callee),
                           b.op(Iop_Xor64, b.load_field(tr, offsetof(Transition, site)), site));
   // Zero when: the kid is into this function from this site, a call is
   // pending, and next <= frames_last (frames are one array: the sign bit of
   // the difference says it).
   IRExpr* no_room = b.op(Iop_Shr64, b.op(Iop_Sub64, b.load64(&kg_now->frames_last), next),
                          IRExpr_Const(IRConst_U8(63)));
   IRExpr* wrong_bits = b.op(Iop_Or64, b.op(Iop_Or64, mismatch,
                                            b.op(Iop_Xor64, ctx_before, IRBuilder::u64((HWord)kCallPending))),
                             no_room);
   IRBuilder::Cond predicted = { Iop_CmpEQ64, wrong_bits, IRBuilder::u64(0) };
   // The push's stores: always (speculative) or only when predicted.
   auto guard = [&]() { return speculative ? nullptr : b.test(predicted); };
   IRExpr* one = IRBuilder::u64(1);

   b.store64(b.field(next, offsetof(Frame, sp)), sp);   // the spare slot: never in use
   b.store64(b.field(next, offsetof(Frame, ir_at_entry)), b.load64(&kg_now->ir));
   b.store64(b.field(next, offsetof(Frame, tr)), tr);
   b.add_if(guard(), b.place(tr, offsetof(Transition, calls)), one);
   // The count of frames in the child's context (none in the
   // payload layout).
   if (!acts_in_nodes()) b.add_if(guard(), b.place(b.load_field(tr, offsetof(Transition, active)), 0), one);
   b.store_if(guard(), b.at(&kg_now->top), next);
   b.store_if(guard(), b.at(&kg_now->top_sp), sp);
   // No call is pending any more.
   IRExpr* ctx = load_transition_ctx(b, tr, active);
   b.store_if(guard(), b.at(&kg_now->ctx), ctx);
   // Events beyond Ir: the frame's event clocks start (a wrong push's start
   // is harmless: the fix-up's or kg_block_entry's push starts them again).
   if (extra_events_on()) add_frame_events_start(b, next);

   IRExpr** args = mkIRExprVec_4(blk_at, sp, ctx_before, mkIRExpr_HWord((HWord)callee));
   IRExpr* wrong = b.op(Iop_CmpNE64, wrong_bits, IRBuilder::u64(0), Ity_I1);
   if (speculative) {
      b.call("kg_entry_fixup", (void*)kg_entry_fixup, 3, args, wrong);
      // The context now, unless the fix-up ran; then the block's counters
      // are already its context's (block_entry), and the check may only
      // call kg_refresh_counters once needlessly: cheaper than reloading
      // kg_now->ctx in every entry.
      return ctx;
   } else {
      // Entered by a jump: no helper.
      IRExpr* called = b.op(Iop_CmpEQ64, ctx_before, IRBuilder::u64((HWord)kCallPending), Ity_I1);
      b.call("kg_block_entry", (void*)kg_block_entry, 3, args, b.op(Iop_And1, called, wrong, Ity_I1));
      return b.load64(&kg_now->ctx);
   }
}

// tr's kind, zero-extended: at finite k with the three bytes after it (zero
// there) as one 32-bit load; at k = inf, where they are rolled_in and
// kid_mask, alone.
IRExpr* kind_word(IRBuilder& b, IRExpr* tr)
{
   if (kids_grow()) return b.load_u8_field(tr, offsetof(Transition, kind));
   return b.load_u32_field(tr, offsetof(Transition, kind));
}

// A block ending in a return pops the top frame inline in the common case,
// as pop_frame() does: a `ret` leaves SP just above the return address that
// the call pushed (top.sp + 8), and the top frame is an activation. The
// updates are guarded stores (a skipped store, not a select of the old
// value). Anything else (longjmp, exceptions, `ret $n`, fences) and frames
// below the top that died too (a tail call's caller shares its SP) are left
// to the unwind check after it (add_unwind_check).
// link_target: on arm64 (kCallsPush false), where the `ret` goes; the test
// is then that SP is the frame's SP at entry and target the return address
// of the frame's call (add_link_return). Returns the test: zero when popped.
IRExpr* add_inline_return(IRBuilder& b, IRExpr* sp, IRExpr* ir, IRExpr* link_target = nullptr)
{
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* tr = b.load_field(top, offsetof(Frame, tr));
   // Zero when SP is just above the return address and the frame is an
   // activation (kActivation is 0); 64-bit arithmetic, as in add_inline_entry.
   static_assert(kActivation == 0, "the pop test ors in the frame kind");
   IRExpr* not_popped;
#if defined(VGA_arm64)
   IRExpr* return_address = b.op(Iop_Add64, b.load_field(tr, offsetof(Transition, site)), IRBuilder::u64(kCallLength));
   not_popped = b.op(Iop_Or64,
                     b.op(Iop_Or64, b.op(Iop_Xor64, sp, b.load_field(top, offsetof(Frame, sp))),
                          b.op(Iop_Xor64, link_target, return_address)),
                     kind_word(b, tr));
#else
   not_popped = b.op(Iop_Or64, b.op(Iop_Xor64, sp, b.op(Iop_Add64, b.load_field(top, offsetof(Frame, sp)),
                                                        IRBuilder::u64(sizeof(Addr)))),
                     kind_word(b, tr));
#endif
   IRBuilder::Cond pop = { Iop_CmpEQ64, not_popped, IRBuilder::u64(0) };

   IRExpr* incl = b.op(Iop_Sub64, ir ? ir : b.load64(&kg_now->ir), b.load_field(top, offsetof(Frame, ir_at_entry)));
   b.add_if(b.test(pop), b.place(tr, offsetof(Transition, edge_incl)), incl);
   // A recursive activation's cost is already in the outermost one's
   // (in the payload layout, the transition knows which it has:
   // Transition::rolled_in, and no frames are counted).
   IRExpr* still_active = nullptr;
   if (!acts_in_nodes()) {
      IRExpr* active = b.load_field(tr, offsetof(Transition, active));
      still_active = b.op(Iop_Sub64, b.load64(active), IRBuilder::u64(1));
      b.store_if(b.test(pop), active, still_active);
      IRExpr* popped_outermost =
         b.op(Iop_CmpEQ64, b.op(Iop_Or64, not_popped, still_active), IRBuilder::u64(0), Ity_I1);
      b.add_if(popped_outermost, b.place(tr, offsetof(Transition, ctx_incl)), incl);
   }

   IRExpr* below = b.op(Iop_Sub64, top, IRBuilder::u64(sizeof(Frame)));
   b.store_if(b.test(pop), b.at(&kg_now->top), below);
   b.store_if(b.test(pop), b.at(&kg_now->top_sp), b.load_field(below, offsetof(Frame, sp)));
   IRExpr* below_tr = b.load_field(below, offsetof(Frame, tr));
   b.store_if(b.test(pop), b.at(&kg_now->ctx), load_transition_ctx(b, below_tr));
   // Events beyond Ir: the popped frame's event clocks close (outermost of
   // its context: no frames left in it).
   if (extra_events_on()) add_frame_events_close(b, top, tr, not_popped, still_active);
   // Frameless inlined levels: the call was made from inlined code, whose
   // levels the helper pops (kg_frameless_return), after the callee's
   // clocks closed (their helper checks that the callee is the top's next).
   if (frameless_levels_on()) {
      IRExpr* to_levels = b.op(Iop_CmpLE64U, IRBuilder::u64(kInlineSiteBase),
                               b.load_field(below_tr, offsetof(Transition, site)), Ity_I1);
      b.call("kg_frameless_return", (void*)kg_frameless_return, 0, mkIRExprVec_0(),
             b.op(Iop_And1, b.test(pop), to_levels, Ity_I1));
   }
   return not_popped;
}

// Frames die only when SP rises above them, and SP changes only where a
// superblock writes it (the core's own changes, signal delivery and return,
// are callbacks). So SP is checked after the writes, not at every block
// start: before each side exit that follows a write, and at the end of a
// superblock that wrote it, unless SP is still at or below its value at the
// superblock's start (SpTracker). Blocks that leave SP alone (loops, most
// code between calls) or only lower it (prologues, calls) pay nothing.
// ir: the thread's Ir to store first, when a check before the superblock's
// end may call kg_unwind (which closes inclusive costs with it) and a
// leaving count has not stored it yet (PendingCounts), else nullptr.
// taken: for a check before a side exit whose superblock checks again at
// its end, the exit's guard: the check acts only if the exit is taken.
// Otherwise the rest of the superblock, whose instructions count in the
// context its prologue found, would run after the pops or the stack switch
// (boost.context's jump_fcontext switches SP before `ldmxcsr`, whose
// emulation-warning exit comes 11 instructions before its end): their Ir
// would be in other frames' inclusive cost than their context's, and a
// context's inclusive cost below its exclusive cost.
void add_unwind_check(IRBuilder& b, IRExpr* sp, IRExpr* ir, IRExpr* taken)
{
   IRExpr* rose = b.op(Iop_CmpLT64U, b.load64(&kg_now->top_sp), sp, Ity_I1);
   if (taken) rose = b.op(Iop_And1, rose, taken, Ity_I1);
   if (ir) b.store_if(rose, b.at(&kg_now->ir), ir);
   b.call("kg_unwind", (void*)kg_unwind, 1, mkIRExprVec_1(sp), rose);
}

} // namespace

} // namespace kg
