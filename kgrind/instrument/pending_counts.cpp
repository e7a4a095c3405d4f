// The counting of a superblock's instructions at its flush points.

namespace kg {

namespace {

// The counting of a superblock's instructions at its flush points (one
// before each side exit, one at the end: kg_block_info.h), in one of two ways.
//
// Reached (the block modes, and function mode's other superblocks): each
// point adds one to its counter and the instructions since the previous
// point to the thread's Ir, unconditionally. Function mode skips a point
// with no instructions since the previous one, unless it collects jumps
// (every_point: a jump's count is the difference of two points' counts).
//
// Leaving (function mode's unrolled loops: VEX copies a small loop's body
// into one superblock, with a side exit per copy, and jumps back to its
// start at the end; unrolled_loop): a side exit adds one to its point's
// counter and sets the thread's Ir to its value at the superblock's start
// plus the instructions before the exit, with guarded stores that only a
// taken exit executes; the end does the same unconditionally. A run stores
// one counter and the Ir once, however many copies it passes. The counters
// become "reached" counts at exit (BlockInfo::counts_leaving). Elsewhere
// the guarded stores' branches cost more than the stores they save
// (sqlite3 +14 %: docs/design/counting.md), but the copies' exits are as
// predictable as the loop (numeric 1.15 -> 1.03x none). Helpers that read
// the Ir before the end (kg_unwind) get it stored first (ir_now).
class PendingCounts {
public:
   // per_instruction: the block's costs are per instruction (InstrPos,
   // describe_positions), not per line run.
   PendingCounts(Bool per_instruction, Bool every_point, Bool leaving)
      : per_instruction_(per_instruction), every_point_(every_point), leaving_(leaving)
   {
   }

   void add(UInt slot)
   {
      counts_[slot]++;
      total_++;
      since_point_++;
   }

   // The index of the next flush point.
   UInt next_point() const { return point_; }

   // A flush point: a side exit (taken: when it is taken; used when
   // leaving) or the end (taken nullptr). Records which lines' instructions
   // the point counts (function mode: LineRun). `counts_events`: events
   // beyond Ir are counted by this point (PointEvent), so it counts even
   // with no instruction since the last.
   void flush(IRBuilder& b, IRExpr* counters, const IRBuilder::Cond* taken, Bool counts_events)
   {
      UInt point = point_++;
      for (UInt i = 0; i < kMaxSlots; i++) {
         if (!counts_[i]) continue;
         if (!per_instruction_ && n_runs_ < kMaxRuns) runs_[n_runs_++] = { (UShort)point, (UShort)i, (UInt)counts_[i] };
         counts_[i] = 0;
      }
      if (!leaving_) {
         if (!every_point_ && !since_point_ && !counts_events) return;
         b.add_to(b.place(counters, 8 * point), IRBuilder::u64(1));
         if (since_point_) {
            ir_ = b.op(Iop_Add64, b.load64(&kg_now->ir), IRBuilder::u64(since_point_));
            b.store64(&kg_now->ir, ir_);
         }
      } else {
         b.add_if(taken ? b.test(*taken) : nullptr, b.place(counters, 8 * point), IRBuilder::u64(1));
         ir_ = ir_now(b);
         b.store_if(taken ? b.test(*taken) : nullptr, b.at(&kg_now->ir), ir_);
      }
      since_point_ = 0;
   }

   // Leaving: the thread's Ir after the instructions so far.
   IRExpr* ir_now(IRBuilder& b)
   {
      if (!ir_at_start_) ir_at_start_ = b.load64(&kg_now->ir);
      return total_ ? b.op(Iop_Add64, ir_at_start_, IRBuilder::u64(total_)) : ir_at_start_;
   }

   // kg_now->ir as the last flush left it, or nullptr: the value stays
   // right until the superblock ends (helpers only read it), so a return's
   // pop takes it without a reload through memory.
   IRExpr* flushed_ir() const { return ir_; }

   // A counter that the PLT stub this block calls adds its instructions to
   // (kg_now->plt_counter): its line's cost is the counter itself (n = 1).
   UInt add_stub_point(UInt slot)
   {
      UInt point = point_++;
      if (!per_instruction_ && n_runs_ < kMaxRuns) runs_[n_runs_++] = { (UShort)point, (UShort)slot, 1 };
      return point;
   }

   // After the last flush: the block's counters and its line runs.
   void finish(BlockInfo* blk)
   {
      blk->n_slots = point_;
      if (per_instruction_) return;
      block_info_trim_runs(blk, n_runs_);
      VG_(memcpy)(blk->runs(), runs_, n_runs_ * sizeof(LineRun));
   }

private:
   static const UInt kMaxRuns = 4096;
   IRExpr* ir_ = nullptr;
   IRExpr* ir_at_start_ = nullptr;   // leaving: loaded at the first flush point
   Bool per_instruction_;
   Bool every_point_;
   Bool leaving_;
   UInt point_ = 0;
   ULong counts_[kMaxSlots] = {};
   ULong total_ = 0;                 // instructions so far
   ULong since_point_ = 0;           // since the last flush point
   LineRun runs_[kMaxRuns];
   UInt n_runs_ = 0;
};

} // namespace

} // namespace kg
