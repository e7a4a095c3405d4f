// Instrumentation of superblocks.
//
// Every superblock starts with inline IR that keeps the shadow stack and the
// block's counters right (docs/function-mode.md):
//   - a function's first block (traced, with a symbol) pushes the frame that
//     the top frame's transition predicts for its function (kids),
//     kg_entry_fixup repairing a wrong prediction; then,
//     if kg_now->ctx differs from the block's cached context, calls
//     kg_refresh_counters for the counters of (context, block);
//   - PLT stubs and untraced functions' first blocks call kg_block_start;
//   - any other block calls kg_block_start only if kg_now->ctx differs from
//     its cached context (after a call, ctx is kCallPending, which no block
//     caches).
// Frames die only when SP rises above them: superblocks that may raise SP
// check it after the write (before later side exits and at their end) and
// call kg_unwind when it rose above the top frame. Blocks ending in a call,
// and direct jumps into another function's first instruction (tail calls),
// make the call pending (kg_now->ctx = kCallPending); blocks ending in a
// return pop the top frame inline when the ret left SP just above its
// return address.
// Instructions are then counted in groups: every instruction since the
// previous flush point is added to its (context, line) counter, and to the
// thread's Ir, just before each side exit (except those only a fault takes:
// faults_only) and at the end of the block. A taken side exit never counts
// the instructions after it. In the common case
// (same context, no call or return) a block runs no helper at all.
// The tool's data is addressed from base registers (data_bases).
#include "kg_instrument.h"
#include "kg_activity.h"
#include "kg_hotpath.h"
#include "kg_blocks.h"
#include "kg_costs.h"
#include "kg_options.h"
#include "kg_regions.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

namespace {

const Int kMaxSlots = 64;      // distinct source lines per superblock

// The tool's data addressed from a base register: the host code of
// "LDle(0x58240FB8)" is a 10-byte movabs and a load, that of
// "LDle(Add64(base, 0x18))" one load with a 32-bit displacement. The bases
// live in the thread's first shadow guest state, which no other part of
// kgrind uses, so a superblock reads each with one GET (rbp-relative) and
// VEX keeps it in a register. Base 0 is kg_now, in the tool's heap, where
// blocks, call sites and counters live too (function mode's superblocks
// need no other base: one GET each); base 1 the tool image's statics (the
// block modes' trace position). An address farther than 2 GB from both
// stays an absolute constant.
const UInt kDataBases = 2;
Addr data_bases[kDataBases];
const Int kBaseShadowOffset = 0;   // within shadow area 1

// An address as base + disp32; False if no base reaches it.
Bool base_relative(Addr a, UInt* base, Int* disp)
{
   const Long kReach = 0x7fff0000;
   for (UInt i = 0; i < kDataBases; i++) {
      Long d = (Long)(a - data_bases[i]);
      if (data_bases[i] && d > -kReach && d < kReach) {
         *base = i;
         *disp = (Int)d;
         return True;
      }
   }
   return False;
}

// Builds IR into one superblock.
class IRBuilder {
public:
   IRBuilder(IRSB* sb, const VexGuestLayout* layout)
      : sb_(sb), shadow_(layout->total_sizeB), offset_sp_(layout->offset_SP)
   {
   }

   // The address of tool data (see data_bases).
   IRExpr* at(const void* p) { return address(place(p)); }
   // The address of a record that several statements of the superblock
   // use, in a register of its own: a block's prologue reads two fields of
   // its BlockInfo and passes it to a helper, which from one register are
   // loads with no or an 8-bit displacement (3-5 bytes) and a register move,
   // instead of a 32-bit displacement from the base at each load (7 bytes)
   // and a 10-byte constant for the argument.
   IRExpr* shared_at(const void* p) { return tmp(at(p), Ity_I64); }

   // The value of data base `base`, read once per superblock.
   IRExpr* base_register(UInt base)
   {
      if (base_tmp_[base] == IRTemp_INVALID) {
         base_tmp_[base] = newIRTemp(sb_->tyenv, Ity_I64);
         add(IRStmt_WrTmp(base_tmp_[base], IRExpr_Get(shadow_ + kBaseShadowOffset + 8 * base, Ity_I64)));
      }
      return IRExpr_RdTmp(base_tmp_[base]);
   }

   IRExpr* load64(const void* addr) { return load64(at(addr)); }
   IRExpr* load64(IRExpr* addr)
   {
      IRTemp t = newIRTemp(sb_->tyenv, Ity_I64);
      add(IRStmt_WrTmp(t, IRExpr_Load(Iend_LE, Ity_I64, addr)));
      return IRExpr_RdTmp(t);
   }
   IRExpr* tmp(IRExpr* e, IRType ty)
   {
      IRTemp t = newIRTemp(sb_->tyenv, ty);
      add(IRStmt_WrTmp(t, e));
      return IRExpr_RdTmp(t);
   }
   void store64(const void* addr, IRExpr* value) { add(IRStmt_Store(Iend_LE, at(addr), value)); }
   // guard ? *addr : alt (VEX's guarded load: no load when guard fails)
   IRExpr* load_if(IRExpr* guard, const void* addr, IRExpr* alt)
   {
      IRTemp t = newIRTemp(sb_->tyenv, Ity_I64);
      add(IRStmt_LoadG(Iend_LE, ILGop_Ident64, t, at(addr), alt, guard));
      return IRExpr_RdTmp(t);
   }
   void store64(IRExpr* addr, IRExpr* value) { add(IRStmt_Store(Iend_LE, addr, value)); }
   static IRExpr* u64(ULong v) { return IRExpr_Const(IRConst_U64(v)); }

   // The 64-bit field at byte offset `offset` of the record at `base`.
   IRExpr* field(IRExpr* base, UWord offset)
   {
      return tmp(IRExpr_Binop(Iop_Add64, base, u64(offset)), Ity_I64);
   }
   IRExpr* load_field(IRExpr* base, UWord offset) { return load64(field(base, offset)); }
   // The 32-bit field at `offset`, zero-extended (one host load).
   IRExpr* load_u32_field(IRExpr* base, UWord offset)
   {
      return tmp(IRExpr_Unop(Iop_32Uto64, load(Ity_I32, field(base, offset))), Ity_I64);
   }
   // The same for a byte.
   IRExpr* load_u8_field(IRExpr* base, UWord offset)
   {
      return tmp(IRExpr_Unop(Iop_8Uto64, load(Ity_I8, field(base, offset))), Ity_I64);
   }
   IRExpr* op(IROp o, IRExpr* x, IRExpr* y, IRType ty = Ity_I64)
   {
      return tmp(IRExpr_Binop(o, x, y), ty);
   }
   // A condition (x `cmp` y) whose 1-bit temporary is made afresh at each
   // use (test): VEX folds a temporary used once into its guarded store's
   // or call's compare (cmpq $0, %reg: 4 bytes), while one used by several
   // guards becomes a setcc (11 bytes) and a testq $1 (7 bytes) at each.
   // cmp Iop_INVALID: x is the 1-bit value itself, used as it is.
   struct Cond {
      IROp cmp;
      IRExpr* x;
      IRExpr* y;
   };
   IRExpr* test(const Cond& c) { return c.cmp == Iop_INVALID ? c.x : op(c.cmp, c.x, c.y, Ity_I1); }
   // bit ? x : y
   IRExpr* ite(IRExpr* bit, IRExpr* x, IRExpr* y, IRType ty = Ity_I64) { return tmp(IRExpr_ITE(bit, x, y), ty); }
   IRExpr* load(IRType ty, IRExpr* addr)
   {
      IRTemp t = newIRTemp(sb_->tyenv, ty);
      add(IRStmt_WrTmp(t, IRExpr_Load(Iend_LE, ty, addr)));
      return IRExpr_RdTmp(t);
   }
   void store(IRExpr* addr, IRExpr* value) { add(IRStmt_Store(Iend_LE, addr, value)); }

