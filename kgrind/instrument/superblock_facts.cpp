// What a superblock does, read from its IR before it is instrumented: where
// it writes SP, its exits and their conditions, the PLT stub it calls, its
// positions.

namespace kg {

namespace {

// Does the statement write the guest SP?
Bool writes_sp(const IRStmt* st, const IRTypeEnv* tyenv, const VexGuestLayout* layout)
{
   auto overlaps = [&](Int offset, Int size) {
      return offset < layout->offset_SP + layout->sizeof_SP && layout->offset_SP < offset + size;
   };
   if (st->tag == Ist_Put)
      return overlaps(st->Ist.Put.offset, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Put.data)));
   if (st->tag == Ist_PutI) return True;   // never SP in practice; be safe
   if (st->tag != Ist_Dirty) return False;
   const IRDirty* d = st->Ist.Dirty.details;
   for (Int i = 0; i < d->nFxState; i++) {
      if (d->fxState[i].fx == Ifx_Read) continue;
      for (Int r = 0; r <= d->fxState[i].nRepeats; r++)
         if (overlaps(d->fxState[i].offset + r * d->fxState[i].repeatLen, d->fxState[i].size)) return True;
   }
   return False;
}

// Whether SP may have risen above its value at the superblock's start: only
// then can a frame have died (at the start no frame lies below SP: every
// superblock that raised SP checked it). Pushes, `sub $n, %rsp` and a
// call's push of the return address only lower SP, so prologues and call
// blocks need no check. Tracks SP as (SP at entry + a constant) through
// the flat IR's temporaries; any other write (`mov %rbp, %rsp`, `leave`,
// helpers) is "may have risen".
class SpTracker {
public:
   SpTracker(const IRSB* sb, const VexGuestLayout* layout)
      : layout_(layout), n_temps_(sb->tyenv->types_used),
        temps_((TempOffset*)alloc_zeroed(n_temps_ * sizeof(TempOffset), "kg.instrument"))
   {
   }
   ~SpTracker() { release(temps_); }

   void note(const IRStmt* st, const IRTypeEnv* tyenv)
   {
      if (st->tag == Ist_WrTmp) {
         note_temp(st->Ist.WrTmp.tmp, st->Ist.WrTmp.data);
         return;
      }
      if (!writes_sp(st, tyenv, layout_)) return;
      written_ = True;
      IRExpr* data = st->tag == Ist_Put && st->Ist.Put.offset == layout_->offset_SP ? st->Ist.Put.data : nullptr;
      put_ = data && isIRAtom(data) && typeOfIRExpr(tyenv, data) == Ity_I64 ? data : nullptr;
      if (data && data->tag == Iex_RdTmp && temps_[data->Iex.RdTmp.tmp].known) {
         offset_ = temps_[data->Iex.RdTmp.tmp].offset;
      } else {
         known_ = False;
      }
   }

   Bool may_have_risen() const { return written_ && (!known_ || offset_ > 0); }

   // The guest SP now: the value the superblock last put there, or a GET.
   // (VEX's cleanup after instrumentation forwards no PUT to a later GET:
   // a return's pop and the unwind checks reloaded SP from the guest state.)
   IRExpr* value(IRBuilder& b) const
   {
      return put_ ? put_ : b.tmp(IRExpr_Get(layout_->offset_SP, Ity_I64), Ity_I64);
   }

private:
   struct TempOffset {
      Bool known;
      Long offset;   // the temporary = SP at entry + offset
   };

   void note_temp(IRTemp t, const IRExpr* e)
   {
      if (e->tag == Iex_Get && e->Iex.Get.offset == layout_->offset_SP && e->Iex.Get.ty == Ity_I64) {
         temps_[t] = { known_, offset_ };
         return;
      }
      if (e->tag != Iex_Binop || (e->Iex.Binop.op != Iop_Add64 && e->Iex.Binop.op != Iop_Sub64)) return;
      const IRExpr* x = e->Iex.Binop.arg1;
      const IRExpr* c = e->Iex.Binop.arg2;
      if (x->tag != Iex_RdTmp || !temps_[x->Iex.RdTmp.tmp].known) return;
      if (c->tag != Iex_Const || c->Iex.Const.con->tag != Ico_U64) return;
      Long n = (Long)c->Iex.Const.con->Ico.U64;
      if (n > (Long)kMaxStackFrame || n < -(Long)kMaxStackFrame) return;
      temps_[t] = { True, temps_[x->Iex.RdTmp.tmp].offset + (e->Iex.Binop.op == Iop_Add64 ? n : -n) };
   }

