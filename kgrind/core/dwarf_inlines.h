// kgrind core: inlined functions' names from an object's DWARF (.debug_info).
//
// Valgrind's inline records name an inlined function by its DIE's
// DW_AT_name only (`find`, `size`, `operator[]`), so two inlined functions
// of one short name (std::map::find and std::_Rb_tree::find) read alike.
// InlineIndex reads the DW_TAG_inlined_subroutine DIEs of an object's
// .debug_info itself: each one's address ranges, its enclosing inlined
// instance, and the subprogram its DW_AT_abstract_origin points to; and, for
// every subprogram DIE, its DW_AT_name, DW_AT_linkage_name, the DIE its
// DW_AT_specification or DW_AT_abstract_origin points to and the
// namespaces, classes, structures and unions it is declared in. That is
// what llvm-symbolizer --inlining and addr2line -i name inlined frames by
// (the linkage name demangled, else the scopes and the name).
//
// DWARF 2-5 units (compile and partial units; type and split units are
// skipped), every form of DWARF 5 and GNU's, DW_AT_ranges in .debug_ranges
// (DWARF 4) and .debug_rnglists (DWARF 5). A dwz supplementary file's
// sections, where given (`alt`), are read too: its subprograms and scopes,
// which DW_FORM_GNU_ref_alt and DW_FORM_ref_sup4/8 point to (offsets in it
// are kept with kAltOffset set), and its strings (DW_FORM_GNU_strp_alt,
// DW_FORM_strp_sup). Without it such a reference leaves that name unknown. Every read is bounds-checked against the sections given: a
// bad or truncated section makes init() fail, never a read outside it.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "containers.h"
#include "eh_frame.h"

