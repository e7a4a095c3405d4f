#include "kg_costs.h"
#include "kg_runtime.h"

namespace kg {

namespace {

WordFM* cost_index;   // LineCost* (key: fn, file, line) -> LineCost*
XArray* cost_list;    // LineCost*

Word compare_costs(UWord a, UWord b)
{
   const LineCost* x = (const LineCost*)a;
   const LineCost* y = (const LineCost*)b;
   if (x->fn->id != y->fn->id) return x->fn->id < y->fn->id ? -1 : 1;
   if (x->file != y->file) return x->file < y->file ? -1 : 1;
   if (x->line != y->line) return x->line < y->line ? -1 : 1;
   return 0;
}

Int compare_cost_ptrs(const void* a, const void* b)
{
   return (Int)compare_costs(*(const UWord*)a, *(const UWord*)b);
}

} // namespace

void costs_init()
{
   cost_index = VG_(newFM)(VG_(malloc), "kg.costs", VG_(free), compare_costs);
   cost_list = VG_(newXA)(VG_(malloc), "kg.costs", VG_(free), sizeof(LineCost*));
}

LineCost* line_cost(const SourceLoc& loc)
{
   LineCost probe = { loc.fn, loc.file, loc.line, 0 };
   UWord key, val;
   if (VG_(lookupFM)(cost_index, &key, &val, (UWord)&probe)) return (LineCost*)val;
   LineCost* cc = (LineCost*)kg::alloc(sizeof(LineCost));
   *cc = probe;
   VG_(addToXA)(cost_list, &cc);
   VG_(addToFM)(cost_index, (UWord)cc, (UWord)cc);
   return cc;
}

UWord sorted_line_costs(LineCost*** out)
{
   VG_(setCmpFnXA)(cost_list, compare_cost_ptrs);
   VG_(sortXA)(cost_list);
   UWord n = (UWord)VG_(sizeXA)(cost_list);
   *out = n ? (LineCost**)VG_(indexXA)(cost_list, 0) : nullptr;
   return n;
}

ULong total_ir()
{
   ULong sum = 0;
   for (Word i = 0; i < VG_(sizeXA)(cost_list); i++)
      sum += (*(LineCost**)VG_(indexXA)(cost_list, i))->ir;
   return sum;
}

void reset_costs()
{
   for (Word i = 0; i < VG_(sizeXA)(cost_list); i++)
      (*(LineCost**)VG_(indexXA)(cost_list, i))->ir = 0;
}

} // namespace kg
