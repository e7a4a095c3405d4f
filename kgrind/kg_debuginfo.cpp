#include "kg_debuginfo.h"
#include "kg_options.h"
#include "kg_runtime.h"
#include "core/eh_frame.h"

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
   if (x->entry != y->entry) return x->entry < y->entry ? -1 : 1;
   return VG_(strcmp)(x->name, y->name);
}

StringTable files, objects, fn_names;
WordFM* fn_index;     // FnInfo* (key: object, entry, name) -> FnInfo*
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

// A source file by debug info's directory and name: the full path, as
// cachegrind and callgrind print it.
static UInt intern_source_path(const HChar* dir, const HChar* file)
{
   if (!dir || !dir[0]) return intern_file(file);
   SizeT n = VG_(strlen)(dir) + VG_(strlen)(file) + 2;
   HChar* path = (HChar*)kg::alloc(n);
   VG_(sprintf)(path, "%s/%s", dir, file);
   UInt id = intern_file(path);
   kg::release(path);
   return id;
}

// The source file of a function's entry: the file readers show the function
// in, as callgrind binds a function to the file of the first block it runs,
// normally its entry. The first address kgrind looks up in a function need
// not be its entry (libc's memchr resolver: memchr.c at +36, ifunc-evex.h
// at the entry).
static UInt entry_file(Addr entry, Addr a, UInt file_at_a)
{
   const HChar* file = nullptr;
   const HChar* dir = nullptr;
   UInt line = 0;
   if (entry == a || !VG_(get_filename_linenum)(VG_(current_DiEpoch)(), entry, &file, &dir, &line))
      return file_at_a;
   return intern_source_path(dir, file);
}

// Skips an Itanium-ABI <source-name> (a length, then that many characters)
// at *p; False if there is none.
static Bool skip_source_name(const HChar** p)
{
   if (**p < '0' || **p > '9') return False;
   ULong n = 0;
   while (**p >= '0' && **p <= '9') n = n * 10 + (ULong)(*(*p)++ - '0');
   for (; n && **p; n--) (*p)++;
   return n == 0;
}

// Skips a template's arguments at *p (after its 'I'): up to the 'E' that
// closes them, where names, literals and expressions open and close too.
static Bool skip_template_args(const HChar** p)
{
   for (UInt depth = 1; **p;) {
      HChar c = **p;
      if (c >= '0' && c <= '9') { if (!skip_source_name(p)) return False; continue; }
      (*p)++;
      if (c == 'I' || c == 'N' || c == 'L' || c == 'X') depth++;
      else if (c == 'E' && --depth == 0) return True;
   }
   return False;
}

// The constructor or destructor variant ("C1", "D0", ...) of a mangled
// nested name (_ZN ... C1E ...), or False: its components are read in turn,
// so that a class named like a variant is not one.
static Bool structor_variant(const HChar* mangled, HChar out[3])
{
   if (VG_(strncmp)(mangled, "_ZN", 3) != 0) return False;
   const HChar* p = mangled + 3;
   while (*p == 'r' || *p == 'V' || *p == 'K' || *p == 'R' || *p == 'O') p++;   // qualifiers
   while (*p && *p != 'E') {
      if ((*p == 'C' || *p == 'D') && p[1] >= '0' && p[1] <= '5') {
         out[0] = p[0];
         out[1] = p[1];
         out[2] = 0;
         return True;
      }
      if (*p >= '0' && *p <= '9') { if (!skip_source_name(&p)) return False; }
      else if (*p == 'I') { p++; if (!skip_template_args(&p)) return False; }
      else if (*p == 'B') { p++; if (!skip_source_name(&p)) return False; }   // ABI tag
      else if (*p == 'S') {   // a substitution: St, Sa, ... or S<seq-id>_
         p++;
         if (*p >= 'a' && *p <= 'z') p++;
         else { while (*p && *p != '_') p++; if (*p) p++; }
      }
      else return False;
   }
   return False;
}