namespace kg {
namespace core {

// An object's DWARF sections as in its file (vma 0: offsets in the
// section); a missing section has size 0.
struct DwarfSections {
  MappedSpan info, abbrev, str, line_str, str_offsets, addr, ranges, rnglists;
};

// A namespace, class, structure or union (scope 0: none, the outermost).
struct DwarfScope {
  uint32_t parent;
  const char* name;   // null: anonymous
  bool is_namespace;
};

// A subprogram DIE: a declaration, a definition, an abstract instance.
struct DwarfSubprogram {
  uint64_t offset;     // in .debug_info
  uint64_t ref;        // the DIE of its DW_AT_specification or DW_AT_abstract_origin (0: none)
  const char* name;    // DW_AT_name (null: none)
  const char* linkage; // DW_AT_linkage_name (mangled; null: none)
  uint32_t scope;
};

// An inlined instance (DW_TAG_inlined_subroutine).
struct DwarfInlined {
  uint64_t origin;   // its abstract origin's DIE (0: unknown)
  uint32_t parent;   // the inlined instance it lies in, + 1 (0: none: in the physical function)
  uint32_t depth;    // 1 in a physical function, 2 in an inlined one, ...
};

struct DwarfRange {
  uint64_t lo, hi;
  uint32_t inlined;   // index in the instances
};

// An inlined instance's function's names (DwarfIndex::names).
struct DwarfNames {
  const char* name;      // DW_AT_name
  const char* linkage;   // mangled; null: none
  uint32_t scope;        // of the DIE that has the name
};

namespace dwarf_detail {

enum : uint32_t {
  kTagClass = 0x02, kTagLexicalBlock = 0x0b, kTagCompileUnit = 0x11, kTagStructure = 0x13, kTagUnion = 0x17,
  kTagInlined = 0x1d, kTagSubprogram = 0x2e, kTagNamespace = 0x39, kTagPartialUnit = 0x3c,
};
enum : uint32_t {
  kAtName = 0x03, kAtLowPc = 0x11, kAtHighPc = 0x12, kAtAbstractOrigin = 0x31, kAtSpecification = 0x47,
  kAtRanges = 0x55, kAtLinkageName = 0x6e, kAtStrOffsetsBase = 0x72, kAtAddrBase = 0x73, kAtRnglistsBase = 0x74,
  kAtMipsLinkageName = 0x2007,
};
enum : uint32_t {
  kFormAddr = 0x01, kFormBlock2 = 0x03, kFormBlock4 = 0x04, kFormData2 = 0x05, kFormData4 = 0x06,
  kFormData8 = 0x07, kFormString = 0x08, kFormBlock = 0x09, kFormBlock1 = 0x0a, kFormData1 = 0x0b,
  kFormFlag = 0x0c, kFormSdata = 0x0d, kFormStrp = 0x0e, kFormUdata = 0x0f, kFormRefAddr = 0x10,
  kFormRef1 = 0x11, kFormRef2 = 0x12, kFormRef4 = 0x13, kFormRef8 = 0x14, kFormRefUdata = 0x15,
  kFormIndirect = 0x16, kFormSecOffset = 0x17, kFormExprloc = 0x18, kFormFlagPresent = 0x19,
  kFormStrx = 0x1a, kFormAddrx = 0x1b, kFormRefSup4 = 0x1c, kFormStrpSup = 0x1d, kFormData16 = 0x1e,
  kFormLineStrp = 0x1f, kFormRefSig8 = 0x20, kFormImplicitConst = 0x21, kFormLoclistx = 0x22,
  kFormRnglistx = 0x23, kFormRefSup8 = 0x24, kFormStrx1 = 0x25, kFormStrx4 = 0x28, kFormAddrx1 = 0x29,
  kFormAddrx4 = 0x2c, kFormGnuAddrIndex = 0x1f01, kFormGnuStrIndex = 0x1f02, kFormGnuRefAlt = 0x1f20,
  kFormGnuStrpAlt = 0x1f21,
};

struct AttrSpec {
  uint32_t attr, form;
  int64_t implicit_const;
};

struct Abbrev {
  uint32_t tag;
  bool children;
  bool wanted;             // a tag whose attributes are read (else skipped)
  uint32_t first, count;   // in the specs
  int64_t size;            // of its attributes when all their forms have a fixed size, else -1
};

// One attribute's value as read: a number (constants, offsets, indices),
// a string, a reference (a .debug_info offset), or an address.
struct Value {
  uint64_t u;
  const char* s;
  uint32_t form;
};

}  // namespace dwarf_detail

class DwarfIndex {
 public:
  // Offsets in the supplementary file have this bit set.
  static const uint64_t kAltOffset = 1ull << 63;

  // Reads every unit of s.info, then of alt->info (a dwz supplementary
  // file's: its subprograms and scopes; null: none). False (and nothing
  // kept) on a malformed section or a DIE nesting deeper than it follows.
  bool init(const Allocator& al, const DwarfSections& s, const DwarfSections* alt = nullptr) {
    al_ = al;
    s_ = s;
    alt_ = alt ? *alt : DwarfSections{};
    in_alt_ = false;
    scopes_.init(al);
    subprograms_.init(al);
    inlined_.init(al);
    ranges_.init(al);
    reach_.init(al);
    specs_.init(al);
    abbrevs_.init(al);
    scopes_.push_back(DwarfScope{0, nullptr, false});
    bool ok = read_units();
    if (ok && alt_.info.size) {
      // its offsets, tagged, sort after the object's own
      DwarfSections own = s_;
      s_ = alt_;
      in_alt_ = true;
      ok = read_units();
      s_ = own;
      in_alt_ = false;
    }
    specs_.destroy();
    abbrevs_.destroy();
    if (ok) ok = sort_ranges();
    if (!ok) destroy();
    return ok;
  }

  void destroy() {
    scopes_.destroy();
    subprograms_.destroy();
    inlined_.destroy();
    ranges_.destroy();
    reach_.destroy();
  }

  // The subprogram and scope tables (the names): after names() is no more
  // needed (the strings point into the sections given to init()).
  void drop_names() {
    scopes_.destroy();
    subprograms_.destroy();
  }

