// kgrind core: DEFLATE (RFC 1951) and zlib (RFC 1950) decompression.
//
// Debug sections are often compressed: SHF_COMPRESSED sections (an
// Elf64_Chdr, then a zlib stream: Debian's -dbg and -dbgsym packages, `gcc
// -gz`, `objcopy --compress-debug-sections`) and GNU's older `.zdebug_*`
// sections. The tool links no zlib (it is static, without libc), so this is
// an inflater of its own, written from the two RFCs: the whole input in
// memory, the whole output into a buffer of the size the section's header
// gives, in one call.
//
// Blocks: stored, fixed Huffman codes, dynamic Huffman codes. Every read is
// bounds-checked against the input and every write against the output's
// capacity; a malformed stream (a reserved block type, a stored block's
// length without its complement, an over-subscribed or incomplete code, a
// symbol no code has, a distance before the output's start, more output
// than room, a bad zlib header or Adler-32) returns an error, never a read
// or write outside the buffers. The work is bounded by the input's and the
// output's sizes: every step consumes input bits or produces output bytes.
//
// Codes are decoded with a table of the codes of at most kFastBits bits,
// indexed by the next kFastBits input bits; a longer code is found by its
// length in canonical order (RFC 1951 3.2.2: codes of one length are
// consecutive numbers, in the order of their symbols).
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace kg {
namespace core {

enum InflateStatus {
  kInflateOk = 0,
  kInflateTruncated,      // the input ends inside the stream
  kInflateBadHeader,      // not a zlib header (method 8, window <= 32 KiB, check bits), or a preset dictionary
  kInflateBadBlock,       // a reserved block type, a stored length without its complement
  kInflateBadCode,        // an invalid code description, or bits no code has, or a reserved symbol
  kInflateBadDistance,    // a distance before the output's start
  kInflateTooLong,        // more output than the buffer holds
  kInflateBadChecksum,    // the Adler-32 of the output is not the stream's
  kInflateTooShort,       // less output than the size given (compressed_sections.h)
};

inline const char* inflate_error(InflateStatus s) {
  switch (s) {
    case kInflateOk: return "ok";
    case kInflateTruncated: return "truncated stream";
    case kInflateBadHeader: return "bad zlib header";
    case kInflateBadBlock: return "bad block";
    case kInflateBadCode: return "bad Huffman code";
    case kInflateBadDistance: return "distance too far back";
    case kInflateTooLong: return "more data than the size given";
    case kInflateBadChecksum: return "Adler-32 mismatch";
    case kInflateTooShort: return "less data than the size given";
  }
  return "?";
}

// RFC 1950's Adler-32 of n bytes, continuing from `adler` (1 to start).
inline uint32_t adler32(const uint8_t* p, size_t n, uint32_t adler = 1) {
  const uint32_t kMod = 65521;
  uint32_t a = adler & 0xffff, b = adler >> 16;
  while (n > 0) {
    // 5552 bytes: the most for which b cannot overflow 32 bits before the
    // modulo (255 n (n + 1) / 2 + (n + 1) (kMod - 1) < 2^32).
    size_t chunk = n < 5552 ? n : 5552;
    n -= chunk;
    while (chunk--) {
      a += *p++;
      b += a;
    }
    a %= kMod;
    b %= kMod;
  }
  return b << 16 | a;
}

namespace inflate_detail {

const unsigned kMaxBits = 15;    // the longest code
const unsigned kFastBits = 9;    // codes this long or shorter: one table look-up
const unsigned kMaxSymbols = 288;

// The input, read least significant bit first (RFC 1951 3.1.1), through a
// 64-bit buffer of whole bytes.
struct BitInput {
  const uint8_t* data;
  size_t size;
  size_t next;      // the next byte not in the buffer
  uint64_t bits;    // the buffered bits, the next one lowest
  unsigned count;   // how many

  void fill() {
    while (count <= 56 && next < size) {
      bits |= (uint64_t)data[next++] << count;
      count += 8;
    }
  }
  // The next n (<= 32) bits as a number; false if the input ends first.
  bool take(unsigned n, uint32_t* v) {
    if (count < n) fill();
    if (count < n) return false;
    *v = (uint32_t)(bits & ((1ull << n) - 1));
    bits >>= n;
    count -= n;
    return true;
  }
  // Drops the bits up to the next byte boundary and gives back the whole
  // bytes still buffered: `next` is then the next byte of the stream.
  void align() {
    next -= count / 8;
    bits = 0;
    count = 0;
  }
};

// One prefix code (RFC 1951 3.2.2): its codes' lengths made into a
// look-up table and the symbols in canonical order.
struct Code {
  uint16_t fast[1u << kFastBits];   // by the next kFastBits bits: symbol << 4 | length; 0: a longer code or none
  uint16_t per_length[kMaxBits + 1];
  uint16_t sorted[kMaxSymbols];     // symbols by (length, symbol)
};

inline uint32_t reversed(uint32_t code, unsigned n) {
  uint32_t r = 0;
  for (unsigned i = 0; i < n; i++) r |= ((code >> i) & 1u) << (n - 1 - i);
  return r;
}

// Builds c from n symbols' code lengths (0: unused). False on an
// over-subscribed set of lengths (more codes than there are bit strings),
// and on an incomplete one (bit strings no code has) unless
// `one_code_may_be_short` and the only code has length 1 (a code of one
// symbol, which RFC 1951 3.2.7 allows: one distance code of one bit) or
// there is no code at all. zlib's rule, so that the streams one refuses the
// other refuses too.
inline bool build_code(Code* c, const uint8_t* lengths, unsigned n, bool one_code_may_be_short) {
  for (unsigned l = 0; l <= kMaxBits; l++) c->per_length[l] = 0;
  for (unsigned s = 0; s < n; s++) c->per_length[lengths[s]]++;
  c->per_length[0] = 0;
  unsigned longest = 0;
  int32_t room = 1;   // bit strings of the current length that no shorter code prefixes
  for (unsigned l = 1; l <= kMaxBits; l++) {
    room = room * 2 - c->per_length[l];
    if (room < 0) return false;
    if (c->per_length[l]) longest = l;
  }
  if (room > 0 && longest != 0 && !(one_code_may_be_short && longest == 1)) return false;
  // where each length's symbols start in `sorted`, and its first code
  uint16_t start[kMaxBits + 2];
  uint32_t first_code[kMaxBits + 1];
  start[1] = 0;
  first_code[0] = 0;
  uint32_t code = 0;
  for (unsigned l = 1; l <= kMaxBits; l++) {
    start[l + 1] = (uint16_t)(start[l] + c->per_length[l]);
    code = (code + c->per_length[l - 1]) << 1;
    first_code[l] = code;
  }
  for (unsigned i = 0; i < (1u << kFastBits); i++) c->fast[i] = 0;
  for (unsigned s = 0; s < n; s++) {
    unsigned l = lengths[s];
    if (!l) continue;
    c->sorted[start[l]++] = (uint16_t)s;
    if (l > kFastBits) continue;
    // the stream holds a code's first bit lowest: the table index is the
    // code reversed, with every value of the bits after it
    uint32_t low = reversed(first_code[l]++, l);
    for (uint32_t high = 0; high < (1u << (kFastBits - l)); high++) c->fast[low | high << l] = (uint16_t)(s << 4 | l);
  }
  return true;
}

// The next symbol in code c; false if the input ends first or its bits
// are no code's.
inline bool decode(BitInput* in, const Code* c, uint32_t* symbol) {
  if (in->count < kMaxBits) in->fill();
  uint16_t e = c->fast[in->bits & ((1u << kFastBits) - 1)];
  if (e) {
    unsigned l = e & 15;
    if (l > in->count) return false;
    in->bits >>= l;
    in->count -= l;
    *symbol = e >> 4;
    return true;
  }
  // Longer than kFastBits (or no code): the code of each length read so
  // far is a number; the codes of length l are first..first+per_length[l).
  uint32_t code = 0, first = 0, index = 0;
  for (unsigned l = 1; l <= kMaxBits && l <= in->count; l++) {
    code |= (uint32_t)(in->bits >> (l - 1)) & 1u;
    uint32_t n = c->per_length[l];
    if (code - first < n) {
      in->bits >>= l;
      in->count -= l;
      *symbol = c->sorted[index + code - first];
      return true;
    }
    index += n;
    first = (first + n) << 1;
    code <<= 1;
  }
  return false;
}

// Length symbols 257..285 and distance symbols 0..29: the base and the
// count of extra bits (RFC 1951 3.2.5).
inline void length_of(uint32_t i, uint32_t* base, unsigned* extra) {   // i = symbol - 257
  if (i == 28) {
    *base = 258;
    *extra = 0;
  } else if (i < 8) {
    *base = 3 + i;
    *extra = 0;
  } else {
    *extra = (i - 4) / 4;
    *base = ((4 + (i & 3)) << *extra) + 3;
  }
}
inline void distance_of(uint32_t i, uint32_t* base, unsigned* extra) {
  if (i < 4) {
    *base = i + 1;
    *extra = 0;
  } else {
    *extra = (i - 2) / 2;
    *base = ((2 + (i & 1)) << *extra) + 1;
  }
}

struct Inflater {
  BitInput in;
  uint8_t* out;
  size_t cap, written;
  Code lit, dist;
  bool fixed_built;
  Code fixed_lit, fixed_dist;

  InflateStatus stored() {
    in.align();
    if (in.size - in.next < 4) return kInflateTruncated;
    const uint8_t* p = in.data + in.next;
    uint32_t len = p[0] | (uint32_t)p[1] << 8, nlen = p[2] | (uint32_t)p[3] << 8;
    if ((len ^ 0xffff) != nlen) return kInflateBadBlock;
    in.next += 4;
    if (in.size - in.next < len) return kInflateTruncated;
    if (cap - written < len) return kInflateTooLong;
    for (uint32_t i = 0; i < len; i++) out[written + i] = in.data[in.next + i];
    written += len;
    in.next += len;
    return kInflateOk;
  }

  void build_fixed() {
    uint8_t l[kMaxSymbols];
    for (unsigned s = 0; s < 288; s++) l[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
    build_code(&fixed_lit, l, 288, false);
    for (unsigned s = 0; s < 32; s++) l[s] = 5;
    build_code(&fixed_dist, l, 32, false);   // symbols 30 and 31 are reserved: symbols() refuses them
    fixed_built = true;
  }

  // A dynamic block's code description (RFC 1951 3.2.7) into lit and dist.
  InflateStatus dynamic_codes() {
    uint32_t hlit, hdist, hclen;
    if (!in.take(5, &hlit) || !in.take(5, &hdist) || !in.take(4, &hclen)) return kInflateTruncated;
    unsigned nlit = hlit + 257, ndist = hdist + 1, nlen = hclen + 4;
    if (nlit > 286 || ndist > 30) return kInflateBadCode;
    static const uint8_t kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    uint8_t l[286 + 30];
    for (unsigned i = 0; i < 19; i++) l[i] = 0;
    for (unsigned i = 0; i < nlen; i++) {
      uint32_t v;
      if (!in.take(3, &v)) return kInflateTruncated;
      l[kOrder[i]] = (uint8_t)v;
    }
    Code* lengths_code = &lit;   // lit is free until the lengths are read
    if (!build_code(lengths_code, l, 19, false)) return kInflateBadCode;
    unsigned total = nlit + ndist;
    for (unsigned i = 0; i < total;) {
      uint32_t sym, rep;
      if (!decode(&in, lengths_code, &sym)) return in.count >= kMaxBits ? kInflateBadCode : kInflateTruncated;
      if (sym < 16) {
        l[i++] = (uint8_t)sym;
        continue;
      }
      uint8_t value = 0;
      if (sym == 16) {
        if (i == 0) return kInflateBadCode;   // nothing to repeat
        value = l[i - 1];
        if (!in.take(2, &rep)) return kInflateTruncated;
        rep += 3;
      } else if (sym == 17) {
        if (!in.take(3, &rep)) return kInflateTruncated;
        rep += 3;
      } else {
        if (!in.take(7, &rep)) return kInflateTruncated;
        rep += 11;
      }
      if (rep > total - i) return kInflateBadCode;
      while (rep--) l[i++] = value;
    }
    if (l[256] == 0) return kInflateBadCode;   // no end of block: the block could not end
    if (!build_code(&lit, l, nlit, true) || !build_code(&dist, l + nlit, ndist, true)) return kInflateBadCode;
    return kInflateOk;
  }

  // The symbols of a Huffman block, to its end-of-block symbol.
  InflateStatus symbols(const Code* lc, const Code* dc) {
    for (;;) {
      uint32_t sym;
      if (!decode(&in, lc, &sym)) return in.count >= kMaxBits ? kInflateBadCode : kInflateTruncated;
      if (sym < 256) {
        if (written == cap) return kInflateTooLong;
        out[written++] = (uint8_t)sym;
        continue;
      }
      if (sym == 256) return kInflateOk;
      if (sym > 285) return kInflateBadCode;
      uint32_t len, dist, more;
      unsigned extra;
      length_of(sym - 257, &len, &extra);
      if (!in.take(extra, &more)) return kInflateTruncated;
      len += more;
      if (!decode(&in, dc, &sym)) return in.count >= kMaxBits ? kInflateBadCode : kInflateTruncated;
      if (sym > 29) return kInflateBadCode;
      distance_of(sym, &dist, &extra);
      if (!in.take(extra, &more)) return kInflateTruncated;
      dist += more;
      if (dist > written) return kInflateBadDistance;
      if (len > cap - written) return kInflateTooLong;
      // byte by byte: a distance shorter than the length repeats the bytes
      // this copy writes
      uint8_t* to = out + written;
      const uint8_t* from = to - dist;
      for (uint32_t i = 0; i < len; i++) to[i] = from[i];
      written += len;
    }
  }

  InflateStatus blocks() {
    for (;;) {
      uint32_t last, type;
      if (!in.take(1, &last) || !in.take(2, &type)) return kInflateTruncated;
      InflateStatus s;
      if (type == 0) {
        s = stored();
      } else if (type == 1) {
        if (!fixed_built) build_fixed();
        s = symbols(&fixed_lit, &fixed_dist);
      } else if (type == 2) {
        s = dynamic_codes();
        if (s == kInflateOk) s = symbols(&lit, &dist);
      } else {
        return kInflateBadBlock;
      }
      if (s != kInflateOk) return s;
      if (last) return kInflateOk;
    }
  }
};

}  // namespace inflate_detail

// A raw DEFLATE stream at in[0..n) into out[0..cap): the bytes written in
// *written, the input's bytes up to the end of the last block (its last
// byte's unused bits included) in *used. The Inflater (some 5 KiB) is the
// caller's, so that a tool with a small stack can keep it elsewhere.
inline InflateStatus inflate_raw(inflate_detail::Inflater* z, const uint8_t* in, size_t n, uint8_t* out, size_t cap,
                                 size_t* written, size_t* used) {
  z->in = inflate_detail::BitInput{in, n, 0, 0, 0};
  z->out = out;
  z->cap = cap;
  z->written = 0;
  z->fixed_built = false;
  InflateStatus s = z->blocks();
  *written = z->written;
  z->in.align();
  *used = z->in.next;
  return s;
}

// A zlib stream (RFC 1950: header, DEFLATE data, Adler-32) at in[0..n)
// into out[0..cap); the bytes written in *written. Bytes after the stream
// are not read.
inline InflateStatus inflate_zlib(inflate_detail::Inflater* z, const uint8_t* in, size_t n, uint8_t* out,
                                  size_t cap, size_t* written) {
  *written = 0;
  if (n < 2) return kInflateTruncated;
  uint32_t cmf = in[0], flg = in[1];
  // method 8 (deflate), a window of at most 2^15 bytes, check bits, no dictionary
  if ((cmf & 15) != 8 || (cmf >> 4) > 7 || (cmf << 8 | flg) % 31 != 0 || (flg & 0x20)) return kInflateBadHeader;
  size_t used;
  InflateStatus s = inflate_raw(z, in + 2, n - 2, out, cap, written, &used);
  if (s != kInflateOk) return s;
  const uint8_t* t = in + 2 + used;
  if (n - 2 - used < 4) return kInflateTruncated;
  uint32_t want = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
  return adler32(out, *written) == want ? kInflateOk : kInflateBadChecksum;
}

typedef inflate_detail::Inflater Inflater;

}  // namespace core
}  // namespace kg
