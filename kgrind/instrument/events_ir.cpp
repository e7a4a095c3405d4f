// Events beyond Ir (--cache-sim, --branch-sim; docs/design/events.md):
// helper calls for the instruction fetches, data accesses and branches, in
// program order (an instruction's fetch and its first data access in one
// call; a fetch in the I1 line of the instruction before it and a data
// access in the D1 line of the access before it need none), each given the
// (context, block)'s miss anchor and its first slot there (a slot per
// (access, event): kg_block_info.h, BlockEvents), made here and described
// in the block's EventSlots (which line each counts, which event). Slots
// that inline IR adds to are counters after the flush points'
// (event_base). An unguarded access's Dr or Dw and a branch's Bc or Bi
// happen whenever execution reaches the flush point after them: they have
// no counter (the block's PointEvents), and the point adds them to the
// clocks (flush) unless their helper, called every time, does.

namespace kg {

namespace {

class EventsIR {
public:
   // A superblock starts; `on`: events are collected. `by_point`: its flush
   // points count where execution reaches them (not an unrolled loop's
   // leaving counts), so they can count its unguarded accesses and branches.
   void begin(Bool on, Bool by_point)
   {
      on_ = on;
      by_point_ = by_point;
      n_by_point_ = 0;
      n_waiting_ = 0;
      if (on && clo.cache_sim) {
         line_bits_ = i1_line_bits();
         d1_line_bits_ = d1_line_bits();
      }
      n_inline_ = 0;
      n_miss_ = 0;
      n_patches_ = 0;
      n_site_patches_ = 0;
      last_read_addr_ = nullptr;
      last_fetched_ = 0;
      fetch_pending_ = False;
      last_data_ = nullptr;
      VG_(memset)(defs_, 0, n_defs_ * sizeof defs_[0]);
      n_defs_ = 0;
   }

   // The end of an instruction's events, before a side exit, before the
   // superblock's end and before whatever the superblock does at the next
   // instruction's start (another context's counters, inlined levels'
   // pushes and pops): a fetch still waiting for a data access of its
   // instruction is made on its own.
   // A fetch within one I1 line calls the simulation only when that line
   // is not its set's most recent (a hit that changes nothing).
   void end_instruction(IRBuilder& b)
   {
      if (!fetch_pending_) return;
      fetch_pending_ = False;
      Addr last_byte = fetch_addr_ + (fetch_len_ ? fetch_len_ - 1 : 0);
      IRExpr* guard = nullptr;
      if (fetch_addr_ >> line_bits_ == last_byte >> line_bits_)
         guard = b.op(Iop_CmpNE64, b.load64(i1_most_recent_of(fetch_addr_)), IRBuilder::u64(i1_tag_of(fetch_addr_)),
                      Ity_I1);
      call(b, fetch_counters_, fetch_line_, site(fetch_line_, kEvI1mr, fetch_len_, 0), "kg_sim_fetch",
           (void*)kg_sim_fetch, IRBuilder::u64(fetch_addr_), nullptr, guard, kEvILmr);
   }

   // Instruction `addr` (len bytes, of line slot `line`) is fetched. An
   // instruction wholly in the I1 line of the previous instruction's last
   // byte, in the same superblock, needs no call: nothing fetched between
   // them (a superblock runs straight, and threads and signals switch
   // between superblocks only), so that line is still the most recent of
   // its set: a hit that changes nothing, and reaches no LL.
   // Otherwise the fetch waits for the instruction's first data access, to
   // be made in the same call (as cachegrind batches them), or for
   // end_instruction.
   void fetch(IRBuilder& b, IRExpr* counters, UInt line, Addr addr, UInt len)
   {
      last_read_addr_ = nullptr;
      if (!on_ || !clo.cache_sim) return;
      end_instruction(b);
      Addr last_byte = addr + (len ? len - 1 : 0);
      Bool same_line = last_fetched_ && addr > last_fetched_ &&
                       (addr >> line_bits_) == (last_fetched_ >> line_bits_) &&
                       (last_byte >> line_bits_) == (last_fetched_ >> line_bits_);
      last_fetched_ = last_byte;
      if (same_line) return;
      fetch_pending_ = True;
      fetch_counters_ = counters;
      fetch_line_ = line;
      fetch_addr_ = addr;
      fetch_len_ = len;
   }

