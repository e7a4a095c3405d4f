#include "kg_display_names.h"
#include "kg_runtime.h"

namespace kg {

namespace {

const HChar* base_name(const HChar* path)
{
   const HChar* slash = VG_(strrchr)(path, '/');
   return slash ? slash + 1 : path;
}

// How many entries of a string table's id range give each string (file
// names of objects).
struct NameCounts {
   WordFM* counts;   // HChar* -> count
   void init() { counts = VG_(newFM)(VG_(malloc), "kg.names", VG_(free), compare_strings); }
   void done() { VG_(deleteFM)(counts, nullptr, nullptr); }
   void add(const HChar* s)
   {
      UWord key, n = 0;
      VG_(lookupFM)(counts, &key, &n, (UWord)s);
      VG_(addToFM)(counts, (UWord)s, n + 1);
   }
   UWord of(const HChar* s) const
   {
      UWord key, n = 0;
      VG_(lookupFM)(counts, &key, &n, (UWord)s);
      return n;
   }
};

const HChar** display_names;   // by function id
UInt n_display_names;

const HChar* object_label(UInt object, const NameCounts& base_names)
{
   const HChar* path = object_name(object);
   return base_names.of(base_name(path)) > 1 ? path : base_name(path);
}

// Functions that agree on a key: the name, then the object, the source
// file's base name, the source file, the C++ constructor or destructor
// variant (each key refines the one before).
enum NamesakeKey { kSameName, kSameObject, kSameFileBase, kSameFile, kSameVariant, kNamesakeKeys };

Int compare_namesakes(const FnInfo* x, const FnInfo* y, NamesakeKey key)
{
   Int c = VG_(strcmp)(x->name, y->name);
   if (c || key == kSameName) return c;
   if (x->object != y->object) return x->object < y->object ? -1 : 1;
   if (key == kSameObject) return 0;
   if (x->file != y->file) {
      c = VG_(strcmp)(base_name(file_name(x->file)), base_name(file_name(y->file)));
      if (c || key == kSameFileBase) return c;
      return x->file < y->file ? -1 : 1;
   }
   if (key < kSameVariant) return 0;
   return VG_(strcmp)(x->structor, y->structor);
}

Int namesakes_order(const void* a, const void* b)
{
   return compare_namesakes(*(FnInfo* const*)a, *(FnInfo* const*)b, kSameVariant);
}

// How many functions agree with one on each key.
typedef UInt NamesakeSizes[kNamesakeKeys];

// What the Itanium C++ ABI calls a constructor's or destructor's variant:
// "complete", "base", "allocating" (constructors), "deleting"
// (destructors); its code for the others ("C4"); "" for other functions.
const HChar* variant_word(const FnInfo* fn)
{
   static const struct { const HChar* code; const HChar* word; } kWords[] = {
      { "C1", "complete" }, { "C2", "base" }, { "C3", "allocating" },
      { "D0", "deleting" }, { "D1", "complete" }, { "D2", "base" },
   };
   for (const auto& w : kWords)
      if (VG_STREQ(fn->structor, w.code)) return w.word;
   return fn->structor;
}

// "name [object] [file variant entry]", each part only where namesakes need it (see
// display_name); nullptr where the name alone is unique.
const HChar* qualified_name(const FnInfo* fn, const NamesakeSizes& same, const NameCounts& base_names)
{
   // Code outside any object (JIT code) is named by its address alone.
   Bool by_object = same[kSameName] > same[kSameObject] || ((fn->no_symbol || fn->by_address) && fn->object != 0);
   Bool by_file = same[kSameObject] > 1;
   if (!by_object && !by_file) return nullptr;
   const HChar* object = by_object ? object_label(fn->object, base_names) : "";
   const HChar* file = "";
   if (by_file && fn->file != 0)
      file = same[kSameFileBase] == same[kSameFile] ? base_name(file_name(fn->file)) : file_name(fn->file);
   // The same file too (a static function of a header, a C++ deleting
   // destructor next to the complete one, no line information): a
   // constructor's or destructor's variant tells them apart ("deleting"),
   // else the entry.
   Bool same_file = fn->file == 0 || same[kSameFile] > 1;
   const HChar* variant = by_file && same_file && same[kSameVariant] < same[kSameFile] ? variant_word(fn) : "";
   Bool by_entry = by_file && same_file && !variant[0];
   HChar* q = (HChar*)kg::alloc(VG_(strlen)(fn->name) + VG_(strlen)(object) + VG_(strlen)(file) + 40);
   HChar* end = q + VG_(sprintf)(q, "%s", fn->name);
   if (by_object) end += VG_(sprintf)(end, " [%s]", object);
   if (by_file) {
      end += VG_(sprintf)(end, " [%s", file);
      if (variant[0]) end += VG_(sprintf)(end, "%s%s", file[0] ? " " : "", variant);
      if (by_entry || (variant[0] && same[kSameVariant] > 1))
         end += VG_(sprintf)(end, "%s0x%lx", file[0] || variant[0] ? " " : "", fn->entry);
      VG_(sprintf)(end, "]");
   }
   return q;
}

// Names the functions of sorted[lo, hi) not named yet, which agree on the
// keys before `key` (same[k] of them for each such key k).
void name_namesakes(FnInfo** sorted, UInt lo, UInt hi, UInt key, NamesakeSizes& same,
                    const NameCounts& base_names)
{
   if (key == kNamesakeKeys) {
      for (UInt i = lo; i < hi; i++) {
         if (sorted[i]->id < n_display_names) continue;   // named before (dumps)
         const HChar* q = qualified_name(sorted[i], same, base_names);
         display_names[sorted[i]->id] = q ? q : sorted[i]->name;
      }
      return;
   }
   for (UInt a = lo; a < hi;) {
      UInt b = a + 1;
      while (b < hi && compare_namesakes(sorted[a], sorted[b], (NamesakeKey)key) == 0) b++;
      same[key] = b - a;
      name_namesakes(sorted, a, b, key + 1, same, base_names);
      a = b;
   }
}

void name_functions()
{
   NameCounts base_names;
   base_names.init();
   for (UInt i = 0; i < object_count(); i++) base_names.add(base_name(object_name(i)));
   // Names already written keep their form: the files of a run with dumps
   // (docs/regions.md) name a function alike, so that they join by name. A
   // namesake found later is the one qualified.
   UInt n = function_count();
   const HChar** given = display_names;
   display_names = (const HChar**)kg::alloc((n + 1) * sizeof(HChar*));
   if (n_display_names) VG_(memcpy)(display_names, given, n_display_names * sizeof(HChar*));
   kg::release(given);
   // Namesakes are neighbours in this order.
   FnInfo** sorted = (FnInfo**)kg::alloc((n + 1) * sizeof(FnInfo*));
   for (UInt i = 0; i < n; i++) sorted[i] = function_by_id(i);
   VG_(ssort)(sorted, n, sizeof(FnInfo*), namesakes_order);
   NamesakeSizes same;
   name_namesakes(sorted, 0, n, kSameName, same, base_names);
   kg::release(sorted);
   n_display_names = n;
   base_names.done();
}

} // namespace

const HChar* display_name(const FnInfo* fn)
{
   // Computed for all functions at once (at output: no function is added
   // after that but call sites' own), again when one was added.
   if (fn->id >= n_display_names) name_functions();
   return display_names[fn->id];
}

const HChar* current_name(const FnInfo* fn)
{
   if (fn->id < n_display_names) return display_names[fn->id];
   NamesakeSizes same = {};
   for (UInt i = 0; i < function_count(); i++) {
      UInt key = kSameName;
      while (key < kNamesakeKeys && compare_namesakes(fn, function_by_id(i), (NamesakeKey)key) == 0) same[key++]++;
   }
   NameCounts base_names;
   base_names.init();
   for (UInt i = 0; i < object_count(); i++) base_names.add(base_name(object_name(i)));
   static const HChar* last;   // the previous answer
   kg::release((void*)last);
   last = qualified_name(fn, same, base_names);
   base_names.done();
   return last ? last : fn->name;
}

} // namespace kg
