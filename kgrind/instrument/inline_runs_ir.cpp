// Inlined levels (--inline-frames) in a superblock: its instructions in
// runs of one inline chain, and at each run's start a check that the top
// frame's levels are that chain; when they are not, inline IR pops and
// pushes one level the way a return and a call's entry do (frames_ir.cpp),
// and activity/inline_frames.cpp's helper does the rest.

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

// Whether blk's runs push and pop levels inline (else the helper does):
// blocks of objects with inline records, without events beyond Ir (whose
// clocks the helper starts and closes).
Bool pushes_levels_inline(const BlockInfo* blk)
{
   return checks_inline_chains(blk) && object_has_inline_levels(blk->fn()->object) && !extra_events_on();
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

// The top frame (top, its transition tr) is popped when `pop` holds, as
// add_inline_return pops a returning frame: its inclusive cost (the
// thread's Ir now, ir, less its entry's) closes. kg_now->top_sp and ctx
// are left to the caller.
void pop_level(IRBuilder& b, IRExpr* pop, IRExpr* top, IRExpr* tr, IRExpr* ir)
{
   IRExpr* incl = b.op(Iop_Sub64, ir, b.load_field(top, offsetof(Frame, ir_at_entry)));
   b.add_if(pop, b.place(tr, offsetof(Transition, edge_incl)), incl);
   if (!acts_in_nodes()) {
      IRExpr* active = b.load_field(tr, offsetof(Transition, active));
      IRExpr* still_active = b.op(Iop_Sub64, b.load64(active), IRBuilder::u64(1));
      b.store_if(pop, active, still_active);
      IRExpr* outermost = and1(b, pop, b.op(Iop_CmpEQ64, still_active, IRBuilder::u64(0), Ity_I1));
      b.add_if(outermost, b.place(tr, offsetof(Transition, ctx_incl)), incl);
   }
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
   IRExpr* at_boundary = b.op(Iop_CmpNE64, b.load64(&kg_now->ctx), IRBuilder::u64((HWord)kCallPending), Ity_I1);
   IRExpr* go = and1(b, missed, at_boundary);
   IRExpr* below = b.op(Iop_Sub64, top, IRBuilder::u64(sizeof(Frame)));   // the sentinel at worst
   IRExpr* below_tr = b.load_field(below, offsetof(Frame, tr));
   IRExpr* below_site = b.load_field(below_tr, offsetof(Transition, site));
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
   if (!parent) {
      // An activation of blk's function (kActivation is 0; a thread's root
      // runs no function).
      static_assert(kActivation == 0, "an activation's kind is 0");
      IRExpr* other = b.op(Iop_Or64, kind_word(b, from_tr), function_mismatch(b, from_tr, blk->fn()));
      onto = and1(b, onto, b.op(Iop_CmpEQ64, other, IRBuilder::u64(0), Ity_I1));
   }
   IRExpr* kid = level_kid(b, from_tr, chain);
   IRExpr* next = b.op(Iop_Add64, from, IRBuilder::u64(sizeof(Frame)));
   IRExpr* room = b.op(Iop_CmpLE64U, next, b.load64(&kg_now->frames_last), Ity_I1);
   IRExpr* kid_fits = b.op(Iop_CmpEQ64, b.load_field(kid, offsetof(Transition, site)), IRBuilder::u64(inline_site(chain)),
                           Ity_I1);
   IRExpr* push = and1(b, and1(b, and1(b, go, not1(b, popped_to_chain)), onto), and1(b, kid_fits, room));
   IRExpr* sp = b.load_field(from, offsetof(Frame, sp));
   b.store_if(push, b.field(next, offsetof(Frame, sp)), sp);
   b.store_if(push, b.field(next, offsetof(Frame, ir_at_entry)), ir);
   b.store_if(push, b.field(next, offsetof(Frame, tr)), kid);
   IRExpr* one = IRBuilder::u64(1);
   b.add_if(push, b.place(kid, offsetof(Transition, calls)), one);
   // The count of frames in the kid's context (after the pop's: the two
   // levels may share a context).
   if (!acts_in_nodes()) b.add_if(push, b.place(b.load_field(kid, offsetof(Transition, active)), 0), one);
   b.store_if(push, b.at(&kg_now->top), next);
   IRExpr* done = b.op(Iop_Or1, popped_to_chain, push, Ity_I1);
   b.store_if(done, b.at(&kg_now->top_sp), sp);
   IRExpr* ctx = b.ite(push, load_transition_ctx(b, kid), below_ctx);
   b.store_if(done, b.at(&kg_now->ctx), ctx);
   *ctx_out = ctx;
   return done;
}

// The counters of blk's run of chain `chain` in context ctx, where inline
// IR made the levels the run's (`done`): a level's context has no counter
// array, so a run of a chain looks in its own way (kg_run_counters fills
// it); a run of the function's own code finds them as the prologue does
// (its context's array, or the block's way 0; add_inline_run leaves a run
// to the helper when the block has no array check left).
IRExpr* run_counters(IRBuilder& b, BlockInfo* blk, UInt chain, IRExpr* done, IRExpr* ctx, IRExpr* counters)
{
   if (chain) {
      CounterWay* way = new_run_way();
      IRExpr* refill = and1(b, done, b.op(Iop_CmpNE64, ctx, b.load64(&way->ctx), Ity_I1));
      b.call("kg_run_counters", (void*)kg_run_counters, 2,
             mkIRExprVec_2(mkIRExpr_HWord((HWord)blk), mkIRExpr_HWord((HWord)way)), refill);
      IRExpr* found = b.load_if(and1(b, done, b.op(Iop_CmpNE64, ctx, b.load64(&way->ctx), Ity_I1)),
                                &kg_now->found_counters, b.load64(&way->counters));
      return b.ite(done, found, counters);
   }
   if (checks_array(blk))
      return b.ite(done, add_array_counters(b, blk, ctx, "kg_entry_counters", (void*)kg_entry_counters, False, done),
                   counters);
   IRExpr* blk_at = b.shared_at(blk);
   b.call("kg_refresh_counters", (void*)kg_refresh_counters, 1, mkIRExprVec_1(blk_at),
          and1(b, done, b.op(Iop_CmpNE64, ctx, b.load64(blk_at), Ity_I1)));
   return b.ite(done, b.load64(&blk->ways[0].counters), counters);
}

// A run of chain `chain` starts: the levels are made that chain's when they
// are not. Returns the counters the run counts in (`counters`, or the
// ones of the context the levels changed to). fast: inline IR pushes and
// pops (pushes_levels_inline); ir: the thread's Ir as the last flush
// stored it, or nullptr.
IRExpr* add_inline_run(IRBuilder& b, BlockInfo* blk, UInt chain, IRExpr* counters, Bool fast, IRExpr* ir)
{
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* top_tr = b.load_field(top, offsetof(Frame, tr));
   IRExpr* site = b.load_field(top_tr, offsetof(Transition, site));
   IRExpr* missed = not1(b, is_chain_level(b, site, chain));
   IRExpr* slow = missed;
   if (fast && (chain || array_check_left(blk))) {
      IRExpr* ctx = nullptr;
      IRExpr* done = add_level_steps(b, blk, chain, missed, top, top_tr, site, ir, &ctx);
      counters = run_counters(b, blk, chain, done, ctx, counters);
      slow = and1(b, missed, not1(b, done));
   }
   b.call("kg_inline_enter", (void*)kg_inline_enter, 2,
          mkIRExprVec_2(mkIRExpr_HWord((HWord)blk), mkIRExpr_HWord(chain)), slow);
   return b.load_if(slow, &kg_now->found_counters, counters);
}

// A return: the levels above the function's frame end with it. fast: a
// block whose last run is one level deep (`chain`, that level's) pops it
// inline when it is the top; else the helper pops them.
void add_inline_leave(IRBuilder& b, BlockInfo* blk, UInt chain, Bool fast, IRExpr* ir)
{
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* top_tr = b.load_field(top, offsetof(Frame, tr));
   IRExpr* site = b.load_field(top_tr, offsetof(Transition, site));
   IRExpr* levels = b.op(Iop_CmpLE64U, IRBuilder::u64(kInlineSiteBase), site, Ity_I1);
   IRExpr* slow = levels;
   if (fast && chain && inline_chain(chain).depth == 1) {
      IRExpr* at_boundary = b.op(Iop_CmpNE64, b.load64(&kg_now->ctx), IRBuilder::u64((HWord)kCallPending), Ity_I1);
      IRExpr* pop = and1(b, is_chain_level(b, site, chain), at_boundary);
      if (!ir) ir = b.load64(&kg_now->ir);
      pop_level(b, pop, top, top_tr, ir);
      IRExpr* below = b.op(Iop_Sub64, top, IRBuilder::u64(sizeof(Frame)));
      b.store_if(pop, b.at(&kg_now->top_sp), b.load_field(below, offsetof(Frame, sp)));
      b.store_if(pop, b.at(&kg_now->ctx), load_transition_ctx(b, b.load_field(below, offsetof(Frame, tr))));
      slow = and1(b, levels, not1(b, pop));
   }
   b.call("kg_inline_leave", (void*)kg_inline_leave, 1, mkIRExprVec_1(mkIRExpr_HWord((HWord)blk)), slow);
}

} // namespace

} // namespace kg
