// VEX IR instrumentation of superblocks.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// Before the first translation: the bases of the tool data that inline IR
// addresses (instrument/ir_builder.cpp, data_bases).
void instrument_init();
// Whenever a thread is about to run: puts those bases into its shadow state.
void publish_data_bases(ThreadId tid);

IRSB* instrument(VgCallbackClosure* closure, IRSB* sb_in,
                 const VexGuestLayout* layout, const VexGuestExtents* vge,
                 const VexArchInfo* archinfo, IRType guest_word, IRType host_word);

} // namespace kg
