// Events beyond Ir (--cache-sim, --branch-sim; docs/design/events.md): a
// helper call per instruction fetch, data access and branch, in program
// order, each given the address of its event counters in the block's
// (context, block) counters: after the flush points' (event_base), a slot
// per (access, event), made here and described in the block's EventSlots
// (which line each counts, which event).

namespace kg {

namespace {

class EventsIR {
public:
   // A superblock starts; `on`: events are collected.
   void begin(Bool on)
   {
      on_ = on;
      if (on && clo.cache_sim) line_bits_ = i1_line_bits();
      n_ = 0;
      n_patches_ = 0;
      last_read_addr_ = nullptr;
      last_fetched_ = 0;
   }

   // Instruction `addr` (len bytes, of line slot `line`) is fetched. An
   // instruction wholly in the I1 line of the previous instruction's last
   // byte, in the same superblock, needs no call: nothing fetched between
   // them (a superblock runs straight, and threads and signals switch
   // between superblocks only), so that line is still the most recent of
   // its set: a hit that changes nothing, and reaches no LL.
   void fetch(IRBuilder& b, IRExpr* counters, UInt line, Addr addr, UInt len)
   {
      last_read_addr_ = nullptr;
      if (!on_ || !clo.cache_sim) return;
      Addr last_byte = addr + (len ? len - 1 : 0);
      Bool same_line = last_fetched_ && addr > last_fetched_ &&
                       (addr >> line_bits_) == (last_fetched_ >> line_bits_) &&
                       (last_byte >> line_bits_) == (last_fetched_ >> line_bits_);
      last_fetched_ = last_byte;
      if (same_line) return;
      call(b, counters, line, kEvI1mr, kEvILmr, "kg_sim_fetch", (void*)kg_sim_fetch,
           IRBuilder::u64(addr), IRBuilder::u64(len), nullptr);
   }

   // The data accesses of one statement of the instruction at line `line`,
   // before the statement. A write of the address and size the instruction
   // just read is a modify: counted as the read alone (cachegrind's manual:
   // the write cannot miss).
   void data(IRBuilder& b, IRExpr* counters, UInt line, const IRStmt* st, const IRTypeEnv* tyenv)
   {
      if (!on_) return;
      // An atomic instruction (a compare-and-swap, a store-conditional) is a
      // global bus event, as callgrind counts them.
      if (clo.collect_bus && (st->tag == Ist_CAS || (st->tag == Ist_LLSC && st->Ist.LLSC.storedata)))
         bus(b, counters, line);
      if (!clo.cache_sim && !clo.collect_data) return;
      switch (st->tag) {
      case Ist_WrTmp:
         if (st->Ist.WrTmp.data->tag == Iex_Load) {
            const IRExpr* ld = st->Ist.WrTmp.data;
            read(b, counters, line, ld->Iex.Load.addr, sizeofIRType(ld->Iex.Load.ty), nullptr);
         }
         break;
      case Ist_Store:
         write(b, counters, line, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)), nullptr);
         break;
      case Ist_LoadG: {
         const IRLoadG* lg = st->Ist.LoadG.details;
         IRType ty = Ity_INVALID, wide = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &wide, &ty);
         read(b, counters, line, lg->addr, sizeofIRType(ty), lg->guard);
         break;
      }
      case Ist_StoreG: {
         const IRStoreG* sg = st->Ist.StoreG.details;
         write(b, counters, line, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), sg->guard);
         break;
      }
      case Ist_CAS: {
         // A read and a write of the same place: a modify.
         const IRCAS* cas = st->Ist.CAS.details;
         UInt size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
         read(b, counters, line, cas->addr, size, nullptr);
         break;
      }
      case Ist_LLSC:
         if (!st->Ist.LLSC.storedata) {
            read(b, counters, line, st->Ist.LLSC.addr, sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), nullptr);
         } else {
            write(b, counters, line, st->Ist.LLSC.addr,
                  sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)), nullptr);
         }
         break;
      case Ist_Dirty: {
         const IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx == Ifx_None) break;
         if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify) read(b, counters, line, d->mAddr, d->mSize, d->guard);
         else write(b, counters, line, d->mAddr, d->mSize, d->guard);
         break;
      }
      default:
         break;
      }
   }

   // A side exit of the guest's (a conditional branch) at instruction
   // `addr`, whose next instruction is at `next`: taken when its guard holds,
   // unless VEX inverted it (the exit goes to the next instruction).
   void cond_exit(IRBuilder& b, IRExpr* counters, UInt line, const IRStmt* st, Addr addr, Addr next)
   {
      if (!on_ || !clo.branch_sim || st->Ist.Exit.jk != Ijk_Boring) return;
      IRExpr* taken = b.tmp(IRExpr_Unop(Iop_1Uto64, st->Ist.Exit.guard), Ity_I64);
      if (const_target(st->Ist.Exit.dst) == next) taken = b.tmp(IRExpr_Binop(Iop_Xor64, taken, IRBuilder::u64(1)), Ity_I64);
      call(b, counters, line, kEvBc, kEvBcm, "kg_sim_cond", (void*)kg_sim_cond, IRBuilder::u64(addr), taken, nullptr);
   }

   // The superblock's end: a computed jump or call (not a return) is an
   // indirect branch of the instruction at addr.
   void indirect(IRBuilder& b, IRExpr* counters, UInt line, const IRSB* sb, Addr addr)
   {
      if (!on_ || !clo.branch_sim || sb->next->tag == Iex_Const) return;
      if (sb->jumpkind != Ijk_Boring && sb->jumpkind != Ijk_Call) return;
      call(b, counters, line, kEvBi, kEvBim, "kg_sim_indirect", (void*)kg_sim_indirect, IRBuilder::u64(addr),
           sb->next, nullptr);
   }

   // The superblock's end: a system call of the instruction at line `line`,
   // whose count and time the core's system call callbacks add to these
   // slots (kg_systime.h).
   void syscall(IRBuilder& b, IRExpr* counters, UInt line, const IRSB* sb)
   {
      if (!on_ || !clo.collect_systime || !is_syscall_end(sb->jumpkind)) return;
      IRExpr* at = slot_address(b, counters);
      slots_[n_++] = { (UShort)line, (UShort)kEvSysCount };
      slots_[n_++] = { (UShort)line, (UShort)kEvSysTime };
      if (clo.collect_systime == kSysTimeNsec) slots_[n_++] = { (UShort)line, (UShort)kEvSysCpuTime };
      b.store64((const void*)&kg_syscall_slots, at);
   }

   // The block's counters are known: the slots' offsets, after its flush
   // points'; its EventSlots.
   void finish(BlockInfo* blk)
   {
      if (!on_) return;
      ULong base = 8 * (ULong)event_base(blk);
      for (UInt i = 0; i < n_patches_; i++) patches_[i]->Ico.U64 += base;
      set_block_events(blk, slots_, n_);
   }