   // A read-modify-write target: base + offset. Its load and its store each
   // get an address temporary of their own: VEX folds a temporary used once
   // into the instruction's addressing mode, while a shared one costs a lea.
   struct Place {
      IRExpr* base;
      ULong offset;
   };
   Place place(IRExpr* base, ULong offset) { return { base, offset }; }
   Place place(const void* p)
   {
      UInt base;
      Int disp;
      if (!base_relative((Addr)p, &base, &disp)) return { mkIRExpr_HWord((HWord)p), 0 };
      return { base_register(base), (ULong)(Long)disp };
   }
   IRExpr* address(const Place& p)
   {
      return p.offset ? tmp(IRExpr_Binop(Iop_Add64, p.base, u64(p.offset)), Ity_I64) : p.base;
   }

   // *place += n
   void add_to(const Place& p, IRExpr* n) { store64(address(p), op(Iop_Add64, load64(address(p)), n)); }
   void add_to(const void* addr, ULong n) { add_to(place(addr), u64(n)); }

   // if (guard) *addr = value: VEX's guarded store, a skipped store rather
   // than a select of the old value (which keeps values live, and VEX then
   // spills registers). guard nullptr: always.
   void store_if(IRExpr* guard, IRExpr* addr, IRExpr* value)
   {
      if (guard) add(IRStmt_StoreG(Iend_LE, addr, value, guard));
      else add(IRStmt_Store(Iend_LE, addr, value));
   }
   // if (guard) *place += n (64 bits)
   void add_if(IRExpr* guard, const Place& p, IRExpr* n)
   {
      store_if(guard, address(p), op(Iop_Add64, load64(address(p)), n));
   }

   // A helper call, when guard holds (guard may be nullptr: always).
   void call(const HChar* name, void* fn, Int regparms, IRExpr** args, IRExpr* guard)
   {
      add(IRStmt_Dirty(dirty(name, fn, regparms, args, guard)));
   }

   // A helper call, when guard holds, of a helper that reads the guest SP
   // itself (VG_(get_SP)): declared, so that VEX stores a pending write of
   // SP first. At a superblock's start, where these calls are, none is
   // pending, and SP is not an argument that VEX would compute in every
   // run of the block (VEX evaluates a guarded call's arguments
   // unconditionally).
   void call_reading_sp(const HChar* name, void* fn, IRExpr* arg, IRExpr* guard)
   {
      IRDirty* di = dirty(name, fn, 1, mkIRExprVec_1(arg), guard);
      reads_sp(di);
      add(IRStmt_Dirty(di));
   }

   void add(IRStmt* st) { addStmtToIRSB(sb_, st); }

private:
   // Every helper may change kg_now (frames, the pending call): declared,
   // or VEX may reuse a load of it from before the call after it.
   static IRDirty* dirty(const HChar* name, void* fn, Int regparms, IRExpr** args, IRExpr* guard)
   {
      IRDirty* di = unsafeIRDirty_0_N(regparms, name, VG_(fnptr_to_fnentry)(fn), args);
      if (guard) di->guard = guard;
      di->mFx = Ifx_Modify;
      di->mAddr = mkIRExpr_HWord((HWord)kg_now);
      di->mSize = sizeof(Now);
      return di;
   }

   // The helper reads the guest SP itself (VG_(get_SP)).
   void reads_sp(IRDirty* di) const
   {
      di->nFxState = 1;
      di->fxState[0].fx = Ifx_Read;
      di->fxState[0].offset = offset_sp_;
      di->fxState[0].size = sizeof(Addr);
      di->fxState[0].nRepeats = 0;
      di->fxState[0].repeatLen = 0;
   }

   IRSB* sb_;
   Int shadow_;   // offset of shadow area 1 in the guest state
   Int offset_sp_;
   IRTemp base_tmp_[kDataBases] = { IRTemp_INVALID, IRTemp_INVALID };
};

// The counting of a superblock's instructions at its flush points (one
// before each side exit, one at the end: kg_costs.h), in one of two ways.
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
// (sqlite3 +14 %: docs/function-mode.md), but the copies' exits are as
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

