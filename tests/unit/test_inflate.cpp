// Unit tests of kgrind/core/inflate.h and compressed_sections.h against
// independent compressors and decompressors: inputs made here compressed
// by python3's zlib (levels 0-9, every window size, every strategy, raw
// DEFLATE), by gzip and by objcopy --compress-debug-sections (zlib and
// zlib-gnu) and gcc -gz, inflated and compared byte for byte with what went
// in; damaged streams (bits flipped, bytes cut) refused exactly where
// python3's zlib refuses them, and inflated alike where it does not;
// hand-made streams of each kind of error refused with that error.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../../kgrind/core/compressed_sections.h"
#include "../../kgrind/core/dwarf_inlines.h"
#include "shell_command.h"
#include "temp_dir.h"

using namespace kg::core;
using kg_test::run;
using kg_test::TempDir;

namespace {

typedef std::vector<uint8_t> Bytes;

void* host_alloc(void*, size_t n) { return std::malloc(n); }
void host_free(void*, void* p) { std::free(p); }
const Allocator kHost = {nullptr, host_alloc, host_free, false};

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
}

// The inputs: each kind of data a compressor codes differently.
std::vector<std::pair<std::string, Bytes>> inputs() {
  std::vector<std::pair<std::string, Bytes>> v;
  std::mt19937 rng(5);
  v.push_back({"empty", {}});
  v.push_back({"one", {'x'}});
  Bytes text;   // words: literals and matches
  static const char* kWords[] = {"map", "find", "std::", "_Rb_tree", "operator[]", " ", "\n", "inline", "0x7f", "key"};
  while (text.size() < 150000) {
    const char* w = kWords[rng() % 10];
    text.insert(text.end(), w, w + std::strlen(w));
  }
  v.push_back({"text", text});
  Bytes noise(70000);   // incompressible: stored blocks
  for (auto& b : noise) b = (uint8_t)rng();
  v.push_back({"noise", noise});
  Bytes runs;   // length 258 matches at distance 1
  for (int i = 0; i < 40; i++) runs.insert(runs.end(), 1000 + rng() % 5000, (uint8_t)(rng() % 3));
  v.push_back({"runs", runs});
  Bytes far(noise.begin(), noise.begin() + 32768);   // matches at distance 32768, the farthest
  far.insert(far.end(), noise.begin(), noise.begin() + 32768);
  v.push_back({"far", far});
  Bytes numbers;   // skewed byte frequencies: long and short codes
  for (uint32_t i = 0; i < 60000; i++) {
    uint32_t x = i * i / 7 + (rng() % 2);
    for (int k = 0; k < 4; k++) numbers.push_back((uint8_t)(x >> (8 * k)));
  }
  v.push_back({"numbers", numbers});
  return v;
}

InflateStatus inflate_zlib_into(const Bytes& in, size_t cap, Bytes* out) {
  out->assign(cap, 0);
  Inflater z;
  size_t written = 0;
  InflateStatus s = inflate_zlib(&z, in.data(), in.size(), out->data(), cap, &written);
  out->resize(written);
  return s;
}