  // The inlined instances that hold file address a, innermost first (up to
  // max of them): their count (0: a is in no inlined code).
  size_t chain_at(uint64_t a, uint32_t* out, size_t max) const {
    size_t n = ranges_.size();
    // The last range starting at or below a.
    size_t lo = 0, hi = n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (ranges_[mid].lo <= a) lo = mid + 1;
      else hi = mid;
    }
    // Nested instances' ranges nest: the innermost holding a is the first
    // one holding it going down; reach_[i] (the furthest end of ranges
    // 0..i) ends the search.
    for (size_t i = lo; i-- > 0 && reach_[i] > a;) {
      if (ranges_[i].hi <= a) continue;
      size_t k = 0;
      for (uint32_t d = ranges_[i].inlined + 1; d && k < max; d = inlined_[d - 1].parent) out[k++] = d - 1;
      return k;
    }
    return 0;
  }

  const DwarfInlined& inlined(uint32_t i) const { return inlined_[i]; }
  size_t inlined_count() const { return inlined_.size(); }
  size_t range_count() const { return ranges_.size(); }
  const DwarfScope& scope(uint32_t i) const { return scopes_[i]; }

  // The names of the function whose DIE is at `origin`: the first name and
  // linkage name along its DW_AT_specification/abstract_origin DIEs.
  bool names(uint64_t origin, DwarfNames* out) const {
    out->name = out->linkage = nullptr;
    out->scope = 0;
    for (int hops = 0; origin && hops < 8; hops++) {
      const DwarfSubprogram* d = subprogram_at(origin);
      if (!d) break;
      if (!out->linkage && d->linkage) out->linkage = d->linkage;
      if (!out->name && d->name) {
        out->name = d->name;
        out->scope = d->scope;
      }
      if (out->name && out->linkage) break;
      origin = d->ref;
    }
    return out->name != nullptr;
  }

 private:
  typedef dwarf_detail::Value Value;

  // What a unit's DIEs read with: its header and its DW_AT_*_base.
  struct Unit {
    uint64_t offset;      // of its header in .debug_info
    uint64_t end;
    uint16_t version;
    uint8_t addr_size;
    uint8_t offset_size;
    uint64_t base;        // the base address of its ranges (the unit DIE's DW_AT_low_pc)
    uint64_t str_offsets_base, addr_base, rnglists_base;
    bool has_str_offsets_base, has_rnglists_base;
  };

  // One level of the DIE tree being walked.
  struct Level {
    uint32_t scope;
    uint32_t inlined;   // the innermost inlined instance, + 1
    uint32_t depth;     // its depth
  };
  static const int kMaxNesting = 256;

  const DwarfSubprogram* subprogram_at(uint64_t off) const {
    size_t lo = 0, hi = subprograms_.size();
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (subprograms_[mid].offset < off) lo = mid + 1;
      else hi = mid;
    }
    return lo < subprograms_.size() && subprograms_[lo].offset == off ? &subprograms_[lo] : nullptr;
  }

  static const char* c_string(const MappedSpan& sec, uint64_t off) {
    if (off >= sec.size) return nullptr;
    for (uint64_t i = off; i < sec.size; i++)
      if (sec.data[i] == 0) return (const char*)sec.data + off;
    return nullptr;   // not terminated inside the section
  }

  const char* indexed_string(const Unit& u, uint64_t index) const {
    if (!u.has_str_offsets_base && u.version < 5) return nullptr;
    uint64_t base = u.has_str_offsets_base ? u.str_offsets_base : 8;
    SpanReader r = {&s_.str_offsets, base + index * u.offset_size, true};
    uint64_t off = r.fixed(u.offset_size);
    return r.ok ? c_string(s_.str, off) : nullptr;
  }

  bool indexed_address(const Unit& u, uint64_t index, uint64_t* a) const {
    SpanReader r = {&s_.addr, u.addr_base + index * u.addr_size, true};
    *a = r.fixed(u.addr_size);
    return r.ok;
  }