// The core's switch for demangling (Valgrind's --demangle), which the tool
// API has no call for: turned off around one look-up, the symbol's name
// comes back mangled.
extern "C" Bool VG_(clo_demangle);

// The variant of the C++ constructor or destructor whose symbol starts at
// run-time address entry (out: "" if it is none): only for names that may
// be one (a "::" in them), one look-up more each.
static void find_structor_variant(const HChar* name, Addr entry, HChar out[3])
{
   out[0] = 0;
   if (!VG_(strstr)(name, "::")) return;
   Bool demangle = VG_(clo_demangle);
   VG_(clo_demangle) = False;
   const HChar* mangled = nullptr;
   if (VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), entry, &mangled) && mangled)
      structor_variant(mangled, out);
   VG_(clo_demangle) = demangle;
}

// The function found at address at, a run-time address of it (0: none, as
// for names made from addresses), whose symbol starts at entry.
static FnInfo* intern_function(const HChar* name, UInt object, UInt file, Bool no_symbol, Addr at = 0,
                               Addr entry = 0, Bool by_address = False)
{
   FnInfo probe = {};
   probe.name = name;
   probe.object = object;
   probe.entry = no_symbol ? 0 : file_address(entry);
   UWord key, val;
   if (VG_(lookupFM)(fn_index, &key, &val, (UWord)&probe)) return (FnInfo*)val;
   FnInfo* fn = (FnInfo*)alloc_permanent(sizeof(FnInfo));
   fn->id = function_count();
   fn->name = table_name(&fn_names, table_intern(&fn_names, name));
   fn->object = object;
   fn->entry = probe.entry;
   fn->file = at && !no_symbol ? entry_file(entry, at, file) : file;
   fn->no_symbol = no_symbol;
   fn->by_address = by_address;
   fn->resolver = VG_(strncmp)(fn->name, "_dl_runtime_resolve", 19) == 0;
   fn->context_start = VG_STREQ(fn->name, "__start_context");
   fn->context_set = VG_STREQ(fn->name, "setcontext") || VG_STREQ(fn->name, "__setcontext");
   fn->stack_segment = VG_STREQ(fn->name, "__morestack");
   fn->array_counters = 0;
   fn->structor[0] = 0;
   if (at && !no_symbol) find_structor_variant(fn->name, entry, fn->structor);
   fn->traced = block_mode() && clo.n_func_patterns == 0 ? object_is_main(object)
                                                         : name_is_traced(fn->name);
   VG_(addToXA)(fn_list, &fn);
   VG_(addToFM)(fn_index, (UWord)fn, (UWord)fn);
   return fn;
}

// A function without a symbol (from the unwind tables, or called code
// without them) is named by its entry's offset in its object, as objdump
// and addr2line take it; valid until the next call.
static const HChar* address_name(Addr entry)
{
   static HChar name[32];
   VG_(sprintf)(name, "0x%lx", file_address(entry));
   return name;
}

FnInfo* function_named_by_address(Addr entry, const FnInfo* like)
{
   // By offset in its object, as objdump and addr2line take it (the same
   // in every run, whatever the load address); output qualifies it by the
   // object (display_name).
   return intern_function(address_name(entry), like->object, like->file, True, 0, 0, True);
}

// n bytes of client code at a can be read.
static Bool readable_code(Addr a, SizeT n)
{
   return VG_(am_is_valid_for_client)(a, n, VKI_PROT_READ);
}

// The GOT slot that an `[endbr64] [bnd] jmp *slot(%rip)` at a jumps
// through, or 0.
static Addr stub_slot(Addr a)
{
   static const UChar kEndbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
   if (readable_code(a, 4) && VG_(memcmp)((const void*)a, kEndbr64, 4) == 0) a += 4;
   if (readable_code(a, 1) && *(const UChar*)a == 0xf2) a++;   // bnd
   if (!readable_code(a, 6)) return 0;
   const UChar* p = (const UChar*)a;
   if (p[0] != 0xff || p[1] != 0x25) return 0;
   Int disp;
   VG_(memcpy)(&disp, p + 2, sizeof disp);
   return a + 6 + (Addr)(Long)disp;
}

