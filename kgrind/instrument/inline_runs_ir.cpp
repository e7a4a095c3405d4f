// Inlined levels (--inline-frames) in a superblock: its instructions in
// runs of one inline chain, and at each run's start a check that the top
// frame's levels are that chain (activity/inline_frames.cpp).

namespace kg {

namespace {

// Whether blk's superblock checks inline chains: a traced function's block
// with a symbol (inlined levels are pushed onto its frames only).
Bool checks_inline_chains(const BlockInfo* blk)
{
   const FnInfo* fn = blk->fn();
   return inline_frames_on() && !blk->in_plt && !fn->no_symbol && fn_traced(fn) && !fn->resolver;
}

// The chain of each instruction of sb (chain_of[i] for its i-th IMark; the
// function of its first instruction, as the block's); returns how many
// times the chain changes from one instruction to the next.
UInt inline_runs(IRSB* sb, UInt* chain_of)
{
   UInt n = 0, changes = 0;
   SourceLoc first = {};
   for (Int i = 0; i < sb->stmts_used; i++) {
      IRStmt* st = sb->stmts[i];
      if (!st || st->tag != Ist_IMark) continue;
      if (!n) source_loc((Addr)st->Ist.IMark.addr, &first);
      chain_of[n] = inline_chain_at((Addr)st->Ist.IMark.addr, first.fn);
      if (n && chain_of[n] != chain_of[n - 1]) changes++;
      n++;
   }
   return changes;
}

// Zero when the top frame is the innermost level of `chain` (or, for the
// empty chain, no inlined level): its transition's site.
IRExpr* chain_missed(IRBuilder& b, UInt chain)
{
   IRExpr* tr = b.load_field(b.load64(&kg_now->top), offsetof(Frame, tr));
   IRExpr* site = b.load_field(tr, offsetof(Transition, site));
   if (!chain) return b.op(Iop_CmpLE64U, IRBuilder::u64(kInlineSiteBase), site, Ity_I1);
   return b.op(Iop_CmpNE64, site, IRBuilder::u64(inline_site(chain)), Ity_I1);
}

// A run of chain `chain` starts: the levels are made that chain's when they
// are not. Returns the counters the run counts in (`counters`, or the
// helper's when it ran).
IRExpr* add_inline_run(IRBuilder& b, BlockInfo* blk, UInt chain, IRExpr* counters)
{
   IRExpr* missed = chain_missed(b, chain);
   b.call("kg_inline_enter", (void*)kg_inline_enter, 2,
          mkIRExprVec_2(mkIRExpr_HWord((HWord)blk), mkIRExpr_HWord(chain)), missed);
   return b.load_if(missed, &kg_now->found_counters, counters);
}

// A return: the levels above the function's frame end with it.
void add_inline_leave(IRBuilder& b, BlockInfo* blk)
{
   b.call("kg_inline_leave", (void*)kg_inline_leave, 1, mkIRExprVec_1(mkIRExpr_HWord((HWord)blk)),
          chain_missed(b, 0));
}

} // namespace

} // namespace kg
