// Instrumenting a superblock: its prologue, the counting at its flush
// points and its end.

namespace kg {

namespace {

// The superblock's end, by how it leaves: a computed jump's targets (block
// modes) and site, a return's inline pop, the unwind check, and a call or
// tail call made pending. tier_one: a return pops through tier 1's helper.
void add_block_end(IRBuilder& b, IRSB* sb, BlockInfo* blk, Addr last_instr, const SpTracker& sp,
                   IRExpr* flushed_ir, Bool tier_one)
{
   Bool computed_jump = sb->jumpkind == Ijk_Boring && sb->next->tag != Iex_Const && !blk->in_plt;
   // Function mode counts every function's jumps (a function without a
   // symbol's too, as callgrind); the block modes those of the functions
   // whose blocks they trace.
   Bool jumps_counted = clo.collect_jumps && (!block_mode() || blocks_traced(blk->fn()));
   if (computed_jump && jumps_counted) {
      // A switch table: its targets are counted at run time.
      b.call("kg_indirect_jump", (void*)kg_indirect_jump, 2,
             mkIRExprVec_2(mkIRExpr_HWord((HWord)blk), sb->next), nullptr);
   }
   if (computed_jump) {
      // It may be a tail call (into a function's first instruction): the
      // helper that sees it there needs its site. Before the unwind check,
      // which may make a resolved call pending again.
      b.store64(&kg_now->jump_site, IRBuilder::u64(last_instr));
      b.store64(&kg_now->jump_target, sb->next);
   }
   IRExpr* sp_now = sb->jumpkind == Ijk_Ret || sp.may_have_risen() ? sp.value(b) : nullptr;
   if (sb->jumpkind == Ijk_Ret) {
      if (!kCallsPush) add_link_return(b, sp_now, sb->next, flushed_ir);
      else if (tier_one) add_tier_return(b, sp_now);
      else add_inline_return(b, sp_now, flushed_ir);
   }
   // After the inline pop: more frames died (longjmp, exceptions, tail
   // calls' returns), or SP rose some other way.
   if (sp.may_have_risen()) add_unwind_check(b, sp_now, nullptr, nullptr);
   if (computed_jump && !block_mode() && !blk->fn()->no_symbol) {
      add_computed_tail_call(b, blk, sb->next, sp_now ? sp_now : sp.value(b), last_instr);
      add_jump_out(b, blk, sb->next, last_instr);
   }
   Addr target = sb->next->tag == Iex_Const ? const_target(sb->next->Iex.Const.con) : 0;
   if (sb->jumpkind == Ijk_Boring) add_direct_jump(b, blk, target, last_instr, nullptr, flushed_ir);
   if (ends_in_call(sb)) {
      // The next block is the callee's: it starts an activation.
      if (target) call_targets.get((void*)target, nullptr);
      make_call_pending(b, last_instr, nullptr);
   }
}

} // namespace

void instrument_init()
{
   data_bases[0] = (Addr)kg_now;
   data_bases[1] = (Addr)&kg_trace_pos;
}

void publish_data_bases(ThreadId tid)
{
   VG_(set_shadow_regs_area)(tid, 1, kBaseShadowOffset, sizeof data_bases, (const UChar*)data_bases);
}

IRSB* instrument(VgCallbackClosure* closure, IRSB* sb_in,
                 const VexGuestLayout* layout, const VexGuestExtents* vge,
                 const VexArchInfo* archinfo, IRType guest_word, IRType host_word)
{
   if (guest_word != Ity_I64 || host_word != Ity_I64)
      VG_(tool_panic)((HChar*)"kgrind: only 64-bit guests and hosts are supported");
   if (!kCallsPush) read_link_register_jump_kind(sb_in);

   static UInt slot_of_instr[4096];   // IMarks of one superblock (VEX caps ~100s)
   Int n_instrs;
   Addr stub = called_plt_stub(sb_in);
   Bool may_call_stub = stub || ends_in_indirect_call(sb_in);
   UInt stub_slot = 0;
   Bool blocks = block_mode();
   Bool per_instruction = clo.count_instr;   // the block modes: always
   // --inline-frames: each instruction's inline chain; a flush point at
   // each change of chain, whose runs count in their levels' contexts.
   static UInt chain_of[4096];
   UInt chain_changes = inline_frames_on() ? inline_runs(sb_in, chain_of) : 0;
   BlockInfo* blk = describe_block(sb_in, slot_of_instr, &n_instrs, may_call_stub, &stub_slot, per_instruction, blocks,
                                   chain_changes);
   // Every block of a function that may have inlined levels checks them:
   // a run of no chain pops the levels a previous block left.
   Bool inline_chains = checks_inline_chains(blk);
   Bool sigreturn = counts_as_sigreturn_code(sb_in, blk);
   // With events, a PLT stub counts in its own counters (its events need
   // room), charged to its own position as cachegrind does; a signal
   // restorer's events are not simulated (docs/design/events.md).
   Bool events = extra_events_on();
   UInt stub_instrs = events ? 0 : stub_instructions(sb_in, blk, n_instrs);
   // Frameless inlined levels derive a run's entries from its first flush
   // point's passes: no counts where loops left.
   Bool frameless_chains = frameless_levels_on() && chain_of[0];
   Bool leaving = !blocks && !chain_changes && !frameless_chains && unrolled_loop(sb_in, blk);
   events_ir.begin(events && !sigreturn, !leaving);
   // An event slot's position (EventSlot::line): the instruction's line
   // slot, or with per-instruction positions the instruction's index.
   auto event_pos = [&](Int i) { return per_instruction ? (UInt)i : slot_of_instr[i]; };
   static BBInfo* block_of[4096];
   static UInt block_len[4096];
   if (blocks) {
      if (ends_in_call(sb_in)) note_return_site(end_of_last_instruction(sb_in));
      find_blocks(sb_in, blk, block_of, block_len);
   }
   if (per_instruction) describe_positions(sb_in, blk, blocks, chain_changes ? chain_of : nullptr, chain_changes);
   void* block_helper = clo.mode == kModeIntra ? (void*)kg_block_intra : (void*)kg_block_inter;
   const HChar* block_helper_name = clo.mode == kModeIntra ? "kg_block_intra" : "kg_block_inter";

   // The block's counters at most: a flush point before each side exit that
   // flushes, one at the end, one for a called stub.
   UInt n_positions, n_exits;
   count_positions(sb_in, blocks, &n_positions, &n_exits);
   UInt max_counters = n_exits + 1 + (may_call_stub ? 1 : 0);
   max_counters += chain_changes;
   if (events) max_counters += event_slots_at_most(sb_in);

   IRSB* sb = deepCopyIRSBExceptStmts(sb_in);
   IRBuilder b(sb, layout);
   PendingCounts pending(per_instruction, blocks || clo.collect_jumps, leaving);
   Addr last_instr = 0;
   UInt last_len = 0;
   Int instr = 0;
   IRExpr* counters = nullptr;   // set by the prologue
   // A flush point, with the events it counts (EventsIR::flush).
   auto flush = [&](const IRBuilder::Cond* taken) {
      Bool counts_events = events_ir.flush(b, pending.next_point());
      pending.flush(b, counters, taken, counts_events);
   };
   IRExpr* stub_counted = nullptr;
   SpTracker sp(sb_in, layout);
   // Whether the superblock's end checks SP (add_block_end): then a check
   // before a side exit acts only when the exit is taken (add_unwind_check).
   Bool end_checks = sp_may_rise_by_end(sb_in, layout);
   // --toggle-collect and the like: helpers in the named functions' first
   // and returning blocks only (kg_regions.cpp).
   Bool region = !blocks && region_function(blk->fn());
   Bool region_entry = region && blk->fn_entry;
   Bool tier_one = at_tier_one(blk, sigreturn, region);
   if (!tier_one && tiering_on()) tier_two_made();
   // Whether it may start in an inlined level's context, and whether its
   // runs push and pop inlined levels inline (from the counters its prologue
   // finds): not with events beyond Ir, whose clocks the helper starts and
   // closes (the inline steps, with helpers for the clocks, made callheavy
   // --cache-sim=yes 3.43 -> 4.07 s; docs/design/events.md). A superblock
   // with code of inlined functions (some instruction's chain is not empty)
   // steps levels: at the levels' tier 1 the helper does, until it is hot.
   // Frameless inlined levels (instrument/frameless_runs_ir.cpp): no level
   // frames on top while a superblock's runs count, each in its record (a
   // return pops a call's level frames, kg_frameless_return; the
   // prologue's helpers pop a context-id request's).
   Bool frameless = inline_chains && frameless_levels_on() && !sigreturn && !tier_one;
   frameless_superblock_begins();
   IRExpr* own_counters = nullptr;   // frameless: the function's own code's
   Bool starts_in_levels = inline_chains && may_start_in_level(blk) && !frameless;
   Bool levels_inline = starts_in_levels && !tier_one && !sigreturn && !events;
   Bool steps_levels = levels_inline && (chain_changes || chain_of[0]);
   Bool level_tier_one = steps_levels && at_level_tier_one(blk);
   if (level_tier_one) levels_inline = False;
   else if (steps_levels && level_tiering_on()) level_tier_two_made();
   LevelTierCounts* tier_counts = nullptr;   // the level tier 1's, which its helper calls count

   Int start = guest_code_start(sb_in);
   for (Int i = 0; i < start; i++)
      if (sb_in->stmts[i] && sb_in->stmts[i]->tag != Ist_NoOp) b.add(sb_in->stmts[i]);
   for (Int i = start; i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st || st->tag == Ist_NoOp) continue;
      switch (st->tag) {
      case Ist_IMark:
         events_ir.end_instruction(b);
         if (!instr && level_tier_one) tier_counts = add_level_tier_count(b, blk, layout);
         if (!counters && region_entry)
            b.call_reading_sp("kg_region_enter", (void*)kg_region_enter, IRBuilder::u64((ULong)blk), nullptr);
         if (!counters && sigreturn) counters = add_sigreturn_prologue(b, blk);
         if (!counters && tier_one) counters = add_tier_prologue(b, blk, layout);
         if (!counters) {
            Bool levels_left = False;
            counters = add_prologue(b, blk, layout, stub_instrs, &stub_counted, max_counters, starts_in_levels,
                                    inline_chains && (frameless || !chain_of[0]) && !tiering_on(), &levels_left);
            if (frameless) {
               own_counters = counters;
               if (chain_of[0])
                  counters = add_frameless_run(b, blk, chain_of[0], kStartOfSuperblock, pending.next_point());
               else
                  add_own_code_run(b, pending.next_point());
            } else if (inline_chains && !levels_left) {
               counters = add_inline_run(b, blk, chain_of[0], counters, levels_inline, nullptr, 0, tier_counts);
            }
         } else if (chain_changes && chain_of[instr] != chain_of[instr - 1]) {
            flush(nullptr);
            if (frameless && chain_of[instr]) {
               counters = add_frameless_run(b, blk, chain_of[instr], chain_of[instr - 1], pending.next_point());
            } else if (frameless) {
               add_own_code_run(b, pending.next_point());
               counters = own_counters;
            } else if (inline_chains)
               counters = add_inline_run(b, blk, chain_of[instr], counters, levels_inline, pending.flushed_ir(),
                                          chain_of[instr - 1], tier_counts);
         }
         if (blocks && block_of[instr])
            add_block_step(b, block_of[instr], block_len[instr], block_helper, block_helper_name);
         last_instr = (Addr)st->Ist.IMark.addr;
         last_len = st->Ist.IMark.len;
         events_ir.fetch(b, counters, event_pos(instr), last_instr, last_len);
         pending.add(slot_of_instr[instr++]);
         break;
      case Ist_Exit:
         events_ir.end_instruction(b);
         // The branch's count is its flush point's: before the flush.
         if (instr) events_ir.cond_exit(b, counters, event_pos(instr - 1), st, last_instr, last_instr + last_len);
         if (flushes_before(st, blocks)) {
            IRBuilder::Cond taken = exit_condition(sb_in, i);
            flush(&taken);
         }
         if (sp.may_have_risen())
            add_unwind_check(b, sp.value(b), leaving ? pending.ir_now(b) : nullptr,
                             end_checks ? st->Ist.Exit.guard : nullptr);
         if (st->Ist.Exit.jk == Ijk_Boring)
            add_direct_jump(b, blk, const_target(st->Ist.Exit.dst), last_instr, st->Ist.Exit.guard,
                            leaving ? pending.ir_now(b) : nullptr);
         break;
      default:
         if (instr) events_ir.data(b, counters, event_pos(instr - 1), st, sb_in->tyenv);
         break;
      }
      b.add(st);
      sp.note(st, sb_in->tyenv);
   }
   events_ir.end_instruction(b);
   if (counters && instr) events_ir.indirect(b, counters, event_pos(instr - 1), sb_in, last_instr);
   if (counters && instr) events_ir.syscall(b, counters, event_pos(instr - 1), sb_in);
   if (counters) flush(nullptr);
   if (frameless) end_frameless_run(pending.next_point());
   blk->counts_leaving = leaving;
   if (counters && may_call_stub)
      add_stub_counter(b, blk, pending, counters, stub_slot, stub ? IRBuilder::u64(stub) : sb->next);
   add_plt_handover(b, stub_counted, sb->next);
   pending.finish(blk);
   events_ir.finish(blk);
   finish_array_check(blk);
   // A last run of the function's own code has no level on top: its start
   // made the levels its chain's (add_inline_run, or the prologue's
   // helpers: add_prologue's levels_left).
   UInt last_chain = instr ? chain_of[instr - 1] : 0;
   if (frameless && sb->jumpkind == Ijk_Ret) b.store64(&kg_now->chain, IRBuilder::u64(0));   // the caller's
   else if (inline_chains && sb->jumpkind == Ijk_Ret && last_chain)
      add_inline_leave(b, blk, last_chain, levels_inline, pending.flushed_ir(), tier_counts);
   add_block_end(b, sb, blk, last_instr, sp, pending.flushed_ir(), tier_one);
   if (region && sb->jumpkind == Ijk_Ret)
      b.call_reading_sp("kg_region_leave", (void*)kg_region_leave, IRBuilder::u64((ULong)blk), nullptr);
   return sb;
}

} // namespace kg