   // A flush point: a side exit (taken: when it is taken; used when
   // leaving) or the end (taken nullptr). Records which lines' instructions
   // the point counts (function mode: LineRun).
   void flush(IRBuilder& b, IRExpr* counters, const IRBuilder::Cond* taken)
   {
      UInt point = point_++;
      for (UInt i = 0; i < kMaxSlots; i++) {
         if (!counts_[i]) continue;
         if (!per_instruction_ && n_runs_ < kMaxRuns) runs_[n_runs_++] = { (UShort)point, (UShort)i, (UInt)counts_[i] };
         counts_[i] = 0;
      }
      if (!leaving_) {
         if (!every_point_ && !since_point_) return;
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

// Is a (whose source location is loc) a function's first instruction, with
// a symbol?
Bool function_entry(Addr a, const SourceLoc& loc)
{
   return loc.fn && !loc.fn->no_symbol && is_function_entry(a);
}

void count_positions(const IRSB* sb_in, Bool blocks, UInt* n_instrs, UInt* n_exits);

// Static facts about the block: its instructions' source lines (one slot per
// distinct line), function, entry and PLT status. With a PLT stub it may
// call (stub), *stub_slot is the slot of the calling instruction's line,
// where the stub's instructions are charged (as callgrind does).
// Room after the block: per instruction (positions) for its instructions
// and flush points, else for as many line runs as it may have (each run
// counts at least one instruction, and a called stub has one more:
// PendingCounts::finish gives back the rest).
BlockInfo* describe_block(IRSB* sb_in, UInt* slot_of_instr, Int* n_instrs, Bool stub, UInt* stub_slot,
                          Bool positions, Bool blocks)
{
   SourceLine* slots[kMaxSlots];
   UInt n_slots = 0;
   auto slot_of = [&](Addr a, SourceLoc* loc) {
      source_loc(a, loc);
      SourceLine* line = source_line(*loc);
      UInt s = 0;
      while (s < n_slots && slots[s] != line) s++;
      if (s < n_slots) return s;
      if (n_slots == kMaxSlots) return n_slots - 1;   // never in practice
      slots[n_slots] = line;
      return n_slots++;
   };
   Addr first = 0;
   SourceLoc first_loc = {};
   *n_instrs = 0;
   for (Int i = 0; i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st || st->tag != Ist_IMark) continue;
      SourceLoc loc;
      UInt s = slot_of((Addr)st->Ist.IMark.addr, &loc);
      if (*n_instrs == 0) { first = (Addr)st->Ist.IMark.addr; first_loc = loc; }
      slot_of_instr[(*n_instrs)++] = s;
   }
   if (stub && *n_instrs) *stub_slot = slot_of_instr[*n_instrs - 1];
   UInt n_positions, n_exits;
   count_positions(sb_in, blocks, &n_positions, &n_exits);
   UInt max_runs = *n_instrs + 1;
   BlockInfo* blk = block_info_new(first, n_slots, slots,
                                   positions ? n_positions * sizeof(InstrPos) + (n_exits + 1) * sizeof(FlushPoint)
                                             : max_runs * sizeof(LineRun));
   if (!positions) blk->n_runs = (UShort)max_runs;
   blk->fn_entry = function_entry(first, first_loc);
   blk->in_plt = is_plt_stub(first);
   return blk;
}

// The call is pending after this block: the callee's first block pushes it.
void make_call_pending(IRBuilder& b, Addr call_instr, IRExpr* guard)
{
   b.store_if(guard, b.at(&kg_now->call_site), IRBuilder::u64(call_instr));
   b.store_if(guard, b.at(&kg_now->ctx), IRBuilder::u64((HWord)kCallPending));
}

// Where ActNodes are node payloads (acts_in_nodes) a transition's context
// is found from `active`, which points to the child's view pair (or the
// child ActNode, 48 bytes after its node, when the view is the k-SF);
// `active` is tr's when null.
IRExpr* child_active(IRBuilder& b, IRExpr* tr, IRExpr* active)
{
   return active ? active : b.load_field(tr, offsetof(Transition, active));
}

// Non-zero unless tr's frames run fn (frame_fn): its 32-bit `fn_id`.
IRExpr* function_mismatch(IRBuilder& b, IRExpr* tr, const FnInfo* fn)
{
   return b.op(Iop_Xor64, b.load_u32_field(tr, offsetof(Transition, fn_id)), IRBuilder::u64(fn->id));
}

// The context of tr's block counters (transition_ctx): its `ctx`, or where
// ActNodes are node payloads the child's view pair's view_ctx (`active`
// points to the pair), or the child node itself when the view is the k-SF.
IRExpr* load_transition_ctx(IRBuilder& b, IRExpr* tr, IRExpr* active = nullptr)
{
   if (!acts_in_nodes()) return b.load_field(tr, offsetof(Transition, ctx));
   if (!separate_view()) return b.op(Iop_Sub64, child_active(b, tr, active), IRBuilder::u64(sizeof(ForestNode)));
   return b.load_field(child_active(b, tr, active), offsetof(ViewPair, view_ctx));
}

// A direct jump of blk to `target` (when guard holds; nullptr: always) is a
// tail call if the target is another function's first instruction (one
// that starts a block with fn_entry) or a PLT stub: the jump makes the call
// pending as a call does, so that the target pushes inline (a stub passes a
// pending call on). Stubs' own jumps are not tail calls: the call that
// reached the stub stays pending through them. A jump into the running
// function's own first instruction is a loop, not a call, which happens
// where code of another function runs in its frame (a `.cold` part jumped
// to from the middle of its function): checked inline.
void add_tail_call(IRBuilder& b, const BlockInfo* blk, Addr target, Addr jump_instr, IRExpr* guard)
{
   if (!target || blk->in_plt) return;
   if (!is_plt_stub(target)) {
      SourceLoc loc;
      source_loc(target, &loc);
      if (loc.fn == blk->fn() || !function_entry(target, loc)) return;
      IRExpr* running = b.load_field(b.load64(&kg_now->top), offsetof(Frame, tr));
      IRExpr* other = b.op(Iop_CmpNE64, function_mismatch(b, running, loc.fn), IRBuilder::u64(0), Ity_I1);
      guard = guard ? b.op(Iop_And1, guard, other, Ity_I1) : other;
   }
   make_call_pending(b, jump_instr, guard);
}

// A computed jump of a function with a symbol to outside its object's text
// calls kg_jump_out, which makes a jump into code without a symbol there a
// tail call (callgrind calls a jump into another object a call; a symbol's
// first instruction is one already, kg_block_entry). Jumps within the
// object (switch tables, computed gotos) pay one compare.
void add_jump_out(IRBuilder& b, const BlockInfo* blk, IRExpr* target, Addr jump_instr)
{
   Addr lo, hi;
   if (!object_text(blk->addr, &lo, &hi)) return;
   IRExpr* outside = b.op(Iop_CmpLE64U, IRBuilder::u64(hi - lo), b.op(Iop_Sub64, target, IRBuilder::u64(lo)), Ity_I1);
   b.call("kg_jump_out", (void*)kg_jump_out, 2, mkIRExprVec_2(target, mkIRExpr_HWord(jump_instr)), outside);
}

// A frame push in straight-line IR, as push_activation() does, of the top
// frame's kid in this block's function's slot (the transition that frame's
// calls into a function of that slot pushed last), if it is into this
// block's function.
// A function's first block pushes speculatively, and kg_entry_fixup undoes a
// wrong push and does what kg_block_entry does: a call from elsewhere, a full
// shadow stack, or a jump to the entry (a tail call, or a loop back to it).
// Any other block that direct calls target (code without symbols) pushes
// only when the prediction holds, and calls kg_block_entry after a call
// that it did not predict; entered by a jump, it runs no helper.
//
// The tests are 64-bit arithmetic, with one 1-bit result at the end: VEX
// turns each 1-bit value into a setcc and a test, so a chain of And1/Or1
// costs about three host instructions per link. A mismatch is a non-zero
// word: (x ^ y) | ...
// Returns the context the block runs in after it, for its counters' check.
IRExpr* add_inline_entry(IRBuilder& b, BlockInfo* blk, IRExpr* blk_at, IRExpr* sp, Bool speculative)
{
   IRExpr* ctx_before = b.load64(&kg_now->ctx);
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* next = b.op(Iop_Add64, top, IRBuilder::u64(sizeof(Frame)));   // always writable
   IRExpr* top_tr = b.load_field(top, offsetof(Frame, tr));
   FnInfo* callee = activated_function(blk);
   // The kid of (this function, the pending call's site): kid_slot's offset.
   IRExpr* site = b.load64(&kg_now->call_site);
   IRExpr* kid_offset = b.op(kids_grow() ? Iop_Xor64 : Iop_Add64, site, IRBuilder::u64(kid_key(callee->id, 0)));
   if (kids_grow()) {
      // The slot times 8 last: the load's address mode scales it.
      IRExpr* slot = b.op(Iop_And64,
                          b.op(Iop_Shr64, kid_offset, b.load(Ity_I8, b.field(top_tr, offsetof(Transition, kid_shift)))),
                          b.load_u8_field(top_tr, offsetof(Transition, kid_mask)));
      kid_offset = b.op(Iop_Shl64, slot, IRExpr_Const(IRConst_U8(3)));
   }
   else
      kid_offset = b.op(Iop_And64, kid_offset, IRBuilder::u64(kKidOffsetMask));
   IRExpr* kids = b.load_field(top_tr, offsetof(Transition, kids));
   IRExpr* tr = b.load_field(b.op(Iop_Add64, kids, kid_offset), 0);
   // Read once where the function and context are found from the child.
   IRExpr* active = acts_in_nodes() ? b.load_field(tr, offsetof(Transition, active)) : nullptr;
   IRExpr* mismatch = b.op(Iop_Or64,
                           function_mismatch(b, tr, callee),
                           b.op(Iop_Xor64, b.load_field(tr, offsetof(Transition, site)), site));
   // Zero when: the kid is into this function from this site, a call is
   // pending, and next <= frames_last (frames are one array: the sign bit of
   // the difference says it).
   IRExpr* no_room = b.op(Iop_Shr64, b.op(Iop_Sub64, b.load64(&kg_now->frames_last), next),
                          IRExpr_Const(IRConst_U8(63)));
   IRExpr* wrong_bits = b.op(Iop_Or64, b.op(Iop_Or64, mismatch,
                                            b.op(Iop_Xor64, ctx_before, IRBuilder::u64((HWord)kCallPending))),
                             no_room);
   IRBuilder::Cond predicted = { Iop_CmpEQ64, wrong_bits, IRBuilder::u64(0) };
   // The push's stores: always (speculative) or only when predicted.
   auto guard = [&]() { return speculative ? nullptr : b.test(predicted); };
   IRExpr* one = IRBuilder::u64(1);

   b.store64(b.field(next, offsetof(Frame, sp)), sp);   // the spare slot: never in use
   b.store64(b.field(next, offsetof(Frame, ir_at_entry)), b.load64(&kg_now->ir));
   b.store64(b.field(next, offsetof(Frame, tr)), tr);
   b.add_if(guard(), b.place(tr, offsetof(Transition, calls)), one);
   // The count of frames in the child's context (none where ActNodes are
   // node payloads).
   if (!acts_in_nodes()) b.add_if(guard(), b.place(b.load_field(tr, offsetof(Transition, active)), 0), one);
   b.store_if(guard(), b.at(&kg_now->top), next);
   b.store_if(guard(), b.at(&kg_now->top_sp), sp);
   // No call is pending any more.
   IRExpr* ctx = load_transition_ctx(b, tr, active);
   b.store_if(guard(), b.at(&kg_now->ctx), ctx);

   IRExpr** args = mkIRExprVec_3(blk_at, sp, ctx_before);
   IRExpr* wrong = b.op(Iop_CmpNE64, wrong_bits, IRBuilder::u64(0), Ity_I1);
   if (speculative) {
      b.call("kg_entry_fixup", (void*)kg_entry_fixup, 3, args, wrong);
      // The context now, unless the fix-up ran; then the block's counters
      // are already its context's (block_entry), and the check may only
      // call kg_refresh_counters once needlessly: cheaper than reloading
      // kg_now->ctx in every entry.
      return ctx;
   } else {
      // Entered by a jump: no helper.
      IRExpr* called = b.op(Iop_CmpEQ64, ctx_before, IRBuilder::u64((HWord)kCallPending), Ity_I1);
      b.call("kg_block_entry", (void*)kg_block_entry, 3, args, b.op(Iop_And1, called, wrong, Ity_I1));
      return b.load64(&kg_now->ctx);
   }
}

// Is ctx not the block's (way 0) context? One compare, so that the guard is
// one branch: way 1, the previous context, is the helper's, which swaps the
// ways on a hit there (point_block_at) and leaves way 0 the current context.
// (Checking both ways inline cost more in every block than the helper
// calls it saved: bench numbers in docs/function-mode.md.)
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

// Counter arrays (kg_costs.h). The block's offset in its function's arrays
// is reserved when its prologue is made and its check's constants set once
// its counters are known (finish_array_check): the superblock's IR is ours
// until instrument returns.
struct PendingArrayCheck {
   IRConst* c1;
   IRConst* c2;
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
          fn->id < kMaxArrayFunction && fn->array_counters + max_counters <= kArrayCounters;
}

// The counters of the block in ctx's array; if the array is not its
// function's, lacks room for the block, or counting is off (ctx after a
// call is kCallPending, whose array is empty), `helper` (kg_block_counters,
// kg_entry_counters) returns them.
IRExpr* add_array_prologue(IRBuilder& b, BlockInfo* blk, IRExpr* ctx, const HChar* name, void* helper,
                           Bool reading_sp)
{
   UInt offset = blk->fn()->array_counters;
   pending_array_check = { IRConst_U32(0), IRConst_U32(0), offset, blk };   // c2 0: always the helper
   auto offset_in = [](const void* field) { return (UWord)((const UChar*)field - (const UChar*)kCallPending); };
   IRExpr* limit = b.load(Ity_I32, b.field(ctx, offset_in(array_limit_word(kCallPending))));
   IRExpr* arr = b.load_field(ctx, offset_in(counter_array_word(kCallPending)));
   // 32-bit operations with the constants on the right (immediates), and a
   // fresh compare for the call's guard and for the select: one that both
   // used would be a setcc and a test at each (IRBuilder::Cond).
   IRBuilder::Cond fits = { Iop_CmpLT32U, b.op(Iop_Sub32, limit, IRExpr_Const(pending_array_check.c1), Ity_I32),
                            IRExpr_Const(pending_array_check.c2) };
   IRExpr* in_array = b.op(Iop_Add64, arr, IRBuilder::u64(offset * sizeof(ULong)));
   IRExpr* missed = b.tmp(IRExpr_Unop(Iop_Not1, b.test(fits)), Ity_I1);
   IRExpr* block_id = IRBuilder::u64(blk->id);
   if (reading_sp)
      b.call_reading_sp(name, helper, block_id, missed);
   else
      b.call(name, helper, 1, mkIRExprVec_1(block_id), missed);
   // The helper's counters, loaded only when it ran.
   return b.load_if(b.tmp(IRExpr_Unop(Iop_Not1, b.test(fits)), Ity_I1), &kg_now->found_counters, in_array);
}

// The block's counters are known: its offset and its check's constants.
void finish_array_check(BlockInfo* blk)
{
   PendingArrayCheck& p = pending_array_check;
   if (p.blk != blk) return;
   p.blk = nullptr;
   FnInfo* fn = blk->fn();
   UInt end = p.offset + (blk->n_slots ? blk->n_slots : 1);
   tl_assert(end <= kArrayCounters);   // counts_in_array's bound
   p.c1->Ico.U32 = array_check_c1(fn->id, end);
   p.c2->Ico.U32 = array_check_c2(end);
   blk->array_offset = (UShort)p.offset;
   fn->array_counters = end;
}

// The block prologue (see the top of this file). Returns the block's
// counters for the context it runs in. `stub_instrs`, *stub_counted: see
// add_plt_prologue.
IRExpr* add_prologue(IRBuilder& b, BlockInfo* blk, const VexGuestLayout* layout, UInt stub_instrs,
                     IRExpr** stub_counted, UInt max_counters)
{
   if (blk->in_plt) return add_plt_prologue(b, blk, stub_instrs, stub_counted);
   // ld.so's lazy-binding trampoline enters by the helper, which notes the
   // call it resolves (push_activation).
   Bool entry = blk->fn_entry && fn_traced(blk->fn()) && !blk->fn()->resolver;
   Bool called_entry = !blk->fn_entry && call_targets.find((void*)blk->addr, nullptr) &&
                       fn_traced(activated_function(blk));
   Bool in_array = counts_in_array(blk, max_counters);
   if (!entry && !called_entry && in_array)
      return add_array_prologue(b, blk, b.load64(&kg_now->ctx), "kg_block_counters", (void*)kg_block_counters, True);
   if (!entry && !called_entry) {
      // kg_now->ctx is kCallPending after a call, so one guard covers a
      // pending call and a context change. (An untraced function's first
      // block always calls the helper: tail calls.)
      IRExpr* blk_at = b.shared_at(blk);
      IRExpr* miss = context_missed(b, blk_at, b.load64(&kg_now->ctx));
      b.call_reading_sp("kg_block_start", (void*)kg_block_start, blk_at, blk->fn_entry ? nullptr : miss);
      return cached_counters(b, blk);
   }
   IRExpr* blk_at = b.shared_at(blk);
   IRExpr* ctx = add_inline_entry(b, blk, blk_at, b.tmp(IRExpr_Get(layout->offset_SP, Ity_I64), Ity_I64), entry);
   // (After a fix-up the context is kg_now->ctx, not the predicted one.)
   if (entry && in_array)
      return add_array_prologue(b, blk, b.load64(&kg_now->ctx), "kg_entry_counters", (void*)kg_entry_counters, False);
   IRExpr* miss = context_missed(b, blk_at, ctx);
   b.call("kg_refresh_counters", (void*)kg_refresh_counters, 1, mkIRExprVec_1(blk_at), miss);
   return cached_counters(b, blk);
}

// tr's kind, zero-extended: at finite k with the three bytes after it (zero
// there) as one 32-bit load; at k = inf, where they are rolled_in and
// kid_mask, alone.
IRExpr* kind_word(IRBuilder& b, IRExpr* tr)
{
   if (kids_grow()) return b.load_u8_field(tr, offsetof(Transition, kind));
   return b.load_u32_field(tr, offsetof(Transition, kind));
}

// A block ending in a return pops the top frame inline in the common case,
// as pop_frame() does: a `ret` leaves SP just above the return address that
// the call pushed (top.sp + 8), and the top frame is an activation. The
// updates are guarded stores (a skipped store, not a select of the old
// value). Anything else (longjmp, exceptions, `ret $n`, fences) and frames
// below the top that died too (a tail call's caller shares its SP) are left
// to the unwind check after it (add_unwind_check).
void add_inline_return(IRBuilder& b, IRExpr* sp, IRExpr* ir)
{
   IRExpr* top = b.load64(&kg_now->top);
   IRExpr* tr = b.load_field(top, offsetof(Frame, tr));
   // Zero when SP is just above the return address and the frame is an
   // activation (kActivation is 0); 64-bit arithmetic, as in add_inline_entry.
   static_assert(kActivation == 0, "the pop test ors in the frame kind");
   IRExpr* not_popped = b.op(Iop_Or64, b.op(Iop_Xor64, sp, b.op(Iop_Add64, b.load_field(top, offsetof(Frame, sp)),
                                                              IRBuilder::u64(sizeof(Addr)))),
                             kind_word(b, tr));
   IRBuilder::Cond pop = { Iop_CmpEQ64, not_popped, IRBuilder::u64(0) };

   IRExpr* incl = b.op(Iop_Sub64, ir ? ir : b.load64(&kg_now->ir), b.load_field(top, offsetof(Frame, ir_at_entry)));
   b.add_if(b.test(pop), b.place(tr, offsetof(Transition, edge_incl)), incl);
   // A recursive activation's cost is already in the outermost one's
   // (where ActNodes are node payloads, the transition knows which it has:
   // Transition::rolled_in, and no frames are counted).
   if (!acts_in_nodes()) {
      IRExpr* active = b.load_field(tr, offsetof(Transition, active));
      IRExpr* still_active = b.op(Iop_Sub64, b.load64(active), IRBuilder::u64(1));
      b.store_if(b.test(pop), active, still_active);
      IRExpr* popped_outermost =
         b.op(Iop_CmpEQ64, b.op(Iop_Or64, not_popped, still_active), IRBuilder::u64(0), Ity_I1);
      b.add_if(popped_outermost, b.place(tr, offsetof(Transition, ctx_incl)), incl);
   }

   IRExpr* below = b.op(Iop_Sub64, top, IRBuilder::u64(sizeof(Frame)));
   b.store_if(b.test(pop), b.at(&kg_now->top), below);
   b.store_if(b.test(pop), b.at(&kg_now->top_sp), b.load_field(below, offsetof(Frame, sp)));
   IRExpr* below_tr = b.load_field(below, offsetof(Frame, tr));
   b.store_if(b.test(pop), b.at(&kg_now->ctx), load_transition_ctx(b, below_tr));
}

// Frames die only when SP rises above them, and SP changes only where a
// superblock writes it (the core's own changes, signal delivery and return,
// are callbacks). So SP is checked after the writes, not at every block
// start: before each side exit that follows a write, and at the end of a
// superblock that wrote it, unless SP is still at or below its value at the
// superblock's start (SpTracker). Blocks that leave SP alone (loops, most
// code between calls) or only lower it (prologues, calls) pay nothing.
// ir: the thread's Ir to store first, when a check before the superblock's
// end may call kg_unwind (which closes inclusive costs with it) and a
// leaving count has not stored it yet (PendingCounts), else nullptr.
void add_unwind_check(IRBuilder& b, IRExpr* sp, IRExpr* ir)
{
   IRExpr* rose = b.op(Iop_CmpLT64U, b.load64(&kg_now->top_sp), sp, Ity_I1);
   if (ir) b.store_if(rose, b.at(&kg_now->ir), ir);
   b.call("kg_unwind", (void*)kg_unwind, 1, mkIRExprVec_1(sp), rose);
}

// Does the statement write the guest SP?
Bool writes_sp(const IRStmt* st, const IRTypeEnv* tyenv, const VexGuestLayout* layout)
{
   auto overlaps = [&](Int offset, Int size) {
      return offset < layout->offset_SP + layout->sizeof_SP && layout->offset_SP < offset + size;
   };
   if (st->tag == Ist_Put)
      return overlaps(st->Ist.Put.offset, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Put.data)));
   if (st->tag == Ist_PutI) return True;   // never SP in practice; be safe
   if (st->tag != Ist_Dirty) return False;
   const IRDirty* d = st->Ist.Dirty.details;
   for (Int i = 0; i < d->nFxState; i++) {
      if (d->fxState[i].fx == Ifx_Read) continue;
      for (Int r = 0; r <= d->fxState[i].nRepeats; r++)
         if (overlaps(d->fxState[i].offset + r * d->fxState[i].repeatLen, d->fxState[i].size)) return True;
   }
   return False;
}