  // Reads the value of one attribute of form `form` (false: a form it does
  // not know, or the section ends).
  bool read_value(SpanReader& r, const Unit& u, uint32_t form, int64_t implicit_const, Value* v) const {
    using namespace dwarf_detail;
    v->u = 0;
    v->s = nullptr;
    v->form = form;
    switch (form) {
      case kFormAddr: v->u = r.fixed(u.addr_size); break;
      case kFormData1: case kFormRef1: case kFormFlag: case kFormStrx1: case kFormAddrx1: v->u = r.fixed(1); break;
      case kFormData2: case kFormRef2: case 0x26: case 0x2a: v->u = r.fixed(2); break;   // strx2, addrx2
      case 0x27: case 0x2b: v->u = r.fixed(3); break;                                     // strx3, addrx3
      case kFormData4: case kFormRef4: case kFormStrx4: case kFormAddrx4: case kFormRefSup4: v->u = r.fixed(4); break;
      case kFormData8: case kFormRef8: case kFormRefSig8: case kFormRefSup8: v->u = r.fixed(8); break;
      case kFormData16: r.pos += 16; break;
      case kFormSdata: v->u = (uint64_t)r.sleb(); break;
      case kFormUdata: case kFormRefUdata: case kFormStrx: case kFormAddrx: case kFormLoclistx:
      case kFormRnglistx: case kFormGnuAddrIndex: case kFormGnuStrIndex: v->u = r.uleb(); break;
      case kFormString: v->s = c_string(*r.span, r.string()); break;
      case kFormStrp: case kFormLineStrp: case kFormSecOffset: case kFormStrpSup: case kFormGnuRefAlt:
      case kFormGnuStrpAlt:
        v->u = r.fixed(u.offset_size);
        break;
      case kFormRefAddr: v->u = r.fixed(u.version <= 2 ? u.addr_size : u.offset_size); break;
      case kFormBlock1: r.pos += r.fixed(1); break;
      case kFormBlock2: r.pos += r.fixed(2); break;
      case kFormBlock4: r.pos += r.fixed(4); break;
      case kFormBlock: case kFormExprloc: r.pos += r.uleb(); break;
      case kFormFlagPresent: v->u = 1; break;
      case kFormImplicitConst: v->u = (uint64_t)implicit_const; break;
      case kFormIndirect: {
        uint32_t f = (uint32_t)r.uleb();
        if (f == kFormIndirect || f == kFormImplicitConst) return false;
        return read_value(r, u, f, 0, v);
      }
      default: return false;
    }
    return r.ok && r.pos <= r.span->size;
  }

  // A string attribute's text (null: a form of no string, or out of reach).
  const char* string_of(const Unit& u, const Value& v) const {
    using namespace dwarf_detail;
    switch (v.form) {
      case kFormString: return v.s;
      case kFormStrp: return c_string(s_.str, v.u);
      case kFormLineStrp: return c_string(s_.line_str, v.u);
      case kFormGnuStrpAlt: case kFormStrpSup: return in_alt_ ? nullptr : c_string(alt_.str, v.u);
      case kFormStrx: case kFormStrx1: case 0x26: case 0x27: case kFormStrx4: case kFormGnuStrIndex:
        return indexed_string(u, v.u);
      default: return nullptr;
    }
  }

  // A reference attribute's DIE offset in .debug_info, or in the
  // supplementary file's with kAltOffset (0: none we follow).
  uint64_t reference_of(const Unit& u, const Value& v) const {
    using namespace dwarf_detail;
    uint64_t tag = in_alt_ ? kAltOffset : 0;
    switch (v.form) {
      case kFormRef1: case kFormRef2: case kFormRef4: case kFormRef8: case kFormRefUdata: return (u.offset + v.u) | tag;
      case kFormRefAddr: return v.u | tag;
      case kFormGnuRefAlt: case kFormRefSup4: case kFormRefSup8:
        return in_alt_ || !alt_.info.size || v.u >= alt_.info.size ? 0 : v.u | kAltOffset;
      default: return 0;
    }
  }

