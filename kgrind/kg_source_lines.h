// Source lines: (function, file, line) positions, interned once, so that
// costs compare and group them by pointer.
#pragma once
#include "kg_debuginfo.h"

namespace kg {

// A source position of some function: (function, file, line).
struct SourceLine {
   FnInfo* fn;
   UInt file;
   UInt line;
};

// The interned source line for a location.
SourceLine* source_line(const SourceLoc& loc);

// Orders two SourceLine* by function id, file and line (the body's order).
Word compare_lines(UWord a, UWord b);

} // namespace kg
