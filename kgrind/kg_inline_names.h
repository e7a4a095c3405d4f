// Inlined functions' names as their users know them (--inline-frames):
// std::map<int, int, ...>::find(int const&), where Valgrind's inline records
// say `find` (the DWARF DW_AT_name only). Read from the object's own debug
// info (core/dwarf_inlines.h): its DW_TAG_inlined_subroutine DIEs, their
// abstract origins' linkage names (demangled by Valgrind's demangler, as
// symbols are) or, without one, the namespaces and classes around the name;
// as llvm-symbolizer --inlining and addr2line -i -f -C name inlined frames.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// The qualified names of the n inlined levels at instruction a, innermost
// first, whose short names (Valgrind's) are short_names[0..n), into
// qualified[0..n) (valid for the run). False where the object's debug info
// is not read (too large sections, compressed ones that do not inflate or
// not with zlib, a DWARF form the reader does not know, no debug file found;
// a level Valgrind names UnknownInlinedFun matches any name) or its inlined instances at a are not the n
// levels given: then the levels have their short names only.
Bool qualified_inline_names(Addr a, UInt n, const HChar* const* short_names, const HChar** qualified);

} // namespace kg