   // The data accesses of one statement of the instruction at line `line`,
   // before the statement. A write of the address and size the instruction
   // just read is a modify: counted as the read alone (cachegrind's manual:
   // the write cannot miss).
   void data(IRBuilder& b, IRExpr* counters, UInt line, const IRStmt* st, const IRTypeEnv* tyenv)
   {
      if (!on_) return;
      if (st->tag == Ist_WrTmp && st->Ist.WrTmp.tmp < kMaxDefs) {
         defs_[st->Ist.WrTmp.tmp] = st->Ist.WrTmp.data;
         if (st->Ist.WrTmp.tmp >= n_defs_) n_defs_ = st->Ist.WrTmp.tmp + 1;
      }
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
      count_unguarded(b, counters, line, kEvBc, True);
      call(b, counters, line, site(line, kEvBcm), "kg_sim_cond", (void*)kg_sim_cond, IRBuilder::u64(addr), taken,
           nullptr);
   }

   // The superblock's end: a computed jump or call (not a return) is an
   // indirect branch of the instruction at addr.
   void indirect(IRBuilder& b, IRExpr* counters, UInt line, const IRSB* sb, Addr addr)
   {
      if (!on_ || !clo.branch_sim || sb->next->tag == Iex_Const) return;
      if (sb->jumpkind != Ijk_Boring && sb->jumpkind != Ijk_Call) return;
      count_unguarded(b, counters, line, kEvBi, True);
      call(b, counters, line, site(line, kEvBim), "kg_sim_indirect", (void*)kg_sim_indirect, IRBuilder::u64(addr),
           sb->next, nullptr);
   }

   // The superblock's end: a system call of the instruction at line `line`,
   // whose count and time the core's system call callbacks add to these
   // slots (kg_systime.h).
   void syscall(IRBuilder& b, IRExpr* counters, UInt line, const IRSB* sb)
   {
      if (!on_ || !clo.collect_systime || !is_syscall_end(sb->jumpkind)) return;
      IRExpr* at = slot_address(b, counters);
      add_inline_slot(line, kEvSysCount);
      add_inline_slot(line, kEvSysTime);
      if (clo.collect_systime == kSysTimeNsec) add_inline_slot(line, kEvSysCpuTime);
      b.store64((const void*)&kg_syscall_slots, at);
   }

   // The block's counters are known: the inline slots' offsets, after its
   // flush points', the miss anchor's after them, the miss counters'
   // number; its EventSlots, the inline ones first.
   void finish(BlockInfo* blk)
   {
      if (!on_) return;
      tl_assert(n_waiting_ == 0);
      ULong base = 8 * (ULong)event_base(blk);
      for (UInt i = 0; i < n_patches_; i++) patches_[i]->Ico.U64 += base;
      ULong anchor = event_base(blk) + n_inline_;
      // A block's one miss slot (a branch's) is an inline slot where its
      // anchor would be: the same counter while it has not missed, and no
      // miss counters when it has (EventSite: no miss slots).
      if (n_miss_ == 1) {
         slots_[n_inline_++] = miss_slots_[0];
         n_miss_ = 0;
      }
      tl_assert(anchor >> EventSite::kAnchorBits == 0 && n_miss_ >> EventSite::kSlotBits == 0);
      for (UInt i = 0; i < n_site_patches_; i++)
         site_patches_[i]->Ico.U64 |= (ULong)n_miss_ << EventSite::kMissesAt | anchor << EventSite::kAnchorAt;
      VG_(memcpy)(slots_ + n_inline_, miss_slots_, n_miss_ * sizeof(EventSlot));
      set_block_events(blk, slots_, n_inline_, n_miss_, by_point_events_, n_by_point_);
   }