// Whether SP may have risen above its value at the superblock's start: only
// then can a frame have died (at the start no frame lies below SP: every
// superblock that raised SP checked it). Pushes, `sub $n, %rsp` and a
// call's push of the return address only lower SP, so prologues and call
// blocks need no check. Tracks SP as (SP at entry + a constant) through
// the flat IR's temporaries; any other write (`mov %rbp, %rsp`, `leave`,
// helpers) is "may have risen".
class SpTracker {
public:
   SpTracker(const IRSB* sb, const VexGuestLayout* layout)
      : layout_(layout), n_temps_(sb->tyenv->types_used),
        temps_((TempOffset*)alloc_zeroed(n_temps_ * sizeof(TempOffset), "kg.instrument"))
   {
   }
   ~SpTracker() { release(temps_); }

   void note(const IRStmt* st, const IRTypeEnv* tyenv)
   {
      if (st->tag == Ist_WrTmp) {
         note_temp(st->Ist.WrTmp.tmp, st->Ist.WrTmp.data);
         return;
      }
      if (!writes_sp(st, tyenv, layout_)) return;
      written_ = True;
      IRExpr* data = st->tag == Ist_Put && st->Ist.Put.offset == layout_->offset_SP ? st->Ist.Put.data : nullptr;
      put_ = data && isIRAtom(data) && typeOfIRExpr(tyenv, data) == Ity_I64 ? data : nullptr;
      if (data && data->tag == Iex_RdTmp && temps_[data->Iex.RdTmp.tmp].known) {
         offset_ = temps_[data->Iex.RdTmp.tmp].offset;
      } else {
         known_ = False;
      }
   }

