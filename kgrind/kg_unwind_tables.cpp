#include "kg_unwind_tables.h"
#include "kg_objects.h"
#include "kg_runtime.h"
#include "core/eh_frame.h"

namespace kg {

namespace {

// Functions without symbols, from the unwind tables of their object
// (core/eh_frame.h): a stripped program's static functions, each with its
// own first instruction and end, as its symbol would have given them.
// Only in the object's .text (PLT sections have FDEs too, for the whole
// section) and where no symbol covers the address. The tables are read
// where the object is mapped; a table per object, found again by its text
// and file while Valgrind's debug-info epoch moves (objects come and go).
struct UnwindTable {
   Addr text_lo, text_hi;
   HChar* file;    // owned copy
   UInt epoch;     // last checked against the object loaded there
   Bool usable;
   core::EhFrameIndex index;
};
XArray* unwind_tables;   // of UnwindTable

// The index of the object's .eh_frame_hdr and .eh_frame as mapped, if they
// are: PT_GNU_EH_FRAME from the file's program headers, placed by the
// object's bias.
Bool read_unwind_table(const DebugInfo* di, UnwindTable* t)
{
   SysRes fd = VG_(open)(VG_(DebugInfo_get_filename)(di), VKI_O_RDONLY, 0);
   if (sr_isError(fd)) return False;
   static UChar head[4096];
   Int n = VG_(read)(sr_Res(fd), head, sizeof head);
   VG_(close)(sr_Res(fd));
   uint64_t vaddr, size, frame_at;
   if (n <= 0 || !core::elf_eh_frame_hdr(head, (uint64_t)n, &vaddr, &size)) return False;
   Addr hdr_at = (Addr)vaddr + VG_(DebugInfo_get_text_bias)(di);
   if (size == 0 || !VG_(am_is_valid_for_client)(hdr_at, size, VKI_PROT_READ)) return False;
   core::MappedSpan hdr = { (const uint8_t*)hdr_at, size, hdr_at };
   if (!core::eh_frame_address(hdr, &frame_at)) return False;
   // .eh_frame's end is not in its header: the FDEs are read within the
   // mapping that holds its start.
   NSegment const* seg = VG_(am_find_nsegment)((Addr)frame_at);
   if (!seg || !VG_(am_is_valid_for_client)((Addr)frame_at, 1, VKI_PROT_READ)) return False;
   core::MappedSpan frame = { (const uint8_t*)frame_at, seg->end + 1 - (Addr)frame_at, frame_at };
   return t->index.init(hdr, frame);
}

// The unwind table of the object whose text holds a, or nullptr.
const UnwindTable* unwind_table(Addr a)
{
   static UnwindTable* last;
   UInt epoch = VG_(current_DiEpoch)().n;
   if (last && last->epoch == epoch && a >= last->text_lo && a < last->text_hi) return last->usable ? last : nullptr;
   const DebugInfo* di = object_info(a);
   Addr lo, hi;
   if (!di || !object_text(a, &lo, &hi) || a < lo || a >= hi) return nullptr;
   const HChar* file = VG_(DebugInfo_get_filename)(di);
   if (!unwind_tables) unwind_tables = VG_(newXA)(VG_(malloc), "kg.unwind", VG_(free), sizeof(UnwindTable));
   for (Word i = 0; i < VG_(sizeXA)(unwind_tables); i++) {
      UnwindTable* t = (UnwindTable*)VG_(indexXA)(unwind_tables, i);
      if (t->text_lo == lo && t->text_hi == hi && VG_STREQ(t->file, file)) {
         t->epoch = epoch;
         last = t;
         return t->usable ? t : nullptr;
      }
   }
   UnwindTable t = { lo, hi, kg::strdup(file), epoch, False, {} };
   t.usable = read_unwind_table(di, &t);
   VG_(addToXA)(unwind_tables, &t);
   last = (UnwindTable*)VG_(indexXA)(unwind_tables, VG_(sizeXA)(unwind_tables) - 1);
   return last->usable ? last : nullptr;
}

} // namespace

Bool unwind_table_function(Addr a, Addr* start)
{
   static Addr last_lo = 1, last_hi = 0;   // the last range found (translations go block by block)
   static UInt last_epoch;
   UInt epoch = VG_(current_DiEpoch)().n;
   if (a >= last_lo && a < last_hi && epoch == last_epoch) {
      *start = last_lo;
      return True;
   }
   const UnwindTable* t = unwind_table(a);
   uint64_t lo, hi;
   if (!t || !t->index.function_at(a, &lo, &hi) || lo < t->text_lo || hi > t->text_hi) return False;
   last_lo = (Addr)lo;
   last_hi = (Addr)hi;
   last_epoch = epoch;
   *start = last_lo;
   return True;
}

} // namespace kg
