// Inlined functions as context levels (--inline-frames): an inlined level
// is a frame of its own above its physical function's frame, with that
// frame's SP, so that whatever pops the physical frame (a return, an
// unwind) pops its levels too. Its transition's site is the level's chain
// (kInlineSiteBase + chain id: kg_inline_chains.h), which inline IR
// compares with a run's chain at each run boundary (instrument/inline_runs_ir.cpp).

namespace kg {

UInt running_inline_chain()
{
   if (!current || !kg_now->top || !kg_now->top->tr || kg_now->ctx == kCallPending) return kNoRunningChain;
   return top_chain();
}

extern "C" void VG_REGPARM(3) kg_inline_enter(BlockInfo* blk, UWord chain, CounterWay* way, LevelTierCounts* tier,
                                              UWord at_start)
{
   helper_calls.inline_enter++;
   level_tier_helper_called(tier, at_start);
   ThreadState* t = current;
   if (kg_now->ctx == kCallPending) return;   // not at a run boundary
   // chain's levels from the innermost (path[i] is depth - i deep) down to
   // the level on top when that is one of them: one walk of the chain
   // gives both the levels to pop and the ones to push.
   const UInt kMaxPath = 64;
   UInt path[kMaxPath];
   UInt n = 0;
   UInt cur = top_chain();
   UInt c = (UInt)chain;
   for (; c && c != cur && n < kMaxPath; c = inline_chain(c).parent) path[n++] = c;
   if (c != cur) {
      // The levels on top that are none of chain's go.
      UInt chain_depth = inline_chain((UInt)chain).depth;
      auto in_chain = [&](UInt level) -> Bool {
         UInt d = inline_chain(level).depth;
         if (d > chain_depth) return False;
         return chain_depth - d < n ? path[chain_depth - d] == level : chain_contains((UInt)chain, level);
      };
      if (cur && !in_chain(cur)) {
         ClockReading ev_now(t);
         do {
            pop_activation(t, ev_now.at);   // levels are activations
            cur = top_chain();
         } while (cur && !in_chain(cur));
      }
      UInt below_cur = chain_depth - inline_chain(cur).depth;
      if (below_cur < n) n = below_cur;
   }
   // Levels are pushed only onto an activation of the block's own function
   // (the code runs in its frame).
   const Frame* below = kg_now->top;
   Bool own = below->tr->kind == kActivation && below > base_frame(t) &&
              (cur || runs(below->tr, blk->fn()));
   if (own && n) {
      Addr sp = below->sp;
      while (n) {
         UInt level = path[--n];
         push_frame(t, sp, level_transition(t, level, blk));
      }
      kg_now->top_sp = sp;   // the context is the pushed top's (push_frame)
   } else {
      update_now_from_top();
   }
   // Through the run's way, not the block's, which keep the context the
   // block starts in (its next run would miss them); a run without a way
   // looks them up.
   ForestNode* ctx = kg_now->ctx;
   if (!way) kg_now->found_counters = counters_in(blk, ctx);
   else kg_now->found_counters = way->ctx == ctx ? way->counters : run_way_counters(way, blk, ctx);
}

extern "C" void VG_REGPARM(1) kg_own_block_counters(UWord block_id)
{
   BlockInfo* blk = block_with_id((UInt)block_id);
   Addr sp = unwind_at_block_start(blk);
   UWord after_call = kg_now->ctx == kCallPending;
   leave_levels(current);
   kg_now->found_counters = after_call ? block_entry(blk, sp, after_call) : block_counters_now(blk);
}

extern "C" void VG_REGPARM(1) kg_own_block_start(BlockInfo* blk)
{
   Addr sp = unwind_at_block_start(blk);
   UWord after_call = kg_now->ctx == kCallPending;
   leave_levels(current);
   if (after_call) block_entry(blk, sp, after_call);
   else point_block_at(blk, kg_now->ctx);
}

extern "C" void VG_REGPARM(2) kg_run_counters(BlockInfo* blk, CounterWay* way)
{
   helper_calls.run_counters++;
   kg_now->found_counters = run_way_counters(way, blk, kg_now->ctx);
}

extern "C" void VG_REGPARM(1) kg_run_array_counters(UWord block_id)
{
   helper_calls.run_counters++;
   kg_now->found_counters = counters_in(block_with_id((UInt)block_id), kg_now->ctx);
}

extern "C" void VG_REGPARM(2) kg_inline_leave(BlockInfo* blk, LevelTierCounts* tier)
{
   (void)blk;
   helper_calls.inline_leave++;
   level_tier_helper_called(tier, False);
   leave_levels(current);
}

} // namespace kg
