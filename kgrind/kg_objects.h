// The objects (ELF files) code runs from, as Valgrind's debug information
// describes them: their text and its load bias.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// The address of a's instruction in its object file (the run-time address
// minus the object's text bias), as callgrind writes instruction positions
// and objdump shows them; a itself outside any object's text.
Addr file_address(Addr a);

// The text section [*lo, *hi) of the object holding a; False outside any
// object (JIT code).
Bool object_text(Addr a, Addr* lo, Addr* hi);

// The debug information of the object holding a, also outside its .text
// (.init, .plt.sec, .plt.got, which Valgrind's look-ups by text range miss):
// the object of the file mapping there.
const DebugInfo* object_info(Addr a);

// Data a module keeps per object (an unwind table, inlined functions'
// names), found again by the object's text and file while Valgrind's
// debug-info epoch moves (objects come and go). An entry starts with an
// ObjectEntry.
struct ObjectEntry {
   Addr text_lo, text_hi;
   HChar* file;      // owned copy
   UInt epoch;       // last checked against the object loaded there
   Bool usable;      // what `make` said
};
struct ObjectEntries {
   XArray* entries;  // of ObjectEntry* (made at first use)
   ObjectEntry* last;
   SizeT entry_size;
   const HChar* cost_centre;
   // Fills a new entry of the object di (text and file set), and says
   // whether it is usable.
   Bool (*make)(ObjectEntry* entry, const DebugInfo* di);
};

// The entry of the object whose text holds a, made the first time; nullptr
// outside any object's text or where the entry is not usable.
ObjectEntry* object_entry(ObjectEntries* t, Addr a);

} // namespace kg