Bool is_sigreturn_code(Addr a)
{
   static const UChar kRtSigreturn[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
   return readable_code(a, sizeof kRtSigreturn) && VG_(memcmp)((const void*)a, kRtSigreturn, sizeof kRtSigreturn) == 0;
}

Bool is_plt_stub(Addr a)
{
   if (VG_(DebugInfo_sect_kind)(nullptr, a) == Vg_SectPLT) return True;
   SourceLoc loc;
   source_loc(a, &loc);
   if (!loc.fn->no_symbol) return False;
   Addr slot = stub_slot(a);
   if (!slot) return False;
   // Not a jump through a program's own function pointer (in .data, .bss).
   VgSectKind kind = VG_(DebugInfo_sect_kind)(nullptr, slot);
   return kind == Vg_SectGOT || kind == Vg_SectGOTPLT || kind == Vg_SectUnknown;
}

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

void warn_unmatched_patterns()
{
   const HChar* unmatched[kMaxFuncPatterns];
   UInt n = unmatched_patterns(unmatched, kMaxFuncPatterns);
   for (UInt i = 0; i < n; i++)
      VG_(umsg)("Warning: --funcs pattern '%s' matched no function that ran\n", unmatched[i]);
}

// Valgrind names several start-up functions "(below main)" (_start,
// __libc_start_main, __libc_start_call_main), so that name would stand for
// different functions. Their own names are kept, and "(below main)" is the
// one that calls main, as callgrind shows it: __libc_start_call_main
// (glibc 2.34 and later). --show-below-main=yes keeps every own name.
const HChar kBelowMain[] = "(below main)";

// The length of s without a "+<decimal offset>" suffix, and the offset.
static SizeT strip_offset(const HChar* s, ULong* offset)
{
   SizeT len = VG_(strlen)(s);
   SizeT digits = len;
   while (digits > 0 && s[digits - 1] >= '0' && s[digits - 1] <= '9') digits--;
   *offset = 0;
   if (digits == len || digits < 2 || s[digits - 1] != '+') return len;
   for (SizeT i = digits; i < len; i++) *offset = *offset * 10 + (ULong)(s[i] - '0');
   return digits - 1;
}

// A copy of s, valid until the next call.
static HChar* name_copy(const HChar* s)
{
   static HChar* buf;
   static SizeT size;
   SizeT n = VG_(strlen)(s) + 1;
   if (n > size) {
      kg::release(buf);
      size = n > 2 * size ? n : 2 * size;
      buf = (HChar*)kg::alloc(size);
   }
   VG_(memcpy)(buf, s, n);
   return buf;
}

static const DebugInfo* object_info(Addr a);

namespace {

// Functions without symbols, from the unwind tables of their object
// (core/eh_frame.h): a stripped program's static functions, each with its
// own first instruction and end, as its symbol would have given them.
// Only in the object's .text (PLT sections have FDEs too, for the whole
// section) and where no symbol covers the address. The tables are read
// where the object is mapped; a table per object, found again by its text
// and file while Valgrind's debug-info epoch moves (objects come and go).
struct UnwindTable {
   Addr text_lo, text_hi;
   HChar* file;    // owned copy
   UInt epoch;     // last checked against the object loaded there
   Bool usable;
   core::EhFrameIndex index;
};
XArray* unwind_tables;   // of UnwindTable

// The index of the object's .eh_frame_hdr and .eh_frame as mapped, if they
// are: PT_GNU_EH_FRAME from the file's program headers, placed by the
// object's bias.
Bool read_unwind_table(const DebugInfo* di, UnwindTable* t)
{
   SysRes fd = VG_(open)(VG_(DebugInfo_get_filename)(di), VKI_O_RDONLY, 0);
   if (sr_isError(fd)) return False;
   static UChar head[4096];
   Int n = VG_(read)(sr_Res(fd), head, sizeof head);
   VG_(close)(sr_Res(fd));
   uint64_t vaddr, size, frame_at;
   if (n <= 0 || !core::elf_eh_frame_hdr(head, (uint64_t)n, &vaddr, &size)) return False;
   Addr hdr_at = (Addr)vaddr + VG_(DebugInfo_get_text_bias)(di);
   if (size == 0 || !VG_(am_is_valid_for_client)(hdr_at, size, VKI_PROT_READ)) return False;
   core::MappedSpan hdr = { (const uint8_t*)hdr_at, size, hdr_at };
   if (!core::eh_frame_address(hdr, &frame_at)) return False;
   // .eh_frame's end is not in its header: the FDEs are read within the
   // mapping that holds its start.
   NSegment const* seg = VG_(am_find_nsegment)((Addr)frame_at);
   if (!seg || !VG_(am_is_valid_for_client)((Addr)frame_at, 1, VKI_PROT_READ)) return False;
   core::MappedSpan frame = { (const uint8_t*)frame_at, seg->end + 1 - (Addr)frame_at, frame_at };
   return t->index.init(hdr, frame);
}

// The unwind table of the object whose text holds a, or nullptr.
const UnwindTable* unwind_table(Addr a)
{
   static UnwindTable* last;
   UInt epoch = VG_(current_DiEpoch)().n;
   if (last && last->epoch == epoch && a >= last->text_lo && a < last->text_hi) return last->usable ? last : nullptr;
   const DebugInfo* di = object_info(a);
   Addr lo, hi;
   if (!di || !object_text(a, &lo, &hi) || a < lo || a >= hi) return nullptr;
   const HChar* file = VG_(DebugInfo_get_filename)(di);
   if (!unwind_tables) unwind_tables = VG_(newXA)(VG_(malloc), "kg.unwind", VG_(free), sizeof(UnwindTable));
   for (Word i = 0; i < VG_(sizeXA)(unwind_tables); i++) {
      UnwindTable* t = (UnwindTable*)VG_(indexXA)(unwind_tables, i);
      if (t->text_lo == lo && t->text_hi == hi && VG_STREQ(t->file, file)) {
         t->epoch = epoch;
         last = t;
         return t->usable ? t : nullptr;
      }
   }
   UnwindTable t = { lo, hi, kg::strdup(file), epoch, False, {} };
   t.usable = read_unwind_table(di, &t);
   VG_(addToXA)(unwind_tables, &t);
   last = (UnwindTable*)VG_(indexXA)(unwind_tables, VG_(sizeXA)(unwind_tables) - 1);
   return last->usable ? last : nullptr;
}

// The unwind table's function holding a (its first instruction), if the
// object's text has one there.
Bool unwind_table_function(Addr a, Addr* start)
{
   static Addr last_lo = 1, last_hi = 0;   // the last range found (translations go block by block)
   static UInt last_epoch;
   UInt epoch = VG_(current_DiEpoch)().n;
   if (a >= last_lo && a < last_hi && epoch == last_epoch) {
      *start = last_lo;
      return True;
   }
   const UnwindTable* t = unwind_table(a);
   uint64_t lo, hi;
   if (!t || !t->index.function_at(a, &lo, &hi) || lo < t->text_lo || hi > t->text_hi) return False;
   last_lo = (Addr)lo;
   last_hi = (Addr)hi;
   last_epoch = epoch;
   *start = last_lo;
   return True;
}

} // namespace

// The function symbol covering a: its name and its first instruction's
// address, from one symbol search. VG_(get_fnname_w_offset) writes
// "name+<offset>", and the name alone at the entry: a name that itself
// ends in "+<digits>" (no C or C++ name does) is read whole at its entry,
// where VG_(get_fnname_if_entry) succeeds (a hit in Valgrind's cache of
// the search; elsewhere it fails before demangling). The name is
// demangled as Valgrind's --demangle says, or left mangled.
static Bool symbol_covering(Addr a, Bool demangled, const HChar** name, Addr* entry)
{
   DiEpoch ep = VG_(current_DiEpoch)();
   Bool shown = VG_(clo_show_below_main);
   Bool demangle = VG_(clo_demangle);
   VG_(clo_show_below_main) = True;   // no renaming for this look-up
   VG_(clo_demangle) = demangle && demangled;
   const HChar* with_offset = nullptr;
   Bool found = VG_(get_fnname_w_offset)(ep, a, &with_offset) && with_offset && with_offset[0];
   if (found) {
      HChar* copy = name_copy(with_offset);
      ULong offset;
      SizeT len = strip_offset(copy, &offset);
      const HChar* at_entry;
      if (offset && (offset > a || VG_(get_fnname_if_entry)(ep, a, &at_entry))) offset = 0;
      else copy[len] = 0;
      *name = copy;
      *entry = a - offset;
   }
   VG_(clo_show_below_main) = shown;
   VG_(clo_demangle) = demangle;
   if (found && !shown && VG_STREQ(*name, "__libc_start_call_main")) *name = kBelowMain;
   return found;
}

// The function covering a: its symbol, else its unwind table's range
// (*by_address).
static Bool function_symbol(Addr a, Bool demangled, const HChar** name, Addr* entry, Bool* by_address = nullptr)
{
   if (by_address) *by_address = False;
   if (symbol_covering(a, demangled, name, entry)) return True;
   if (!unwind_table_function(a, entry)) return False;
   *name = address_name(*entry);
   if (by_address) *by_address = True;
   return True;
}

Bool is_function_entry(Addr a)
{
   Bool demangle = VG_(clo_demangle);
   VG_(clo_demangle) = False;   // the name is not needed
   const HChar* name;
   Addr entry;
   Bool at_entry = VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), a, &name) ||
                   (unwind_table_function(a, &entry) && entry == a && !symbol_covering(a, False, &name, &entry));
   VG_(clo_demangle) = demangle;
   return at_entry;
}