  bool address_of(const Unit& u, const Value& v, uint64_t* a) const {
    using namespace dwarf_detail;
    if (v.form == kFormAddr) {
      *a = v.u;
      return true;
    }
    if (v.form == kFormAddrx || v.form == kFormGnuAddrIndex || (v.form >= kFormAddrx1 && v.form <= kFormAddrx4))
      return indexed_address(u, v.u, a);
    return false;
  }

  void add_range(uint64_t lo, uint64_t hi, uint32_t inlined) {
    if (lo < hi) ranges_.push_back(DwarfRange{lo, hi, inlined});
  }

  // DW_AT_ranges: a .debug_ranges list (DWARF 2-4).
  bool ranges_v4(const Unit& u, uint64_t off, uint32_t inlined) {
    SpanReader r = {&s_.ranges, off, true};
    uint64_t base = u.base;
    uint64_t all_ones = u.addr_size == 4 ? 0xffffffffull : ~0ull;
    for (int n = 0; n < 1 << 20; n++) {
      uint64_t a = r.fixed(u.addr_size), b = r.fixed(u.addr_size);
      if (!r.ok) return false;
      if (a == 0 && b == 0) return true;
      if (a == all_ones) base = b;
      else add_range(base + a, base + b, inlined);
    }
    return false;
  }

  // DW_AT_ranges: a .debug_rnglists list (DWARF 5).
  bool ranges_v5(const Unit& u, const Value& v, uint32_t inlined) {
    using namespace dwarf_detail;
    uint64_t off = v.u;
    if (v.form == kFormRnglistx) {
      if (!u.has_rnglists_base) return false;
      SpanReader t = {&s_.rnglists, u.rnglists_base + v.u * u.offset_size, true};
      off = u.rnglists_base + t.fixed(u.offset_size);
      if (!t.ok) return false;
    }
    SpanReader r = {&s_.rnglists, off, true};
    uint64_t base = u.base, a, b;
    for (int n = 0; n < 1 << 20; n++) {
      uint8_t kind = (uint8_t)r.fixed(1);
      if (!r.ok) return false;
      switch (kind) {
        case 0: return true;   // DW_RLE_end_of_list
        case 1: if (!indexed_address(u, r.uleb(), &base)) return false; break;   // base_addressx
        case 2:   // startx_endx
          if (!indexed_address(u, r.uleb(), &a) || !indexed_address(u, r.uleb(), &b)) return false;
          add_range(a, b, inlined);
          break;
        case 3:   // startx_length
          if (!indexed_address(u, r.uleb(), &a)) return false;
          add_range(a, a + r.uleb(), inlined);
          break;
        case 4: a = r.uleb(); b = r.uleb(); add_range(base + a, base + b, inlined); break;   // offset_pair
        case 5: base = r.fixed(u.addr_size); break;                                         // base_address
        case 6: a = r.fixed(u.addr_size); b = r.fixed(u.addr_size); add_range(a, b, inlined); break;
        case 7: a = r.fixed(u.addr_size); add_range(a, a + r.uleb(), inlined); break;        // start_length
        default: return false;
      }
      if (!r.ok) return false;
    }
    return false;
  }

  // The size of a value of `form` in unit u, or -1 where it varies.
  static int64_t fixed_size(const Unit& u, uint32_t form) {
    using namespace dwarf_detail;
    switch (form) {
      case kFormAddr: return u.addr_size;
      case kFormData1: case kFormRef1: case kFormFlag: case kFormStrx1: case kFormAddrx1: return 1;
      case kFormData2: case kFormRef2: case 0x26: case 0x2a: return 2;
      case 0x27: case 0x2b: return 3;
      case kFormData4: case kFormRef4: case kFormStrx4: case kFormAddrx4: case kFormRefSup4: return 4;
      case kFormData8: case kFormRef8: case kFormRefSig8: case kFormRefSup8: return 8;
      case kFormData16: return 16;
      case kFormStrp: case kFormLineStrp: case kFormSecOffset: case kFormStrpSup: case kFormGnuRefAlt:
      case kFormGnuStrpAlt: return u.offset_size;
      case kFormRefAddr: return u.version <= 2 ? u.addr_size : u.offset_size;
      case kFormFlagPresent: case kFormImplicitConst: return 0;
      default: return -1;
    }
  }

