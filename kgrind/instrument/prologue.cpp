// The block prologue: the counters of the block's context, through its
// cache, its context's counter array or a helper; PLT stubs' and signal
// restorers' prologues.

namespace kg {

namespace {

// Is ctx not the block's (way 0) context? One compare, so that the guard is
// one branch: way 1, the previous context, is the helper's, which swaps the
// ways on a hit there (point_block_at) and leaves way 0 the current context.
// (Checking both ways inline cost more in every block than the helper
// calls it saved: bench numbers in docs/design/counting.md.)
// blk_at: the BlockInfo's address (IRBuilder::shared_at).
IRExpr* context_missed(IRBuilder& b, IRExpr* blk_at, IRExpr* ctx)
{
   static_assert(offsetof(BlockInfo, ways) == 0, "way 0 is at the block's address");
   return b.op(Iop_CmpNE64, ctx, b.load64(blk_at), Ity_I1);
}

// The counters of the block's current context (after the guard's helper),
// loaded from the data base, not through the shared BlockInfo register:
// with that register read after the helper call, perl at k=2 ran 4-6 %
// slower (plwork.pl 12: 7.85 against 7.50 s user, four alternated rounds;
// sqlite3, cppvirt and callheavy unchanged), for 3 bytes less host code.
IRExpr* cached_counters(IRBuilder& b, BlockInfo* blk)
{
   return b.load64(&blk->ways[0].counters);
}

// Direct call targets seen so far: blocks there may start activations.
struct CallTarget {
   const void* a;   // address
   const void* b;   // unused
};
PairTable<CallTarget> call_targets;

// Where a PLT stub counts what a caller counts for it, and a signal
// restorer what the helper counts for it (a flush into it is lost): one
// counter, as such blocks have one flush point.
ULong plt_scratch;

// A PLT stub's prologue. Its instructions are the caller's (the top frame's
// context, whatever kg_now->ctx says while the call is pending). A block that
// calls the stub, directly or indirectly, or jumps to it (a tail call), left
// a counter of its own for them, at the call's line (kg_now->plt_stub,
// plt_counter: add_stub_counter): then the stub adds its `instrs` there and
// flushes into plt_scratch, and at its end passes the counter on to where it
// jumps (add_plt_handover): a lazy binding's next stub blocks (the entry's
// push, .plt's first entry) count there too. Otherwise (an indirect or a
// conditional jump to the stub, or a stub that needs more than one counter:
// instrs == 0) it finds counters for the caller's context, as any block
// does (stubs run in every caller's context in turn, so that mostly missed
// the block's cache), and its instructions go to the stub's own position
// (`???` line 0). *counted: the condition that the caller's counter was
// used.
IRExpr* add_plt_prologue(IRBuilder& b, BlockInfo* blk, UInt instrs, IRExpr** counted_out)
{
   IRExpr* caller = load_transition_ctx(b, b.load_field(b.load64(&kg_now->top), offsetof(Frame, tr)));
   IRExpr* blk_at = b.shared_at(blk);
   IRExpr* miss = context_missed(b, blk_at, caller);
   IRExpr* counted = nullptr;
   IRExpr* scratch = nullptr;
   if (instrs) {
      counted = b.op(Iop_CmpEQ64, b.load64(&kg_now->plt_stub), IRBuilder::u64(blk->addr), Ity_I1);
      miss = b.op(Iop_And1, b.tmp(IRExpr_Unop(Iop_Not1, counted), Ity_I1), miss, Ity_I1);
      scratch = b.at(&plt_scratch);
      b.add_to(b.place(b.ite(counted, b.load64(&kg_now->plt_counter), scratch), 0), IRBuilder::u64(instrs));
   }
   *counted_out = counted;
   b.call_reading_sp("kg_plt_start", (void*)kg_plt_start, blk_at, miss);
   IRExpr* counters = cached_counters(b, blk);   // after the helper, which may re-point way 0
   return counted ? b.ite(counted, scratch, counters) : counters;
}

// A PLT stub block that used its caller's counter hands it on to the block
// it jumps to: the counter stays armed for that address only (a real
// function's address, once bound, which no stub block has).
void add_plt_handover(IRBuilder& b, IRExpr* counted, IRExpr* next)
{
   if (counted) b.store_if(counted, b.at(&kg_now->plt_stub), next);
}

// Counter arrays (kg_counters.h). The block's offset in its function's arrays
// is reserved when its prologue is made and its checks' constants set once
// its counters are known (finish_array_check): the superblock's IR is ours
// until instrument returns. A block checks its prologue's context, and with
// inlined levels (instrument/inline_runs_ir.cpp) each context its runs
// return to its function's own code in.
const UInt kArrayChecks = 8;
struct PendingArrayCheck {
   IRConst* c1[kArrayChecks];
   IRConst* c2[kArrayChecks];
   Bool level[kArrayChecks];   // of an inlined level's context (array_key)
   UInt n;
   UInt offset;
   BlockInfo* blk;   // nullptr: none pending
} pending_array_check;

// Does blk count in its context's counter array? A traced function's block
// with a symbol, not a PLT stub's, whose counters (at most max_counters)
// fit its function's arrays.
Bool counts_in_array(const BlockInfo* blk, UInt max_counters)
{
   const FnInfo* fn = blk->fn();
   return counter_arrays_on() && !blk->in_plt && !fn->no_symbol && fn_traced(fn) && !fn->resolver &&
          fn->id < kMaxArrayFunction && fn->array_counters + max_counters <= kArrayRoom;
}

// Whether blk's prologue counts in its context's array (add_array_counters),
// and whether it can check another context's.
Bool checks_array(const BlockInfo* blk) { return pending_array_check.blk == blk; }
Bool array_check_left(const BlockInfo* blk) { return !checks_array(blk) || pending_array_check.n < kArrayChecks; }

// The counters of the block in ctx's array; if the array is not its
// function's, lacks room for the block, or counting is off (ctx after a
// call is kCallPending, whose array is empty), `helper` (kg_block_counters,
// kg_entry_counters) returns them. guard: when to look (nullptr: always;
// else the result means nothing when it fails). by_way: a block that may
// start in an inlined level's context takes that context's array as well
// as its function's own (the limit's level flag masked), else its way 0
// when that is the context, as the helper leaves it there. level_run: a
// run of an inlined level, whose context is the level's (its array's key
// has the flag); an own-code block's check never finds a level's array,
// so that a block that finds its counters inline has no level on top
// (add_prologue). nullptr when the block has no check left (kArrayChecks).
IRExpr* add_array_counters(IRBuilder& b, BlockInfo* blk, IRExpr* ctx, const HChar* name, void* helper,
                           Bool reading_sp, IRExpr* guard = nullptr, Bool by_way = False, Bool level_run = False)
{
   PendingArrayCheck& p = pending_array_check;
   if (p.blk != blk) {
      p.blk = blk;
      p.n = 0;
      p.offset = blk->fn()->array_counters;
   }
   if (p.n == kArrayChecks) return nullptr;
   IRConst* c1 = IRConst_U32(0);
   IRConst* c2 = IRConst_U32(0);   // c2 0: always the helper
   p.c1[p.n] = c1;
   p.level[p.n] = level_run;
   p.c2[p.n++] = c2;
   auto offset_in = [](const void* field) { return (UWord)((const UChar*)field - (const UChar*)kCallPending); };
   IRExpr* limit = b.load(Ity_I32, b.field(ctx, offset_in(array_limit_word(kCallPending))));
   if (by_way) limit = b.op(Iop_And32, limit, IRExpr_Const(IRConst_U32(~(kLevelArrayFlag << 8))), Ity_I32);
   IRExpr* arr = b.load_field(ctx, offset_in(counter_array_word(kCallPending)));
   // 32-bit operations with the constants on the right (immediates), and a
   // fresh compare for the call's guard and for the select: one that both
   // used would be a setcc and a test at each (IRBuilder::Cond).
   IRBuilder::Cond fits = { Iop_CmpLT32U, b.op(Iop_Sub32, limit, IRExpr_Const(c1), Ity_I32), IRExpr_Const(c2) };
   IRExpr* in_array = b.op(Iop_Add64, arr, IRBuilder::u64(p.offset * sizeof(ULong)));
   auto missed = [&]() {
      IRExpr* m = b.tmp(IRExpr_Unop(Iop_Not1, b.test(fits)), Ity_I1);
      if (by_way) m = b.op(Iop_And1, m, b.op(Iop_CmpNE64, ctx, b.load64(&blk->ways[0].ctx), Ity_I1), Ity_I1);
      return guard ? b.op(Iop_And1, guard, m, Ity_I1) : m;
   };
   IRExpr* block_id = IRBuilder::u64(blk->id);
   if (reading_sp)
      b.call_reading_sp(name, helper, block_id, missed());
   else
      b.call(name, helper, 1, mkIRExprVec_1(block_id), missed());
   // The helper's counters, loaded only when it ran.
   IRExpr* found = by_way ? b.ite(b.test(fits), in_array, b.load64(&blk->ways[0].counters)) : in_array;
   return b.load_if(missed(), &kg_now->found_counters, found);
}

// The block's counters are known: its offset and its checks' constants.
void finish_array_check(BlockInfo* blk)
{
   PendingArrayCheck& p = pending_array_check;
   if (p.blk != blk) return;
   p.blk = nullptr;
   FnInfo* fn = blk->fn();
   UInt end = p.offset + counter_count(blk);   // with its events' slots
   tl_assert(end <= kArrayRoom);   // counts_in_array's bound
   for (UInt i = 0; i < p.n; i++) {
      p.c1[i]->Ico.U32 = array_check_c1(array_key(fn->id, p.level[i]), end);
      p.c2[i]->Ico.U32 = array_check_c2(end);
   }
   blk->array_offset = (UShort)p.offset;
   fn->array_counters = end;
}

// How a block that is not a PLT stub starts: a function's first block
// pushes its frame, speculatively; a direct call's target that is not one
// (code without symbols) pushes when predicted; other blocks check their
// context (an untraced function's first block always calls the helper:
// tail calls). Tier 1's helper starts a block the same way (kg_tiers.h).
TierStart block_start(BlockInfo* blk)
{
   // ld.so's lazy-binding trampoline enters by the helper, which notes the
   // call it resolves (push_activation).
   if (blk->fn_entry && fn_traced(blk->fn()) && !blk->fn()->resolver) return kTierEntry;
   if (!blk->fn_entry && call_targets.find((void*)blk->addr, nullptr) && fn_traced(activated_function(blk)))
      return kTierCalledEntry;
   return blk->fn_entry ? kTierAlways : kTierPlain;
}

// The block prologue (see the top of this file). Returns the block's
// counters for the context it runs in. `stub_instrs`, *stub_counted: see
// add_plt_prologue.
// Inlined levels (instrument/inline_runs_ir.cpp): own_code, a block whose
// first run is its function's own code (no inline chain), needs no check of
// the levels on top (*levels_left: its helpers pop them). A function's first
// block pushes its frame, an activation, or calls kg_entry_fixup, whose
// block_entry pops the levels where it pushes nothing (a jump back to the
// entry). Any other block finds inline only a context that is never a
// level's (its array's, whose check a level's flagged array fails; its way
// 0's: these helpers, which fill way 0, pop the levels first). Else with
// inline_levels blk may start in a level's context (left by inline steps
// or by the levels' helper, whose lookups of the block's counters also
// fill way 0): add_array_counters' by_way.
IRExpr* add_prologue(IRBuilder& b, BlockInfo* blk, const VexGuestLayout* layout, UInt stub_instrs,
                     IRExpr** stub_counted, UInt max_counters, Bool inline_levels, Bool own_code, Bool* levels_left)
{
   *levels_left = False;
   if (blk->in_plt) return add_plt_prologue(b, blk, stub_instrs, stub_counted);
   TierStart start = block_start(blk);
   Bool entry = start == kTierEntry;
   Bool called_entry = start == kTierCalledEntry;
   Bool in_array = counts_in_array(blk, max_counters);
   *levels_left = own_code && (entry || (!called_entry && !blk->fn_entry));
   own_code = own_code && !entry && !called_entry && !blk->fn_entry;
   if (!entry && !called_entry && in_array) {
      if (own_code)
         return add_array_counters(b, blk, b.load64(&kg_now->ctx), "kg_own_block_counters",
                                   (void*)kg_own_block_counters, True);
      return add_array_counters(b, blk, b.load64(&kg_now->ctx), "kg_block_counters", (void*)kg_block_counters, True,
                                nullptr, inline_levels);
   }
   if (!entry && !called_entry) {
      // kg_now->ctx is kCallPending after a call, so one guard covers a
      // pending call and a context change. (An untraced function's first
      // block always calls the helper: tail calls.)
      IRExpr* blk_at = b.shared_at(blk);
      IRExpr* miss = context_missed(b, blk_at, b.load64(&kg_now->ctx));
      if (own_code)
         b.call_reading_sp("kg_own_block_start", (void*)kg_own_block_start, blk_at, miss);
      else
         b.call_reading_sp("kg_block_start", (void*)kg_block_start, blk_at, blk->fn_entry ? nullptr : miss);
      return cached_counters(b, blk);
   }
   IRExpr* blk_at = b.shared_at(blk);
   IRExpr* ctx = add_inline_entry(b, blk, blk_at, b.tmp(IRExpr_Get(layout->offset_SP, Ity_I64), Ity_I64), entry);
   // (After a fix-up the context is kg_now->ctx, not the predicted one.)
   if (entry && in_array)
      return add_array_counters(b, blk, b.load64(&kg_now->ctx), "kg_entry_counters", (void*)kg_entry_counters, False);
   IRExpr* miss = context_missed(b, blk_at, ctx);
   b.call("kg_refresh_counters", (void*)kg_refresh_counters, 1, mkIRExprVec_1(blk_at), miss);
   return cached_counters(b, blk);
}

IRExpr* add_sigreturn_prologue(IRBuilder& b, BlockInfo* blk)
{
   b.call_reading_sp("kg_sigreturn_code", (void*)kg_sigreturn_code, mkIRExpr_HWord((HWord)blk), nullptr);
   return b.at(&plt_scratch);
}

} // namespace

} // namespace kg