   // Flush point `point` is next: the events waiting for it are its
   // (PointEvents), and it adds them to the clocks. True if there were any
   // (the point must then count even with no instructions since the last).
   Bool flush(IRBuilder& b, UInt point)
   {
      if (!n_waiting_) return False;
      ULong per_event[kEventIds] = {};
      for (UInt i = 0; i < n_waiting_; i++) {
         const PointEvent& w = waiting_[i];
         if (!waiting_clocked_[i]) per_event[w.event]++;
         UInt j = n_by_point_;
         while (j > 0 && by_point_events_[j - 1].point == point &&
                (by_point_events_[j - 1].line != w.line || by_point_events_[j - 1].event != w.event))
            j--;
         if (j > 0 && by_point_events_[j - 1].point == point) {
            by_point_events_[j - 1].times++;
         } else {
            if (n_by_point_ == kMaxEventSlots)
               VG_(tool_panic)((HChar*)"kgrind: a superblock with more than 4096 events counted by its points");
            by_point_events_[n_by_point_++] = { w.line, w.event, (UShort)point, 1 };
         }
      }
      n_waiting_ = 0;
      IRExpr* clock = nullptr;
      for (UInt e = 0; e < kEventIds; e++) {
         if (!per_event[e]) continue;
         if (!clock) clock = b.load64(&kg_event_clock);
         b.add_if(nullptr, b.place(clock, 8 * e), IRBuilder::u64(per_event[e]));
      }
      return True;
   }

private:
   // With the flush points' counters, within a counter store chunk (8192).
   static const UInt kMaxEventSlots = 4096;

   void read(IRBuilder& b, IRExpr* counters, UInt line, IRExpr* addr, UInt size, IRExpr* guard)
   {
      if (!clo.cache_sim) count_data(b, counters, line, kEvDr, guard);
      else simulate(b, counters, line, addr, size, guard, kReadAccess);
      last_read_addr_ = guard ? nullptr : addr;
      last_read_size_ = size;
   }

   void write(IRBuilder& b, IRExpr* counters, UInt line, IRExpr* addr, UInt size, IRExpr* guard)
   {
      Bool modify = !guard && last_read_addr_ && size == last_read_size_ && same_atom(addr, last_read_addr_);
      last_read_addr_ = nullptr;
      if (modify) return;
      if (!clo.cache_sim) count_data(b, counters, line, kEvDw, guard);
      else simulate(b, counters, line, addr, size, guard, kWriteAccess);
   }

   // A read's or a write's helpers and events: a guarded access [Dr D1mr
   // DLmr], an access's misses [D1mr DLmr], the fetch and the access's
   // misses [I1mr ILmr D1mr DLmr], and the same for a write.
   // (Function pointers of their own types: a constant initialisation, as
   // the tool runs no constructors.)
   typedef void (*Helper)(ULong*, UWord, Addr);
   typedef void (*FetchHelper)(ULong*, UWord, Addr, Addr);
   struct AccessKind {
      EventId count, l1, ll;
      const HChar* guarded_name;
      Helper guarded_fn;
      const HChar* name;   // another line's: misses and the clock
      Helper fn;
      const HChar* lines_name;   // behind the compare: misses alone
      Helper lines_fn;
      const HChar* fetch_name;
      FetchHelper fetch_fn;
   };
   static const AccessKind kReadAccess, kWriteAccess;