   Bool may_have_risen() const { return written_ && (!known_ || offset_ > 0); }

   // The guest SP now: the value the superblock last put there, or a GET.
   // (VEX's cleanup after instrumentation forwards no PUT to a later GET:
   // a return's pop and the unwind checks reloaded SP from the guest state.)
   IRExpr* value(IRBuilder& b) const
   {
      return put_ ? put_ : b.tmp(IRExpr_Get(layout_->offset_SP, Ity_I64), Ity_I64);
   }

private:
   struct TempOffset {
      Bool known;
      Long offset;   // the temporary = SP at entry + offset
   };

   void note_temp(IRTemp t, const IRExpr* e)
   {
      if (e->tag == Iex_Get && e->Iex.Get.offset == layout_->offset_SP && e->Iex.Get.ty == Ity_I64) {
         temps_[t] = { known_, offset_ };
         return;
      }
      if (e->tag != Iex_Binop || (e->Iex.Binop.op != Iop_Add64 && e->Iex.Binop.op != Iop_Sub64)) return;
      const IRExpr* x = e->Iex.Binop.arg1;
      const IRExpr* c = e->Iex.Binop.arg2;
      if (x->tag != Iex_RdTmp || !temps_[x->Iex.RdTmp.tmp].known) return;
      if (c->tag != Iex_Const || c->Iex.Const.con->tag != Ico_U64) return;
      Long n = (Long)c->Iex.Const.con->Ico.U64;
      if (n > (Long)kMaxStackFrame || n < -(Long)kMaxStackFrame) return;
      temps_[t] = { True, temps_[x->Iex.RdTmp.tmp].offset + (e->Iex.Binop.op == Iop_Add64 ? n : -n) };
   }