// python3's zlib's streams of every input, each in every way asked.
TEST(Inflate, PythonZlibStreamsInflateToTheirInput) {
  TempDir scratch("kg-inflate");
  const std::string& dir = scratch.path();
  ASSERT_FALSE(dir.empty());
  auto in = inputs();
  for (size_t i = 0; i < in.size(); i++) write_file(dir + "/" + in[i].first, in[i].second);
  std::string script = R"(
import sys, zlib, os
d = sys.argv[1]
ways = [('level%d' % l, lambda b, l=l: zlib.compress(b, l)) for l in range(10)]
for w in range(9, 16):
    ways.append(('wbits%d' % w, lambda b, w=w: (lambda c: c.compress(b) + c.flush())(zlib.compressobj(6, zlib.DEFLATED, w))))
for name, s in [('filtered', zlib.Z_FILTERED), ('huffman', zlib.Z_HUFFMAN_ONLY), ('rle', zlib.Z_RLE), ('fixed', zlib.Z_FIXED)]:
    ways.append((name, lambda b, s=s: (lambda c: c.compress(b) + c.flush())(zlib.compressobj(9, zlib.DEFLATED, 15, 9, s))))
ways.append(('mem1', lambda b: (lambda c: c.compress(b) + c.flush())(zlib.compressobj(9, zlib.DEFLATED, 15, 1))))
ways.append(('flushes', lambda b: (lambda c: b''.join([c.compress(b[i:i+5000]) + c.flush(zlib.Z_FULL_FLUSH) for i in range(0, len(b), 5000)]) + c.flush())(zlib.compressobj(6))))
for f in sorted(os.listdir(d)):
    if '.' in f: continue
    b = open(os.path.join(d, f), 'rb').read()
    for name, way in ways:
        open(os.path.join(d, f + '.' + name + '.z'), 'wb').write(way(b))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    open(os.path.join(d, f + '.raw'), 'wb').write(c.compress(b) + c.flush())
print('done')
)";
  write_file(dir + "/compress.py", Bytes(script.begin(), script.end()));
  ASSERT_EQ(run("python3 " + dir + "/compress.py " + dir), "done\n");
  static const char* kWays[] = {"level0", "level1", "level2", "level3", "level4", "level5", "level6", "level7",
                                "level8", "level9", "wbits9", "wbits10", "wbits11", "wbits12", "wbits13",
                                "wbits14", "wbits15", "filtered", "huffman", "rle", "fixed", "mem1", "flushes"};
  size_t streams = 0;
  for (const auto& [name, want] : in) {
    for (const char* way : kWays) {
      SCOPED_TRACE(name + "." + way);
      Bytes z = read_file(dir + "/" + name + "." + way + ".z"), got;
      ASSERT_GT(z.size(), 5u);
      // exactly the room needed, and more
      ASSERT_EQ(inflate_zlib_into(z, want.size(), &got), kInflateOk);
      EXPECT_TRUE(got == want);
      ASSERT_EQ(inflate_zlib_into(z, want.size() + 100, &got), kInflateOk);
      EXPECT_TRUE(got == want);
      if (!want.empty()) {
        EXPECT_EQ(inflate_zlib_into(z, want.size() - 1, &got), kInflateTooLong);
      }
      streams++;
    }
    Bytes raw = read_file(dir + "/" + name + ".raw"), got(want.size() + 1);
    Inflater z;
    size_t written, used;
    ASSERT_EQ(inflate_raw(&z, raw.data(), raw.size(), got.data(), got.size(), &written, &used), kInflateOk) << name;
    got.resize(written);
    EXPECT_TRUE(got == want) << name;
    EXPECT_EQ(used, raw.size()) << name;
  }
  EXPECT_EQ(streams, in.size() * (sizeof kWays / sizeof *kWays));
}

// The CRC-32 of RFC 1952 (bitwise, for gzip's trailer).
uint32_t crc32(const Bytes& b) {
  uint32_t c = 0xffffffffu;
  for (uint8_t x : b) {
    c ^= x;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
  }
  return ~c;
}

