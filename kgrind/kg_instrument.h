// VEX IR instrumentation of superblocks.
#pragma once
#include "kg_valgrind.h"

namespace kg {

IRSB* instrument(VgCallbackClosure* closure, IRSB* sb_in,
                 const VexGuestLayout* layout, const VexGuestExtents* vge,
                 const VexArchInfo* archinfo, IRType guest_word, IRType host_word);

} // namespace kg
