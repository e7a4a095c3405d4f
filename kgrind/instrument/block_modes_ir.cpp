// Block modes: a superblock's basic blocks and the trace step at each.

namespace kg {

namespace {

// Block modes, at a block start: the run is recorded in the block trace
// (kg_blocks.h), one store, and stepped through the forest later in C. In
// intra mode only while the top frame is the activation the trace continues
// (frames are pushed and popped inline too); otherwise, and at a function's
// first block and a call's return site, which start or resume another
// activation, the helper takes the step at once. With --dump-blocks the
// helper takes every step (it writes each run as it happens).
void add_block_step(IRBuilder& b, BBInfo* bb, UWord n, void* helper, const HChar* helper_name)
{
   IRExpr** args = mkIRExprVec_2(mkIRExpr_HWord((HWord)bb), mkIRExpr_HWord((HWord)n));
   Bool call_boundary = bb->offset == 0 || is_return_site(bb->addr);
   if (clo.dump_blocks || (call_boundary && clo.mode == kModeIntra)) {
      b.call(helper_name, helper, 2, args, nullptr);
      return;
   }
   IRExpr* pos = b.load64(&kg_trace_pos);
   b.store(pos, mkIRExpr_HWord((HWord)trace_entry(bb, n)));
   IRExpr* same = nullptr;
   IRExpr* advance = IRBuilder::u64(sizeof(UWord));
   if (clo.mode == kModeIntra) {
      IRExpr* top = b.load64(&kg_now->top);
      same = b.op(Iop_And1, b.op(Iop_CmpEQ64, top, b.load64(&kg_now->bb_top), Ity_I1),
                  b.op(Iop_CmpEQ64, b.load_field(top, offsetof(Frame, ir_at_entry)),
                       b.load64(&kg_now->bb_ir), Ity_I1), Ity_I1);
      advance = b.ite(same, advance, IRBuilder::u64(0));
   }
   IRExpr* next = b.op(Iop_Add64, pos, advance);
   b.store64(&kg_trace_pos, next);
   if (same) b.call(helper_name, helper, 2, args, b.tmp(IRExpr_Unop(Iop_Not1, same), Ity_I1));
   // Full: the position's low bits are zero (only after an advance).
   IRExpr* full = b.op(Iop_CmpEQ64, b.op(Iop_And64, next, IRBuilder::u64(kTraceBytes - 1)),
                       IRBuilder::u64(0), Ity_I1);
   if (same) full = b.op(Iop_And1, same, full, Ity_I1);
   b.call("kg_trace_full", (void*)kg_trace_full, 0, mkIRExprVec_0(), full);
}

// Block modes: the basic blocks of a superblock. A block starts at the
// superblock's first instruction and at the first instruction after each side
// exit. For each instruction starting a block of a traced function,
// block_of[i] is the block and block_len[i] its instruction count; otherwise
// block_of[i] is nullptr. Decided here, so function mode pays nothing.
void find_blocks(IRSB* sb_in, BlockInfo* blk, BBInfo** block_of, UInt* block_len)
{
   Int instr = -1, start = -1;
   Bool exit_seen = True;
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st) continue;
      if (st->tag == Ist_Exit) { exit_seen = True; continue; }
      if (st->tag != Ist_IMark) continue;
      instr++;
      block_of[instr] = nullptr;
      if (!exit_seen) {
         if (start >= 0) block_len[start]++;
         continue;
      }
      exit_seen = False;
      start = -1;
      if (blk->in_plt) continue;
      Addr a = (Addr)st->Ist.IMark.addr;
      SourceLoc loc;
      source_loc(a, &loc);
      if (!blocks_traced(loc.fn)) continue;
      block_of[instr] = block_at(a, loc);
      block_len[instr] = 1;
      start = instr;
   }
}

} // namespace

} // namespace kg
