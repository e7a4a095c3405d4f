// Exact instruction counting. Instructions are counted in groups: every
// instruction since the previous flush point is added to its line's counter
// just before each side exit (Ist_Exit) and at the end of the superblock.
// A taken side exit therefore never counts the instructions after it, and an
// untaken one costs nothing extra; the counters are updated by inline IR
// (load, add, store), with no helper call.
#include "kg_instrument.h"
#include "kg_costs.h"

namespace kg {

namespace {

// Instructions executed since the last flush, merged per cost centre.
class PendingCounts {
public:
   void add(LineCost* cc)
   {
      for (Int i = 0; i < used_; i++)
         if (entries_[i].cc == cc) { entries_[i].count++; return; }
      if (used_ == kMax) return overflow(cc);
      entries_[used_].cc = cc;
      entries_[used_].count = 1;
      used_++;
   }

   // Appends the counter updates to sb and forgets them.
   void flush(IRSB* sb)
   {
      for (Int i = 0; i < used_; i++) emit_add(sb, &entries_[i].cc->ir, entries_[i].count);
      used_ = 0;
   }

   void set_target(IRSB* sb) { sb_ = sb; }

private:
   // All pending instructions have completed when the next IMark is seen,
   // so flushing there is exact too.
   void overflow(LineCost* cc) { flush(sb_); add(cc); }

   static void emit_add(IRSB* sb, ULong* counter, ULong n)
   {
      IRExpr* addr = mkIRExpr_HWord((HWord)counter);
      IRTemp old_value = newIRTemp(sb->tyenv, Ity_I64);
      IRTemp new_value = newIRTemp(sb->tyenv, Ity_I64);
      addStmtToIRSB(sb, IRStmt_WrTmp(old_value, IRExpr_Load(Iend_LE, Ity_I64, addr)));
      addStmtToIRSB(sb, IRStmt_WrTmp(new_value,
                                     IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(old_value),
                                                  IRExpr_Const(IRConst_U64(n)))));
      addStmtToIRSB(sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)counter),
                                     IRExpr_RdTmp(new_value)));
   }

   struct Entry { LineCost* cc; ULong count; };
   static const Int kMax = 32;
   Entry entries_[kMax];
   Int used_ = 0;
   IRSB* sb_ = nullptr;
};

} // namespace

IRSB* instrument(VgCallbackClosure* closure, IRSB* sb_in,
                 const VexGuestLayout* layout, const VexGuestExtents* vge,
                 const VexArchInfo* archinfo, IRType guest_word, IRType host_word)
{
   if (guest_word != host_word)
      VG_(tool_panic)((HChar*)"kgrind: host and guest word sizes differ");

   IRSB* sb = deepCopyIRSBExceptStmts(sb_in);
   PendingCounts pending;
   pending.set_target(sb);

   for (Int i = 0; i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st || st->tag == Ist_NoOp) continue;
      switch (st->tag) {
      case Ist_IMark: {
         SourceLoc loc;
         source_loc((Addr)st->Ist.IMark.addr, &loc);
         pending.add(line_cost(loc));
         break;
      }
      case Ist_Exit:
         pending.flush(sb);
         break;
      default:
         break;
      }
      addStmtToIRSB(sb, st);
   }
   pending.flush(sb);
   return sb;
}

} // namespace kg