   const VexGuestLayout* layout_;
   Int n_temps_;
   TempOffset* temps_;
   Bool written_ = False;
   IRExpr* put_ = nullptr;   // an atom: the last PUT of SP, if nothing wrote SP since
   Bool known_ = True;   // offset_ is SP - SP at entry
   Long offset_ = 0;
};

// Side exits taken only when the instruction faults (SSE alignment checks,
// emulation failures): function mode counts no flush point before them, so
// that a loop with aligned SSE accesses pays one counter update per pass, not
// one per access. A fault taken there leaves the superblock's instructions
// since the previous flush point uncounted (in a leaving count, all of the
// run's: PendingCounts), as any fault (a SIGSEGV from a load or store,
// inside translated code) does.
Bool faults_only(IRJumpKind jk)
{
   switch (jk) {
   case Ijk_SigSEGV: case Ijk_SigBUS: case Ijk_SigILL: case Ijk_SigTRAP:
   case Ijk_SigFPE: case Ijk_SigFPE_IntDiv: case Ijk_SigFPE_IntOvf:
   case Ijk_EmFail: case Ijk_NoDecode: case Ijk_MapFail:
      return True;
   default:
      return False;
   }
}

// The index of the superblock's first IMark. The statements before it are
// VEX's, not the guest's: in a self-checking translation (--smc-check=all,
// or code on the stack or in an anonymous mapping, by default) a checksum of
// the guest code and an exit (Ijk_InvalICache) that discards the translation
// when the code changed. That exit runs no guest instruction: it is no flush
// point and no side exit of the block, and instrument() copies these
// statements unchanged ahead of the prologue, so that a failed check leaves
// before anything is pushed or counted.
Int guest_code_start(const IRSB* sb)
{
   Int i = 0;
   while (i < sb->stmts_used && !(sb->stmts[i] && sb->stmts[i]->tag == Ist_IMark)) i++;
   return i;
}

Addr const_target(const IRConst* c) { return c && c->tag == Ico_U64 ? (Addr)c->Ico.U64 : 0; }

// Is the superblock a loop that VEX unrolled: a jump back to its own start
// at the end, and more than one side exit (not counting faults')?
Bool unrolled_loop(const IRSB* sb_in, const BlockInfo* blk)
{
   if (sb_in->jumpkind != Ijk_Boring || sb_in->next->tag != Iex_Const ||
       const_target(sb_in->next->Iex.Const.con) != blk->addr)
      return False;
   UInt exits = 0;
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_Exit && !faults_only(st->Ist.Exit.jk)) exits++;
   }
   return exits > 1;
}

// The PLT stub that a block ending in a direct call, or in a direct jump (a
// tail call), enters, or 0 (add_plt_prologue). Not a stub's own jump to the
// next part of a lazy binding.
Addr called_plt_stub(const IRSB* sb_in)
{
   Bool call_or_jump = sb_in->jumpkind == Ijk_Call || sb_in->jumpkind == Ijk_Boring;
   if (!call_or_jump || sb_in->next->tag != Iex_Const) return 0;
   Addr target = const_target(sb_in->next->Iex.Const.con);
   if (!target || !is_plt_stub(target)) return 0;
   Int first = guest_code_start(sb_in);
   if (first == sb_in->stmts_used) return 0;
   return is_plt_stub((Addr)sb_in->stmts[first]->Ist.IMark.addr) ? 0 : target;
}

// Does the block end in an indirect call, which may enter a PLT stub? A
// non-PIE executable takes an imported function's address as its PLT entry,
// so a call through such a function pointer is `call *%reg` to a stub.
Bool ends_in_indirect_call(const IRSB* sb_in)
{
   return sb_in->jumpkind == Ijk_Call && sb_in->next->tag != Iex_Const;
}