   // A data access of `size` bytes at addr (an atom), when guard holds.
   // - Guarded: a call of its own, after the instruction's fetch (the guard
   //   is the access's only), which counts the access too.
   // - Else its count is its flush point's (count_unguarded), and its misses:
   // - The instruction's fetch waiting: one call for both.
   // - Else, after another unguarded access of the superblock (the one just
   //   before: nothing but fetches between, which are I1's and reach LL
   //   only on an I1 miss): when every byte of this one is in the first
   //   line of that one, that line is still the most recent of its D1 set,
   //   so this access is a hit that changes nothing and reaches no LL. The
   //   call is made only when they are not (an inline compare).
   void simulate(IRBuilder& b, IRExpr* counters, UInt line, IRExpr* addr, UInt size, IRExpr* guard,
                 const AccessKind& k)
   {
      UInt n = access_size(size);
      if (guard) {
         end_instruction(b);
         call(b, counters, line, site(line, k.count, 0, n), k.guarded_name, (void*)k.guarded_fn, addr, nullptr,
              guard, k.l1, k.ll);
         last_data_ = nullptr;
         return;
      }
      IRExpr* prev = last_data_;
      last_data_ = addr;
      LineRelation relation = fetch_pending_ || !prev ? kOtherLine : line_relation(prev, addr, size);
      // The helpers called every time (the fetch's, another line's) add
      // the count to the clock.
      count_unguarded(b, counters, line, k.count, relation == kOtherLine);
      if (fetch_pending_) {
         fetch_pending_ = False;
         IRExpr* first = site(line, kEvI1mr, fetch_len_, n);
         const EventId events[] = { kEvILmr, k.l1, k.ll };
         for (EventId e : events) add_miss_slot(line, e);
         b.call(k.fetch_name, (void*)k.fetch_fn, 0, mkIRExprVec_4(counters, first, IRBuilder::u64(fetch_addr_), addr),
                nullptr);
         return;
      }
      switch (relation) {
      case kOtherLine:
         call(b, counters, line, site(line, k.l1, 0, n), k.name, (void*)k.fn, addr, nullptr, nullptr, k.ll);
         return;
      case kSameLine:   // a hit: the count alone
         return;
      case kMaybeSameLine:
         break;
      }
      // Every byte in prev's line: (addr ^ prev) | (last byte ^ prev)
      // below the line size.
      IRExpr* apart = b.op(Iop_Xor64, addr, prev);
      if (size > 1) {
         IRExpr* last = b.op(Iop_Add64, addr, IRBuilder::u64(size - 1));
         apart = b.op(Iop_Or64, apart, b.op(Iop_Xor64, last, prev));
      }
      IRExpr* other_line = b.op(Iop_CmpLE64U, IRBuilder::u64(1ULL << d1_line_bits_), apart, Ity_I1);
      call(b, counters, line, site(line, k.l1, 0, n), k.lines_name, (void*)k.lines_fn, addr, nullptr, other_line, k.ll);
   }

   // Whether an access of `size` bytes at addr is in the first D1 line of
   // the access at prev, from their addresses' forms: two constants
   // (RIP-relative data) are known; a common base (a temporary) plus
   // offsets (a stack frame's, a structure's fields) under a line apart is
   // checked at run time; anything else is taken to be another line (the
   // check would seldom pass and costs more than it saves).
   enum LineRelation { kOtherLine, kSameLine, kMaybeSameLine };
   LineRelation line_relation(IRExpr* prev, IRExpr* addr, UInt size)
   {
      Long prev_off = 0, off = 0;
      IRExpr* prev_base = base_of(prev, &prev_off);
      IRExpr* base = base_of(addr, &off);
      Long line = 1LL << d1_line_bits_;
      if (!prev_base && !base) {   // both constants
         ULong first = (ULong)off >> d1_line_bits_, last = ((ULong)off + (size ? size - 1 : 0)) >> d1_line_bits_;
         return first == last && first == (ULong)prev_off >> d1_line_bits_ ? kSameLine : kOtherLine;
      }
      if (!prev_base || !base || prev_base->Iex.RdTmp.tmp != base->Iex.RdTmp.tmp) return kOtherLine;
      Long d = off - prev_off;
      return d > -line && d + (Long)size <= line ? kMaybeSameLine : kOtherLine;
   }

   // An address atom as base + offset: the temporary it adds constants to
   // (nullptr for a constant address, whose value is the offset).
   IRExpr* base_of(IRExpr* a, Long* off)
   {
      for (UInt depth = 0; depth < 8; depth++) {
         if (a->tag == Iex_Const) {
            *off += (Long)a->Iex.Const.con->Ico.U64;
            return nullptr;
         }
         if (a->tag != Iex_RdTmp) break;
         IRTemp t = a->Iex.RdTmp.tmp;
         const IRExpr* d = t < kMaxDefs ? defs_[t] : nullptr;
         if (!d || d->tag != Iex_Binop || d->Iex.Binop.arg2->tag != Iex_Const ||
             d->Iex.Binop.arg2->Iex.Const.con->tag != Ico_U64)
            break;
         Long c = (Long)d->Iex.Binop.arg2->Iex.Const.con->Ico.U64;
         if (d->Iex.Binop.op == Iop_Add64) *off += c;
         else if (d->Iex.Binop.op == Iop_Sub64) *off -= c;
         else break;
         a = d->Iex.Binop.arg1;
      }
      return a->tag == Iex_RdTmp ? a : nullptr;
   }

