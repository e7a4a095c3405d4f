// kgrind core: function ranges from an object's unwind tables.
//
// A stripped program keeps only its exported functions' symbols, but every
// function the compiler emitted still has an FDE in .eh_frame (needed to
// unwind through it: C++ exceptions, backtraces), giving its first
// instruction and its length. The linker's .eh_frame_hdr (PT_GNU_EH_FRAME)
// holds a table of the FDEs sorted by their first instruction, for binary
// search. EhFrameIndex reads both where the object is mapped, without a
// copy, and answers "which FDE range holds this address" (LSB Core spec,
// "Exception Frames"; DWARF 4 section 6.4.1 for the CIE and FDE layout).
//
// Everything is bounds-checked against the two spans it is given: a bad
// or truncated table makes init() fail or a look-up miss, never a read
// outside them.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace kg {
namespace core {

// Bytes of an object as mapped: data[0] is at address vma.
struct MappedSpan {
  const uint8_t* data;
  uint64_t size;
  uint64_t vma;

  bool holds(uint64_t a, uint64_t n) const { return a >= vma && n <= size && a - vma <= size - n; }
  const uint8_t* at(uint64_t a) const { return data + (a - vma); }
};

// DWARF pointer encodings (DW_EH_PE_*): the value's format in the low
// nibble, what it is relative to in bits 4-6.
enum : uint8_t {
  kPeAbsptr = 0x00, kPeUleb128 = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03, kPeUdata8 = 0x04,
  kPeSleb128 = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b, kPeSdata8 = 0x0c,
  kPePcrel = 0x10, kPeDatarel = 0x30, kPeOmit = 0xff,
};

// A cursor over a span that fails (ok = false) instead of reading past it.
struct SpanReader {
  const MappedSpan* span;
  uint64_t pos;   // vma of the next byte
  bool ok;

  bool has(uint64_t n) {
    if (ok && !span->holds(pos, n)) ok = false;
    return ok;
  }
  uint64_t fixed(unsigned n) {   // little-endian, n <= 8
    if (!has(n)) return 0;
    const uint8_t* p = span->at(pos);
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    pos += n;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0; has(1); shift += 7) {
      uint8_t b = *span->at(pos++);
      if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return 0;
  }
  int64_t sleb() {
    uint64_t v = 0;
    unsigned shift = 0;
    for (; has(1); ) {
      uint8_t b = *span->at(pos++);
      if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) {
        if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
        return (int64_t)v;
      }
    }
    return 0;
  }
  // A value in `encoding` (no indirection); datarel is relative to
  // data_base. Fails on encodings this reader does not know.
  uint64_t encoded(uint8_t encoding, uint64_t data_base) {
    uint64_t here = pos;
    uint64_t v;
    switch (encoding & 0x0f) {
      case kPeAbsptr: case kPeUdata8: case kPeSdata8: v = fixed(8); break;
      case kPeUdata4: v = fixed(4); break;
      case kPeSdata4: v = (uint64_t)(int64_t)(int32_t)(uint32_t)fixed(4); break;
      case kPeUdata2: v = fixed(2); break;
      case kPeSdata2: v = (uint64_t)(int64_t)(int16_t)(uint16_t)fixed(2); break;
      case kPeUleb128: v = uleb(); break;
      case kPeSleb128: v = (uint64_t)sleb(); break;
      default: ok = false; return 0;
    }
    switch (encoding & 0x70) {
      case 0: return v;
      case kPePcrel: return v + here;
      case kPeDatarel: return v + data_base;
      default: ok = false; return 0;
    }
  }
  // Skips a NUL-terminated string; returns its first byte's vma.
  uint64_t string() {
    uint64_t start = pos;
    while (has(1) && *span->at(pos) != 0) pos++;
    if (has(1)) pos++;
    return start;
  }
};

// The ELF program header PT_GNU_EH_FRAME (.eh_frame_hdr's place and size
// in memory) from the first n bytes of an ELF64 little-endian file.
inline bool elf_eh_frame_hdr(const uint8_t* file, uint64_t n, uint64_t* vaddr, uint64_t* size) {
  MappedSpan f = {file, n, 0};
  SpanReader r = {&f, 0, true};
  uint64_t magic = r.fixed(4);
  uint8_t elf_class = (uint8_t)r.fixed(1), data = (uint8_t)r.fixed(1);
  if (!r.ok || magic != 0x464c457f || elf_class != 2 || data != 1) return false;   // "\x7fELF", 64-bit, LSB
  r.pos = 32;
  uint64_t phoff = r.fixed(8);
  r.pos = 54;
  uint64_t phentsize = r.fixed(2), phnum = r.fixed(2);
  if (!r.ok || phentsize < 56) return false;
  for (uint64_t i = 0; i < phnum; i++) {
    r.pos = phoff + i * phentsize;
    if (r.fixed(4) != 0x6474e550) continue;   // PT_GNU_EH_FRAME
    r.pos += 12;                             // p_flags, p_offset
    *vaddr = r.fixed(8);
    r.pos += 16;                             // p_paddr, p_filesz
    *size = r.fixed(8);
    return r.ok;
  }
  return false;
}