  static bool wanted_tag(uint32_t tag) {
    using namespace dwarf_detail;
    return tag == kTagCompileUnit || tag == kTagPartialUnit || tag == kTagNamespace || tag == kTagClass ||
           tag == kTagStructure || tag == kTagUnion || tag == kTagSubprogram || tag == kTagInlined;
  }

  // The abbreviation table at `off` of .debug_abbrev: abbrevs_[code].
  bool read_abbrevs(const Unit& u, uint64_t off) {
    abbrevs_.size_ = 0;
    specs_.size_ = 0;
    SpanReader r = {&s_.abbrev, off, true};
    for (;;) {
      uint64_t code = r.uleb();
      if (!r.ok) return false;
      if (code == 0) return true;
      if (code > (1u << 20)) return false;
      dwarf_detail::Abbrev a;
      a.tag = (uint32_t)r.uleb();
      a.children = r.fixed(1) != 0;
      a.wanted = wanted_tag(a.tag);
      a.first = (uint32_t)specs_.size();
      a.size = 0;
      for (;;) {
        uint32_t attr = (uint32_t)r.uleb(), form = (uint32_t)r.uleb();
        int64_t ic = form == dwarf_detail::kFormImplicitConst ? r.sleb() : 0;
        if (!r.ok) return false;
        if (attr == 0 && form == 0) break;
        specs_.push_back(dwarf_detail::AttrSpec{attr, form, ic});
        int64_t n = fixed_size(u, form);
        a.size = a.size < 0 || n < 0 ? -1 : a.size + n;
      }
      a.count = (uint32_t)specs_.size() - a.first;
      while (abbrevs_.size() <= code) abbrevs_.push_back(dwarf_detail::Abbrev{0, false, false, 0, 0xffffffffu, -1});
      abbrevs_[code] = a;
    }
  }

  bool read_units() {
    SpanReader r = {&s_.info, 0, true};
    while (r.pos < s_.info.size) {
      Unit u = {};
      u.offset = r.pos;
      uint64_t len = r.fixed(4);
      u.offset_size = 4;
      if (len == 0xffffffffull) {
        len = r.fixed(8);
        u.offset_size = 8;
      } else if (len >= 0xfffffff0ull) {
        return false;
      }
      if (!r.ok || len > s_.info.size - r.pos) return false;
      u.end = r.pos + len;
      u.version = (uint16_t)r.fixed(2);
      uint8_t type = 1;   // DW_UT_compile
      uint64_t abbrev_off;
      if (u.version >= 5) {
        type = (uint8_t)r.fixed(1);
        u.addr_size = (uint8_t)r.fixed(1);
        abbrev_off = r.fixed(u.offset_size);
        if (type == 4 || type == 5) r.pos += 8;   // skeleton, split compile: dwo_id
      } else {
        abbrev_off = r.fixed(u.offset_size);
        u.addr_size = (uint8_t)r.fixed(1);
      }
      if (!r.ok || u.version < 2 || u.version > 5 || (u.addr_size != 4 && u.addr_size != 8)) return false;
      // compile and partial units; type units name no inlined code
      if ((type == 1 || type == 3 || type == 4) && !read_dies(u, r.pos, abbrev_off)) return false;
      r.pos = u.end;
    }
    return true;
  }