private:
   // With the flush points' counters, within a counter store chunk (8192).
   static const UInt kMaxEventSlots = 4096;

   void read(IRBuilder& b, IRExpr* counters, UInt line, IRExpr* addr, UInt size, IRExpr* guard)
   {
      if (!clo.cache_sim) count(b, counters, line, kEvDr, guard);
      else call(b, counters, line, kEvDr, kEvD1mr, "kg_sim_read", (void*)kg_sim_read, addr, access_size(size), guard,
                kEvDLmr);
      last_read_addr_ = guard ? nullptr : addr;
      last_read_size_ = size;
   }

   void write(IRBuilder& b, IRExpr* counters, UInt line, IRExpr* addr, UInt size, IRExpr* guard)
   {
      Bool modify = !guard && last_read_addr_ && size == last_read_size_ && same_atom(addr, last_read_addr_);
      last_read_addr_ = nullptr;
      if (modify) return;
      if (!clo.cache_sim) count(b, counters, line, kEvDw, guard);
      else call(b, counters, line, kEvDw, kEvD1mw, "kg_sim_write", (void*)kg_sim_write, addr, access_size(size), guard,
           kEvDLmw);
   }

   // An access touches every line its bytes are in (a 32-byte load may
   // straddle two lines, as in cachegrind: tests/test_events.py).
   static IRExpr* access_size(UInt size) { return IRBuilder::u64(size ? size : 1); }

   static Bool same_atom(const IRExpr* a, const IRExpr* c)
   {
      if (a->tag == Iex_RdTmp && c->tag == Iex_RdTmp) return a->Iex.RdTmp.tmp == c->Iex.RdTmp.tmp;
      if (a->tag == Iex_Const && c->tag == Iex_Const) return eqIRConst(a->Iex.Const.con, c->Iex.Const.con);
      return False;
   }

   // --collect-data without --cache-sim: the access counted inline, when
   // its guard holds, in a slot of event e.
   void count(IRBuilder& b, IRExpr* counters, UInt line, EventId e, IRExpr* guard)
   {
      IRExpr* at = slot_address(b, counters);
      slots_[n_++] = { (UShort)line, (UShort)e };
      b.add_if(guard, b.place(at, 0), IRBuilder::u64(1));
      b.add_if(guard, b.place(b.load64(&kg_event_clock), 8 * e), IRBuilder::u64(1));   // and on the clock
   }

   void bus(IRBuilder& b, IRExpr* counters, UInt line)
   {
      IRExpr* at = slot_address(b, counters);
      slots_[n_++] = { (UShort)line, (UShort)kEvGe };
      b.call("kg_count_bus", (void*)kg_count_bus, 1, mkIRExprVec_1(at), nullptr);
   }

   // The address of the next slot (counters + its offset, patched in finish).
   IRExpr* slot_address(IRBuilder& b, IRExpr* counters)
   {
      if (n_ + 3 > kMaxEventSlots || n_patches_ == kMaxEventSlots)
         VG_(tool_panic)((HChar*)"kgrind: a superblock with more than 4096 event counters");
      IRConst* offset = IRConst_U64(8 * (ULong)n_);
      patches_[n_patches_++] = offset;
      return b.op(Iop_Add64, counters, IRExpr_Const(offset));
   }

   // helper(counters + slot offset, x, y) when guard holds, with slots for
   // events e0, e1 (and e2) of line `line`.
   void call(IRBuilder& b, IRExpr* counters, UInt line, EventId e0, EventId e1, const HChar* name, void* fn,
             IRExpr* x, IRExpr* y, IRExpr* guard, Int e2 = -1)
   {
      IRExpr* at = slot_address(b, counters);
      slots_[n_++] = { (UShort)line, (UShort)e0 };
      slots_[n_++] = { (UShort)line, (UShort)e1 };
      if (e2 >= 0) slots_[n_++] = { (UShort)line, (UShort)e2 };
      b.call(name, fn, 3, mkIRExprVec_3(at, x, y), guard);
   }

   // No initialisers: the one EventsIR is a zeroed static (the tool runs no
   // constructors); begin sets what a superblock needs.
   Bool on_;
   UInt line_bits_;                 // I1's
   Addr last_fetched_;              // the previous instruction's last byte, or 0
   UInt n_;
   UInt n_patches_;
   EventSlot slots_[kMaxEventSlots];
   IRConst* patches_[kMaxEventSlots];
   IRExpr* last_read_addr_;
   UInt last_read_size_;
};

EventsIR events_ir;

} // namespace

} // namespace kg