TEST(Inflate, GzipFilesInflateToTheirInput) {
  if (run("command -v gzip").empty()) GTEST_SKIP() << "no gzip";
  TempDir scratch("kg-inflate");
  const std::string& dir = scratch.path();
  ASSERT_FALSE(dir.empty());
  auto in = inputs();
  for (const auto& [name, want] : in) {
    write_file(dir + "/" + name, want);
    for (const char* level : {"-1", "-6", "-9"}) {
      SCOPED_TRACE(name + level);
      // with the file's name in the header (FNAME), and without
      for (bool named : {true, false}) {
        std::string cmd = named ? "gzip -c " + std::string(level) + " " + dir + "/" + name
                                : "gzip -c -n " + std::string(level) + " < " + dir + "/" + name;
        run(cmd + " > " + dir + "/out.gz");
        Bytes gz = read_file(dir + "/out.gz");
        ASSERT_GE(gz.size(), 18u);
        ASSERT_EQ(gz[0], 0x1f);
        ASSERT_EQ(gz[1], 0x8b);
        uint8_t flags = gz[3];
        size_t at = 10;
        if (flags & 4) at += 2 + (gz[10] | gz[11] << 8);   // FEXTRA
        for (int bit : {8, 16})                              // FNAME, FCOMMENT
          if (flags & bit)
            while (at < gz.size() && gz[at++] != 0) {}
        if (flags & 2) at += 2;   // FHCRC
        EXPECT_EQ(named, (flags & 8) != 0);
        Bytes got(want.size());
        Inflater z;
        size_t written, used;
        ASSERT_EQ(inflate_raw(&z, gz.data() + at, gz.size() - at, got.data(), got.size(), &written, &used), kInflateOk);
        got.resize(written);
        EXPECT_TRUE(got == want);
        ASSERT_EQ(at + used + 8, gz.size());   // then CRC-32 and ISIZE
        const uint8_t* t = gz.data() + at + used;
        EXPECT_EQ(uint32_t(t[0] | t[1] << 8 | t[2] << 16 | (uint32_t)t[3] << 24), crc32(want));
        EXPECT_EQ(uint32_t(t[4] | t[5] << 8 | t[6] << 16 | (uint32_t)t[7] << 24), (uint32_t)want.size());
      }
    }
  }
}

// An ELF file's sections by name.
std::vector<std::pair<std::string, ElfSection>> sections(const Bytes& f) {
  std::vector<std::pair<std::string, ElfSection>> v;
  uint64_t shoff, shnum, shstrndx;
  if (!elf_section_table(f.data(), f.size(), &shoff, &shnum, &shstrndx)) return v;
  ElfSection names = elf_section(f.data() + shoff + 64 * shstrndx);
  for (uint64_t i = 0; i < shnum; i++) {
    ElfSection s = elf_section(f.data() + shoff + 64 * i);
    v.push_back({(const char*)f.data() + names.offset + s.name, s});
  }
  return v;
}

const char* kProgram = R"(
#include <map>
#include <string>
#include <cstdio>
int main(int argc, char** argv) {
  std::map<std::string, int> m;
  for (int i = 0; i < argc * 50; i++) m[std::to_string(i)] += i;
  auto it = m.find(argv[0]);
  std::printf("%d %zu\n", it == m.end() ? -1 : it->second, m.size());
}
)";

// The .debug_* sections of `compressed` (in `kind`'s layout) inflated
// equal those of `plain`; how many there were.
int expect_sections_inflate_to(const Bytes& plain, const Bytes& compressed, SectionCompression kind) {
  auto want = sections(plain);
  int n = 0;
  for (const auto& [name, s] : sections(compressed)) {
    bool zdebug = name.rfind(".zdebug_", 0) == 0;
    if (kind == kSectionChdr ? !(s.flags & kElfCompressed) : !zdebug) continue;
    std::string plain_name = zdebug ? "." + name.substr(2) : name;
    SCOPED_TRACE(name);
    uint8_t* out;
    uint64_t size;
    EXPECT_EQ(inflate_section(kHost, compressed.data() + s.offset, s.size, kind, 1 << 30, &out, &size), kInflateOk);
    bool found = false;
    for (const auto& [wname, w] : want) {
      if (wname != plain_name) continue;
      found = true;
      EXPECT_EQ(size, w.size);
      EXPECT_TRUE(size == w.size && std::memcmp(out, plain.data() + w.offset, size) == 0);
    }
    EXPECT_TRUE(found);
    kHost.release(out);
    n++;
  }
  return n;
}