   const VexGuestLayout* layout_;
   Int n_temps_;
   TempOffset* temps_;
   Bool written_ = False;
   IRExpr* put_ = nullptr;   // an atom: the last PUT of SP, if nothing wrote SP since
   Bool known_ = True;   // offset_ is SP - SP at entry
   Long offset_ = 0;
};

// Side exits taken only when the instruction faults (SSE alignment checks,
// emulation failures): function mode counts no flush point before them, so
// that a loop with aligned SSE accesses pays one counter update per pass, not
// one per access. A fault taken there leaves the superblock's instructions
// since the previous flush point uncounted (in a leaving count, all of the
// run's: PendingCounts), as any fault (a SIGSEGV from a load or store,
// inside translated code) does.
Bool faults_only(IRJumpKind jk)
{
   switch (jk) {
   case Ijk_SigSEGV: case Ijk_SigBUS: case Ijk_SigILL: case Ijk_SigTRAP:
   case Ijk_SigFPE: case Ijk_SigFPE_IntDiv: case Ijk_SigFPE_IntOvf:
   case Ijk_EmFail: case Ijk_NoDecode: case Ijk_MapFail:
      return True;
   default:
      return False;
   }
}

// The index of the superblock's first IMark. The statements before it are
// VEX's, not the guest's: in a self-checking translation (--smc-check=all,
// or code on the stack or in an anonymous mapping, by default) a checksum of
// the guest code and an exit (Ijk_InvalICache) that discards the translation
// when the code changed. That exit runs no guest instruction: it is no flush
// point and no side exit of the block, and instrument() copies these
// statements unchanged ahead of the prologue, so that a failed check leaves
// before anything is pushed or counted.
Int guest_code_start(const IRSB* sb)
{
   Int i = 0;
   while (i < sb->stmts_used && !(sb->stmts[i] && sb->stmts[i]->tag == Ist_IMark)) i++;
   return i;
}

Addr const_target(const IRConst* c) { return c && c->tag == Ico_U64 ? (Addr)c->Ico.U64 : 0; }

// Is the superblock a loop that VEX unrolled: a jump back to its own start
// at the end, and more than one side exit (not counting faults')?
Bool unrolled_loop(const IRSB* sb_in, const BlockInfo* blk)
{
   if (sb_in->jumpkind != Ijk_Boring || sb_in->next->tag != Iex_Const ||
       const_target(sb_in->next->Iex.Const.con) != blk->addr)
      return False;
   UInt exits = 0;
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_Exit && !faults_only(st->Ist.Exit.jk)) exits++;
   }
   return exits > 1;
}

// The PLT stub that a block ending in a direct call, or in a direct jump (a
// tail call), enters, or 0 (add_plt_prologue). Not a stub's own jump to the
// next part of a lazy binding.
Addr called_plt_stub(const IRSB* sb_in)
{
   Bool call_or_jump = sb_in->jumpkind == Ijk_Call || sb_in->jumpkind == Ijk_Boring;
   if (!call_or_jump || sb_in->next->tag != Iex_Const) return 0;
   Addr target = const_target(sb_in->next->Iex.Const.con);
   if (!target || !is_plt_stub(target)) return 0;
   Int first = guest_code_start(sb_in);
   if (first == sb_in->stmts_used) return 0;
   return is_plt_stub((Addr)sb_in->stmts[first]->Ist.IMark.addr) ? 0 : target;
}

// Does the block end in an indirect call, which may enter a PLT stub? A
// non-PIE executable takes an imported function's address as its PLT entry,
// so a call through such a function pointer is `call *%reg` to a stub.
Bool ends_in_indirect_call(const IRSB* sb_in)
{
   return sb_in->jumpkind == Ijk_Call && sb_in->next->tag != Iex_Const;
}

// The instructions of a PLT stub that the block's last instruction may
// enter (called_plt_stub, or any target of an indirect call) are charged to
// that instruction's line, in a counter of the block's that the stub finds
// through kg_now (add_plt_prologue).
void add_stub_counter(IRBuilder& b, BlockInfo* blk, PendingCounts& pending, IRExpr* counters,
                      UInt stub_slot, IRExpr* target)
{
   UInt point = pending.add_stub_point(stub_slot);
   blk->stub_counter = True;
   b.store64(&kg_now->plt_stub, target);
   b.store64(&kg_now->plt_counter, b.address(b.place(counters, 8 * point)));
}

// Does the superblock count at one flush point (its end) only?
Bool one_flush_point(const IRSB* sb_in)
{
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_Exit && (block_mode() || !faults_only(st->Ist.Exit.jk))) return False;
   }
   return True;
}

// The instructions of a PLT stub's superblock if a caller's counter can
// count them (one line, so one counter, and one flush point), else 0.
UInt stub_instructions(const IRSB* sb_in, const BlockInfo* blk, Int n_instrs)
{
   if (!blk->in_plt || blk->n_slots != 1 || !one_flush_point(sb_in)) return 0;
   return (UInt)n_instrs;
}

// A signal restorer's superblock (with one flush point): counted into
// scratch, its instructions charged by the helper (kg_sigreturn_code: to the
// instruction the signal interrupted).
Bool counts_as_sigreturn_code(const IRSB* sb_in, const BlockInfo* blk)
{
   return !blk->in_plt && is_sigreturn_code(blk->addr) && one_flush_point(sb_in);
}

IRExpr* add_sigreturn_prologue(IRBuilder& b, BlockInfo* blk)
{
   b.call_reading_sp("kg_sigreturn_code", (void*)kg_sigreturn_code, mkIRExpr_HWord((HWord)blk), nullptr);
   return b.at(&plt_scratch);
}