  bool read_dies(Unit& u, uint64_t pos, uint64_t abbrev_off) {
    using namespace dwarf_detail;
    if (!read_abbrevs(u, abbrev_off)) return false;
    MappedSpan unit_span = {s_.info.data, u.end, 0};   // the unit's DIEs end with it
    SpanReader r = {&unit_span, pos, true};
    Level levels[kMaxNesting];
    int depth = 0;
    levels[0] = Level{0, 0, 0};
    bool unit_die = true;
    while (r.pos < u.end) {
      uint64_t die_off = r.pos;
      uint64_t code = r.uleb();
      if (!r.ok) return false;
      if (code == 0) {
        if (depth > 0) depth--;
        continue;
      }
      if (code >= abbrevs_.size() || abbrevs_[code].count == 0xffffffffu) return false;
      const Abbrev& ab = abbrevs_[code];
      if (!ab.wanted && !unit_die) {
        // A DIE of no interest (a parameter, a variable, a type): skipped,
        // in one step where its attributes have a fixed size.
        if (ab.size >= 0) {
          r.pos += (uint64_t)ab.size;
        } else {
          Value v;
          for (uint32_t i = 0; i < ab.count; i++)
            if (!read_value(r, u, specs_[ab.first + i].form, specs_[ab.first + i].implicit_const, &v)) return false;
        }
        if (r.pos > u.end) return false;
        if (ab.children) {
          if (++depth >= kMaxNesting) return false;
          levels[depth] = levels[depth - 1];
        }
        continue;
      }
      const char* name = nullptr;
      const char* linkage = nullptr;
      uint64_t ref = 0, low = 0, high = 0;
      bool has_low = false, has_high = false, high_is_offset = false;
      Value ranges = {0, nullptr, 0};
      for (uint32_t i = 0; i < ab.count; i++) {
        const AttrSpec& sp = specs_[ab.first + i];
        Value v;
        if (!read_value(r, u, sp.form, sp.implicit_const, &v)) return false;
        switch (sp.attr) {
          case kAtName: name = string_of(u, v); break;
          case kAtLinkageName: case kAtMipsLinkageName: linkage = string_of(u, v); break;
          case kAtAbstractOrigin: case kAtSpecification: ref = reference_of(u, v); break;
          case kAtLowPc: has_low = address_of(u, v, &low); break;
          case kAtHighPc:
            high_is_offset = !(v.form == kFormAddr || v.form == kFormAddrx ||
                               (v.form >= kFormAddrx1 && v.form <= kFormAddrx4) || v.form == kFormGnuAddrIndex);
            has_high = high_is_offset ? (high = v.u, true) : address_of(u, v, &high);
            break;
          case kAtRanges: ranges = v; break;
          case kAtStrOffsetsBase: if (unit_die) { u.str_offsets_base = v.u; u.has_str_offsets_base = true; } break;
          case kAtAddrBase: if (unit_die) u.addr_base = v.u; break;
          case kAtRnglistsBase: if (unit_die) { u.rnglists_base = v.u; u.has_rnglists_base = true; } break;
          default: break;
        }
      }
      Level here = levels[depth];
      if (unit_die) {
        // DW_AT_low_pc and DW_AT_name came before DW_AT_str_offsets_base
        // and DW_AT_addr_base, maybe: the unit DIE's own names are unused.
        if (has_low) u.base = low;
        unit_die = false;
      } else if (ab.tag == kTagNamespace || ab.tag == kTagClass || ab.tag == kTagStructure || ab.tag == kTagUnion) {
        scopes_.push_back(DwarfScope{here.scope, name, ab.tag == kTagNamespace});
        here.scope = (uint32_t)scopes_.size() - 1;
      } else if (ab.tag == kTagSubprogram) {
        subprograms_.push_back(DwarfSubprogram{die_off | (in_alt_ ? kAltOffset : 0), ref, name, linkage, here.scope});
      } else if (ab.tag == kTagInlined && !in_alt_) {   // a supplementary file's would have no code
        uint32_t id = (uint32_t)inlined_.size();
        inlined_.push_back(DwarfInlined{ref, here.inlined, here.depth + 1});
        if (has_low && has_high) add_range(low, high_is_offset ? low + high : high, id);
        if (ranges.form) {
          bool ok = u.version >= 5 ? ranges_v5(u, ranges, id) : ranges_v4(u, ranges.u, id);
          if (!ok) return false;
        }
        here.inlined = id + 1;
        here.depth++;
      }
      if (ab.children) {
        if (++depth >= kMaxNesting) return false;
        levels[depth] = here;
      }
    }
    return r.ok;
  }

