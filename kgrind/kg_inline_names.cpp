#include "kg_inline_names.h"
#include "kg_objects.h"
#include "kg_runtime.h"
#include "core/compressed_sections.h"
#include "core/dwarf_inlines.h"

namespace kg {

namespace {

void* dwarf_alloc(void*, size_t n) { return kg::alloc(n, "kg.inlnames"); }
void dwarf_free(void*, void* p) { kg::release(p); }
const core::Allocator kDwarfAllocator = { nullptr, dwarf_alloc, dwarf_free };

// Debug sections larger than this in all are not read (the names of their
// inlined functions stay short): the reader holds them while it indexes.
const ULong kMaxDwarfBytes = 512ULL << 20;

// An inlined instance's function.
struct Origin {
   HChar* name;      // DW_AT_name, as Valgrind's records give it
   HChar* full;      // the linkage name (mangled while `mangled`), else scopes::name
   Bool mangled;
};

// One object's inlined instances and their functions, found by its text
// and file again while Valgrind's debug-info epoch moves.
struct ObjectNames {
   ObjectEntry object;
   PtrdiffT bias;          // run-time address - the DWARF's
   core::DwarfIndex index; // the names dropped once read into `origins`
   Origin** origins;       // by inlined instance (null: unnamed)
};

// An ELF file open for reading its sections.
struct ElfFile {
   Int fd;
   UChar* headers;   // the section headers
   uint64_t count;
   HChar* names;     // the section names' section
   uint64_t names_size;
};

Bool read_at(Int fd, ULong offset, void* buf, ULong n)
{
   if (VG_(lseek)(fd, (Off64T)offset, VKI_SEEK_SET) != (Off64T)offset) return False;
   for (ULong done = 0; done < n;) {
      Int chunk = (Int)(n - done < (1u << 30) ? n - done : (1u << 30));
      Int got = VG_(read)(fd, (UChar*)buf + done, chunk);
      if (got <= 0) return False;
      done += (ULong)got;
   }
   return True;
}

void close_elf(ElfFile* f)
{
   if (f->fd >= 0) VG_(close)(f->fd);
   kg::release(f->headers);
   kg::release(f->names);
   f->fd = -1;
   f->headers = nullptr;
   f->names = nullptr;
}

Bool open_elf(const HChar* path, ElfFile* f)
{
   *f = { -1, nullptr, 0, nullptr, 0 };
   SysRes fd = VG_(open)(path, VKI_O_RDONLY, 0);
   if (sr_isError(fd)) return False;
   f->fd = (Int)sr_Res(fd);
   UChar head[64];
   uint64_t shoff, shstrndx;
   if (!read_at(f->fd, 0, head, sizeof head) ||
       !core::elf_section_table(head, sizeof head, &shoff, &f->count, &shstrndx) || f->count > 65535) {
      close_elf(f);
      return False;
   }
   f->headers = (UChar*)kg::alloc(f->count * 64, "kg.inlnames");
   if (!read_at(f->fd, shoff, f->headers, f->count * 64)) {
      close_elf(f);
      return False;
   }
   core::ElfSection names = core::elf_section(f->headers + 64 * shstrndx);
   if (names.size == 0 || names.size > (1u << 24)) {
      close_elf(f);
      return False;
   }
   f->names_size = names.size;
   f->names = (HChar*)kg::alloc(names.size + 1, "kg.inlnames");
   f->names[names.size] = 0;
   if (!read_at(f->fd, names.offset, f->names, names.size)) {
      close_elf(f);
      return False;
   }
   return True;
}

// The section named `name` (False: none, or it has no bytes in the file).
Bool find_section(const ElfFile* f, const HChar* name, core::ElfSection* out)
{
   for (uint64_t i = 0; i < f->count; i++) {
      core::ElfSection s = core::elf_section(f->headers + 64 * i);
      if (s.name < f->names_size && VG_STREQ(f->names + s.name, name)) {
         *out = s;
         return s.type != core::kElfNobits;
      }
   }
   return False;
}

// A section's bytes, allocated (nullptr: none, or unreadable).
UChar* read_section(const ElfFile* f, const HChar* name, ULong* size)
{
   core::ElfSection s;
   *size = 0;
   if (!find_section(f, name, &s) || s.size == 0 || s.size > kMaxDwarfBytes) return nullptr;
   UChar* bytes = (UChar*)kg::alloc(s.size, "kg.inlnames");
   if (!read_at(f->fd, s.offset, bytes, s.size)) {
      kg::release(bytes);
      return nullptr;
   }
   *size = s.size;
   return bytes;
}

// A debug section's name: .debug_X, or .zdebug_X for GNU's compressed one.
struct DebugSection {
   core::ElfSection header;
   Bool compressed;
   core::SectionCompression kind;
   uint64_t size;   // inflated
};

// Where the file has the DWARF section .debug_`what` (or .zdebug_`what`)
// and its size inflated (False: none, or compressed other than with zlib).
Bool find_debug_section(const ElfFile* f, const HChar* what, DebugSection* d)
{
   HChar name[64];
   VG_(sprintf)(name, ".debug_%s", what);
   d->compressed = False;
   d->kind = core::kSectionChdr;
   if (!find_section(f, name, &d->header)) {
      VG_(sprintf)(name, ".zdebug_%s", what);
      if (!find_section(f, name, &d->header)) return False;
      d->compressed = True;
      d->kind = core::kSectionZdebug;
   } else if (d->header.flags & core::kElfCompressed) {
      d->compressed = True;
   }
   d->size = d->header.size;
   if (!d->compressed) return True;
   UChar head[24];
   ULong n = d->header.size < sizeof head ? d->header.size : sizeof head;
   uint64_t stream;
   return read_at(f->fd, d->header.offset, head, n) &&
          core::compressed_section_header(head, n, d->kind, &stream, &d->size);
}

// A DWARF section's bytes, inflated if compressed, into the tool's memory
// (nullptr: unreadable, or a stream that does not inflate to the size its
// header gives).
UChar* read_debug_section(const ElfFile* f, const DebugSection& d)
{
   if (!d.compressed || d.header.size == 0) {
      if (d.header.size == 0 || d.header.size > kMaxDwarfBytes) return nullptr;
      UChar* bytes = (UChar*)kg::alloc(d.header.size, "kg.inlnames");
      if (read_at(f->fd, d.header.offset, bytes, d.header.size)) return bytes;
      kg::release(bytes);
      return nullptr;
   }
   if (d.header.size > kMaxDwarfBytes) return nullptr;
   UChar* raw = (UChar*)kg::alloc(d.header.size, "kg.inlnames");
   UChar* out = nullptr;
   uint64_t size = 0;
   if (read_at(f->fd, d.header.offset, raw, d.header.size) &&
       core::inflate_section(kDwarfAllocator, raw, d.header.size, d.kind, kMaxDwarfBytes, &out, &size) !=
          core::kInflateOk)
      out = nullptr;
   kg::release(raw);
   return out;
}

// The DWARF sections of one file, read, and of its dwz supplementary file.
struct Dwarf {
   core::DwarfSections s;
   UChar* owned[8];
   core::DwarfSections alt;   // info size 0: none
   UChar* alt_owned[8];
};

void free_dwarf(Dwarf* d)
{
   for (UChar* p : d->owned) kg::release(p);
   for (UChar* p : d->alt_owned) kg::release(p);
}

// A file's build ID (.note.gnu.build-id: namesz, descsz, type 3, "GNU\0",
// the ID) into id[0..64): its length (0: none).
UInt build_id(const ElfFile* f, UChar* id)
{
   ULong size;
   UChar* note = read_section(f, ".note.gnu.build-id", &size);
   UInt n = 0;
   if (note && size > 16) {
      UInt namesz = *(UInt*)note, descsz = *(UInt*)(note + 4);
      UInt at = 12 + ((namesz + 3) & ~3u);
      if (descsz >= 2 && descsz <= 64 && at + descsz <= size) {
         VG_(memcpy)(id, note + at, descsz);
         n = descsz;
      }
   }
   kg::release(note);
   return n;
}

// /usr/lib/debug/.build-id/xx/yyyy.debug of a build ID.
void build_id_path(const UChar* id, UInt n, HChar* path)
{
   HChar* p = path + VG_(sprintf)(path, "/usr/lib/debug/.build-id/%02x/", id[0]);
   for (UInt i = 1; i < n; i++) p += VG_(sprintf)(p, "%02x", id[i]);
   VG_(sprintf)(p, ".debug");
}

Bool read_dwarf(const HChar* path, Dwarf* d, Bool follow_alt = True);

// The dwz supplementary file of the debug file at `path` whose section
// headers f holds, read into d->alt: its .gnu_debugaltlink names it
// (absolute, or relative to the debug file's directory) and gives its
// build ID, which it must have; else the file of that build ID under
// /usr/lib/debug/.build-id. None found: d->alt stays empty.
void read_alt(const HChar* path, const ElfFile* f, Dwarf* d)
{
   ULong size;
   UChar* link = read_section(f, ".gnu_debugaltlink", &size);
   ULong name_end = 0;
   while (link && name_end < size && link[name_end] != 0) name_end++;
   UInt id_len = link && name_end < size ? (UInt)(size - name_end - 1) : 0;
   if (link && name_end > 0 && id_len >= 2 && id_len <= 64 && name_end + VG_(strlen)(path) + 2 < 4096) {
      const UChar* id = link + name_end + 1;
      HChar candidates[2][4096];
      if (link[0] == '/') {
         VG_(strcpy)(candidates[0], (HChar*)link);
      } else {
         VG_(strcpy)(candidates[0], path);
         HChar* slash = VG_(strrchr)(candidates[0], '/');
         VG_(sprintf)(slash ? slash + 1 : candidates[0], "%s", (HChar*)link);
      }
      build_id_path(id, id_len, candidates[1]);
      for (const HChar* c : candidates) {
         ElfFile g;
         if (!open_elf(c, &g)) continue;
         UChar got[64];
         Bool same = build_id(&g, got) == id_len && VG_(memcmp)(got, id, id_len) == 0;
         close_elf(&g);
         Dwarf a;
         if (!same || !read_dwarf(c, &a, False)) continue;
         d->alt = a.s;
         VG_(memcpy)(d->alt_owned, a.owned, sizeof a.owned);
         break;
      }
   }
   kg::release(link);
}

// Whether the file has debug info within kMaxDwarfBytes (inflated); then
// its sections are read into d, compressed ones (SHF_COMPRESSED, .zdebug_*)
// inflated, and (follow_alt) its dwz supplementary file's.
Bool read_dwarf(const HChar* path, Dwarf* d, Bool follow_alt)
{
   VG_(memset)(d, 0, sizeof *d);
   ElfFile f;
   if (!open_elf(path, &f)) return False;
   static const struct { const HChar* name; core::MappedSpan core::DwarfSections::*span; } kSections[] = {
      { "info", &core::DwarfSections::info }, { "abbrev", &core::DwarfSections::abbrev },
      { "str", &core::DwarfSections::str }, { "line_str", &core::DwarfSections::line_str },
      { "str_offsets", &core::DwarfSections::str_offsets }, { "addr", &core::DwarfSections::addr },
      { "ranges", &core::DwarfSections::ranges }, { "rnglists", &core::DwarfSections::rnglists },
   };
   DebugSection found[8];
   Bool present[8];
   ULong total = 0;
   for (UInt i = 0; i < 8; i++) {
      present[i] = find_debug_section(&f, kSections[i].name, &found[i]);
      if (present[i]) total += found[i].size;
   }
   Bool ok = present[0] && present[1] && total <= kMaxDwarfBytes;
   for (UInt i = 0; ok && i < 8; i++) {
      if (!present[i]) continue;
      d->owned[i] = read_debug_section(&f, found[i]);
      d->s.*kSections[i].span = { d->owned[i], d->owned[i] ? found[i].size : 0, 0 };
      // a section that does not inflate: the names it holds are not guessed
      if (!d->owned[i] && found[i].size) ok = False;
   }
   if (ok && follow_alt) read_alt(path, &f, d);
   close_elf(&f);
   if (ok && d->s.info.size && d->s.abbrev.size) return True;
   free_dwarf(d);
   return False;
}

// The separate debug file of an object without debug info of its own:
// /usr/lib/debug/.build-id/xx/yyyy.debug by its build ID, else by its
// .gnu_debuglink next to it, in .debug/ there, or under /usr/lib/debug.
Bool read_separate_dwarf(const HChar* object, Dwarf* d)
{
   ElfFile f;
   if (!open_elf(object, &f)) return False;
   HChar path[4096];
   Bool found = False;
   ULong size;
   UChar id[64];
   UInt id_len = build_id(&f, id);
   if (id_len) {
      build_id_path(id, id_len, path);
      found = read_dwarf(path, d);
   }
   UChar* link = found ? nullptr : read_section(&f, ".gnu_debuglink", &size);
   close_elf(&f);
   // the file's name, NUL-terminated, then padding and its CRC-32
   ULong name_end = 0;
   while (link && name_end < size && link[name_end] != 0) name_end++;
   if (link && name_end > 0 && name_end < size && name_end + VG_(strlen)(object) + 32 < sizeof path) {
      HChar dir[4096];
      VG_(strcpy)(dir, object);
      HChar* slash = VG_(strrchr)(dir, '/');
      if (slash) *slash = 0;
      else dir[0] = 0;
      static const HChar* const kForms[] = { "%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s" };
      for (const HChar* form : kForms) {
         VG_(sprintf)(path, form, dir, (HChar*)link);
         if (!VG_STREQ(path, object) && (found = read_dwarf(path, d))) break;
      }
   }
   kg::release(link);
   return found;
}

// "ns::Class::name" from an instance's names without a linkage name.
HChar* scoped_name(const core::DwarfIndex& index, const core::DwarfNames& names)
{
   const UInt kMaxScopes = 32;
   const HChar* parts[kMaxScopes];
   UInt n = 0;
   SizeT len = VG_(strlen)(names.name) + 1;
   for (UInt s = names.scope; s && n < kMaxScopes; s = index.scope(s).parent) {
      const core::DwarfScope& scope = index.scope(s);
      const HChar* part = scope.name ? scope.name : scope.is_namespace ? "(anonymous namespace)" : nullptr;
      if (!part) continue;
      parts[n++] = part;
      len += VG_(strlen)(part) + 2;
   }
   HChar* out = (HChar*)kg::alloc(len, "kg.inlnames");
   HChar* p = out;
   while (n > 0) p += VG_(sprintf)(p, "%s::", parts[--n]);
   VG_(sprintf)(p, "%s", names.name);
   return out;
}

// Reads the object's DWARF and names each inlined instance's function.
Bool read_object_names(ObjectNames* o)
{
   Dwarf d;
   const HChar* file = o->object.file;
   if (!read_dwarf(file, &d) && !read_separate_dwarf(file, &d)) return False;
   Bool ok = o->index.init(kDwarfAllocator, d.s, d.alt.info.size ? &d.alt : nullptr);
   if (ok) {
      SizeT n = o->index.inlined_count();
      o->origins = (Origin**)kg::alloc_zeroed((n + 1) * sizeof(Origin*), "kg.inlnames");
      WordFM* by_offset = VG_(newFM)(VG_(malloc), "kg.inlnames", VG_(free), nullptr);
      for (SizeT i = 0; i < n; i++) {
         UWord off = (UWord)o->index.inlined((UInt)i).origin, key, val;
         if (VG_(lookupFM)(by_offset, &key, &val, off)) {
            o->origins[i] = (Origin*)val;
            continue;
         }
         core::DwarfNames names;
         Origin* g = nullptr;
         if (o->index.names(off, &names)) {
            g = (Origin*)kg::alloc(sizeof(Origin), "kg.inlnames");
            g->name = kg::strdup(names.name);
            g->mangled = names.linkage != nullptr;
            g->full = names.linkage ? kg::strdup(names.linkage) : scoped_name(o->index, names);
         }
         VG_(addToFM)(by_offset, off, (UWord)g);
         o->origins[i] = g;
      }
      VG_(deleteFM)(by_offset, nullptr, nullptr);
      o->index.drop_names();
   }
   free_dwarf(&d);
   return ok;
}

// Whether the object's symbol or dynamic symbol names have a C++ one (a
// mangled name, `_Z...`; unknown: yes). A C object's inlined functions
// have no scopes, their qualified names are Valgrind's short names, so its
// DWARF is not read: libc6-dbg's (3.8 MB compressed, 10 MB inflated) cost
// every run about 0.1 s of CPU, and gave glibc's internal aliases (`__GI_bsearch`).
Bool names_cpp_symbols(const HChar* path)
{
   ElfFile f;
   if (!open_elf(path, &f)) return True;
   const HChar* const tables[] = { ".strtab", ".dynstr" };
   Bool cpp = False;
   for (UInt t = 0; t < 2 && !cpp; t++) {
      ULong n = 0;
      UChar* names = read_section(&f, tables[t], &n);
      if (!names) continue;
      for (ULong i = 0; i + 1 < n && !cpp; i++)
         cpp = (i == 0 || names[i - 1] == 0) && names[i] == '_' && names[i + 1] == 'Z';
      kg::release(names);
   }
   close_elf(&f);
   return cpp;
}

Bool make_object_names(ObjectEntry* entry, const DebugInfo* di)
{
   ObjectNames* o = (ObjectNames*)entry;
   o->bias = VG_(DebugInfo_get_text_bias)(di);
   return names_cpp_symbols(o->object.file) && read_object_names(o);
}

ObjectEntries object_names = { nullptr, nullptr, sizeof(ObjectNames), "kg.inlnames", make_object_names };

const HChar* shown_name(Origin* g)
{
   if (g->mangled) {
      const HChar* plain = g->full;
      VG_(demangle)(True, False, g->full, &plain);
      HChar* copy = kg::strdup(plain);
      kg::release(g->full);
      g->full = copy;
      g->mangled = False;
   }
   return g->full;
}

} // namespace

Bool qualified_inline_names(Addr a, UInt n, const HChar* const* short_names, const HChar** qualified)
{
   ObjectNames* o = (ObjectNames*)object_entry(&object_names, a);
   if (!o) return False;
   const UInt kMaxLevels = 64;
   UInt chain[kMaxLevels];
   if (n == 0 || n > kMaxLevels || o->index.chain_at((ULong)(a - o->bias), chain, kMaxLevels) != n) return False;
   for (UInt i = 0; i < n; i++) {
      const Origin* g = o->origins[chain[i]];
      // Valgrind names a function whose name is in a dwz supplementary
      // file UnknownInlinedFun
      if (!g || !(VG_STREQ(g->name, short_names[i]) || VG_STREQ(short_names[i], "UnknownInlinedFun"))) return False;
   }
   for (UInt i = 0; i < n; i++) qualified[i] = shown_name(o->origins[chain[i]]);
   return True;
}

} // namespace kg