namespace {

// The functions source_loc found lately, by symbol (its entry, mangled
// name and object). A translation looks up each of its instructions, and
// Valgrind demangles the symbol's name at every look-up (cc1plus: most
// of 4.6 M demangler allocations); a look-up that leaves it mangled
// finds the symbol, and its function comes from here.
struct RecentFunction {
   Addr entry;
   UInt object;
   HChar* mangled;    // owned; null: empty
   FnInfo* fn;
};
constexpr UInt kRecentFunctions = 64;
RecentFunction recent_functions[kRecentFunctions];

RecentFunction& recent_function_slot(Addr entry)
{
   return recent_functions[(entry ^ entry >> 7) % kRecentFunctions];
}

} // namespace

void source_loc(Addr a, SourceLoc* out)
{
   DiEpoch ep = VG_(current_DiEpoch)();
   const HChar* file = nullptr;
   const HChar* dir = nullptr;
   UInt line = 0;
   out->file = 0;
   out->line = 0;
   if (VG_(get_filename_linenum)(ep, a, &file, &dir, &line)) {
      out->file = intern_source_path(dir, file);
      out->line = line;
   }
   const HChar* obj = nullptr;
   UInt object = 0;
   if (VG_(get_objname)(ep, a, &obj) && obj && obj[0])
      object = table_intern(&objects, obj);
   const HChar* mangled = nullptr;
   Addr entry = 0;
   if (!function_symbol(a, False, &mangled, &entry)) {
      out->fn = intern_function(kUnknown, object, out->file, True, a, 0);
      return;
   }
   RecentFunction& recent = recent_function_slot(entry);
   if (recent.mangled && recent.entry == entry && recent.object == object && VG_STREQ(recent.mangled, mangled)) {
      out->fn = recent.fn;
      return;
   }
   kg::release(recent.mangled);
   recent.mangled = kg::strdup(mangled);
   recent.entry = entry;
   recent.object = object;
   const HChar* fnname = nullptr;
   Bool by_address;
   Bool no_symbol = !function_symbol(a, True, &fnname, &entry, &by_address);
   if (no_symbol) fnname = kUnknown;
   out->fn = intern_function(fnname, object, out->file, no_symbol, a, entry, by_address);
   recent.fn = out->fn;
   if (no_symbol || entry != recent.entry) {   // never seen: a symbol found only mangled
      kg::release(recent.mangled);
      recent.mangled = nullptr;
   }
}

} // namespace kg