  // Ranges by start (a deeper instance after the one it lies in), and each
  // one's reach (the furthest end of it and the ones before).
  bool sort_ranges() {
    DwarfRange* v = ranges_.data();
    size_t n = ranges_.size();
    auto less = [this](const DwarfRange& x, const DwarfRange& y) {
      if (x.lo != y.lo) return x.lo < y.lo;
      return inlined_[x.inlined].depth < inlined_[y.inlined].depth;
    };
    // heapsort
    auto sift = [&](size_t root, size_t end) {
      for (;;) {
        size_t kid = 2 * root + 1;
        if (kid >= end) return;
        if (kid + 1 < end && less(v[kid], v[kid + 1])) kid++;
        if (!less(v[root], v[kid])) return;
        DwarfRange t = v[root];
        v[root] = v[kid];
        v[kid] = t;
        root = kid;
      }
    };
    for (size_t i = n / 2; i-- > 0;) sift(i, n);
    for (size_t end = n; end > 1; end--) {
      DwarfRange t = v[0];
      v[0] = v[end - 1];
      v[end - 1] = t;
      sift(0, end - 1);
    }
    reach_.reserve(n);
    uint64_t far = 0;
    for (size_t i = 0; i < n; i++) {
      if (v[i].hi > far) far = v[i].hi;
      reach_.push_back(far);
    }
    return true;
  }

  Allocator al_;
  DwarfSections s_;
  DwarfSections alt_;   // the supplementary file's (info size 0: none)
  bool in_alt_;         // its units being read
  Vec<DwarfScope> scopes_;
  Vec<DwarfSubprogram> subprograms_;   // by offset (the order units are read in)
  Vec<DwarfInlined> inlined_;
  Vec<DwarfRange> ranges_;
  Vec<uint64_t> reach_;
  Vec<dwarf_detail::AttrSpec> specs_;   // of the unit being read
  Vec<dwarf_detail::Abbrev> abbrevs_;
};

// The ELF64 little-endian file's section table: where the section headers
// are and which one names them, from the file's first n bytes.
inline bool elf_section_table(const uint8_t* file, uint64_t n, uint64_t* shoff, uint64_t* shnum,
                              uint64_t* shstrndx) {
  MappedSpan f = {file, n, 0};
  SpanReader r = {&f, 0, true};
  uint64_t magic = r.fixed(4);
  uint8_t elf_class = (uint8_t)r.fixed(1), data = (uint8_t)r.fixed(1);
  if (!r.ok || magic != 0x464c457f || elf_class != 2 || data != 1) return false;
  r.pos = 40;
  *shoff = r.fixed(8);
  r.pos = 58;
  uint64_t shentsize = r.fixed(2);
  *shnum = r.fixed(2);
  *shstrndx = r.fixed(2);
  return r.ok && shentsize == 64 && *shnum > 0 && *shstrndx < *shnum;
}

// One ELF64 section header (64 bytes at h).
struct ElfSection {
  uint32_t name;   // in the section names' section
  uint32_t type;
  uint64_t flags, offset, size;
};
inline ElfSection elf_section(const uint8_t* h) {
  MappedSpan f = {h, 64, 0};
  SpanReader r = {&f, 0, true};
  ElfSection s;
  s.name = (uint32_t)r.fixed(4);
  s.type = (uint32_t)r.fixed(4);
  s.flags = r.fixed(8);
  r.pos = 24;
  s.offset = r.fixed(8);
  s.size = r.fixed(8);
  return s;
}
const uint64_t kElfCompressed = 0x800;   // SHF_COMPRESSED
const uint32_t kElfNobits = 8;           // SHT_NOBITS

}  // namespace core
}  // namespace kg