// Where .eh_frame is, from its header.
inline bool eh_frame_address(const MappedSpan& hdr, uint64_t* vma) {
  SpanReader r = {&hdr, hdr.vma, true};
  uint8_t version = (uint8_t)r.fixed(1);
  uint8_t frame_ptr_enc = (uint8_t)r.fixed(1);
  r.pos += 2;
  if (!r.ok || version != 1 || frame_ptr_enc == kPeOmit) return false;
  *vma = r.encoded(frame_ptr_enc, hdr.vma);
  return r.ok;
}

class EhFrameIndex {
 public:
  // hdr: .eh_frame_hdr; frame: memory holding .eh_frame (its mapping: the
  // FDEs' bounds are checked against it). False if the header is not a
  // version-1 header with a sorted 4-byte table (what GNU ld, gold, lld
  // and mold write), or has no entries.
  bool init(const MappedSpan& hdr, const MappedSpan& frame) {
    hdr_ = hdr;
    frame_ = frame;
    count_ = 0;
    SpanReader r = {&hdr_, hdr_.vma, true};
    uint8_t version = (uint8_t)r.fixed(1);
    uint8_t frame_ptr_enc = (uint8_t)r.fixed(1);
    uint8_t count_enc = (uint8_t)r.fixed(1);
    uint8_t table_enc = (uint8_t)r.fixed(1);
    if (!r.ok || version != 1 || frame_ptr_enc == kPeOmit || count_enc == kPeOmit ||
        table_enc != (kPeDatarel | kPeSdata4))
      return false;
    r.encoded(frame_ptr_enc, hdr_.vma);
    uint64_t count = r.encoded(count_enc, hdr_.vma);
    if (!r.ok || count == 0 || !hdr_.holds(r.pos, count * 8) || count > (1u << 31)) return false;
    table_ = r.pos;
    count_ = (uint32_t)count;
    return true;
  }

  uint32_t count() const { return count_; }

  // The FDE range [*start, *end) holding pc, if one does.
  bool function_at(uint64_t pc, uint64_t* start, uint64_t* end) const {
    if (count_ == 0) return false;
    // The last entry whose first instruction is at or below pc.
    uint32_t lo = 0, hi = count_;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (entry_start(mid) <= pc) lo = mid + 1;
      else hi = mid;
    }
    if (lo == 0) return false;
    uint64_t fde = entry_fde(lo - 1);
    uint64_t begin, length;
    if (!fde_range(fde, &begin, &length) || begin != entry_start(lo - 1)) return false;
    if (pc - begin >= length) return false;
    *start = begin;
    *end = begin + length;
    return true;
  }

 private:
  uint64_t entry_field(uint32_t i, unsigned field) const {
    SpanReader r = {&hdr_, table_ + (uint64_t)i * 8 + field * 4, true};
    return r.encoded(kPeDatarel | kPeSdata4, hdr_.vma);
  }
  uint64_t entry_start(uint32_t i) const { return entry_field(i, 0); }
  uint64_t entry_fde(uint32_t i) const { return entry_field(i, 1); }

  // The first instruction and length of the FDE at vma fde.
  bool fde_range(uint64_t fde, uint64_t* begin, uint64_t* length) const {
    SpanReader r = {&frame_, fde, true};
    uint64_t size = r.fixed(4);
    if (size == 0xffffffff) size = r.fixed(8);
    uint64_t id_at = r.pos;
    uint64_t cie_offset = r.fixed(4);
    if (!r.ok || size == 0 || cie_offset == 0 || cie_offset > id_at) return false;   // 0: a CIE
    uint8_t enc;
    if (!cie_pointer_encoding(id_at - cie_offset, &enc)) return false;
    *begin = r.encoded(enc, 0);
    *length = r.encoded(enc & 0x0f, 0);   // the same format, not relative
    return r.ok;
  }

  // The CIE's FDE pointer encoding ('R' in a "z" augmentation; absptr
  // without one).
  bool cie_pointer_encoding(uint64_t cie, uint8_t* enc) const {
    SpanReader r = {&frame_, cie, true};
    uint64_t size = r.fixed(4);
    if (size == 0xffffffff) size = r.fixed(8);
    uint64_t id = r.fixed(4);
    uint8_t version = (uint8_t)r.fixed(1);
    uint64_t aug = r.string();
    if (!r.ok || size == 0 || id != 0 || (version != 1 && version != 3 && version != 4)) return false;
    *enc = kPeAbsptr;
    if (*frame_.at(aug) != 'z') return *frame_.at(aug) == 0;   // no augmentation data
    if (version == 4) r.fixed(2);   // address and segment selector sizes
    r.uleb();                       // code alignment
    r.sleb();                       // data alignment
    if (version == 1) r.fixed(1); else r.uleb();   // return address register
    r.uleb();                       // augmentation data length
    for (uint64_t c = aug + 1; r.ok && frame_.holds(c, 1) && *frame_.at(c); c++) {
      switch (*frame_.at(c)) {
        case 'R': *enc = (uint8_t)r.fixed(1); return r.ok;
        case 'L': r.fixed(1); break;
        case 'P': { uint8_t penc = (uint8_t)r.fixed(1); r.encoded(penc & 0x7f, 0); break; }
        case 'S': case 'B': break;
        default: return false;   // unknown: its data's size is unknown
      }
    }
    return r.ok;
  }

  MappedSpan hdr_, frame_;
  uint64_t table_;
  uint32_t count_;
};

}  // namespace core
}  // namespace kg
