#include "kg_source_lines.h"
#include "kg_pairmap.h"
#include "kg_runtime.h"

namespace kg {

namespace {

// Interned source lines, keyed by (fn, file and line in one word).
struct SourceLineKeys {
   static const void* a(const SourceLine* l) { return l->fn; }
   static const void* b(const SourceLine* l) { return (const void*)((UWord)l->file << 32 | l->line); }
};
PairIndex<SourceLine, SourceLineKeys> lines;

} // namespace

Word compare_lines(UWord a, UWord b)
{
   const SourceLine* x = (const SourceLine*)a;
   const SourceLine* y = (const SourceLine*)b;
   if (x->fn->id != y->fn->id) return x->fn->id < y->fn->id ? -1 : 1;
   if (x->file != y->file) return x->file < y->file ? -1 : 1;
   if (x->line != y->line) return x->line < y->line ? -1 : 1;
   return 0;
}

SourceLine* source_line(const SourceLoc& loc)
{
   SourceLine probe = { loc.fn, loc.file, loc.line };
   SourceLine* sl = lines.find(SourceLineKeys::a(&probe), SourceLineKeys::b(&probe));
   if (sl) return sl;
   sl = (SourceLine*)alloc_permanent(sizeof(SourceLine));
   *sl = probe;
   lines.insert(sl);
   return sl;
}

} // namespace kg
