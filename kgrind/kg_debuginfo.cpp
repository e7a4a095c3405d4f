#include "kg_debuginfo.h"
#include "kg_options.h"
#include "kg_runtime.h"

namespace kg {

namespace {

const HChar kUnknown[] = "???";

// A string table: interned copies with dense ids.
struct StringTable {
   WordFM* index;      // HChar* -> id
   XArray* names;      // id -> HChar*
};

Word compare_strings(UWord a, UWord b)
{
   return VG_(strcmp)((const HChar*)a, (const HChar*)b);
}

void table_init(StringTable* t, const HChar* cc)
{
   t->index = VG_(newFM)(VG_(malloc), cc, VG_(free), compare_strings);
   t->names = VG_(newXA)(VG_(malloc), cc, VG_(free), sizeof(HChar*));
}

UInt table_intern(StringTable* t, const HChar* s)
{
   UWord key, id;
   if (VG_(lookupFM)(t->index, &key, &id, (UWord)s)) return (UInt)id;
   HChar* copy = kg::strdup(s);
   id = (UWord)VG_(sizeXA)(t->names);
   VG_(addToXA)(t->names, &copy);
   VG_(addToFM)(t->index, (UWord)copy, id);
   return (UInt)id;
}

const HChar* table_name(const StringTable* t, UInt id)
{
   return *(HChar**)VG_(indexXA)(t->names, id);
}

Word compare_functions(UWord a, UWord b)
{
   const FnInfo* x = (const FnInfo*)a;
   const FnInfo* y = (const FnInfo*)b;
   if (x->object != y->object) return x->object < y->object ? -1 : 1;
   return VG_(strcmp)(x->name, y->name);
}

StringTable files, objects, fn_names;
WordFM* fn_index;     // FnInfo* (key: object, name) -> FnInfo*
XArray* fn_list;      // id -> FnInfo*

} // namespace

void debuginfo_init()
{
   table_init(&files, "kg.files");
   table_init(&objects, "kg.objects");
   table_init(&fn_names, "kg.fnnames");
   fn_index = VG_(newFM)(VG_(malloc), "kg.fns", VG_(free), compare_functions);
   fn_list = VG_(newXA)(VG_(malloc), "kg.fns", VG_(free), sizeof(FnInfo*));
   table_intern(&files, kUnknown);      // file id 0 is "???"
   table_intern(&objects, kUnknown);    // object id 0 is "???"
}

UInt intern_file(const HChar* path) { return table_intern(&files, path); }
const HChar* file_name(UInt id) { return table_name(&files, id); }
const HChar* object_name(UInt id) { return table_name(&objects, id); }
UInt file_count() { return (UInt)VG_(sizeXA)(files.names); }
UInt object_count() { return (UInt)VG_(sizeXA)(objects.names); }
UInt function_count() { return (UInt)VG_(sizeXA)(fn_list); }
FnInfo* function_by_id(UInt id) { return *(FnInfo**)VG_(indexXA)(fn_list, id); }

// Block modes without --funcs trace the functions of the main executable: the
// object that is the same file (device and inode) as VG_(args_the_exename).
static Bool object_is_main(UInt object)
{
   static UChar* known;      // per object id: 0 unknown, 1 main, 2 other
   static UInt n_known;
   static struct vg_stat exe;
   static Int exe_state;     // 0 not looked up, 1 found, 2 not found
   if (object == 0) return False;
   if (exe_state == 0) {
      const HChar* name = VG_(args_the_exename);
      exe_state = name && !sr_isError(VG_(stat)(name, &exe)) ? 1 : 2;
   }
   if (object >= n_known) {
      UInt n = n_known ? n_known : 16;
      while (n <= object) n *= 2;
      UChar* bigger = (UChar*)alloc_zeroed(n);
      if (n_known) VG_(memcpy)(bigger, known, n_known);
      kg::release(known);
      known = bigger;
      n_known = n;
   }
   if (!known[object]) {
      Bool same = False;
      struct vg_stat st;
      if (exe_state == 1 && !sr_isError(VG_(stat)(object_name(object), &st)))
         same = st.dev == exe.dev && st.ino == exe.ino;
      else if (exe_state == 2 && VG_(args_the_exename))
         same = VG_STREQ(object_name(object), VG_(args_the_exename));
      known[object] = same ? 1 : 2;
   }
   return known[object] == 1;
}

static FnInfo* intern_function(const HChar* name, UInt object, UInt file, Bool no_symbol)
{
   FnInfo probe = { 0, name, object, 0 };
   UWord key, val;
   if (VG_(lookupFM)(fn_index, &key, &val, (UWord)&probe)) return (FnInfo*)val;
   FnInfo* fn = (FnInfo*)alloc_permanent(sizeof(FnInfo));
   fn->id = function_count();
   fn->name = table_name(&fn_names, table_intern(&fn_names, name));
   fn->object = object;
   fn->file = file;
   fn->no_symbol = no_symbol;
   fn->resolver = VG_(strncmp)(fn->name, "_dl_runtime_resolve", 19) == 0;
   fn->context_start = VG_STREQ(fn->name, "__start_context");
   fn->traced = block_mode() && clo.n_func_patterns == 0 ? object_is_main(object)
                                                         : name_is_traced(fn->name);
   VG_(addToXA)(fn_list, &fn);
   VG_(addToFM)(fn_index, (UWord)fn, (UWord)fn);
   return fn;
}

FnInfo* function_named_by_address(Addr entry, const FnInfo* like)
{
   HChar name[32];
   VG_(sprintf)(name, "0x%lx", entry);
   return intern_function(name, like->object, like->file, True);
}

void warn_unmatched_patterns()
{
   const HChar* unmatched[kMaxFuncPatterns];
   UInt n = unmatched_patterns(unmatched, kMaxFuncPatterns);
   for (UInt i = 0; i < n; i++)
      VG_(umsg)("Warning: --funcs pattern '%s' matched no function that ran\n", unmatched[i]);
}

void source_loc(Addr a, SourceLoc* out)
{
   DiEpoch ep = VG_(current_DiEpoch)();
   const HChar* file = nullptr;
   const HChar* dir = nullptr;
   UInt line = 0;
   out->file = 0;
   out->line = 0;
   if (VG_(get_filename_linenum)(ep, a, &file, &dir, &line)) {
      if (dir && dir[0]) {
         // Full path, as cachegrind and callgrind print it.
         SizeT n = VG_(strlen)(dir) + VG_(strlen)(file) + 2;
         HChar* path = (HChar*)kg::alloc(n);
         VG_(sprintf)(path, "%s/%s", dir, file);
         out->file = intern_file(path);
         kg::release(path);
      } else {
         out->file = intern_file(file);
      }
      out->line = line;
   }
   const HChar* obj = nullptr;
   UInt object = 0;
   if (VG_(get_objname)(ep, a, &obj) && obj && obj[0])
      object = table_intern(&objects, obj);
   // get_fnname's result lives until the next call: intern before reuse.
   const HChar* fnname = nullptr;
   Bool no_symbol = !VG_(get_fnname)(ep, a, &fnname) || !fnname || !fnname[0];
   if (no_symbol) fnname = kUnknown;
   out->fn = intern_function(fnname, object, out->file, no_symbol);
}

} // namespace kg

namespace kg {

Addr file_address(Addr a)
{
   // Consecutive lookups are mostly in the same object: remember its text.
   static Addr lo = 1, hi = 0;
   static PtrdiffT bias = 0;
   if (a >= lo && a < hi) return a - bias;
   DebugInfo* di = VG_(find_DebugInfo)(VG_(current_DiEpoch)(), a);
   if (!di) return a;
   lo = VG_(DebugInfo_get_text_avma)(di);
   hi = lo + VG_(DebugInfo_get_text_size)(di);
   bias = VG_(DebugInfo_get_text_bias)(di);
   return a - bias;
}

} // namespace kg
