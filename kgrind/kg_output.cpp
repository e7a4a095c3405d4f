#include "kg_output.h"
#include "kg_costs.h"
#include "kg_options.h"
#include "kg_version.h"
#include "kg_writer.h"

namespace kg {

namespace {

// callgrind's name compression: "(id) name" on first use, "(id)" afterwards.
class NameCompressor {
public:
   void init(UInt count)
   {
      count_ = count;
      written_ = count ? (Bool*)VG_(calloc)("kg.out", count, sizeof(Bool)) : nullptr;
   }
   void done() { if (written_) VG_(free)(written_); written_ = nullptr; }

   void emit(FileWriter& out, const HChar* key, UInt id, const HChar* name)
   {
      out.printf("%s=(%u)", key, id + 1);
      if (id < count_ && !written_[id]) {
         written_[id] = True;
         out.put_char(' ');
         out.put(name);
      }
      out.put_char('\n');
   }

private:
   UInt count_ = 0;
   Bool* written_ = nullptr;
};

void write_command_line(FileWriter& out)
{
   out.put("cmd: ");
   out.put(VG_(args_the_exename) ? VG_(args_the_exename) : "???");
   for (Word i = 0; i < VG_(sizeXA)(VG_(args_for_client)); i++) {
      out.put_char(' ');
      out.put(*(HChar**)VG_(indexXA)(VG_(args_for_client), i));
   }
   out.put_char('\n');
}

void write_header(FileWriter& out, ULong total)
{
   out.put("# callgrind format\n");
   out.put("version: 1\n");
   out.put("creator: kgrind-" KG_VERSION_STRING "\n");
   out.printf("pid: %d\n", VG_(getpid)());
   write_command_line(out);
   out.put("part: 1\n");
   out.put("\ndesc: Tool: kgrind, a k-calling-context profiler\n");
   out.put("positions: line\n");
   out.put("events: Ir\n");
   out.printf("summary: %llu\n\n", total);
}

// Per function: its lines, grouped by file; lines of other files than the
// function's own (inlined code) go under fi=/fe= as in callgrind.
void write_line_costs(FileWriter& out)
{
   LineCost** costs;
   UWord n = sorted_line_costs(&costs);
   NameCompressor objects, files, fns;
   // The string tables only grow; size the flags by the largest id used.
   UInt max_file = 0, max_object = 0;
   for (UWord i = 0; i < n; i++) {
      if (costs[i]->file > max_file) max_file = costs[i]->file;
      if (costs[i]->fn->file > max_file) max_file = costs[i]->fn->file;
      if (costs[i]->fn->object > max_object) max_object = costs[i]->fn->object;
   }
   objects.init(max_object + 1);
   files.init(max_file + 1);
   fns.init(function_count());

   const FnInfo* fn = nullptr;
   UInt object = 0xFFFFFFFF, file = 0xFFFFFFFF;
   for (UWord i = 0; i < n; i++) {
      const LineCost* cc = costs[i];
      if (cc->ir == 0) continue;
      if (cc->fn != fn) {
         fn = cc->fn;
         if (fn->object != object) {
            object = fn->object;
            objects.emit(out, "ob", object, object_name(object));
         }
         files.emit(out, "fl", fn->file, file_name(fn->file));
         fns.emit(out, "fn", fn->id, fn->name);
         file = fn->file;
      }
      if (cc->file != file) {
         file = cc->file;
         files.emit(out, file == fn->file ? "fe" : "fi", file, file_name(file));
      }
      out.printf("%u %llu\n", cc->line, cc->ir);
   }
   objects.done();
   files.done();
   fns.done();
}

} // namespace

const HChar* output_file_name()
{
   return VG_(expand_file_name)("--kgrind-out-file", clo.out_file);
}

Bool check_output_file(const HChar* path)
{
   FileWriter* out = new FileWriter;
   UWord err = 0;
   Bool ok = out->open(path, &err);
   if (ok) out->close();
   else VG_(umsg)("kgrind: cannot create output file '%s': %s\n", path, errno_text(err));
   delete out;
   return ok;
}

Bool write_profile(const HChar* path)
{
   FileWriter* out = new FileWriter;   // 64 KiB buffer: not on the stack
   UWord err = 0;
   if (!out->open(path, &err)) {
      VG_(umsg)("kgrind: cannot create output file '%s': %s\n", path, errno_text(err));
      delete out;
      return False;
   }
   ULong total = total_ir();
   write_header(*out, total);
   write_line_costs(*out);
   out->printf("\ntotals: %llu\n", total);
   Bool ok = out->close();
   if (!ok) VG_(umsg)("kgrind: error writing output file '%s'\n", path);
   delete out;
   return ok;
}

} // namespace kg
