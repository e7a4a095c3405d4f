// Cost centres: instruction counts per (function, source file, line).
#pragma once
#include "kg_debuginfo.h"

namespace kg {

struct LineCost {
   FnInfo* fn;
   UInt file;
   UInt line;
   ULong ir;            // incremented by instrumented code (never moves)
};

void costs_init();

// The cost centre for (fn, file, line), created on first use.
LineCost* line_cost(const SourceLoc& loc);

// All cost centres, sorted by function id, file, line (for output).
// Returns the number of entries; *out is valid until the next call.
UWord sorted_line_costs(LineCost*** out);

ULong total_ir();

// After fork, the child counts only what it runs itself.
void reset_costs();

} // namespace kg