TEST(Inflate, ObjcopysAndGccsCompressedSectionsInflateToTheSections) {
  TempDir scratch("kg-inflate");
  const std::string& dir = scratch.path();
  ASSERT_FALSE(dir.empty());
  std::ofstream(dir + "/p.cpp") << kProgram;
  std::string exe = dir + "/p";
  ASSERT_NE(run("g++ -g -O2 -o " + exe + " " + dir + "/p.cpp 2>&1 && echo built").find("built"), std::string::npos);
  Bytes plain = read_file(exe);
  run("objcopy --compress-debug-sections=zlib " + exe + " " + exe + ".z");
  EXPECT_GE(expect_sections_inflate_to(plain, read_file(exe + ".z"), kSectionChdr), 4);
  run("objcopy --compress-debug-sections=zlib-gnu " + exe + " " + exe + ".zg 2>&1");
  Bytes gnu = read_file(exe + ".zg");
  if (gnu.empty()) {
    std::printf("objcopy writes no zlib-gnu: .zdebug sections not checked\n");
  } else {
    EXPECT_GE(expect_sections_inflate_to(plain, gnu, kSectionZdebug), 4);
  }
  // gcc's own compression: objcopy's decompression is the expectation
  if (run("g++ -g -O2 -gz=zlib -o " + exe + ".gz " + dir + "/p.cpp 2>&1 && echo built").find("built") !=
      std::string::npos) {
    run("objcopy --decompress-debug-sections " + exe + ".gz " + exe + ".plain");
    EXPECT_GE(expect_sections_inflate_to(read_file(exe + ".plain"), read_file(exe + ".gz"), kSectionChdr), 4);
  }
}

// Bits into bytes, least significant first (RFC 1951 3.1.1).
struct BitWriter {
  Bytes b;
  unsigned n = 0;
  void put(uint32_t v, unsigned bits) {
    for (unsigned i = 0; i < bits; i++, n++) {
      if (n % 8 == 0) b.push_back(0);
      b.back() |= (uint8_t)(((v >> i) & 1) << (n % 8));
    }
  }
  void code(uint32_t c, unsigned bits) {   // a Huffman code: its first bit the most significant
    for (unsigned i = bits; i-- > 0;) put((c >> i) & 1, 1);
  }
  // a fixed-code literal/length symbol (RFC 1951 3.2.6)
  void fixed(uint32_t sym) {
    if (sym < 144) code(0x30 + sym, 8);
    else if (sym < 256) code(0x190 + sym - 144, 9);
    else if (sym < 280) code(sym - 256, 7);
    else code(0xc0 + sym - 280, 8);
  }
};

InflateStatus raw_status(const Bytes& in, size_t cap = 1000) {
  Bytes out(cap);
  Inflater z;
  size_t written, used;
  return inflate_raw(&z, in.data(), in.size(), out.data(), cap, &written, &used);
}

