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

} // namespace kg
