// Unit tests of kgrind/core/eh_frame.h against binutils' readelf: every FDE
// that `readelf --debug-dump=frames` lists in real Debian objects is found,
// with its exact range, at its first and last byte, and nothing is found
// outside them; damaged tables fail cleanly.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../../kgrind/core/eh_frame.h"

using namespace kg::core;

namespace {

struct ElfFile {
  std::vector<uint8_t> bytes;
  MappedSpan hdr{}, frame{};

  // Loads path and finds .eh_frame_hdr and .eh_frame by section name.
  bool load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    bytes.assign(std::istreambuf_iterator<char>(in), {});
    if (bytes.size() < sizeof(Elf64_Ehdr)) return false;
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) return false;
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(bytes.data() + eh->e_shoff);
    const char* names = reinterpret_cast<const char*>(bytes.data() + sh[eh->e_shstrndx].sh_offset);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
      MappedSpan s = {bytes.data() + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addr};
      if (std::strcmp(names + sh[i].sh_name, ".eh_frame_hdr") == 0) hdr = s;
      if (std::strcmp(names + sh[i].sh_name, ".eh_frame") == 0) frame = s;
    }
    return hdr.data && frame.data;
  }
};

// readelf's FDEs: first instruction -> end.
std::map<uint64_t, uint64_t> readelf_fdes(const std::string& path) {
  std::map<uint64_t, uint64_t> fdes;
  std::string cmd = "readelf --debug-dump=frames " + path + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  char line[512];
  bool in_eh_frame = false;   // not .debug_frame
  while (p && fgets(line, sizeof line, p)) {
    if (std::strncmp(line, "Contents of the ", 16) == 0) in_eh_frame = std::strstr(line, " .eh_frame ") != nullptr;
    if (!in_eh_frame) continue;
    const char* pc = std::strstr(line, " FDE ");
    pc = pc ? std::strstr(pc, "pc=") : nullptr;
    unsigned long long lo, hi;
    if (pc && std::sscanf(pc, "pc=%llx..%llx", &lo, &hi) == 2) fdes[lo] = hi;
  }
  if (p) pclose(p);
  return fdes;
}

std::string cc1plus_path() {
  FILE* p = popen("g++ -print-prog-name=cc1plus 2>/dev/null", "r");
  char buf[512] = {0};
  if (p && fgets(buf, sizeof buf, p)) buf[std::strcspn(buf, "\n")] = 0;
  if (p) pclose(p);
  return buf;
}

void expect_index_matches_readelf(const std::string& path) {
  SCOPED_TRACE(path);
  ElfFile f;
  ASSERT_TRUE(f.load(path));
  auto fdes = readelf_fdes(path);
  ASSERT_GT(fdes.size(), 10u);
  EhFrameIndex index;
  ASSERT_TRUE(index.init(f.hdr, f.frame));
  EXPECT_EQ(index.count(), fdes.size());
  uint64_t start, end;
  uint64_t previous_end = 0;
  size_t checked = 0;
  for (auto [lo, hi] : fdes) {
    if (hi <= lo) continue;   // empty FDEs hold no instruction
    ASSERT_TRUE(index.function_at(lo, &start, &end)) << std::hex << lo;
    EXPECT_EQ(start, lo);
    EXPECT_EQ(end, hi);
    ASSERT_TRUE(index.function_at(hi - 1, &start, &end)) << std::hex << hi - 1;
    EXPECT_EQ(start, lo);
    // A gap between FDEs (padding between functions) holds none.
    if (previous_end && previous_end < lo) {
      EXPECT_FALSE(index.function_at(previous_end, &start, &end));
    }
    previous_end = hi;
    checked++;
  }
  EXPECT_GT(checked, 10u);
  EXPECT_FALSE(index.function_at(fdes.begin()->first - 1, &start, &end));
  EXPECT_FALSE(index.function_at(previous_end + 4096, &start, &end));
}

}  // namespace

TEST(EhFrame, RangesOfDebianObjectsEqualReadelfs) {
  expect_index_matches_readelf("/usr/bin/ls");
  expect_index_matches_readelf("/lib/x86_64-linux-gnu/libc.so.6");
  std::string cc1plus = cc1plus_path();
  if (!cc1plus.empty() && cc1plus[0] == '/') expect_index_matches_readelf(cc1plus);
}

TEST(EhFrame, ProgramHeaderAndFramePointerAgreeWithSections) {
  for (const char* path : {"/usr/bin/ls", "/lib/x86_64-linux-gnu/libc.so.6"}) {
    SCOPED_TRACE(path);
    ElfFile f;
    ASSERT_TRUE(f.load(path));
    uint64_t vaddr = 0, size = 0, frame = 0;
    ASSERT_TRUE(elf_eh_frame_hdr(f.bytes.data(), 4096, &vaddr, &size));
    EXPECT_EQ(vaddr, f.hdr.vma);
    EXPECT_EQ(size, f.hdr.size);
    ASSERT_TRUE(eh_frame_address(f.hdr, &frame));
    EXPECT_EQ(frame, f.frame.vma);
    EXPECT_FALSE(elf_eh_frame_hdr(f.bytes.data(), 60, &vaddr, &size));   // program headers cut off
  }
  const uint8_t not_elf[64] = {'#', '!'};
  uint64_t vaddr, size;
  EXPECT_FALSE(elf_eh_frame_hdr(not_elf, sizeof not_elf, &vaddr, &size));
}

TEST(EhFrame, DamagedTablesFailWithoutReadingOutside) {
  ElfFile f;
  ASSERT_TRUE(f.load("/usr/bin/ls"));
  auto fdes = readelf_fdes("/usr/bin/ls");
  EhFrameIndex index;
  // Truncated headers fail.
  for (uint64_t n = 0; n < 16; n++) {
    MappedSpan cut = f.hdr;
    cut.size = n;
    EXPECT_FALSE(index.init(cut, f.frame)) << n;
  }
  MappedSpan bad_version = f.hdr;
  std::vector<uint8_t> copy(f.hdr.data, f.hdr.data + f.hdr.size);
  copy[0] = 2;
  bad_version.data = copy.data();
  EXPECT_FALSE(index.init(bad_version, f.frame));
  // Corrupted bytes anywhere: look-ups stay inside the spans (checked by
  // hand under -fsanitize=address; here: no crash).
  std::mt19937 rng(7);
  for (int round = 0; round < 200; round++) {
    std::vector<uint8_t> hdr(f.hdr.data, f.hdr.data + f.hdr.size);
    std::vector<uint8_t> frame(f.frame.data, f.frame.data + f.frame.size);
    for (int i = 0; i < 8; i++) {
      hdr[4 + rng() % (hdr.size() - 4)] ^= (uint8_t)(1u << (rng() % 8));
      frame[rng() % frame.size()] ^= (uint8_t)(1u << (rng() % 8));
    }
    MappedSpan h = {hdr.data(), hdr.size(), f.hdr.vma}, fr = {frame.data(), frame.size(), f.frame.vma};
    if (!index.init(h, fr)) continue;
    for (auto [lo, hi] : fdes) {
      uint64_t start, end;
      (void)index.function_at(lo, &start, &end);
      (void)index.function_at(hi - 1, &start, &end);
    }
  }
}