// The instructions of a PLT stub that the block's last instruction may
// enter (called_plt_stub, or any target of an indirect call) are charged to
// that instruction's line, in a counter of the block's that the stub finds
// through kg_now (add_plt_prologue).
void add_stub_counter(IRBuilder& b, BlockInfo* blk, PendingCounts& pending, IRExpr* counters,
                      UInt stub_slot, IRExpr* target)
{
   UInt point = pending.add_stub_point(stub_slot);
   blk->stub_counter = True;
   b.store64(&kg_now->plt_stub, target);
   b.store64(&kg_now->plt_counter, b.address(b.place(counters, 8 * point)));
}

// Does the superblock count at one flush point (its end) only?
Bool one_flush_point(const IRSB* sb_in)
{
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_Exit && (block_mode() || !faults_only(st->Ist.Exit.jk))) return False;
   }
   return True;
}

// The instructions of a PLT stub's superblock if a caller's counter can
// count them (one line, so one counter, and one flush point), else 0.
UInt stub_instructions(const IRSB* sb_in, const BlockInfo* blk, Int n_instrs)
{
   if (!blk->in_plt || blk->n_slots != 1 || !one_flush_point(sb_in)) return 0;
   return (UInt)n_instrs;
}

// A signal restorer's superblock (with one flush point): counted into
// scratch, its instructions charged by the helper (kg_sigreturn_code: to the
// instruction the signal interrupted).
Bool counts_as_sigreturn_code(const IRSB* sb_in, const BlockInfo* blk)
{
   return !blk->in_plt && is_sigreturn_code(blk->addr) && one_flush_point(sb_in);
}

Addr exit_target(const InstrPos& x, IRJumpKind jk, Addr target)
{
   return jk == Ijk_Boring ? jump_target(x, target, False) : 0;
}

// The expression that temporary t got before sb_in->stmts[before], or nullptr.
IRExpr* tmp_definition(const IRSB* sb_in, Int before, IRTemp t)
{
   for (Int i = before - 1; i >= 0; i--) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_WrTmp && st->Ist.WrTmp.tmp == t) return st->Ist.WrTmp.data;
   }
   return nullptr;
}

// The guard of side exit sb_in->stmts[exit] as a condition that each
// guarded store computes afresh (IRBuilder::Cond) when the guest code
// computed it by one comparison of atoms (seen through the guest's
// 64to1(1Uto64(bit)) round trip): VEX then folds each compare into its
// store (and the exit's into its jump) instead of testing a setcc'd bit at
// each, about 20 bytes less for each copy of an unrolled loop's body.
IRBuilder::Cond exit_condition(const IRSB* sb_in, Int exit)
{
   IRExpr* guard = sb_in->stmts[exit]->Ist.Exit.guard;
   IRExpr* e = guard;
   while (e && e->tag == Iex_RdTmp) {
      e = tmp_definition(sb_in, exit, e->Iex.RdTmp.tmp);
      if (e && e->tag == Iex_Unop && e->Iex.Unop.op == Iop_64to1 && e->Iex.Unop.arg->tag == Iex_RdTmp) {
         IRExpr* wide = tmp_definition(sb_in, exit, e->Iex.Unop.arg->Iex.RdTmp.tmp);
         if (wide && wide->tag == Iex_Unop && wide->Iex.Unop.op == Iop_1Uto64) e = wide->Iex.Unop.arg;
      }
   }
   if (e && e->tag == Iex_Binop && isIRAtom(e->Iex.Binop.arg1) && isIRAtom(e->Iex.Binop.arg2))
      return { e->Iex.Binop.op, e->Iex.Binop.arg1, e->Iex.Binop.arg2 };
   return { Iop_INVALID, guard, nullptr };
}

// Whether SP may have risen at the superblock's end (its end checks SP),
// as instrument() tracks it.
Bool sp_may_rise_by_end(const IRSB* sb_in, const VexGuestLayout* layout)
{
   SpTracker sp(sb_in, layout);
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag != Ist_NoOp) sp.note(st, sb_in->tyenv);
   }
   return sp.may_have_risen();
}

