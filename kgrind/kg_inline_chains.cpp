#include "kg_inline_chains.h"
#include "kg_inline_names.h"
#include "kg_options.h"
#include "kg_runtime.h"

namespace kg {

namespace {

InlineChain no_chain = { 0, 0, nullptr, 0, 0, 0, 0 };   // id 0, the empty chain
UInt n_chains = 1, chains_cap = 1;
WordFM* index;     // key (parent, fn, call file, call line) -> id

struct ChainKey {
   UInt parent;
   UInt fn;
   UInt call_file;
   UInt call_line;
};

Word compare_keys(UWord a, UWord b)
{
   const ChainKey* x = (const ChainKey*)a;
   const ChainKey* y = (const ChainKey*)b;
   if (x->parent != y->parent) return x->parent < y->parent ? -1 : 1;
   if (x->fn != y->fn) return x->fn < y->fn ? -1 : 1;
   if (x->call_file != y->call_file) return x->call_file < y->call_file ? -1 : 1;
   if (x->call_line != y->call_line) return x->call_line < y->call_line ? -1 : 1;
   return 0;
}

void init() { index = VG_(newFM)(VG_(malloc), "kg.inline", VG_(free), compare_keys); }

// The index of a new chain among its siblings (the chains of its parent,
// or for a first level the first levels of physical function phys), and in
// *salt where its siblings' slots start: at finite k a kid array is shared
// by the transitions into one activation, whose levels may be kids of
// different parent chains.
UInt next_sibling(UInt parent, FnInfo* phys, UWord* salt)
{
   if (parent) {
      *salt = parent * 7;
      return inline_chains[parent].kids++;
   }
   *salt = (UWord)phys->id * 5;
   return phys->first_levels++;
}

UInt intern_chain(UInt parent, FnInfo* fn, UInt call_file, UInt call_line, FnInfo* phys)
{
   ChainKey probe = { parent, fn->id, call_file, call_line };
   UWord key, id;
   if (VG_(lookupFM)(index, &key, &id, (UWord)&probe)) return (UInt)id;
   ChainKey* k = (ChainKey*)alloc_permanent(sizeof(ChainKey));
   *k = probe;
   UWord salt = 0;
   UInt sibling = next_sibling(parent, phys, &salt);
   InlineChain c = { parent, inline_chain(parent).depth + 1, fn, call_file, call_line, 0, (salt + sibling) << 3 };
   if (n_chains == chains_cap) {
      chains_cap *= 2;
      InlineChain* grown = (InlineChain*)kg::alloc(chains_cap * sizeof(InlineChain));
      VG_(memcpy)(grown, inline_chains, n_chains * sizeof(InlineChain));
      if (inline_chains != &no_chain) kg::release(inline_chains);
      inline_chains = grown;
   }
   id = n_chains++;
   inline_chains[id] = c;
   VG_(addToFM)(index, (UWord)k, id);
   return (UInt)id;
}

// One level of VG_(describe_IP)'s text, "0x<addr>: <function> (<file>:<line>)"
// (or "(in <object>)" without a line): the function, file and line.
struct Level {
   HChar* fn;
   HChar* file;
   UInt line;
};

Bool parse_level(const HChar* text, Level* out)
{
   const HChar* colon = VG_(strstr)(text, ": ");
   if (!colon) return False;
   const HChar* name = colon + 2;
   SizeT len = VG_(strlen)(name);
   out->file = nullptr;
   out->line = 0;
   // The location: the last " (" whose text ends in ":<digits>)".
   SizeT name_len = len;
   if (len > 2 && name[len - 1] == ')') {
      SizeT d = len - 1;
      while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9') d--;
      if (d < len - 1 && d > 0 && name[d - 1] == ':') {
         SizeT open = d - 1;
         while (open > 1 && !(name[open - 1] == '(' && name[open - 2] == ' ')) open--;
         if (open > 1) {
            name_len = open - 2;
            SizeT flen = d - 1 - open;
            out->file = (HChar*)kg::alloc(flen + 1);
            VG_(memcpy)(out->file, name + open, flen);
            out->file[flen] = 0;
            for (SizeT i = d; i < len - 1; i++) out->line = out->line * 10 + (UInt)(name[i] - '0');
         }
      }
   }
   if (!out->file) {
      const HChar* in = VG_(strstr)(name, " (in ");
      if (in) name_len = (SizeT)(in - name);
   }
   out->fn = (HChar*)kg::alloc(name_len + 1);
   VG_(memcpy)(out->fn, name, name_len);
   out->fn[name_len] = 0;
   return True;
}

} // namespace

InlineChain* inline_chains = &no_chain;

void call_site_loc(Addr site, SourceLoc* out)
{
   if (is_inline_site(site)) {
      const InlineChain& c = inline_chain(site_chain(site));
      *out = { c.fn, c.call_file, c.call_line, nullptr };
   } else {
      source_loc(site, out);
   }
}

Bool chain_contains(UInt inner, UInt outer)
{
   UInt d = inline_chain(outer).depth;
   while (inline_chain(inner).depth > d) inner = inline_chain(inner).parent;
   return inner == outer;
}

UInt chains_common_depth(UInt a, UInt b)
{
   while (inline_chain(a).depth > inline_chain(b).depth) a = inline_chain(a).parent;
   while (inline_chain(b).depth > inline_chain(a).depth) b = inline_chain(b).parent;
   while (a != b) a = inline_chain(a).parent, b = inline_chain(b).parent;
   return inline_chain(a).depth;
}

UInt inline_chain_at(Addr a, FnInfo* fn)
{
   if (!index) init();
   if (!inline_frames_on() || fn->no_symbol) return 0;
   const UInt kMaxLevels = 64;
   Level levels[kMaxLevels];
   UInt n = 0;
   DiEpoch ep = VG_(current_DiEpoch)();
   InlIPCursor* iipc = VG_(new_IIPC)(ep, a);
   if (!iipc) return 0;   // no inline record covers a
   do {
      if (n < kMaxLevels && parse_level(VG_(describe_IP)(ep, a, iipc), &levels[n])) n++;
   } while (VG_(next_IIPC)(iipc));
   VG_(delete_IIPC)(iipc);
   // The innermost level's file as the lines of the profile name it (with
   // its directory; describe_IP's has none).
   const HChar* file = nullptr;
   const HChar* dir = nullptr;
   UInt line = 0;
   if (n > 1 && VG_(get_filename_linenum)(ep, a, &file, &dir, &line) && file) {
      SizeT len = (dir && dir[0] ? VG_(strlen)(dir) + 1 : 0) + VG_(strlen)(file) + 1;
      HChar* path = (HChar*)kg::alloc(len);
      if (dir && dir[0]) VG_(sprintf)(path, "%s/%s", dir, file);
      else VG_(sprintf)(path, "%s", file);
      kg::release(levels[0].file);
      levels[0].file = path;
   }
   // levels[0] is the innermost function (at a's own line), levels[n - 1]
   // the physical one; level i's line is where level i - 1 is called.
   // Each inlined level by its qualified name where the object's debug info
   // gives it, else by its short name.
   const HChar* short_names[kMaxLevels];
   const HChar* qualified[kMaxLevels];
   for (UInt i = 0; i + 1 < n; i++) short_names[i] = levels[i].fn;
   Bool named = n > 1 && qualified_inline_names(a, n - 1, short_names, qualified);
   UInt chain = 0;
   for (UInt i = n - 1; i >= 1 && i < n; i--) {
      // The inlined function's file: where it calls the next level, or
      // the instruction's own (both lines of its source).
      const HChar* own_file = levels[i - 1].file ? levels[i - 1].file : "???";
      FnInfo* inl = inlined_function(named ? qualified[i - 1] : levels[i - 1].fn, fn->object, intern_file(own_file));
      UInt call_file = levels[i].file ? intern_file(levels[i].file) : 0;
      chain = intern_chain(chain, inl, call_file, levels[i].line, fn);
   }
   for (UInt i = 0; i < n; i++) {
      kg::release(levels[i].fn);
      if (levels[i].file) kg::release(levels[i].file);
   }
   return chain;
}

} // namespace kg