TEST(Inflate, EachKindOfBadStreamGivesItsError) {
  {   // a good fixed block: "ab", then a match of 5 at distance 2
    BitWriter w;
    w.put(1, 1), w.put(1, 2), w.fixed('a'), w.fixed('b'), w.fixed(259), w.code(1, 5), w.fixed(256);
    Bytes out(7);
    Inflater z;
    size_t written, used;
    ASSERT_EQ(inflate_raw(&z, w.b.data(), w.b.size(), out.data(), 7, &written, &used), kInflateOk);
    EXPECT_EQ(std::string(out.begin(), out.end()), "abababa");
  }
  {   // a match before the output's start
    BitWriter w;
    w.put(1, 1), w.put(1, 2), w.fixed('a'), w.fixed(257), w.code(1, 5), w.fixed(256);
    EXPECT_EQ(raw_status(w.b), kInflateBadDistance);
  }
  for (uint32_t sym : {286u, 287u}) {   // reserved length symbols
    BitWriter w;
    w.put(1, 1), w.put(1, 2), w.fixed('a'), w.fixed(sym), w.code(0, 5), w.fixed(256);
    EXPECT_EQ(raw_status(w.b), kInflateBadCode) << sym;
  }
  for (uint32_t d : {30u, 31u}) {   // reserved distance symbols
    BitWriter w;
    w.put(1, 1), w.put(1, 2), w.fixed('a'), w.fixed(257), w.code(d, 5), w.fixed(256);
    EXPECT_EQ(raw_status(w.b), kInflateBadCode) << d;
  }
  {   // block type 3
    BitWriter w;
    w.put(1, 1), w.put(3, 2), w.put(0, 5);
    EXPECT_EQ(raw_status(w.b), kInflateBadBlock);
  }
  {   // a stored block: its length's complement wrong, then right
    Bytes b = {1, 3, 0, 0xfc, 0xfe, 'x', 'y', 'z'};
    EXPECT_EQ(raw_status(b), kInflateBadBlock);
    b[4] = 0xff;
    EXPECT_EQ(raw_status(b), kInflateOk);
    EXPECT_EQ(raw_status(b, 2), kInflateTooLong);
    b.pop_back();
    EXPECT_EQ(raw_status(b), kInflateTruncated);
  }
  // dynamic blocks: HLIT, HDIST, HCLEN, the code length code's lengths
  auto dynamic = [](uint32_t hlit, uint32_t hdist, std::vector<uint32_t> clens) {
    BitWriter w;
    w.put(1, 1), w.put(2, 2), w.put(hlit, 5), w.put(hdist, 5), w.put((uint32_t)clens.size() - 4, 4);
    for (uint32_t l : clens) w.put(l, 3);
    return w;
  };
  EXPECT_EQ(raw_status(dynamic(30, 0, {1, 1, 1, 1}).b), kInflateBadCode);   // 287 literal/length codes
  EXPECT_EQ(raw_status(dynamic(0, 30, {1, 1, 1, 1}).b), kInflateBadCode);   // 31 distance codes
  EXPECT_EQ(raw_status(dynamic(0, 0, {1, 1, 1, 0}).b), kInflateBadCode);    // three codes of 1 bit
  EXPECT_EQ(raw_status(dynamic(0, 0, {1, 0, 0, 0}).b), kInflateBadCode);    // one code of 1 bit, incomplete
  {   // symbol 16 (repeat the last length) first; the order starts 16, 17, 18, 0
    BitWriter w = dynamic(0, 0, {1, 0, 0, 1});   // 0: code 0, 16: code 1 (codes in symbols' order)
    w.code(1, 1), w.put(0, 2);
    EXPECT_EQ(raw_status(w.b), kInflateBadCode);
  }
  {   // lengths for more symbols than there are: 18 (11-138 zeros) for 258
    BitWriter w = dynamic(0, 0, {0, 0, 1, 1});   // 0: code 0, 18: code 1
    w.code(1, 1), w.put(127, 7), w.code(1, 1), w.put(127, 7);
    EXPECT_EQ(raw_status(w.b), kInflateBadCode);
  }
  {   // no end-of-block code: every length 0
    BitWriter w = dynamic(0, 0, {0, 0, 1, 1});
    w.code(1, 1), w.put(127, 7), w.code(1, 1), w.put(258 - 138 - 11, 7);
    EXPECT_EQ(raw_status(w.b), kInflateBadCode);
  }
  // zlib headers
  auto zstatus = [](Bytes b) {
    Bytes out;
    return inflate_zlib_into(b, 10, &out);
  };
  Bytes good = {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01};   // empty: one empty fixed block, Adler-32 1
  EXPECT_EQ(zstatus(good), kInflateOk);
  EXPECT_EQ(zstatus({0x78, 0x9d, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}), kInflateBadHeader);   // check bits
  EXPECT_EQ(zstatus({0x79, 0x18, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}), kInflateBadHeader);   // method 9
  EXPECT_EQ(zstatus({0x88, 0x1c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}), kInflateBadHeader);   // a 64 KiB window
  EXPECT_EQ(zstatus({0x78, 0xbb, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}), kInflateBadHeader);   // a dictionary
  EXPECT_EQ(zstatus({0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x02}), kInflateBadChecksum);
  EXPECT_EQ(zstatus({0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00}), kInflateTruncated);
  EXPECT_EQ(zstatus({0x78}), kInflateTruncated);
  EXPECT_EQ(zstatus({}), kInflateTruncated);
}