   void add_inline_slot(UInt line, EventId e) { slots_[n_inline_++] = { (UShort)line, (UShort)e }; }
   void add_miss_slot(UInt line, EventId e) { miss_slots_[n_miss_++] = { (UShort)line, (UShort)e }; }

   // An event that happens whenever execution reaches the next flush point
   // (an unguarded access, a branch): counted by that point, or, in a
   // block that counts where execution leaves it, inline in a slot of its
   // own. On the clock by the point (or inline), unless `clocked`: its
   // helper, called every time, adds it there.
   void count_unguarded(IRBuilder& b, IRExpr* counters, UInt line, EventId e, Bool clocked)
   {
      if (!by_point_) {
         count(b, counters, line, e, nullptr, !clocked);
         return;
      }
      if (n_waiting_ == kMaxEventSlots)
         VG_(tool_panic)((HChar*)"kgrind: a superblock with more than 4096 events counted by its points");
      waiting_clocked_[n_waiting_] = clocked;
      waiting_[n_waiting_++] = { (UShort)line, (UShort)e, 0, 0 };
   }

   // An access touches every line its bytes are in (a 32-byte load may
   // straddle two lines, as in cachegrind: tests/test_events.py).
   static UInt access_size(UInt size) { return size ? size : 1; }

   static Bool same_atom(const IRExpr* a, const IRExpr* c)
   {
      if (a->tag == Iex_RdTmp && c->tag == Iex_RdTmp) return a->Iex.RdTmp.tmp == c->Iex.RdTmp.tmp;
      if (a->tag == Iex_Const && c->tag == Iex_Const) return eqIRConst(a->Iex.Const.con, c->Iex.Const.con);
      return False;
   }

   // --collect-data without --cache-sim: the access counted by its flush
   // point, or guarded, inline (when its guard holds) in a slot of event e.
   void count_data(IRBuilder& b, IRExpr* counters, UInt line, EventId e, IRExpr* guard)
   {
      if (guard) count(b, counters, line, e, guard, True);
      else count_unguarded(b, counters, line, e, False);
   }

   // Event e counted inline, when guard holds, in a slot of its own and
   // (on_clock) on the clock.
   void count(IRBuilder& b, IRExpr* counters, UInt line, EventId e, IRExpr* guard, Bool on_clock)
   {
      IRExpr* at = slot_address(b, counters);
      add_inline_slot(line, e);
      b.add_if(guard, b.place(at, 0), IRBuilder::u64(1));
      if (on_clock) b.add_if(guard, b.place(b.load64(&kg_event_clock), 8 * e), IRBuilder::u64(1));
   }

   void bus(IRBuilder& b, IRExpr* counters, UInt line)
   {
      IRExpr* at = slot_address(b, counters);
      add_inline_slot(line, kEvGe);
      b.call("kg_count_bus", (void*)kg_count_bus, 1, mkIRExprVec_1(at), nullptr);
   }

   void check_room()
   {
      if (n_inline_ + n_miss_ + 5 > kMaxEventSlots || n_patches_ == kMaxEventSlots)
         VG_(tool_panic)((HChar*)"kgrind: a superblock with more than 4096 event counters");
   }

   // The address of the next inline slot (counters + its offset, patched
   // in finish).
   IRExpr* slot_address(IRBuilder& b, IRExpr* counters)
   {
      check_room();
      IRConst* offset = IRConst_U64(8 * (ULong)n_inline_);
      patches_[n_patches_++] = offset;
      return b.op(Iop_Add64, counters, IRExpr_Const(offset));
   }

   // The site word (EventSite) of a helper call whose first miss slot is
   // the next one, for event e of line `line`: the block's number of miss
   // slots and its anchor's index are set in finish.
   IRExpr* site(UInt line, EventId e, UInt fetch_len = 0, UInt size = 0)
   {
      check_room();
      tl_assert(fetch_len >> EventSite::kFetchBits == 0 && size >> EventSite::kSizeBits == 0);
      IRConst* word =
         IRConst_U64(n_miss_ | (ULong)fetch_len << EventSite::kFetchAt | (ULong)size << EventSite::kSizeAt);
      site_patches_[n_site_patches_++] = word;
      add_miss_slot(line, e);
      return IRExpr_Const(word);
   }

