// Frameless inlined levels' IR (kg_frameless_levels.h): each run of an
// inlined chain counts in its record for the physical context, found
// through the run's one-way cache; a superblock's first run counts its
// start against its record's prediction of the chain that ran before; a
// call or direct tail call from inlined code pushes the chain's levels as
// frames from the record's transitions, so that the callee is entered
// below them.

namespace kg {

namespace {

// The run of the superblock being instrumented (none: the function's own
// code), and its record.
struct FramelessRunIR {
   FramelessRun* run;
   IRExpr* rec;
} frameless_run_ir;

void frameless_superblock_begins() { frameless_run_ir = { nullptr, nullptr }; }

// The running run ends before flush point `next_point` (its points: those
// made since it started).
void end_frameless_run(UInt next_point)
{
   if (frameless_run_ir.run) frameless_run_ir.run->end_point = (UShort)next_point;
}

// A run of the function's own code starts (chain 0 in kg_now->chain).
void add_own_code_run(IRBuilder& b, UInt next_point)
{
   end_frameless_run(next_point);
   frameless_run_ir = { nullptr, nullptr };
   b.store64(&kg_now->chain, IRBuilder::u64(0));
}

// A run of chain `chain` starts at flush point first_point, after a run of
// prev in the superblock (kStartOfSuperblock: the superblock's first run).
// Returns the counters it counts in: its record's.
IRExpr* add_frameless_run(IRBuilder& b, BlockInfo* blk, UInt chain, UInt prev, UInt first_point)
{
   end_frameless_run(first_point);
   FramelessRun* run = new_frameless_run(blk, chain, prev, first_point);
   IRExpr* key = frameless_keyed_by_transition() ? b.load_field(b.load64(&kg_now->top), offsetof(Frame, tr))
                                                 : b.load64(&kg_now->ctx);
   IRExpr* miss = b.op(Iop_CmpNE64, key, b.load64(&run->cached_key), Ity_I1);
   // The levels' counts of frames through the cached record (the previous
   // run's levels in the superblock were checked by its own: a variant
   // for them makes this run's lookup the helper's too).
   // (At k = inf no frames are counted: no variants.)
   UInt depth = inline_chain(chain).depth;
   UInt from = acts_in_nodes() ? depth : 0;
   if (prev != kStartOfSuperblock && prev && !acts_in_nodes()) {
      from = chains_common_depth(prev, chain);
      IRExpr* prev_nested = b.load_field(frameless_run_ir.rec, offsetof(FramelessRecord, nested));
      miss = b.op(Iop_Or1, miss, b.op(Iop_CmpNE64, prev_nested, IRBuilder::u64(0), Ity_I1), Ity_I1);
   }
   if (from < depth) {
      IRExpr* cached = b.load64(&run->cached_rec);
      IRExpr* frames = nullptr;
      for (UInt i = from; i < depth; i++) {
         IRExpr* n = b.load64(b.load_field(cached, frameless_active_offset(depth) + i * sizeof(UWord*)));
         frames = frames ? b.op(Iop_Or64, frames, n) : n;
      }
      miss = b.op(Iop_Or1, miss, b.op(Iop_CmpNE64, frames, IRBuilder::u64(0), Ity_I1), Ity_I1);
   }
   b.call("kg_frameless_find", (void*)kg_frameless_find, 1, mkIRExprVec_1(mkIRExpr_HWord((HWord)run)), miss);
   IRExpr* rec = b.load64(&run->cached_rec);
   if (prev == kStartOfSuperblock) {
      IRExpr* before = b.load64(&kg_now->chain);
      IRExpr* predicted = b.load_field(rec, offsetof(FramelessRecord, pred_chain));
      b.add_if(b.op(Iop_CmpEQ64, before, predicted, Ity_I1), b.place(rec, offsetof(FramelessRecord, pred_count)),
               IRBuilder::u64(1));
      b.call("kg_frameless_start", (void*)kg_frameless_start, 2, mkIRExprVec_2(rec, before),
             b.op(Iop_CmpNE64, before, predicted, Ity_I1));
   }
   b.store64(&kg_now->chain, IRBuilder::u64(chain));
   frameless_run_ir = { run, rec };
   return b.op(Iop_Add64, rec, IRBuilder::u64(frameless_counters_offset(inline_chain(chain).depth)));
}

// A call or tail call from the running run (when guard holds; nullptr:
// always) is made pending: the chain's levels go on the shadow stack as
// frames, inline from the record's transitions where the stack has room
// and the record has them (not the scratch record while counting is
// off, whose levels are no transitions), else by kg_frameless_call; with
// events beyond Ir each starts its event clocks. Their entries are the
// record's.
void add_frameless_call(IRBuilder& b, IRExpr* guard)
{
   if (!frameless_levels_on() || !frameless_run_ir.run) return;
   UInt depth = inline_chain(frameless_run_ir.run->chain).depth;
   IRExpr* rec = frameless_run_ir.rec;
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* last = b.op(Iop_Add64, top, IRBuilder::u64(depth * sizeof(Frame)));
   IRExpr* room = b.op(Iop_CmpLE64U, last, b.load64(&kg_now->frames_last), Ity_I1);
   IRExpr* outer = b.load_field(rec, frameless_levels_offset());
   IRExpr* made = b.op(Iop_CmpNE64, outer, IRBuilder::u64((HWord)frameless_no_level()), Ity_I1);
   IRExpr* inline_push = b.op(Iop_And1, room, made, Ity_I1);
   if (guard) inline_push = b.op(Iop_And1, guard, inline_push, Ity_I1);
   IRExpr* sp = b.load_field(top, offsetof(Frame, sp));
   IRExpr* ir = b.load64(&kg_now->ir);
   for (UInt i = 0; i < depth; i++) {
      IRExpr* f = b.op(Iop_Add64, top, IRBuilder::u64((i + 1) * sizeof(Frame)));
      IRExpr* tr = i ? b.load_field(rec, frameless_levels_offset() + i * sizeof(Transition*)) : outer;
      b.store_if(inline_push, b.field(f, offsetof(Frame, sp)), sp);
      b.store_if(inline_push, b.field(f, offsetof(Frame, ir_at_entry)), ir);
      b.store_if(inline_push, b.field(f, offsetof(Frame, tr)), tr);
      // The count of frames in the level's context (levels of one chain
      // may share one: each load follows the previous store; none at k = inf).
      if (!acts_in_nodes()) {
         IRExpr* active = b.load_field(tr, offsetof(Transition, active));
         b.store_if(inline_push, active, b.op(Iop_Add64, b.load64(active), IRBuilder::u64(1)));
      }
      if (extra_events_on()) add_frame_events_start(b, f, inline_push);
   }
   b.store_if(inline_push, b.at(&kg_now->top), last);
   b.store_if(inline_push, b.at(&kg_now->top_sp), sp);
   IRExpr* helper = b.tmp(IRExpr_Unop(Iop_Not1, b.op(Iop_And1, room, made, Ity_I1)), Ity_I1);
   if (guard) helper = b.op(Iop_And1, guard, helper, Ity_I1);
   b.call("kg_frameless_call", (void*)kg_frameless_call, 1, mkIRExprVec_1(rec), helper);
   b.store_if(guard, b.at(&kg_now->chain), IRBuilder::u64(0));
}

} // namespace

} // namespace kg