TEST(Inflate, SectionHeadersBoundTheOutput) {
  // "hello" compressed by python3: zlib.compress(b"hello")
  Bytes z = {0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x06, 0x2c, 0x02, 0x15};
  auto chdr = [&](uint32_t type, uint64_t size) {
    Bytes b(24, 0);
    b[0] = (uint8_t)type;
    for (int i = 0; i < 8; i++) b[8 + i] = (uint8_t)(size >> (8 * i));
    b.insert(b.end(), z.begin(), z.end());
    return b;
  };
  auto zdebug = [&](uint64_t size) {
    Bytes b = {'Z', 'L', 'I', 'B'};
    for (int i = 7; i >= 0; i--) b.push_back((uint8_t)(size >> (8 * i)));
    b.insert(b.end(), z.begin(), z.end());
    return b;
  };
  auto status = [](const Bytes& b, SectionCompression kind, uint64_t max = 1000) {
    uint8_t* out;
    uint64_t size;
    InflateStatus s = inflate_section(kHost, b.data(), b.size(), kind, max, &out, &size);
    std::string text = out ? std::string((const char*)out, size) : "";
    kHost.release(out);
    return std::make_pair(s, text);
  };
  EXPECT_EQ(status(chdr(1, 5), kSectionChdr), std::make_pair(kInflateOk, std::string("hello")));
  EXPECT_EQ(status(zdebug(5), kSectionZdebug), std::make_pair(kInflateOk, std::string("hello")));
  EXPECT_EQ(status(chdr(1, 4), kSectionChdr).first, kInflateTooLong);
  EXPECT_EQ(status(chdr(1, 6), kSectionChdr).first, kInflateTooShort);
  EXPECT_EQ(status(zdebug(6), kSectionZdebug).first, kInflateTooShort);
  EXPECT_EQ(status(chdr(1, 5), kSectionChdr, 4).first, kInflateTooLong);   // more than the caller allows
  EXPECT_EQ(status(chdr(1, 1ull << 62), kSectionChdr).first, kInflateTooLong);
  EXPECT_EQ(status(chdr(2, 5), kSectionChdr).first, kInflateBadHeader);    // ELFCOMPRESS_ZSTD
  EXPECT_EQ(status(zdebug(5), kSectionChdr).first, kInflateBadHeader);
  EXPECT_EQ(status(Bytes(z.begin(), z.end()), kSectionZdebug).first, kInflateBadHeader);
  EXPECT_EQ(status(Bytes(10, 0), kSectionChdr).first, kInflateBadHeader);
}

