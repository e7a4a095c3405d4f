#include "kg_blocks.h"
#include "kg_options.h"
#include "kg_runtime.h"
#include "kg_writer.h"

namespace kg {

extern "C" {
UWord* kg_trace_pos;
}

namespace {

WordFM* by_addr;      // Addr -> BBInfo*
WordFM* return_sites; // Addr (the instruction after a call) -> 1
XArray* by_label;     // label -> BBInfo*
FileWriter* dump;
UWord* trace_buffer;

void* core_alloc(void*, size_t n) { return kg::alloc(n, "kg.blockforest"); }
void core_free(void*, void* p) { kg::release(p); }

const HChar* base_name(const HChar* path)
{
   const HChar* b = path;
   for (const HChar* p = path; *p; p++)
      if (*p == '/') b = p + 1;
   return b;
}

// The "+N" VG_(get_fnname_w_offset) appends to a symbol (none at offset 0).
UInt symbol_offset(Addr a)
{
   const HChar* s = nullptr;
   if (!VG_(get_fnname_w_offset)(VG_(current_DiEpoch)(), a, &s) || !s) return 0;
   SizeT n = VG_(strlen)(s);
   SizeT i = n;
   while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') i--;
   if (i == n || i == 0 || s[i - 1] != '+') return 0;
   return (UInt)VG_(strtoll10)(s + i, nullptr);
}

} // namespace

void blocks_init()
{
   by_addr = VG_(newFM)(VG_(malloc), "kg.blocks", VG_(free), nullptr);
   return_sites = VG_(newFM)(VG_(malloc), "kg.blocks", VG_(free), nullptr);
   by_label = VG_(newXA)(VG_(malloc), "kg.blocks", VG_(free), sizeof(BBInfo*));
   BBInfo* root = (BBInfo*)alloc_zeroed(sizeof(BBInfo));
   root->name = "__root__";
   VG_(addToXA)(by_label, &root);
   trace_buffer = (UWord*)alloc_permanent(kTraceBytes, kTraceBytes);   // see kTraceBytes
   kg_trace_pos = trace_buffer;
}

UWord* trace_start() { return trace_buffer; }

BBInfo* block_at(Addr addr, const SourceLoc& loc)
{
   UWord key, val;
   if (VG_(lookupFM)(by_addr, &key, &val, (UWord)addr)) return (BBInfo*)val;
   BBInfo* b = (BBInfo*)alloc_permanent(sizeof(BBInfo));
   b->label = (UInt)VG_(sizeXA)(by_label);
   b->addr = addr;
   b->fn = loc.fn;
   b->file = loc.file;
   b->line = loc.line;
   b->offset = symbol_offset(addr);
   HChar buf[512];
   // A block of a split part (f.cold) is its function's, named after the
   // part its offset is in.
   const HChar* symbol = (loc.part ? loc.part : loc.fn)->name;
   if (loc.file && loc.line)
      VG_(snprintf)(buf, sizeof buf, "{%s+%u at %s:%u}", symbol, b->offset, base_name(file_name(loc.file)), loc.line);
   else
      VG_(snprintf)(buf, sizeof buf, "{%s+%u at ??}", symbol, b->offset);
   b->name = kg::strdup(buf);
   VG_(addToXA)(by_label, &b);
   VG_(addToFM)(by_addr, (UWord)addr, (UWord)b);
   return b;
}

void note_return_site(Addr addr)
{
   if (!VG_(lookupFM)(return_sites, nullptr, nullptr, (UWord)addr)) VG_(addToFM)(return_sites, (UWord)addr, 1);
}

Bool is_return_site(Addr addr) { return VG_(lookupFM)(return_sites, nullptr, nullptr, (UWord)addr); }

UInt block_count() { return by_label ? (UInt)VG_(sizeXA)(by_label) : 0; }
BBInfo* block_by_label(UInt label) { return *(BBInfo**)VG_(indexXA)(by_label, label); }

namespace {

// The state of activation a (created on first use).
BlockState* intern(BlockForest* f, const Activation& a)
{
   if (BlockState* st = f->states.find(a.top, a.bottom)) return st;
   BlockState* st = (BlockState*)alloc_permanent(sizeof(BlockState), alignof(BlockState));
   st->top = a.top;
   st->bottom = a.bottom;
   st->canonical = core::Forest::canonical(a);
   st->phase = a.phase;
   st->depth = a.depth;
   f->states.insert(st);
   return st;
}

Activation activation_of(const BlockState* s)
{
   return { s->top, s->bottom, s->depth, s->phase };
}

} // namespace

BlockForest* block_forest_new(FnInfo* fn, UInt tid, UInt root_label)
{
   BlockForest* f = (BlockForest*)alloc_zeroed(sizeof(BlockForest));
   core::Allocator al = { nullptr, core_alloc, core_free, false };
   // Block forests never roll simple recursion (a one-block loop is a chain,
   // Def. 7); --roll-loops uses enter_loop instead. Intra mode has a forest
   // per function, each with a few of the program's block labels: its
   // trees are found by hashing (a direct array indexed by block label cost
   // up to 128 KB a function), and its nodes start in a small chunk.
   f->forest.sf.init(al, clo.k, root_label, fn ? core::Forest::kSparseRoots | core::Forest::kSmallPool : 0);
   f->fn = fn;
   f->tid = tid;
   f->root = intern(f, { f->forest.sf.first_tree(), nullptr, 0, 0 });
   return f;
}

BlockState* enter_block_root(BlockForest* f)
{
   f->forest.sf.enter_root();
   return f->root;
}

BlockState* step_block_slow(BlockForest* f, BlockState* s, UInt label, UWord n)
{
   core::Forest& sf = f->forest.sf;
   Activation from = activation_of(s);
   Activation to = clo.roll_loops ? sf.enter_loop(from, label) : sf.enter(from, label);
   core::Forest::canonical(to)->excl += n;
   block_by_label(label)->count++;
   BlockState* next = intern(f, to);
   s->older[1] = s->older[0];
   s->older[0] = s->step;
   s->step = { label, next };
   return next;
}

void settle_block_states(BlockForest* f)
{
   f->states.for_each([](BlockState* s) {
      if (!s->runs && !s->ir) return;
      s->top->calls += s->runs;
      if (s->bottom) s->bottom->calls += s->runs;
      s->canonical->excl += s->ir;
      block_by_label(s->top->label)->count += s->runs;
      s->runs = s->ir = 0;
   });
}

void dump_open()
{
   if (!clo.dump_blocks) return;
   const HChar* path = VG_(expand_file_name)("--dump-blocks", clo.dump_blocks);
   dump = new FileWriter;
   const HChar* why = nullptr;
   if (!dump->open(path, &why)) {
      VG_(umsg)("kgrind: cannot create dump file '%s': %s\n", path, why);
      delete dump;
      dump = nullptr;
      return;
   }
   dump->printf("# kgrind block dump: mode=%s roll-loops=%s\n",
                clo.mode == kModeIntra ? "intra" : "inter", clo.roll_loops ? "yes" : "no");
   dump->put("# <thread> <activation> <function id> <block label> <block name>\n");
}

void dump_block(UInt tid, ULong activation, UInt fn_label, const BBInfo* b)
{
   if (!dump) return;
   dump->printf("%u %llu %u %u ", tid, activation, fn_label, b->label);
   dump->put_escaped(b->name);
   dump->put_char('\n');
}

void dump_close()
{
   if (!dump) return;
   if (!dump->close()) VG_(umsg)("kgrind: error writing the block dump: %s\n", dump->write_error());
   delete dump;
   dump = nullptr;
}

void dump_disable()
{
   // The parent owns the file; the child's buffer is dropped.
   if (dump) delete dump;
   dump = nullptr;
}

} // namespace kg
