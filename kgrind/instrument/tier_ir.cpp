// Tier 1 (kg_tiers.h): a superblock's cheap translation. Its prologue is
// one helper call that starts the block as tier 2's inline prologue would
// (activity/tiers.cpp, kg_tier_block) and returns its counters, or nullptr
// when the block has run the threshold's times: then it leaves by an
// Ijk_InvalICache exit to its own first instruction before it does
// anything, the core discards the translations of that instruction (at
// the exit, outside any running block: the way Valgrind discards code that
// changed) and the block is translated again, at tier 2. A return's pop is
// a helper call too (kg_tier_return). Counting at the flush points, the
// unwind checks and the block's end are tier 2's.

namespace kg {

namespace {

// Whether blk is translated at tier 1: tiering is on, it was not promoted,
// and tier 1 has a twin of its prologue (not a PLT stub's or a signal
// restorer's; a region function's blocks call region helpers: tier 2).
Bool at_tier_one(const BlockInfo* blk, Bool sigreturn, Bool region)
{
   if (!tiering_on() || blk->in_plt || sigreturn || region) return False;
   return !tier_promoted(blk->addr);
}

// Tier 1's prologue. Returns the block's counters for the context it runs
// in. The helper reads SP and, when it promotes the block, writes the
// range the exit discards (guest_CMSTART, guest_CMLEN) through the guest
// state's pointer: an argument, not a GET and two PUTs in every block.
IRExpr* add_tier_prologue(IRBuilder& b, BlockInfo* blk, const VexGuestLayout* layout)
{
   tier_one_made(blk);
   IRExpr** args = mkIRExprVec_3(IRExpr_GSPTR(), b.at(blk), mkIRExpr_HWord((HWord)block_start(blk)));
   const IRBuilder::GuestEffect effects[] = {
      { Ifx_Read, layout->offset_SP, sizeof(Addr) },
      { Ifx_Modify, offsetof(GuestState, guest_CMSTART), sizeof(Addr) },
      { Ifx_Modify, offsetof(GuestState, guest_CMLEN), sizeof(Addr) },
   };
   IRExpr* counters = b.call_result("kg_tier_block", (void*)kg_tier_block, 3, args, effects, 3);
   IRExpr* promoted = b.op(Iop_CmpEQ64, counters, IRBuilder::u64(0), Ity_I1);
   b.add(IRStmt_Exit(promoted, Ijk_InvalICache, IRConst_U64(blk->addr), layout->offset_IP));
   return counters;
}

// --tiering=levels: whether blk's superblock, which steps inlined levels
// inline at tier 2, leaves its steps to the levels' helper for now.
Bool at_level_tier_one(const BlockInfo* blk) { return level_tiering_on() && !tier_promoted(blk->addr); }

// A level tier-1 superblock's count of its runs, before it does anything:
// the run that makes it kLevelPromotionRun (set so by the levels' helpers,
// level_tier_helper_called) promotes the block (kg_levels_promote) and
// leaves by an Ijk_InvalICache exit to its own first instruction,
// translated again at tier 2. The count is inline (no helper call a run),
// the promotion a call guarded by it. The range the exit discards, the
// block's first byte, is written at every run (two stores in code that
// runs a few times; the guest writes its own before any exit of its that
// reads them), not by the helper through the guest state's pointer, which
// arm64's VEX does not pass to a helper. Returns the block's counts, which
// its calls of the levels' helpers pass on.
LevelTierCounts* add_level_tier_count(IRBuilder& b, BlockInfo* blk, const VexGuestLayout* layout)
{
   LevelTierCounts* counts = level_tier_one_made();
   IRExpr* n = b.op(Iop_Add32, b.load(Ity_I32, b.at(&counts->runs)), IRExpr_Const(IRConst_U32(1)), Ity_I32);
   b.store(b.at(&counts->runs), n);
   IRBuilder::Cond reached = { Iop_CmpEQ32, n, IRExpr_Const(IRConst_U32(kLevelPromotionRun)) };
   b.call("kg_levels_promote", (void*)kg_levels_promote, 2, mkIRExprVec_2(b.at(blk), mkIRExpr_HWord((HWord)counts)),
          b.test(reached));
   b.add(IRStmt_Put(offsetof(GuestState, guest_CMSTART), IRBuilder::u64(blk->addr)));
   b.add(IRStmt_Put(offsetof(GuestState, guest_CMLEN), IRBuilder::u64(1)));
   b.add(IRStmt_Exit(b.test(reached), Ijk_InvalICache, IRConst_U64(blk->addr), layout->offset_IP));
   return counts;
}

// Tier 1's return: the pop, if the return popped the top frame.
void add_tier_return(IRBuilder& b, IRExpr* sp)
{
   b.call("kg_tier_return", (void*)kg_tier_return, 1, mkIRExprVec_1(sp), nullptr);
}

} // namespace

} // namespace kg
