// Calls and returns where calls leave the return address in a register
// (arm64's `bl` and `blr` put it in x30 and leave SP alone): how VEX's jump
// kinds are read, and the return's pop, the IR twin of
// activity/link_register_returns.cpp. docs/design/shadow-stacks.md, "arm64".

namespace kg {

namespace {

#if defined(VGA_arm64)
// VEX's arm64 front end gives every immediate branch, `b` as well as `bl`,
// the jump kind Ijk_Call; only `bl` (bit 31 of the instruction) is a call.
// A `b` is made the jump it is (Ijk_Boring), in the superblock VEX runs
// too, before anything reads the jump kind: a jump within a function, or a
// tail call when it goes to another function's first instruction (rule 2).
void read_link_register_jump_kind(IRSB* sb_in)
{
   if (sb_in->jumpkind != Ijk_Call || sb_in->next->tag != Iex_Const) return;
   for (Int i = sb_in->stmts_used - 1; i >= 0; i--) {
      const IRStmt* st = sb_in->stmts[i];
      if (!st || st->tag != Ist_IMark) continue;
      const UInt insn = *(const UInt*)(Addr)st->Ist.IMark.addr;
      const UInt kOpMask = 0xFC000000, kB = 0x14000000;   // B imm26 (BL: 0x94000000)
      if (st->Ist.IMark.len == 4 && (insn & kOpMask) == kB) sb_in->jumpkind = Ijk_Boring;
      return;
   }
}

// A block ending in `ret` to target pops the top frame inline when SP is
// the frame's SP at entry and target the return address of its call (the
// call instruction + 4), as callgrind matches a return with its call. Else
// kg_link_return looks below: a tail call's callee returns to its caller's
// caller, so the frames entered at this SP are popped down to the one whose
// call returns there. What neither pops (longjmp, exceptions, a `ret` used
// as a jump) is left to the unwind check after it (add_unwind_check), as on
// x86-64.
void add_link_return(IRBuilder& b, IRExpr* sp, IRExpr* target, IRExpr* ir)
{
   IRExpr* not_popped = add_inline_return(b, sp, ir, target);
   IRExpr* missed = b.op(Iop_CmpNE64, not_popped, IRBuilder::u64(0), Ity_I1);
   if (ir) b.store_if(missed, b.at(&kg_now->ir), ir);
   b.call("kg_link_return", (void*)kg_link_return, 2, mkIRExprVec_2(target, sp), missed);
}
#else
void read_link_register_jump_kind(IRSB* sb_in)
{
}

void add_link_return(IRBuilder& b, IRExpr* sp, IRExpr* target, IRExpr* ir)
{
   VG_(tool_panic)((HChar*)"kgrind: returns by link register on a platform whose calls push");
}
#endif

} // namespace

} // namespace kg
