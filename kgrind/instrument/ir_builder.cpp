// Building IR into one superblock, with the tool's data addressed from base
// registers.

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

#if defined(VGA_arm64)
// Where a guarded store goes, and a guarded load reads, when its guard
// fails (IRBuilder::store_if, load_if).
ULong guard_scratch;
#endif

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
#if defined(VGA_arm64)
      // VEX's arm64 back end has no guarded load: a load from the scratch
      // word when the guard fails, and a select.
      IRExpr* loaded = load64(tmp(IRExpr_ITE(guard, at(addr), at(&guard_scratch)), Ity_I64));
      return tmp(IRExpr_ITE(guard, loaded, alt), Ity_I64);
#else
      IRTemp t = newIRTemp(sb_->tyenv, Ity_I64);
      add(IRStmt_LoadG(Iend_LE, ILGop_Ident64, t, at(addr), alt, guard));
      return IRExpr_RdTmp(t);
#endif
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
#if defined(VGA_arm64)
      // VEX's arm64 back end has no guarded store: a store into the
      // scratch word when the guard fails (never one into addr, which may
      // not be valid then).
      if (guard) addr = tmp(IRExpr_ITE(guard, addr, at(&guard_scratch)), Ity_I64);
      add(IRStmt_Store(Iend_LE, addr, value));
#else
      if (guard) add(IRStmt_StoreG(Iend_LE, addr, value, guard));
      else add(IRStmt_Store(Iend_LE, addr, value));
#endif
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

   // A part of the guest state that a helper given the guest state's
   // pointer (IRExpr_GSPTR) reads or writes: declared, so that VEX stores
   // pending writes first and reloads after.
   struct GuestEffect {
      IREffect fx;
      Int offset;
      Int size;
   };
   // A helper call (always) whose 64-bit result is returned; effects: its
   // n guest state effects (at most VEX_N_FXSTATE).
   IRExpr* call_result(const HChar* name, void* fn, Int regparms, IRExpr** args, const GuestEffect* effects, UInt n)
   {
      IRDirty* di = dirty(name, fn, regparms, args, nullptr);
      di->tmp = newIRTemp(sb_->tyenv, Ity_I64);
      di->nFxState = n;
      for (UInt i = 0; i < n; i++) {
         di->fxState[i].fx = effects[i].fx;
         di->fxState[i].offset = effects[i].offset;
         di->fxState[i].size = effects[i].size;
         di->fxState[i].nRepeats = 0;
         di->fxState[i].repeatLen = 0;
      }
      add(IRStmt_Dirty(di));
      return IRExpr_RdTmp(di->tmp);
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

} // namespace

} // namespace kg
