#include "kg_debuginfo.h"
#include "kg_array_ops.h"
#include "kg_machine_code.h"
#include "kg_options.h"
#include "kg_runtime.h"
#include "kg_unwind_tables.h"

namespace kg {

Word compare_strings(UWord a, UWord b)
{
   return VG_(strcmp)((const HChar*)a, (const HChar*)b);
}

namespace {

const HChar kUnknown[] = "???";

// A string table: interned copies with dense ids.
struct StringTable {
   WordFM* index;      // HChar* -> id
   XArray* names;      // id -> HChar*
};

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
UWord n_functions, functions_cap;

} // namespace

FnInfo** functions_by_id;

void debuginfo_init()
{
   table_init(&files, "kg.files");
   table_init(&objects, "kg.objects");
   table_init(&fn_names, "kg.fnnames");
   fn_index = VG_(newFM)(VG_(malloc), "kg.fns", VG_(free), compare_functions);
   table_intern(&files, kUnknown);      // file id 0 is "???"
   table_intern(&objects, kUnknown);    // object id 0 is "???"
}

UInt intern_file(const HChar* path) { return table_intern(&files, path); }
const HChar* file_name(UInt id) { return table_name(&files, id); }
const HChar* object_name(UInt id) { return table_name(&objects, id); }
UInt file_count() { return (UInt)VG_(sizeXA)(files.names); }
UInt object_count() { return (UInt)VG_(sizeXA)(objects.names); }
UInt function_count() { return (UInt)n_functions; }

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

// The length of a split part's function's name in the part's name
// (`f.cold`, `f.cold.2`, demangled `f(int) [clone .cold]`, all "f..."),
// else 0.
static SizeT split_stem(const HChar* name)
{
   SizeT len = VG_(strlen)(name);
   SizeT end = len;
   Bool clone = end > 0 && name[end - 1] == ']';   // " [clone .cold]"
   if (clone) end--;
   SizeT digits = end;
   while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') digits--;
   if (digits < end && digits > 0 && name[digits - 1] == '.') end = digits - 1;
   if (end < 6 || VG_(strncmp)(name + end - 5, ".cold", 5) != 0) return 0;
   end -= 5;
   if (!clone) return end;
   if (end < 8 || VG_(strncmp)(name + end - 8, " [clone ", 8) != 0) return 0;
   return end - 8;
}

// The function whose split part `part` is: the one function of the part's
// name without its suffix in the part's object, or of several such (static
// namesakes) the one of the part's source file. Functions are interned as
// their code is first translated, and a function runs before its cold part
// does: it is found then. Searched again only when new functions came.
static FnInfo* whole_function(FnInfo* part)
{
   if (!part->split_part || part->whole) return part->whole;
   UInt n = function_count();
   if (part->whole_sought == n) return nullptr;
   part->whole_sought = n;
   SizeT stem = split_stem(part->name);
   FnInfo* found = nullptr;
   UInt matches = 0;
   for (UInt i = 0; i < n; i++) {
      FnInfo* fn = function_by_id(i);
      if (fn->object != part->object || fn->no_symbol || fn->split_part ||
          VG_(strncmp)(fn->name, part->name, stem) != 0 || fn->name[stem] != 0)
         continue;
      if (!found || (fn->file == part->file && found->file != part->file)) found = fn;
      matches++;
   }
   if (matches > 1 && found && found->file != part->file) found = nullptr;
   part->whole = found;
   return found;
}

static Bool go_runtime;

Bool go_runtime_seen() { return go_runtime; }

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
   fn->first_levels = 0;
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
   if (!no_symbol && VG_STREQ(fn->name, "runtime.gogo.abi0")) go_runtime = True;
   fn->array_counters = 0;
   fn->structor[0] = 0;
   fn->split_part = !no_symbol && split_stem(fn->name) > 0;
   fn->whole = nullptr;
   fn->whole_sought = ~0u;
   if (at && !no_symbol) find_structor_variant(fn->name, entry, fn->structor);
   fn->traced = name_is_traced(fn->name, block_mode() ? object_is_main(object) : True);
   append(functions_by_id, n_functions, functions_cap, fn, 1024, "kg.fns");
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

FnInfo* inlined_function(const HChar* name, UInt object, UInt file)
{
   static const HChar kSuffix[] = " [inlined]";
   SizeT n = VG_(strlen)(name);
   HChar* full = (HChar*)kg::alloc(n + sizeof kSuffix);
   VG_(memcpy)(full, name, n);
   VG_(memcpy)(full + n, kSuffix, sizeof kSuffix);
   // No symbol's entry: the key is (object, 0, name), the suffix keeps it
   // apart from every real function's.
   FnInfo* fn = intern_function(full, object, file, False);
   kg::release(full);
   fn->inlined = True;
   return fn;
}

Bool is_plt_stub(Addr a)
{
   if (VG_(DebugInfo_sect_kind)(nullptr, a) == Vg_SectPLT) return True;
   SourceLoc loc;
   source_loc(a, &loc);
   if (!loc.fn->no_symbol) return False;
   Addr slot = plt_stub_slot(a);
   if (!slot) return False;
   // Not a jump through a program's own function pointer (in .data, .bss).
   VgSectKind kind = VG_(DebugInfo_sect_kind)(nullptr, slot);
   return kind == Vg_SectGOT || kind == Vg_SectGOTPLT || kind == Vg_SectUnknown;
}

void warn_unmatched_patterns()
{
   UInt unmatched[kMaxFuncPatterns];
   UInt n = unmatched_patterns(unmatched, kMaxFuncPatterns);
   for (UInt i = 0; i < n; i++) {
      UInt p = unmatched[i];
      VG_(umsg)("Warning: %s pattern '%s%s' matched no function that ran\n", clo.func_skipped[p] ? "--fn-skip" : "--funcs",
                clo.func_excluded[p] && !clo.func_skipped[p] ? "!" : "", clo.func_patterns[p]);
   }
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
// finds the symbol, and its function comes from here. A function known by
// its unwind table's range only is found by its entry (its name would be
// the address formatted at every look-up: cc1plus, stripped, at each of
// its 860 k translated instructions).
struct RecentFunction {
   Addr entry;
   UInt object;
   HChar* mangled;    // owned; null: none (empty, unless by_address)
   Bool by_address;   // no symbol: the unwind table's function at entry
   FnInfo* fn;
};
constexpr UInt kRecentFunctions = 64;
RecentFunction recent_functions[kRecentFunctions];

RecentFunction& recent_function_slot(Addr entry)
{
   return recent_functions[(entry ^ entry >> 7) % kRecentFunctions];
}

// The id of the name last interned from Valgrind's strings at (x, y):
// debug info keeps an object's strings in place until it is discarded,
// which moves the epoch, so consecutive look-ups (a translation's
// instructions, mostly of one file and one object) skip building the
// path and searching the table by string compares (cc1plus: 860 k
// translated instructions, each a search among the objects' paths).
// An object's name may instead be the address space manager's, whose
// slot a later mapping can reuse without moving the epoch: `same` checks
// the cached id against the string (one compare, not a search).
struct LastInterned {
   const HChar* x;
   const HChar* y;
   UInt epoch;
   UInt id;
   Bool valid;
   template <typename Intern, typename Same>
   UInt get(const HChar* x_now, const HChar* y_now, UInt epoch_now, Intern intern, Same same)
   {
      if (!valid || x != x_now || y != y_now || epoch != epoch_now || !same(id)) {
         id = intern();
         x = x_now;
         y = y_now;
         epoch = epoch_now;
         valid = True;
      }
      return id;
   }
};
LastInterned last_source_path, last_object;

} // namespace

static void symbol_loc(Addr a, SourceLoc* out)
{
   DiEpoch ep = VG_(current_DiEpoch)();
   const HChar* file = nullptr;
   const HChar* dir = nullptr;
   UInt line = 0;
   out->file = 0;
   out->line = 0;
   if (VG_(get_filename_linenum)(ep, a, &file, &dir, &line)) {
      out->file = last_source_path.get(dir, file, ep.n, [&] { return intern_source_path(dir, file); },
                                       [](UInt) { return True; });
      out->line = line;
   }
   const HChar* obj = nullptr;
   UInt object = 0;
   if (VG_(get_objname)(ep, a, &obj) && obj && obj[0])
      object = last_object.get(obj, nullptr, ep.n, [&] { return table_intern(&objects, obj); },
                               [&](UInt id) { return VG_STREQ(table_name(&objects, id), obj); });
   const HChar* mangled = nullptr;
   Addr entry = 0;
   Bool by_address = !symbol_covering(a, False, &mangled, &entry);
   if (by_address && !unwind_table_function(a, &entry)) {
      out->fn = intern_function(kUnknown, object, out->file, True, a, 0);
      return;
   }
   RecentFunction& recent = recent_function_slot(entry);
   if (recent.entry == entry && recent.object == object && recent.by_address == by_address &&
       (by_address ? recent.fn != nullptr : recent.mangled && VG_STREQ(recent.mangled, mangled))) {
      out->fn = recent.fn;
      return;
   }
   kg::release(recent.mangled);
   recent.mangled = by_address ? nullptr : kg::strdup(mangled);
   recent.by_address = by_address;
   recent.entry = entry;
   recent.object = object;
   const HChar* fnname = nullptr;
   Bool named_by_address;
   Bool no_symbol = !function_symbol(a, True, &fnname, &entry, &named_by_address);
   if (no_symbol) fnname = kUnknown;
   out->fn = intern_function(fnname, object, out->file, no_symbol, a, entry, named_by_address);
   recent.fn = out->fn;
   if (no_symbol || entry != recent.entry) {   // never seen: a symbol found only mangled
      kg::release(recent.mangled);
      recent.mangled = nullptr;
      recent.fn = nullptr;
   }
}

// A split part's code is its function's (FnInfo::whole): its costs and
// calls are that function's, in that function's activation.
void source_loc(Addr a, SourceLoc* out)
{
   symbol_loc(a, out);
   FnInfo* whole = whole_function(out->fn);
   out->part = whole ? out->fn : nullptr;
   if (whole) out->fn = whole;
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

} // namespace kg
