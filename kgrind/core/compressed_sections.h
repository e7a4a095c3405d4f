// kgrind core: compressed ELF debug sections, inflated.
//
// Two layouts hold a zlib stream (RFC 1950) in a section's bytes:
//  * SHF_COMPRESSED (the ELF gABI; `gcc -gz`, `objcopy
//    --compress-debug-sections=zlib`, Debian's -dbg and -dbgsym packages):
//    an Elf64_Chdr first: ch_type (4 bytes; 1 = ELFCOMPRESS_ZLIB),
//    ch_reserved (4), ch_size (8: the size inflated), ch_addralign (8).
//  * GNU's older `.zdebug_*` sections (`objcopy
//    --compress-debug-sections=zlib-gnu`): "ZLIB", then the size inflated
//    in 8 bytes, big-endian.
// The size the header gives bounds the output: a stream that inflates to
// more, or to less, is refused.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "containers.h"
#include "inflate.h"

namespace kg {
namespace core {

enum SectionCompression { kSectionChdr, kSectionZdebug };

// Where a compressed section's zlib stream starts in its bytes and its
// size inflated; false if the header is not one of a zlib stream (another
// ch_type, as ELFCOMPRESS_ZSTD, or no "ZLIB").
inline bool compressed_section_header(const uint8_t* p, uint64_t n, SectionCompression kind, uint64_t* stream,
                                      uint64_t* size) {
  if (kind == kSectionChdr) {
    if (n < 24) return false;
    uint32_t type = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    uint64_t s = 0;
    for (int i = 0; i < 8; i++) s |= (uint64_t)p[8 + i] << (8 * i);
    if (type != 1) return false;
    *stream = 24;
    *size = s;
    return true;
  }
  if (n < 12 || p[0] != 'Z' || p[1] != 'L' || p[2] != 'I' || p[3] != 'B') return false;
  uint64_t s = 0;
  for (int i = 0; i < 8; i++) s = s << 8 | p[4 + i];
  *stream = 12;
  *size = s;
  return true;
}

// A compressed section's bytes p[0..n) inflated into memory from al (at
// most max_size bytes): *out and *out_size (the caller releases *out). A
// section empty inflated gives *out null. On an error nothing is kept.
inline InflateStatus inflate_section(const Allocator& al, const uint8_t* p, uint64_t n, SectionCompression kind,
                                     uint64_t max_size, uint8_t** out, uint64_t* out_size) {
  *out = nullptr;
  *out_size = 0;
  uint64_t stream, size;
  if (!compressed_section_header(p, n, kind, &stream, &size)) return kInflateBadHeader;
  if (size > max_size) return kInflateTooLong;
  uint8_t* bytes = (uint8_t*)al.allocate(size ? (size_t)size : 1);
  Inflater* z = (Inflater*)al.allocate(sizeof(Inflater));
  size_t written;
  InflateStatus s = inflate_zlib(z, p + stream, (size_t)(n - stream), bytes, (size_t)size, &written);
  al.release(z);
  if (s == kInflateOk && written != size) s = kInflateTooShort;
  if (s != kInflateOk || size == 0) {
    al.release(bytes);
    return s;
  }
  *out = bytes;
  *out_size = size;
  return kInflateOk;
}

}  // namespace core
}  // namespace kg
