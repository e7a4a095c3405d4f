// kgrind core: the number encoding of the "# ksf-nodes" records
// (docs/output-format.md): unsigned integers in BER (Perl's pack "w"), lines
// of them in standard base64. Freestanding, header-only.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace kg {
namespace core {

// The most bytes one 64-bit number takes in BER (7 bits a byte).
const unsigned kMaxBerBytes = 10;

// v in BER at out: 7 bits a byte, most significant first, the high bit set
// on all but the last byte. Returns the number of bytes (1..kMaxBerBytes).
inline unsigned put_ber(uint64_t v, uint8_t* out) {
  uint8_t groups[kMaxBerBytes];
  unsigned n = 0;
  do {
    groups[n++] = (uint8_t)(v & 0x7F);
    v >>= 7;
  } while (v);
  unsigned used = 0;
  while (n > 1) out[used++] = (uint8_t)(groups[--n] | 0x80);
  out[used++] = groups[0];
  return used;
}

// The number put_ber wrote at p, p moved past it.
inline uint64_t get_ber(const uint8_t*& p) {
  uint64_t v = 0;
  while (*p & 0x80) v = (v << 7) | (*p++ & 0x7F);
  return (v << 7) | *p++;
}

// Characters base64_encode writes for n bytes.
inline size_t base64_length(size_t n) { return (n + 2) / 3 * 4; }

// The standard base64 of in[0, n), padded with '=', at out (no terminator).
// Returns base64_length(n).
inline size_t base64_encode(const uint8_t* in, size_t n, char* out) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    size_t rest = n - i;
    uint32_t v = (uint32_t)in[i] << 16 | (rest > 1 ? (uint32_t)in[i + 1] << 8 : 0) | (rest > 2 ? in[i + 2] : 0);
    out[o++] = digits[v >> 18];
    out[o++] = digits[(v >> 12) & 63];
    out[o++] = rest > 1 ? digits[(v >> 6) & 63] : '=';
    out[o++] = rest > 2 ? digits[v & 63] : '=';
  }
  return o;
}

}  // namespace core
}  // namespace kg