Addr exit_target(const InstrPos& x, IRJumpKind jk, Addr target)
{
   return jk == Ijk_Boring ? jump_target(x, target, False) : 0;
}

// The expression that temporary t got before sb_in->stmts[before], or nullptr.
IRExpr* tmp_definition(const IRSB* sb_in, Int before, IRTemp t)
{
   for (Int i = before - 1; i >= 0; i--) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_WrTmp && st->Ist.WrTmp.tmp == t) return st->Ist.WrTmp.data;
   }
   return nullptr;
}

// The guard of side exit sb_in->stmts[exit] as a condition that each
// guarded store computes afresh (IRBuilder::Cond) when the guest code
// computed it by one comparison of atoms (seen through the guest's
// 64to1(1Uto64(bit)) round trip): VEX then folds each compare into its
// store (and the exit's into its jump) instead of testing a setcc'd bit at
// each, about 20 bytes less for each copy of an unrolled loop's body.
IRBuilder::Cond exit_condition(const IRSB* sb_in, Int exit)
{
   IRExpr* guard = sb_in->stmts[exit]->Ist.Exit.guard;
   IRExpr* e = guard;
   while (e && e->tag == Iex_RdTmp) {
      e = tmp_definition(sb_in, exit, e->Iex.RdTmp.tmp);
      if (e && e->tag == Iex_Unop && e->Iex.Unop.op == Iop_64to1 && e->Iex.Unop.arg->tag == Iex_RdTmp) {
         IRExpr* wide = tmp_definition(sb_in, exit, e->Iex.Unop.arg->Iex.RdTmp.tmp);
         if (wide && wide->tag == Iex_Unop && wide->Iex.Unop.op == Iop_1Uto64) e = wide->Iex.Unop.arg;
      }
   }
   if (e && e->tag == Iex_Binop && isIRAtom(e->Iex.Binop.arg1) && isIRAtom(e->Iex.Binop.arg2))
      return { e->Iex.Binop.op, e->Iex.Binop.arg1, e->Iex.Binop.arg2 };
   return { Iop_INVALID, guard, nullptr };
}

// Is there a flush point before this side exit? Before every one in the
// block modes; function mode skips exits that only a fault takes.
Bool flushes_before(const IRStmt* exit, Bool blocks)
{
   return blocks || !faults_only(exit->Ist.Exit.jk);
}

// Per-instruction positions (describe_positions): the superblock's
// instructions and its flush points (one before each side exit that
// flushes_before, one at the end).
void count_positions(const IRSB* sb_in, Bool blocks, UInt* n_instrs, UInt* n_exits)
{
   *n_instrs = *n_exits = 0;
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      const IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_IMark) (*n_instrs)++;
      if (st && st->tag == Ist_Exit && flushes_before(st, blocks)) (*n_exits)++;
   }
}

// Per-instruction positions (--dump-instr; the block modes always): the
// superblock's instructions and flush points (one before each side exit
// that flushes_before, one at the end), for per-instruction costs and
// jumps (a called PLT stub's counter comes after the flush points:
// add_stub_counter).
void describe_positions(IRSB* sb_in, BlockInfo* blk, Bool blocks)
{
   UInt n_instrs, n_exits;
   count_positions(sb_in, blocks, &n_instrs, &n_exits);   // as describe_block made room for
   blk->n_instrs = (UShort)n_instrs;
   blk->n_slots = (UShort)(n_exits + 1);
   FlushPoint* points = blk->points();
   Int instr = -1;
   UInt point = 0;
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st || (st->tag == Ist_Exit && !flushes_before(st, blocks))) continue;
      if (st->tag == Ist_IMark) {
         InstrPos& x = blk->instrs()[++instr];
         SourceLoc loc;
         x.addr = (Addr)st->Ist.IMark.addr;
         x.len = st->Ist.IMark.len;
         source_loc(x.addr, &loc);
         x.line = source_line(loc);
         x.point = point;
      } else if (st->tag == Ist_Exit) {
         // One flush point per exit, as instrument() flushes.
         if (instr >= 0) {
            InstrPos& x = blk->instrs()[instr];
            if (st->Ist.Exit.jk == Ijk_Boring) x.cond = True;
            points[point].instr = instr;
            points[point].jump_target = exit_target(x, st->Ist.Exit.jk, const_target(st->Ist.Exit.dst));
         }
         point++;
      }
   }
   if (instr < 0) return;
   const IRExpr* next = sb_in->next;
   Addr target = next->tag == Iex_Const ? const_target(next->Iex.Const.con) : 0;
   points[n_exits].instr = instr;
   points[n_exits].jump_target = exit_target(blk->instrs()[instr], sb_in->jumpkind, target);
}

// Block modes, at a block start: the run is recorded in the block trace
// (kg_blocks.h), one store, and stepped through the forest later in C. In
// intra mode only while the top frame is the activation the trace continues
// (frames are pushed and popped inline too); otherwise, and at a function's
// first block and a call's return site, which start or resume another
// activation, the helper takes the step at once. With --dump-blocks the
// helper takes every step (it writes each run as it happens).
void add_block_step(IRBuilder& b, BBInfo* bb, UWord n, void* helper, const HChar* helper_name)
{
   IRExpr** args = mkIRExprVec_2(mkIRExpr_HWord((HWord)bb), mkIRExpr_HWord((HWord)n));
   Bool call_boundary = bb->offset == 0 || is_return_site(bb->addr);
   if (clo.dump_blocks || (call_boundary && clo.mode == kModeIntra)) {
      b.call(helper_name, helper, 2, args, nullptr);
      return;
   }
   IRExpr* pos = b.load64(&kg_trace_pos);
   b.store(pos, mkIRExpr_HWord((HWord)trace_entry(bb, n)));
   IRExpr* same = nullptr;
   IRExpr* advance = IRBuilder::u64(sizeof(UWord));
   if (clo.mode == kModeIntra) {
      IRExpr* top = b.load64(&kg_now->top);
      same = b.op(Iop_And1, b.op(Iop_CmpEQ64, top, b.load64(&kg_now->bb_top), Ity_I1),
                  b.op(Iop_CmpEQ64, b.load_field(top, offsetof(Frame, ir_at_entry)),
                       b.load64(&kg_now->bb_ir), Ity_I1), Ity_I1);
      advance = b.ite(same, advance, IRBuilder::u64(0));
   }
   IRExpr* next = b.op(Iop_Add64, pos, advance);
   b.store64(&kg_trace_pos, next);
   if (same) b.call(helper_name, helper, 2, args, b.tmp(IRExpr_Unop(Iop_Not1, same), Ity_I1));
   // Full: the position's low bits are zero (only after an advance).
   IRExpr* full = b.op(Iop_CmpEQ64, b.op(Iop_And64, next, IRBuilder::u64(kTraceBytes - 1)),
                       IRBuilder::u64(0), Ity_I1);
   if (same) full = b.op(Iop_And1, same, full, Ity_I1);
   b.call("kg_trace_full", (void*)kg_trace_full, 0, mkIRExprVec_0(), full);
}

// The address after the superblock's last instruction (a call's return address).
Addr end_of_last_instruction(IRSB* sb_in)
{
   for (Int i = sb_in->stmts_used - 1; i >= 0; i--) {
      IRStmt* st = sb_in->stmts[i];
      if (st && st->tag == Ist_IMark) return (Addr)st->Ist.IMark.addr + st->Ist.IMark.len;
   }
   return 0;
}