   // helper(counters, site, x[, y]) when guard holds, with miss slots for
   // events e1, e2 of line `line` after the site's first (site()).
   void call(IRBuilder& b, IRExpr* counters, UInt line, IRExpr* site, const HChar* name, void* fn, IRExpr* x,
             IRExpr* y, IRExpr* guard, Int e1 = -1, Int e2 = -1)
   {
      if (e1 >= 0) add_miss_slot(line, (EventId)e1);
      if (e2 >= 0) add_miss_slot(line, (EventId)e2);
      b.call(name, fn, 0, y ? mkIRExprVec_4(counters, site, x, y) : mkIRExprVec_3(counters, site, x), guard);
   }

   // No initialisers: the one EventsIR is a zeroed static (the tool runs no
   // constructors); begin sets what a superblock needs.
   Bool on_;
   Bool by_point_;
   // Events counted by the next flush point, and by the block's points.
   PointEvent waiting_[kMaxEventSlots];
   Bool waiting_clocked_[kMaxEventSlots];   // its helper adds it to the clock
   UInt n_waiting_;
   PointEvent by_point_events_[kMaxEventSlots];
   UInt n_by_point_;
   UInt line_bits_;                 // I1's
   Addr last_fetched_;              // the previous instruction's last byte, or 0
   UInt n_inline_;
   UInt n_miss_;
   UInt n_patches_;
   UInt n_site_patches_;
   EventSlot slots_[kMaxEventSlots];        // inline, then (finish) miss
   EventSlot miss_slots_[kMaxEventSlots];
   IRConst* patches_[kMaxEventSlots];
   IRConst* site_patches_[kMaxEventSlots];
   IRExpr* last_read_addr_;
   UInt last_read_size_;
   UInt d1_line_bits_;
   // The fetch of the current instruction, when it waits for a data access.
   Bool fetch_pending_;
   IRExpr* fetch_counters_;
   UInt fetch_line_;
   Addr fetch_addr_;
   UInt fetch_len_;
   // The address of the superblock's last data access, when it was
   // unguarded (else nullptr).
   IRExpr* last_data_;
   // The expressions the superblock's temporaries are set to, so far (for
   // line_relation).
   static const UInt kMaxDefs = 1024;
   const IRExpr* defs_[kMaxDefs];
   UInt n_defs_;   // defs_ beyond are null
};

const EventsIR::AccessKind EventsIR::kReadAccess = {
   kEvDr, kEvD1mr, kEvDLmr, "kg_sim_read_guarded", kg_sim_read_guarded, "kg_sim_read", kg_sim_read,
   "kg_sim_read_lines", kg_sim_read_lines, "kg_sim_fetch_read", kg_sim_fetch_read,
};
const EventsIR::AccessKind EventsIR::kWriteAccess = {
   kEvDw, kEvD1mw, kEvDLmw, "kg_sim_write_guarded", kg_sim_write_guarded, "kg_sim_write", kg_sim_write,
   "kg_sim_write_lines", kg_sim_write_lines, "kg_sim_fetch_write", kg_sim_fetch_write,
};

EventsIR events_ir;

// At most how many event counters EventsIR gives the superblock's (context,
// block)s (known before its prologue, which decides whether the block counts
// in its function's counter array): the miss anchor, and the inline slots:
// a data access's count and a branch's (in a block that counts where
// execution leaves it), a bus event, an indirect branch's count, a system
// call's three.
UInt event_slots_at_most(const IRSB* sb)
{
   UInt n = 1 + 1 + 3;   // the anchor; an indirect branch or a system call at the end
   for (Int i = 0; i < sb->stmts_used; i++) {
      const IRStmt* st = sb->stmts[i];
      switch (st->tag) {
      case Ist_Exit:
         n += 1;
         break;
      case Ist_WrTmp:
         if (st->Ist.WrTmp.data->tag == Iex_Load) n += 1;
         break;
      case Ist_Store:
      case Ist_LoadG:
      case Ist_StoreG:
      case Ist_CAS:
      case Ist_LLSC:
      case Ist_Dirty:
         n += 1 + 1;
         break;
      default:
         break;
      }
   }
   return n;
}

} // namespace

} // namespace kg
