// Tier 1's helpers (kg_tiers.h): the C twins of the inline prologue and
// return that tier 2 translates, each deciding as its IR does, so that a
// block counts the same whichever tier runs it; the runs that promote a
// block to tier 2, and the tiers' statistics.

namespace kg {

namespace {

// Tier-1 runs by block id (kNotTierOne: a tier-2 block's id); a block is
// promoted at the run after its threshold's, before it does anything.
const UInt kNotTierOne = ~0u;
UInt* tier_runs;
UWord tier_runs_cap;

// The superblock addresses promoted to tier 2 (each once).
struct PromotedBlock {
   const void* a;   // the address
   const void* b;   // unused
   // At the levels' tier: its start rarely called the helper, which keeps
   // its steps there (level_start_steps_inline).
   Bool start_by_helper;
};
PairTable<PromotedBlock> promoted_blocks;

struct TierStats {
   ULong tier_one;       // translations at tier 1
   ULong tier_two;       // at tier 2
   ULong promotions;     // tier-1 blocks that reached the threshold
} tier_stats;

// --tiering=levels: each tier-1 translation's counts (the IR holds their
// address).
PinnedSlots<LevelTierCounts> level_tier_counts;

// The C twin of add_inline_entry: the push from the top frame's kid slot,
// made always (speculative: a function's first block, undone by
// kg_entry_fixup when wrong) or only when predicted (a call's target
// without a symbol, kg_block_entry after an unpredicted call). Returns the
// context the block's counters are checked against.
ForestNode* tier_entry(BlockInfo* blk, Addr sp, Bool speculative)
{
   ForestNode* ctx_before = kg_now->ctx;
   Frame* next = kg_now->top + 1;   // always writable
   Transition* top_tr = kg_now->top->tr;
   FnInfo* callee = activated_function(blk);
   Addr site = kg_now->call_site;
   Transition* tr = top_tr->kids[kid_slot_in(top_tr, callee->id, site)];
   Bool wrong = tr->fn_id != callee->id || tr->site != site || ctx_before != kCallPending ||
                next > kg_now->frames_last;
   Bool push = speculative || !wrong;
   next->sp = sp;
   next->ir_at_entry = kg_now->ir;
   next->tr = tr;
   if (push) {
      tr->calls++;
      count_in(tr);
      kg_now->top = next;
      kg_now->top_sp = sp;
      // The IR stores the kid's context here even when wrong (a load of a
      // field any kid has, the empty kid's too); the fix-up then restores
      // ctx_before. transition_ctx of the empty kid would read outside it.
      if (!wrong) kg_now->ctx = transition_ctx(tr);
   }
   if (speculative) {
      if (wrong) kg_entry_fixup(blk, sp, ctx_before, callee);
   } else if (ctx_before == kCallPending && wrong) {
      kg_block_entry(blk, sp, ctx_before, callee);
   }
   return kg_now->ctx;
}

// The run that reaches the threshold: blk's address is promoted (once; a
// run of a translation made before, if the core kept one, stays at tier 1).
Bool promote(const BlockInfo* blk, Bool start_by_helper = False)
{
   if (promoted_blocks.find((const void*)blk->addr, nullptr)) return False;
   promoted_blocks.get((const void*)blk->addr, nullptr)->start_by_helper = start_by_helper;
   tier_stats.promotions++;
   return True;
}

} // namespace

Bool tiering_on()
{
   return clo.tiering == kTieringYes && !block_mode() && !extra_events_on() && !inline_frames_on();
}

Bool level_tiering_on()
{
   return clo.tiering == kTieringLevels && !block_mode() && !extra_events_on() && inline_frames_on();
}

Bool tier_promoted(Addr addr) { return promoted_blocks.find((const void*)addr, nullptr) != nullptr; }

void tier_one_made(const BlockInfo* blk)
{
   tier_stats.tier_one++;
   while (blk->id >= tier_runs_cap) {
      UWord cap = tier_runs_cap ? tier_runs_cap * 2 : 4096;
      UInt* grown = (UInt*)kg::alloc(cap * sizeof(UInt));
      VG_(memset)(grown, 0xFF, cap * sizeof(UInt));   // kNotTierOne
      if (tier_runs) {
         VG_(memcpy)(grown, tier_runs, tier_runs_cap * sizeof(UInt));
         kg::release(tier_runs);
      }
      tier_runs = grown;
      tier_runs_cap = cap;
   }
   tier_runs[blk->id] = 0;
}

void tier_two_made() { tier_stats.tier_two++; }

LevelTierCounts* level_tier_one_made()
{
   tier_stats.tier_one++;
   return level_tier_counts.take();
}

void level_tier_helper_called(LevelTierCounts* c, Bool at_start)
{
   if (!c || c->runs >= kLevelPromotionRun - 1) return;
   c->helper_calls++;
   c->start_calls += at_start;
   if (c->runs >= clo.tier_threshold && (ULong)c->helper_calls * kLevelHelperShare >= c->runs) {
      c->runs_at_promotion = c->runs;
      c->runs = kLevelPromotionRun - 1;   // the next run promotes
   }
}

void level_tier_two_made() { tier_stats.tier_two++; }

Bool level_start_steps_inline(Addr addr)
{
   const PromotedBlock* p = promoted_blocks.find((const void*)addr, nullptr);
   return !p || !p->start_by_helper;
}

extern "C" void VG_REGPARM(2) kg_levels_promote(BlockInfo* blk, LevelTierCounts* c)
{
   promote(blk, (ULong)c->start_calls * kLevelHelperShare < c->runs_at_promotion);
}

extern "C" ULong* VG_REGPARM(3) kg_tier_block(GuestState* gs, BlockInfo* blk, UWord start)
{
   UInt& runs = tier_runs[blk->id];
   if (runs == clo.tier_threshold) {
      if (promote(blk)) {
         // The exit discards the translations of the block's first byte.
         gs->guest_CMSTART = blk->addr;
         gs->guest_CMLEN = 1;
         return nullptr;
      }
   } else {
      runs++;
   }
   Addr sp = guest_sp(gs);
   switch (start) {
   case kTierPlain:
      if (kg_now->ctx != blk->ways[0].ctx) kg_block_start(blk);
      break;
   case kTierAlways:
      kg_block_start(blk);
      break;
   default:
      if (tier_entry(blk, sp, start == kTierEntry) != blk->ways[0].ctx) kg_refresh_counters(blk);
      break;
   }
   return blk->ways[0].counters;
}

extern "C" void VG_REGPARM(1) kg_tier_return(Addr sp)
{
   const Frame* top = kg_now->top;
   if (sp != top->sp + sizeof(Addr) || top->tr->kind != kActivation) return;
   pop_frame(current);
   kg_now->top_sp = kg_now->top->sp;
   kg_now->ctx = transition_ctx(kg_now->top->tr);
}

void print_tier_stats()
{
   Bool levels = level_tiering_on();
   if (!tiering_on() && !levels) return;
   // Tier-1 blocks by their runs (a promoted level block's until then).
   const UInt kBounds[] = { 1, 10, 100, 1000 };
   ULong under[4] = {};
   auto count = [&](UInt runs) {
      for (UInt i = 0; i < 4; i++)
         if (runs < kBounds[i]) under[i]++;
   };
   for (UWord id = 1; id < tier_runs_cap; id++)
      if (tier_runs[id] != kNotTierOne) count(tier_runs[id]);
   level_tier_counts.for_each(
      [&](const LevelTierCounts& n) { count(n.runs >= kLevelPromotionRun - 1 ? n.runs_at_promotion : n.runs); });
   VG_(dmsg)("kgrind tiers: %sthreshold %u; translations: tier 1 %llu, tier 2 %llu (%llu promoted)\n",
             levels ? "inlined levels' steps, " : "", clo.tier_threshold, tier_stats.tier_one, tier_stats.tier_two,
             tier_stats.promotions);
   VG_(dmsg)("kgrind tiers: tier-1 runs of blocks: <1 %llu, <10 %llu, <100 %llu, <1000 %llu\n",
             under[0], under[1], under[2], under[3]);
}

} // namespace kg
