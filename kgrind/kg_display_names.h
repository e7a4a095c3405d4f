// Functions' names as the profile shows them: qualified where namesakes
// need it.
#pragma once
#include "kg_debuginfo.h"

namespace kg {

// fn's name as the profile shows it: qualified by its object, "name
// [object]", when it has no symbol ("0x1130 [prog]", by offset) or when
// functions of other objects have the same name ("memset [libc.so.6]");
// the object's file name, or its path where file names clash. Namesakes in
// one object (static functions) are qualified by their source files,
// "helper [a.c]", and by their entries where the files are the same too,
// "helper [h.h 0x1139]". Code outside any object (JIT code) keeps its
// address alone: "0x4a5b000".
const HChar* display_name(const FnInfo* fn);

// display_name(fn) as it would be now, without fixing the names of the
// functions the profile has not named yet (display_name does, for dumps):
// kgrind_control's status must not change the profile's names. Valid until
// the next call.
const HChar* current_name(const FnInfo* fn);

} // namespace kg
