// Short function names: a demangled C++ name without its parameter list,
// return type and trailing qualifiers, each template argument list
// collapsed to "<...>", the rules of kgrind_annotate's --names=short
// (perl/lib/KGrind/Names.pm):
//   std::vector<int, std::allocator<int> >::push_back(int const&) -> std::vector<...>::push_back
//   Shape::area() const -> Shape::area      f(int) [libx.so] -> f [libx.so]
// Names without '(' or '<' (C functions, "0x1139 [prog]") are unchanged, and
// so are names whose brackets do not balance.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// The short form of `name`, allocated (kg::release it).
HChar* short_name(const HChar* name);

} // namespace kg