// Damaged streams: python3's zlib is the judge of which are good and what
// they inflate to.
TEST(Inflate, DamagedStreamsAgreeWithPythonsZlib) {
  TempDir scratch("kg-inflate");
  const std::string& dir = scratch.path();
  ASSERT_FALSE(dir.empty());
  std::mt19937 rng(17);
  auto in = inputs();
  std::string script = R"(
import sys, zlib, os
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if f.endswith('.m'):
        try:
            out = zlib.decompress(open(os.path.join(d, f), 'rb').read())
            open(os.path.join(d, f[:-2] + '.out'), 'wb').write(out)
        except zlib.error:
            pass
print('done')
)";
  write_file(dir + "/judge.py", Bytes(script.begin(), script.end()));
  for (const auto& [name, data] : in)
    write_file(dir + "/" + name + ".src", Bytes(data.begin(), data.begin() + std::min<size_t>(data.size(), 3000)));
  run("cd " + dir + " && python3 -c 'import glob, zlib\nfor f in glob.glob(\"*.src\"):\n  b = open(f, \"rb\").read()\n"
      "  for l in (0, 1, 6, 9): open(f + str(l), \"wb\").write(zlib.compress(b, l))'");
  std::vector<Bytes> mutants;
  for (const auto& [name, data] : in) {
    for (int level : {0, 1, 6, 9}) {
      Bytes z = read_file(dir + "/" + name + ".src" + std::to_string(level));
      ASSERT_GT(z.size(), 6u);
      for (int m = 0; m < 40; m++) {
        Bytes b = z;
        int kind = m % 4;
        if (kind == 0) {   // one bit flipped
          b[rng() % b.size()] ^= (uint8_t)(1u << (rng() % 8));
        } else if (kind == 1) {   // a few bytes replaced
          for (int k = 0; k < 3; k++) b[rng() % b.size()] = (uint8_t)rng();
        } else if (kind == 2) {   // cut
          b.resize(rng() % b.size());
        } else {   // the checksum left alone: bits flipped in the DEFLATE data only
          b[2 + rng() % (b.size() - 6)] ^= (uint8_t)(1u << (rng() % 8));
        }
        mutants.push_back(b);
      }
    }
  }
  for (size_t i = 0; i < mutants.size(); i++) write_file(dir + "/" + std::to_string(i) + ".m", mutants[i]);
  ASSERT_EQ(run("python3 " + dir + "/judge.py " + dir), "done\n");
  size_t good = 0;
  Bytes out(4 << 20);   // room for more than any of them inflates to
  Inflater z;
  for (size_t i = 0; i < mutants.size(); i++) {
    std::ifstream judged(dir + "/" + std::to_string(i) + ".out");
    Bytes want = read_file(dir + "/" + std::to_string(i) + ".out");
    size_t written;
    InflateStatus s = inflate_zlib(&z, mutants[i].data(), mutants[i].size(), out.data(), out.size(), &written);
    EXPECT_EQ(s == kInflateOk, (bool)judged) << i << ": " << inflate_error(s);
    if (judged && s == kInflateOk) {
      EXPECT_TRUE(written == want.size() && std::memcmp(out.data(), want.data(), written) == 0) << i;
      good++;
    }
  }
  // not all refused: the judge has streams of both kinds
  EXPECT_GT(good, 0u);
  EXPECT_LT(good, mutants.size() / 2);
}

TEST(Inflate, EveryPrefixOfAStreamIsRefused) {
  TempDir scratch("kg-inflate");
  const std::string& dir = scratch.path();
  ASSERT_FALSE(dir.empty());
  auto in = inputs();
  const Bytes& text = in[2].second;
  Bytes src(text.begin(), text.begin() + 20000);
  write_file(dir + "/src", src);
  run("python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(open(sys.argv[1], \"rb\").read(), 9))' " +
      dir + "/src > " + dir + "/z");
  Bytes z = read_file(dir + "/z"), got;
  ASSERT_EQ(inflate_zlib_into(z, src.size(), &got), kInflateOk);
  for (size_t n = 0; n < z.size(); n++) {
    Bytes cut(z.begin(), z.begin() + n);
    EXPECT_EQ(inflate_zlib_into(cut, src.size(), &got), kInflateTruncated) << n;
  }
}

TEST(Inflate, Adler32IsRfc1950s) {
  // RFC 1950's example: "Wikipedia" 0x11E60398; and a long run past the
  // 5552-byte blocks
  const char* w = "Wikipedia";
  EXPECT_EQ(adler32((const uint8_t*)w, 9), 0x11E60398u);
  Bytes ff(100000, 0xff);
  uint32_t a = 1, b = 0;
  for (uint8_t x : ff) a = (a + x) % 65521, b = (b + a) % 65521;
  EXPECT_EQ(adler32(ff.data(), ff.size()), b << 16 | a);
  EXPECT_EQ(adler32(ff.data() + 7, 50000, adler32(ff.data(), 7)), adler32(ff.data(), 50007));
}

}  // namespace
