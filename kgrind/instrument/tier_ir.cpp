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

// The guest state's fields that name the range an Ijk_InvalICache exit
// discards.
#if defined(VGA_amd64)
const Int kCmStart = offsetof(VexGuestAMD64State, guest_CMSTART);
const Int kCmLen = offsetof(VexGuestAMD64State, guest_CMLEN);
#elif defined(VGA_arm64)
const Int kCmStart = offsetof(VexGuestARM64State, guest_CMSTART);
const Int kCmLen = offsetof(VexGuestARM64State, guest_CMLEN);
#endif

// Whether blk is translated at tier 1: tiering is on, it was not promoted,
// and tier 1 has a twin of its prologue (not a PLT stub's or a signal
// restorer's; a region function's blocks call region helpers: tier 2).
Bool at_tier_one(const BlockInfo* blk, Bool sigreturn, Bool region)
{
   if (!tiering_on() || blk->in_plt || sigreturn || region) return False;
   return !tier_promoted(blk->addr);
}

// Tier 1's prologue. Returns the block's counters for the context it runs in.
IRExpr* add_tier_prologue(IRBuilder& b, BlockInfo* blk, const VexGuestLayout* layout)
{
   tier_one_made(blk);
   IRExpr* sp = b.tmp(IRExpr_Get(layout->offset_SP, Ity_I64), Ity_I64);
   IRExpr** args = mkIRExprVec_3(b.at(blk), mkIRExpr_HWord((HWord)block_start(blk)), sp);
   IRExpr* counters = b.call_result("kg_tier_block", (void*)kg_tier_block, 3, args, True);
   b.add(IRStmt_Put(kCmStart, IRBuilder::u64(blk->addr)));
   b.add(IRStmt_Put(kCmLen, IRBuilder::u64(1)));
   IRExpr* promoted = b.op(Iop_CmpEQ64, counters, IRBuilder::u64(0), Ity_I1);
   b.add(IRStmt_Exit(promoted, Ijk_InvalICache, IRConst_U64(blk->addr), layout->offset_IP));
   return counters;
}

// Tier 1's return: the pop, if the return popped the top frame.
void add_tier_return(IRBuilder& b, IRExpr* sp)
{
   b.call("kg_tier_return", (void*)kg_tier_return, 1, mkIRExprVec_1(sp), nullptr);
}

} // namespace

} // namespace kg
