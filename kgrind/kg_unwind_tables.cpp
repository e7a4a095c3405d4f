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
   ObjectEntry object;
   core::EhFrameIndex index;
};

// The index of the object's .eh_frame_hdr and .eh_frame as mapped, if they
// are: PT_GNU_EH_FRAME from the file's program headers, placed by the
// object's bias.
Bool read_unwind_table(ObjectEntry* entry, const DebugInfo* di)
{
   UnwindTable* t = (UnwindTable*)entry;
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

// The unwind tables, by object.
ObjectEntries unwind_tables = { nullptr, nullptr, sizeof(UnwindTable), "kg.unwind", read_unwind_table };

// The unwind table of the object whose text holds a, or nullptr.
const UnwindTable* unwind_table(Addr a)
{
   return (const UnwindTable*)object_entry(&unwind_tables, a);
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
   if (!t || !t->index.function_at(a, &lo, &hi) || lo < t->object.text_lo || hi > t->object.text_hi) return False;
   last_lo = (Addr)lo;
   last_hi = (Addr)hi;
   last_epoch = epoch;
   *start = last_lo;
   return True;
}

} // namespace kg