namespace kg {

// The debug information of the object holding a, also outside its .text
// (.init, .plt.sec, .plt.got, which Valgrind's look-ups by text range miss):
// the object of the file mapping there.
static const DebugInfo* object_info(Addr a)
{
   DebugInfo* di = VG_(find_DebugInfo)(VG_(current_DiEpoch)(), a);
   if (di) return di;
   NSegment const* seg = VG_(am_find_nsegment)(a);
   const HChar* file = seg && seg->kind == SkFileC ? VG_(am_get_filename)(seg) : nullptr;
   if (!file) return nullptr;
   for (const DebugInfo* d = VG_(next_DebugInfo)(nullptr); d; d = VG_(next_DebugInfo)(d))
      if (VG_(DebugInfo_get_text_size)(d) > 0 && VG_STREQ(VG_(DebugInfo_get_filename)(d), file))
         return d;
   return nullptr;
}

Bool object_text(Addr a, Addr* lo, Addr* hi)
{
   const DebugInfo* di = object_info(a);
   if (!di || VG_(DebugInfo_get_text_size)(di) == 0) return False;
   *lo = VG_(DebugInfo_get_text_avma)(di);
   *hi = *lo + VG_(DebugInfo_get_text_size)(di);
   return True;
}

namespace {

// kg_jump_out asks at every indirect jump out of an object, and
// boost.context's switches are such jumps (into the other coroutine's
// code): a symbol look-up each time made a fiber's life about 25 us.
// Verdicts about addresses in objects are kept while the objects stay
// (unmapping one moves Valgrind's debug-info epoch); an address outside
// any object (JIT code) may later hold an object: asked again each time.
struct UnnamedVerdict {
   Addr target;   // 0: empty
   UInt epoch;
   Bool unnamed;
};
constexpr UInt kUnnamedVerdicts = 256;
UnnamedVerdict unnamed_verdicts[kUnnamedVerdicts];

} // namespace

Bool is_unnamed_object_code(Addr a)
{
   UInt epoch = VG_(current_DiEpoch)().n;
   UnnamedVerdict& verdict = unnamed_verdicts[(a ^ a >> 9) % kUnnamedVerdicts];
   if (verdict.target == a && verdict.epoch == epoch) return verdict.unnamed;
   SourceLoc loc;
   source_loc(a, &loc);
   Bool unnamed = loc.fn->no_symbol && loc.fn->object != 0 && !is_plt_stub(a);
   if (loc.fn->object != 0) verdict = {a, epoch, unnamed};
   return unnamed;
}

Addr file_address(Addr a)
{
   // Consecutive lookups are mostly in the same object: remember its text.
   static Addr lo = 1, hi = 0;
   static PtrdiffT bias = 0;
   if (a >= lo && a < hi) return a - bias;
   const DebugInfo* di = object_info(a);
   if (!di) return a;
   if (!VG_(find_DebugInfo)(VG_(current_DiEpoch)(), a))
      return a - VG_(DebugInfo_get_text_bias)(di);   // not cached: rare
   lo = VG_(DebugInfo_get_text_avma)(di);
   hi = lo + VG_(DebugInfo_get_text_size)(di);
   bias = VG_(DebugInfo_get_text_bias)(di);
   return a - bias;
}

} // namespace kg