// Is there a flush point before this side exit? Before every one in the
// block modes; function mode skips exits that only a fault takes.
Bool flushes_before(const IRStmt* exit, Bool blocks)
{
   return blocks || !faults_only(exit->Ist.Exit.jk);
}

// Per-instruction positions (describe_positions): the superblock's
// instructions and its flush points (one before each side exit that
// flushes_before, one at the end).
void count_positions(const IRSB* sb_in, Bool blocks, UInt* n_instrs, UInt* n_exits)
{
   *n_instrs = *n_exits = 0;
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_IMark) (*n_instrs)++;
      if (st && st->tag == Ist_Exit && flushes_before(st, blocks)) (*n_exits)++;
   }
}

// Per-instruction positions (--dump-instr; the block modes always): the
// superblock's instructions and flush points (one before each side exit
// that flushes_before, one at the end), for per-instruction costs and
// jumps (a called PLT stub's counter comes after the flush points:
// add_stub_counter).
// chain_of: each instruction's inline chain (--inline-frames), with a flush
// point before each change (instrument), or nullptr.
void describe_positions(IRSB* sb_in, BlockInfo* blk, Bool blocks, const UInt* chain_of, UInt chain_changes)
{
   UInt n_instrs, n_exits;
   count_positions(sb_in, blocks, &n_instrs, &n_exits);   // as describe_block made room for
   n_exits += chain_changes;
   blk->n_instrs = (UShort)n_instrs;
   blk->n_slots = (UShort)(n_exits + 1);
   FlushPoint* points = blk->points();
   Int instr = -1;
   UInt point = 0;
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st || (st->tag == Ist_Exit && !flushes_before(st, blocks))) continue;
      if (st->tag == Ist_IMark) {
         if (chain_of && instr >= 0 && chain_of[instr + 1] != chain_of[instr]) {
            points[point].instr = instr;   // a run's end: no exit
            points[point].jump_target = 0;
            point++;
         }
         InstrPos& x = blk->instrs()[++instr];
         SourceLoc loc;
         x.addr = (Addr)st->Ist.IMark.addr;
         x.len = st->Ist.IMark.len;
         source_loc(x.addr, &loc);
         x.line = source_line(loc);
         x.point = point;
      } else if (st->tag == Ist_Exit) {
         // One flush point per exit, as instrument() flushes.
         if (instr >= 0) {
            InstrPos& x = blk->instrs()[instr];
            if (st->Ist.Exit.jk == Ijk_Boring) x.cond = True;
            points[point].instr = instr;
            points[point].jump_target = exit_target(x, st->Ist.Exit.jk, const_target(st->Ist.Exit.dst));
         }
         point++;
      }
   }
   if (instr < 0) return;
   const IRExpr* next = sb_in->next;
   Addr target = next->tag == Iex_Const ? const_target(next->Iex.Const.con) : 0;
   points[n_exits].instr = instr;
   points[n_exits].jump_target = exit_target(blk->instrs()[instr], sb_in->jumpkind, target);
}

// The address after the superblock's last instruction (a call's return address).
Addr end_of_last_instruction(IRSB* sb_in)
{
   for (Int i = sb_in->stmts_used - 1; i >= 0; i--) {
      IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_IMark) return (Addr)st->Ist.IMark.addr + st->Ist.IMark.len;
   }
   return 0;
}

// Does the superblock end in a call? Not when the call's target is the next
// instruction: the get-PC idiom of position-independent x86 code (`call 1f;
// 1: pop %reg`) pushes its own return address to read it, and nothing ever
// returns there. It is a jump (callgrind takes it for a recursive call);
// the pop that follows leaves SP where it was, so no frame is touched.
Bool ends_in_call(IRSB* sb)
{
   if (sb->jumpkind != Ijk_Call) return False;
   Addr target = sb->next->tag == Iex_Const ? const_target(sb->next->Iex.Const.con) : 0;
   return target != end_of_last_instruction(sb);
}

} // namespace

} // namespace kg
