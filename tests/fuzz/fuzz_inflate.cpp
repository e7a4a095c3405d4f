// libFuzzer target: bytes -> kgrind/core/inflate.h and compressed_sections.h,
// against zlib (linked into this host program only: the tool has none).
//
// Build (tests/unit/build_and_run.sh does it):
//   clang++-14 -std=gnu++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     tests/fuzz/fuzz_inflate.cpp -o fuzz_inflate -lz
//
// Input format: byte 0 bits 0-1: 0 a zlib stream, 1 raw DEFLATE, 2 an
// SHF_COMPRESSED section (Elf64_Chdr first), 3 a .zdebug section; bits 2-7:
// the output's room (0..63 times 97 bytes; a section's comes from its
// header). The rest: the stream. The output buffer is exactly the room
// (ASan sees any write past it); the input exactly the bytes (any read past
// them). Where zlib inflates a stream into that room, the core must give the
// same bytes, and refuse where zlib refuses.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <vector>

#include "../../kgrind/core/compressed_sections.h"

using namespace kg::core;

namespace {

void* host_alloc(void*, size_t n) { return malloc(n); }
void host_free(void*, void* p) { free(p); }
const Allocator kHost = {nullptr, host_alloc, host_free, false};

[[noreturn]] void fail(const char* what) {
  fprintf(stderr, "MISMATCH: %s\n", what);
  abort();
}

// zlib's inflation of in[0..n) into room bytes (window_bits: 15 zlib,
// -15 raw): whether it reached the stream's end within them, and the bytes.
bool zlib_inflate(const uint8_t* in, size_t n, size_t room, int window_bits, std::vector<uint8_t>* out) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, window_bits) != Z_OK) abort();
  out->assign(room + 1, 0);
  z.next_in = const_cast<Bytef*>(in);
  z.avail_in = (uInt)n;
  z.next_out = out->data();
  z.avail_out = (uInt)room;
  int r = inflate(&z, Z_FINISH);
  out->resize(room - z.avail_out);
  inflateEnd(&z);
  return r == Z_STREAM_END;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  unsigned mode = data[0] & 3;
  size_t room = (size_t)(data[0] >> 2) * 97;
  // the stream in a buffer of its own size
  std::vector<uint8_t> in(data + 1, data + size);
  const uint8_t* p = in.empty() ? nullptr : in.data();
  static uint8_t empty[1];
  if (!p) p = empty;
  if (mode <= 1) {
    uint8_t* out = (uint8_t*)malloc(room ? room : 1);
    Inflater* z = (Inflater*)malloc(sizeof(Inflater));
    size_t written = 0, used = 0;
    InflateStatus s = mode == 0 ? inflate_zlib(z, p, in.size(), out, room, &written)
                                : inflate_raw(z, p, in.size(), out, room, &written, &used);
    if (written > room) fail("wrote past the room");
    if (mode == 1 && s == kInflateOk && used > in.size()) fail("used past the input");
    std::vector<uint8_t> want;
    bool ok = zlib_inflate(p, in.size(), room, mode == 0 ? 15 : -15, &want);
    if (ok != (s == kInflateOk)) fail(ok ? "zlib inflates what the core refuses" : "the core inflates what zlib refuses");
    if (ok && (want.size() != written || memcmp(want.data(), out, written) != 0)) fail("different bytes");
    free(z);
    free(out);
    return 0;
  }
  SectionCompression kind = mode == 2 ? kSectionChdr : kSectionZdebug;
  uint8_t* out;
  uint64_t out_size;
  InflateStatus s = inflate_section(kHost, p, in.size(), kind, 1 << 16, &out, &out_size);
  uint64_t stream, want_size;
  if (s == kInflateOk) {
    if (!compressed_section_header(p, in.size(), kind, &stream, &want_size) || want_size != out_size)
      fail("a section of another size");
    std::vector<uint8_t> want;
    if (!zlib_inflate(p + stream, in.size() - stream, out_size, 15, &want) || want.size() != out_size ||
        (out_size && memcmp(want.data(), out, out_size) != 0))
      fail("a section zlib does not inflate alike");
  }
  kHost.release(out);
  return 0;
}
