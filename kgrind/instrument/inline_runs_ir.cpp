// Inlined levels (--inline-frames) in a superblock: its instructions in
// runs of one inline chain, and at each run's start a check that the top
// frame's levels are that chain; when they are not, inline IR pops and
// pushes levels the way a return and a call's entry do (frames_ir.cpp):
// at a run that follows another in the superblock, the whole way from that
// run's chain to this one's (known here), unrolled; at the superblock's
// start the whole way from the chain that ran when it was translated, else
// one level each. activity/inline_frames.cpp's helper does the rest.

namespace kg {

namespace {

// Objects with inline records seen (a translated instruction with a
// chain): only their functions' blocks carry the inline fast path.
Bool* inlined_objects;
UInt inlined_objects_cap;

Bool object_has_inline_levels(UInt object) { return object < inlined_objects_cap && inlined_objects[object]; }

void note_inline_levels(UInt object)
{
   if (object >= inlined_objects_cap) {
      UInt cap = object + 64;
      Bool* grown = (Bool*)kg::alloc(cap * sizeof(Bool));
      VG_(memset)(grown, 0, cap * sizeof(Bool));
      if (inlined_objects) {
         VG_(memcpy)(grown, inlined_objects, inlined_objects_cap * sizeof(Bool));
         kg::release(inlined_objects);
      }
      inlined_objects = grown;
      inlined_objects_cap = cap;
   }
   inlined_objects[object] = True;
}

// Whether blk's superblock checks inline chains: a traced function's block
// with a symbol (inlined levels are pushed onto its frames only).
Bool checks_inline_chains(const BlockInfo* blk)
{
   const FnInfo* fn = blk->fn();
   return inline_frames_on() && !blk->in_plt && !fn->no_symbol && fn_traced(fn) && !fn->resolver;
}

// Whether blk may start in an inlined level's context: a block of an
// object with inline records.
Bool may_start_in_level(const BlockInfo* blk)
{
   return checks_inline_chains(blk) && object_has_inline_levels(blk->fn()->object);
}

// The chain of each instruction of sb (chain_of[i] for its i-th IMark; the
// function of its first instruction, as the block's); returns how many
// times the chain changes from one instruction to the next.
// Levels a superblock's unrolled steps may still pop and push
// (add_static_steps): every step is some twenty IR statements, and a
// superblock of many runs (STL code at -O2) would exhaust VEX's temporary
// storage; past the budget, runs take the one-level steps.
const UInt kStaticStepsPerSuperblock = 32;
UInt static_steps_left;

UInt inline_runs(IRSB* sb, UInt* chain_of)
{
   static_steps_left = kStaticStepsPerSuperblock;
   UInt n = 0, changes = 0;
   SourceLoc first = {};
   for (Int i = 0; i < sb->stmts_used; i++) {
      IRStmt* st = sb->stmts[i];
      if (!st || st->tag != Ist_IMark) continue;
      if (!n) source_loc((Addr)st->Ist.IMark.addr, &first);
      chain_of[n] = inline_chain_at((Addr)st->Ist.IMark.addr, first.fn);
      if (chain_of[n]) note_inline_levels(first.fn->object);
      if (n && chain_of[n] != chain_of[n - 1]) changes++;
      n++;
   }
   return changes;
}

// 1 when a frame whose transition has call site `site` is the innermost
// level of `chain` (for the empty chain: is no inlined level).
IRExpr* is_chain_level(IRBuilder& b, IRExpr* site, UInt chain)
{
   if (!chain) return b.op(Iop_CmpLT64U, site, IRBuilder::u64(kInlineSiteBase), Ity_I1);
   return b.op(Iop_CmpEQ64, site, IRBuilder::u64(inline_site(chain)), Ity_I1);
}

IRExpr* and1(IRBuilder& b, IRExpr* x, IRExpr* y) { return b.op(Iop_And1, x, y, Ity_I1); }
IRExpr* not1(IRBuilder& b, IRExpr* x) { return b.tmp(IRExpr_Unop(Iop_Not1, x), Ity_I1); }

// 1 when no call is pending (a run boundary; after a call the callee's
// entry pushes first).
IRExpr* no_call_pending(IRBuilder& b)
{
   return b.op(Iop_CmpNE64, b.load64(&kg_now->ctx), IRBuilder::u64((HWord)kCallPending), Ity_I1);
}

// The frame below the top frame (the sentinel at worst), its transition
// and that transition's site.
struct BelowTop {
   IRExpr* frame;
   IRExpr* tr;
   IRExpr* site;
};
BelowTop below_top(IRBuilder& b, IRExpr* top)
{
   IRExpr* below = b.op(Iop_Sub64, top, IRBuilder::u64(sizeof(Frame)));
   IRExpr* tr = b.load_field(below, offsetof(Frame, tr));
   return { below, tr, b.load_field(tr, offsetof(Transition, site)) };
}

// 1 when transition tr is an activation of blk's function (kActivation is
// 0; a thread's root runs no function): where a chain's first level goes.
IRExpr* activation_of(IRBuilder& b, IRExpr* tr, BlockInfo* blk)
{
   static_assert(kActivation == 0, "an activation's kind is 0");
   IRExpr* other = b.op(Iop_Or64, kind_word(b, tr), function_mismatch(b, tr, blk->fn()));
   return b.op(Iop_CmpEQ64, other, IRBuilder::u64(0), Ity_I1);
}

// Frame f (its transition tr) closes when `pop` holds, as
// add_inline_return closes a returning frame: its inclusive cost (the
// thread's Ir now, ir, less its entry's). kg_now->top, top_sp and ctx are
// left to the caller.
void close_level(IRBuilder& b, IRExpr* pop, IRExpr* f, IRExpr* tr, IRExpr* ir)
{
   IRExpr* incl = b.op(Iop_Sub64, ir, b.load_field(f, offsetof(Frame, ir_at_entry)));
   b.add_if(pop, b.place(tr, offsetof(Transition, edge_incl)), incl);
   if (!acts_in_nodes()) {
      IRExpr* active = b.load_field(tr, offsetof(Transition, active));
      IRExpr* still_active = b.op(Iop_Sub64, b.load64(active), IRBuilder::u64(1));
      b.store_if(pop, active, still_active);
      IRExpr* outermost = and1(b, pop, b.op(Iop_CmpEQ64, still_active, IRBuilder::u64(0), Ity_I1));
      b.add_if(outermost, b.place(tr, offsetof(Transition, ctx_incl)), incl);
   }
}

// The top frame (top, its transition tr) is popped when `pop` holds.
// kg_now->top_sp and ctx are left to the caller.
void pop_level(IRBuilder& b, IRExpr* pop, IRExpr* top, IRExpr* tr, IRExpr* ir)
{
   close_level(b, pop, top, tr, ir);
   b.store_if(pop, b.at(&kg_now->top), b.op(Iop_Sub64, top, IRBuilder::u64(sizeof(Frame))));
}

// The kid of frame transition from_tr into the level of `chain` (its
// transition's site is the chain's site: kid_transition's slot).
IRExpr* level_kid(IRBuilder& b, IRExpr* from_tr, UInt chain)
{
   UWord key = kid_key(inline_chain(chain).fn->id, inline_site(chain));
   IRExpr* offset;
   if (kids_grow()) {
      IRExpr* slot = b.op(Iop_And64,
                          b.op(Iop_Shr64, IRBuilder::u64(key), b.load(Ity_I8, b.field(from_tr, offsetof(Transition, kid_shift)))),
                          b.load_u8_field(from_tr, offsetof(Transition, kid_mask)));
      offset = b.op(Iop_Shl64, slot, IRExpr_Const(IRConst_U8(3)));
   } else {
      offset = IRBuilder::u64(key & kKidOffsetMask);
   }
   return b.load_field(b.op(Iop_Add64, b.load_field(from_tr, offsetof(Transition, kids)), offset), 0);
}

// Level `chain`'s frame pushed onto frame `from` (its transition from_tr)
// when `guard` holds and the level's kid of from_tr is in its slot, as
// add_inline_entry pushes a call: SP sp (its physical frame's), Ir at entry
// ir, and kg_now->top the new frame. The caller checks that there is room.
// Returns the condition that it was pushed; *kid_out: its transition then.
IRExpr* push_level(IRBuilder& b, IRExpr* guard, IRExpr* from, IRExpr* from_tr, UInt chain, IRExpr* sp, IRExpr* ir,
                   IRExpr** kid_out)
{
   IRExpr* kid = level_kid(b, from_tr, chain);
   IRExpr* next = b.op(Iop_Add64, from, IRBuilder::u64(sizeof(Frame)));
   IRExpr* kid_fits = b.op(Iop_CmpEQ64, b.load_field(kid, offsetof(Transition, site)), IRBuilder::u64(inline_site(chain)),
                           Ity_I1);
   IRExpr* push = and1(b, guard, kid_fits);
   b.store_if(push, b.field(next, offsetof(Frame, sp)), sp);
   b.store_if(push, b.field(next, offsetof(Frame, ir_at_entry)), ir);
   b.store_if(push, b.field(next, offsetof(Frame, tr)), kid);
   IRExpr* one = IRBuilder::u64(1);
   b.add_if(push, b.place(kid, offsetof(Transition, calls)), one);
   // The count of frames in the kid's context (after the pops': two
   // levels may share a context).
   if (!acts_in_nodes()) b.add_if(push, b.place(b.load_field(kid, offsetof(Transition, active)), 0), one);
   b.store_if(push, b.at(&kg_now->top), next);
   *kid_out = kid;
   return push;
}

// The inline fast path of a run of chain `chain` whose check missed
// (`missed`, the top frame top, its transition top_tr and site): at most
// one level popped (the top, when the frame below it is the chain's level
// or its parent's) and one pushed (the chain's, onto its parent's level,
// or onto an activation of blk's function for a chain of one level), from
// the kid of the frame below in the chain's slot, as add_inline_entry
// pushes a call. Anything else (several levels, a kid not yet in its slot,
// a full shadow stack, a pending call) is left to kg_inline_enter. Returns
// the condition that the levels are the run's now (the helper is not
// needed); *ctx_out: the run's context then.
IRExpr* add_level_steps(IRBuilder& b, BlockInfo* blk, UInt chain, IRExpr* missed, IRExpr* top, IRExpr* top_tr,
                        IRExpr* site, IRExpr* ir, IRExpr** ctx_out)
{
   UInt parent = inline_chain(chain).parent;
   IRExpr* go = and1(b, missed, no_call_pending(b));
   BelowTop bt = below_top(b, top);
   IRExpr *below = bt.frame, *below_tr = bt.tr, *below_site = bt.site;
   IRExpr* top_level = b.op(Iop_CmpLE64U, IRBuilder::u64(kInlineSiteBase), site, Ity_I1);
   // The top level goes when the frame below is the chain's level (its
   // child's, then) or the parent's (a sibling's).
   IRExpr* below_is_chain = is_chain_level(b, below_site, chain);
   IRExpr* below_fits = chain ? b.op(Iop_Or1, below_is_chain, is_chain_level(b, below_site, parent), Ity_I1)
                              : below_is_chain;
   IRExpr* pop = and1(b, and1(b, go, top_level), below_fits);
   if (!ir) ir = b.load64(&kg_now->ir);
   pop_level(b, pop, top, top_tr, ir);
   IRExpr* below_ctx = load_transition_ctx(b, below_tr);
   if (!chain) {
      b.store_if(pop, b.at(&kg_now->top_sp), b.load_field(below, offsetof(Frame, sp)));
      b.store_if(pop, b.at(&kg_now->ctx), below_ctx);
      *ctx_out = below_ctx;
      return pop;
   }
   IRExpr* popped_to_chain = and1(b, pop, below_is_chain);
   // The push, from the frame below the popped one or from the top.
   IRExpr* from = b.ite(pop, below, top);
   IRExpr* from_tr = b.ite(pop, below_tr, top_tr);
   IRExpr* from_site = b.ite(pop, below_site, site);
   IRExpr* onto = is_chain_level(b, from_site, parent);
   if (!parent) onto = and1(b, onto, activation_of(b, from_tr, blk));
   IRExpr* next = b.op(Iop_Add64, from, IRBuilder::u64(sizeof(Frame)));
   IRExpr* room = b.op(Iop_CmpLE64U, next, b.load64(&kg_now->frames_last), Ity_I1);
   IRExpr* sp = b.load_field(from, offsetof(Frame, sp));
   IRExpr* kid = nullptr;
   IRExpr* push = push_level(b, and1(b, and1(b, go, not1(b, popped_to_chain)), and1(b, onto, room)), from, from_tr,
                             chain, sp, ir, &kid);
   IRExpr* done = b.op(Iop_Or1, popped_to_chain, push, Ity_I1);
   b.store_if(done, b.at(&kg_now->top_sp), sp);
   IRExpr* ctx = b.ite(push, load_transition_ctx(b, kid), below_ctx);
   b.store_if(done, b.at(&kg_now->ctx), ctx);
   *ctx_out = ctx;
   return done;
}

// The way from chain `from`'s levels to chain `to`'s: how many levels are
// popped (from's below their common part), and the chains pushed,
// outermost first, in path[] (*pushed of them; at most kMaxStaticPush).
const UInt kMaxStaticPush = 8;
UInt chain_steps(UInt from, UInt to, UInt* path, UInt* pushed)
{
   UInt pops = 0, n = 0, rev[kMaxStaticPush + 64];
   while (inline_chain(from).depth > inline_chain(to).depth) from = inline_chain(from).parent, pops++;
   while (inline_chain(to).depth > inline_chain(from).depth && n < kMaxStaticPush + 64)
      rev[n++] = to, to = inline_chain(to).parent;
   while (from != to && n < kMaxStaticPush + 64) {
      from = inline_chain(from).parent, pops++;
      rev[n++] = to, to = inline_chain(to).parent;
   }
   *pushed = n;
   for (UInt i = 0; i < n && i < kMaxStaticPush; i++) path[i] = rev[n - 1 - i];
   return pops;
}

// The fast path of a run of chain `chain` entered from chain `prev`: the
// run before it in its superblock (the levels are prev's when that run's
// start made them so), or at the superblock's start the chain running at
// its translation; the way from prev's to chain's is known here (its
// pops and pushes unrolled, as pop_level and push_level take one). When
// the top frame is prev's level (or, for prev the function's own code, no
// level) and no call is pending, the levels below the chains' common part
// are popped and the chain's pushed onto it from kids in their slots (onto
// an activation of blk's function when the common part is the function's
// own code), if the shadow stack has room for them all. A kid not yet in
// its slot stops the pushes there and leaves the rest to kg_inline_enter,
// as does a top frame that is not prev's level. Returns the condition that
// the levels are the run's now, or nullptr when the way is too long to
// unroll; *ctx_out: the run's context then.
IRExpr* add_static_steps(IRBuilder& b, BlockInfo* blk, UInt prev, UInt chain, IRExpr* top, IRExpr* top_tr,
                         IRExpr* site, IRExpr* ir, IRExpr** ctx_out)
{
   UInt path[kMaxStaticPush], pushed;
   UInt pops = chain_steps(prev, chain, path, &pushed);
   if (pushed > kMaxStaticPush || pops > kMaxStaticPush || pops + pushed > static_steps_left) return nullptr;
   static_steps_left -= pops + pushed;
   IRExpr* go = and1(b, is_chain_level(b, site, prev), no_call_pending(b));
   IRExpr* f = top;
   IRExpr* f_tr = top_tr;
   for (UInt i = 0; i < pops; i++) {
      close_level(b, go, f, f_tr, ir);
      // Below the top's parent only when the levels are prev's (the
      // frame array may start there otherwise).
      IRExpr* below = b.op(Iop_Sub64, top, IRBuilder::u64((i + 1) * sizeof(Frame)));
      f = i ? b.ite(go, below, top) : below;
      f_tr = b.load_field(f, offsetof(Frame, tr));
   }
   if (pops) b.store_if(go, b.at(&kg_now->top), f);
   IRExpr* sp = b.load_field(f, offsetof(Frame, sp));
   IRExpr* done = go;
   if (pushed) {
      if (!inline_chain(path[0]).parent) done = and1(b, done, activation_of(b, f_tr, blk));
      IRExpr* last = b.op(Iop_Add64, f, IRBuilder::u64(pushed * sizeof(Frame)));
      done = and1(b, done, b.op(Iop_CmpLE64U, last, b.load64(&kg_now->frames_last), Ity_I1));
      for (UInt i = 0; i < pushed; i++) {
         IRExpr* kid = nullptr;
         done = push_level(b, done, f, f_tr, path[i], sp, ir, &kid);
         f = b.op(Iop_Add64, f, IRBuilder::u64(sizeof(Frame)));
         f_tr = kid;
      }
   }
   b.store_if(done, b.at(&kg_now->top_sp), sp);
   IRExpr* ctx = load_transition_ctx(b, f_tr);
   b.store_if(done, b.at(&kg_now->ctx), ctx);
   *ctx_out = ctx;
   return done;
}

// The counters of blk's run of chain `chain` in context ctx, where inline
// IR made the levels the run's (`done`): a run of a chain finds them in
// the level's context's array (kg_counters.h, kLevelArrayFlag), or where
// the block has no check left in its own way (kg_run_counters fills it, as
// kg_inline_enter does where the helper made them); a run of the
// function's own code finds them as the prologue does in its context's
// array (add_inline_run leaves a run to the helper when the block has no
// array check left), or without arrays (k = inf) in a way
// of its own too: the block's way 0 keeps the context the block starts in,
// which its start checks (pointed at a later run's context, every start
// would miss it and call kg_block_start).
// Whether a run of chain `chain` on the inline path counts through a way of
// its own (run_counters): where its block counts in no array, or for a
// level's run where the block has no array check left.
Bool run_counts_through_way(const BlockInfo* blk, UInt chain)
{
   return !checks_array(blk) || (chain && !array_check_left(blk));
}

IRExpr* run_counters(IRBuilder& b, BlockInfo* blk, UInt chain, IRExpr* done, IRExpr* ctx, IRExpr* counters,
                     CounterWay* way)
{
   if (run_counts_through_way(blk, chain)) {
      IRExpr* refill = and1(b, done, b.op(Iop_CmpNE64, ctx, b.load64(&way->ctx), Ity_I1));
      b.call("kg_run_counters", (void*)kg_run_counters, 2,
             mkIRExprVec_2(mkIRExpr_HWord((HWord)blk), mkIRExpr_HWord((HWord)way)), refill);
      IRExpr* found = b.load_if(and1(b, done, b.op(Iop_CmpNE64, ctx, b.load64(&way->ctx), Ity_I1)),
                                &kg_now->found_counters, b.load64(&way->counters));
      return b.ite(done, found, counters);
   }
   // A level's context has an array of its physical function's blocks
   // (kg_counters.cpp, array_key_for); the helper of a level's run keeps
   // the block's ways, which hold the context the block starts in. Where
   // the steps were not taken ctx may be an empty kid's (null), whose
   // array words the check must not read: kCallPending's instead (zero).
   IRExpr* found = chain ? add_array_counters(b, blk, b.ite(done, ctx, IRBuilder::u64((HWord)kCallPending)),
                                              "kg_run_array_counters", (void*)kg_run_array_counters, False, done,
                                              False, True)
                         : add_array_counters(b, blk, ctx, "kg_entry_counters", (void*)kg_entry_counters, False, done);
   return b.ite(done, found, counters);
}

// A run of chain `chain` starts: the levels are made that chain's when they
// are not. Returns the counters the run counts in (`counters`, or the
// ones of the context the levels changed to). fast: inline IR pushes and
// pops (instrument(): levels_inline); ir: the thread's Ir as the last flush
// stored it, or nullptr at the superblock's start; prev: the chain of the
// run before it in the superblock (with ir; at the start the chain running
// now is taken instead, running_inline_chain); tier: the block's counts at
// the levels' tier 1, which the helper's calls count (else nullptr).
IRExpr* add_inline_run(IRBuilder& b, BlockInfo* blk, UInt chain, IRExpr* counters, Bool fast, IRExpr* ir, UInt prev,
                       LevelTierCounts* tier)
{
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* top_tr = b.load_field(top, offsetof(Frame, tr));
   IRExpr* site = b.load_field(top_tr, offsetof(Transition, site));
   IRExpr* missed = not1(b, is_chain_level(b, site, chain));
   IRExpr* slow = missed;
   // The run's own way (16 bytes a run of a translation), where inline IR
   // finds a level's counters (run_counters) and, with events, where every
   // level change is the helper's, the helper too; none for the other runs,
   // whose helper looks the counters up (every superblock start of a
   // program without inline records is such a run: cc1plus, 0.4 MB).
   // At the superblock's start only where the start's steps are taken
   // often enough to pay (level_start_steps_inline).
   Bool inline_path = fast && (chain || array_check_left(blk)) && (ir || level_start_steps_inline(blk->addr));
   CounterWay* way =
      extra_events_on() || (inline_path && run_counts_through_way(blk, chain)) ? new_run_way() : nullptr;
   if (inline_path) {
      IRExpr* ctx = nullptr;
      IRExpr* done = nullptr;
      if (ir) {
         done = add_static_steps(b, blk, prev, chain, top, top_tr, site, ir, &ctx);
      } else {
         // The superblock's start: the way from the levels running while it
         // is translated (mostly the way every run takes: a loop's), unrolled.
         UInt running = running_inline_chain();
         if (running != kNoRunningChain && running != chain)
            done = add_static_steps(b, blk, running, chain, top, top_tr, site, b.load64(&kg_now->ir), &ctx);
      }
      if (!done) done = add_level_steps(b, blk, chain, missed, top, top_tr, site, ir, &ctx);
      counters = run_counters(b, blk, chain, done, ctx, counters, way);
      slow = and1(b, missed, not1(b, done));
   }
   b.call("kg_inline_enter", (void*)kg_inline_enter, 3,
          mkIRExprVec_5(mkIRExpr_HWord((HWord)blk), mkIRExpr_HWord(chain), mkIRExpr_HWord((HWord)way),
                        mkIRExpr_HWord((HWord)tier), mkIRExpr_HWord(ir ? 0 : 1)),
          slow);
   return b.load_if(slow, &kg_now->found_counters, counters);
}

// A return from a run of chain `chain` (not 0): the levels above the
// function's frame end with it. fast: a chain one level deep pops its level
// inline when it is the top; else the helper pops them. tier: as
// add_inline_run's.
void add_inline_leave(IRBuilder& b, BlockInfo* blk, UInt chain, Bool fast, IRExpr* ir, LevelTierCounts* tier)
{
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* top_tr = b.load_field(top, offsetof(Frame, tr));
   IRExpr* site = b.load_field(top_tr, offsetof(Transition, site));
   IRExpr* levels = b.op(Iop_CmpLE64U, IRBuilder::u64(kInlineSiteBase), site, Ity_I1);
   IRExpr* slow = levels;
   if (fast && inline_chain(chain).depth == 1) {
      IRExpr* pop = and1(b, is_chain_level(b, site, chain), no_call_pending(b));
      if (!ir) ir = b.load64(&kg_now->ir);
      pop_level(b, pop, top, top_tr, ir);
      IRExpr* below = b.op(Iop_Sub64, top, IRBuilder::u64(sizeof(Frame)));
      b.store_if(pop, b.at(&kg_now->top_sp), b.load_field(below, offsetof(Frame, sp)));
      b.store_if(pop, b.at(&kg_now->ctx), load_transition_ctx(b, b.load_field(below, offsetof(Frame, tr))));
      slow = and1(b, levels, not1(b, pop));
   }
   b.call("kg_inline_leave", (void*)kg_inline_leave, 2,
          mkIRExprVec_2(mkIRExpr_HWord((HWord)blk), mkIRExpr_HWord((HWord)tier)), slow);
}

} // namespace

} // namespace kg