// Does the superblock end in a call? Not when the call's target is the next
// instruction: the get-PC idiom of position-independent x86 code (`call 1f;
// 1: pop %reg`) pushes its own return address to read it, and nothing ever
// returns there. It is a jump (callgrind takes it for a recursive call);
// the pop that follows leaves SP where it was, so no frame is touched.
Bool ends_in_call(IRSB* sb)
{
   if (sb->jumpkind != Ijk_Call) return False;
   Addr target = sb->next->tag == Iex_Const ? const_target(sb->next->Iex.Const.con) : 0;
   return target != end_of_last_instruction(sb);
}

// Block modes: the basic blocks of a superblock. A block starts at the
// superblock's first instruction and at the first instruction after each side
// exit. For each instruction starting a block of a traced function,
// block_of[i] is the block and block_len[i] its instruction count; otherwise
// block_of[i] is nullptr. Decided here, so function mode pays nothing.
void find_blocks(IRSB* sb_in, BlockInfo* blk, BBInfo** block_of, UInt* block_len)
{
   Int instr = -1, start = -1;
   Bool exit_seen = True;
   for (Int i = guest_code_start(sb_in); i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st) continue;
      if (st->tag == Ist_Exit) { exit_seen = True; continue; }
      if (st->tag != Ist_IMark) continue;
      instr++;
      block_of[instr] = nullptr;
      if (!exit_seen) {
         if (start >= 0) block_len[start]++;
         continue;
      }
      exit_seen = False;
      start = -1;
      if (blk->in_plt) continue;
      Addr a = (Addr)st->Ist.IMark.addr;
      SourceLoc loc;
      source_loc(a, &loc);
      if (!blocks_traced(loc.fn)) continue;
      block_of[instr] = block_at(a, loc);
      block_len[instr] = 1;
      start = instr;
   }
}

// The superblock's end, by how it leaves: a computed jump's targets (block
// modes) and site, a return's inline pop, the unwind check, and a call or
// tail call made pending.
void add_block_end(IRBuilder& b, IRSB* sb, BlockInfo* blk, Addr last_instr, const SpTracker& sp,
                   IRExpr* flushed_ir)
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
   }
   IRExpr* sp_now = sb->jumpkind == Ijk_Ret || sp.may_have_risen() ? sp.value(b) : nullptr;
   if (sb->jumpkind == Ijk_Ret) add_inline_return(b, sp_now, flushed_ir);
   // After the inline pop: more frames died (longjmp, exceptions, tail
   // calls' returns), or SP rose some other way.
   if (sp.may_have_risen()) add_unwind_check(b, sp_now, nullptr);
   if (computed_jump && !block_mode() && !blk->fn()->no_symbol) add_jump_out(b, blk, sb->next, last_instr);
   Addr target = sb->next->tag == Iex_Const ? const_target(sb->next->Iex.Const.con) : 0;
   if (sb->jumpkind == Ijk_Boring) add_tail_call(b, blk, target, last_instr, nullptr);
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

   static UInt slot_of_instr[4096];   // IMarks of one superblock (VEX caps ~100s)
   Int n_instrs;
   Addr stub = called_plt_stub(sb_in);
   Bool may_call_stub = stub || ends_in_indirect_call(sb_in);
   UInt stub_slot = 0;
   Bool blocks = block_mode();
   Bool per_instruction = clo.dump_instr;   // the block modes: always
   BlockInfo* blk = describe_block(sb_in, slot_of_instr, &n_instrs, may_call_stub, &stub_slot, per_instruction, blocks);
   UInt stub_instrs = stub_instructions(sb_in, blk, n_instrs);
   Bool sigreturn = counts_as_sigreturn_code(sb_in, blk);
   static BBInfo* block_of[4096];
   static UInt block_len[4096];
   if (blocks) {
      if (ends_in_call(sb_in)) note_return_site(end_of_last_instruction(sb_in));
      find_blocks(sb_in, blk, block_of, block_len);
   }
   if (per_instruction) describe_positions(sb_in, blk, blocks);
   void* block_helper = clo.mode == kModeIntra ? (void*)kg_block_intra : (void*)kg_block_inter;
   const HChar* block_helper_name = clo.mode == kModeIntra ? "kg_block_intra" : "kg_block_inter";

   // The block's counters at most: a flush point before each side exit that
   // flushes, one at the end, one for a called stub.
   UInt n_positions, n_exits;
   count_positions(sb_in, blocks, &n_positions, &n_exits);
   UInt max_counters = n_exits + 1 + (may_call_stub ? 1 : 0);

   IRSB* sb = deepCopyIRSBExceptStmts(sb_in);
   IRBuilder b(sb, layout);
   Bool leaving = !blocks && unrolled_loop(sb_in, blk);
   PendingCounts pending(per_instruction, blocks || clo.collect_jumps, leaving);
   Addr last_instr = 0;
   Int instr = 0;
   IRExpr* counters = nullptr;   // set by the prologue
   IRExpr* stub_counted = nullptr;
   SpTracker sp(sb_in, layout);
   // --toggle-collect and the like: helpers in the named functions' first
   // and returning blocks only (kg_regions.cpp).
   Bool region = !blocks && region_function(blk->fn());
   Bool region_entry = region && blk->fn_entry;

   Int start = guest_code_start(sb_in);
   for (Int i = 0; i < start; i++)
      if (sb_in->stmts[i] && sb_in->stmts[i]->tag != Ist_NoOp) b.add(sb_in->stmts[i]);
   for (Int i = start; i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st || st->tag == Ist_NoOp) continue;
      switch (st->tag) {
      case Ist_IMark:
         if (!counters && region_entry)
            b.call_reading_sp("kg_region_enter", (void*)kg_region_enter, IRBuilder::u64((ULong)blk), nullptr);
         if (!counters && sigreturn) counters = add_sigreturn_prologue(b, blk);
         if (!counters) counters = add_prologue(b, blk, layout, stub_instrs, &stub_counted, max_counters);
         if (blocks && block_of[instr])
            add_block_step(b, block_of[instr], block_len[instr], block_helper, block_helper_name);
         last_instr = (Addr)st->Ist.IMark.addr;
         pending.add(slot_of_instr[instr++]);
         break;
      case Ist_Exit:
         if (flushes_before(st, blocks)) {
            IRBuilder::Cond taken = exit_condition(sb_in, i);
            pending.flush(b, counters, &taken);
         }
         if (sp.may_have_risen()) add_unwind_check(b, sp.value(b), leaving ? pending.ir_now(b) : nullptr);
         if (st->Ist.Exit.jk == Ijk_Boring)
            add_tail_call(b, blk, const_target(st->Ist.Exit.dst), last_instr, st->Ist.Exit.guard);
         break;
      default:
         break;
      }
      b.add(st);
      sp.note(st, sb_in->tyenv);
   }
   if (counters) pending.flush(b, counters, nullptr);
   blk->counts_leaving = leaving;
   if (counters && may_call_stub)
      add_stub_counter(b, blk, pending, counters, stub_slot, stub ? IRBuilder::u64(stub) : sb->next);
   add_plt_handover(b, stub_counted, sb->next);
   pending.finish(blk);
   finish_array_check(blk);
   add_block_end(b, sb, blk, last_instr, sp, pending.flushed_ir());
   if (region && sb->jumpkind == Ijk_Ret)
      b.call_reading_sp("kg_region_leave", (void*)kg_region_leave, IRBuilder::u64((ULong)blk), nullptr);
   return sb;
}

} // namespace kg
