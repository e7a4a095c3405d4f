// Unit tests of kgrind/core/dwarf_inlines.h against llvm-symbolizer
// --inlining: for every instruction of a C++ program built here with -O2
// (std::map's find, operator[] and insert, std::vector's, all inlined) in
// DWARF 5 and DWARF 4, the inlined instances DwarfIndex finds are
// llvm-symbolizer's inline frames, named alike (the linkage name, else the
// name: what llvm-symbolizer --no-demangle prints); damaged sections fail
// cleanly.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../../kgrind/core/dwarf_inlines.h"
#include "shell_command.h"
#include "temp_dir.h"

using namespace kg::core;
using kg_test::run;
using kg_test::TempDir;

namespace {

void* host_alloc(void*, size_t n) { return std::malloc(n); }
void host_free(void*, void* p) { std::free(p); }
const Allocator kHost = {nullptr, host_alloc, host_free, false};

const char* kProgram = R"(
#include <map>
#include <vector>
#include <cstdio>
struct Table {
  std::map<int, int> m;
  std::vector<int> v;
  int get(int k) const { auto it = m.find(k); return it == m.end() ? -1 : it->second; }
  void put(int k, int x) { m[k] = x; m.insert({k + 1, x}); v.push_back(x); }
};
int main(int argc, char**) {
  Table t;
  for (int i = 0; i < 100 * argc; i++) t.put(i, i * 2);
  long s = 0;
  for (int i = 0; i < 300; i++) s += t.get(i) + (long)t.v.size();
  std::printf("%ld\n", s);
}
)";

struct ElfFile {
  std::vector<uint8_t> bytes;
  DwarfSections s{};
  uint64_t text_lo = 0, text_hi = 0;

  bool load(const std::string& path) {   // "": the build failed
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    bytes.assign(std::istreambuf_iterator<char>(in), {});
    uint64_t shoff, shnum, shstrndx;
    if (!elf_section_table(bytes.data(), bytes.size(), &shoff, &shnum, &shstrndx)) return false;
    ElfSection names = elf_section(bytes.data() + shoff + 64 * shstrndx);
    for (uint64_t i = 0; i < shnum; i++) {
      ElfSection sec = elf_section(bytes.data() + shoff + 64 * i);
      const char* name = (const char*)bytes.data() + names.offset + sec.name;
      MappedSpan span = {bytes.data() + sec.offset, sec.size, 0};
      static const struct { const char* name; MappedSpan DwarfSections::*field; } kSections[] = {
        {".debug_info", &DwarfSections::info},         {".debug_abbrev", &DwarfSections::abbrev},
        {".debug_str", &DwarfSections::str},           {".debug_line_str", &DwarfSections::line_str},
        {".debug_str_offsets", &DwarfSections::str_offsets}, {".debug_addr", &DwarfSections::addr},
        {".debug_ranges", &DwarfSections::ranges},     {".debug_rnglists", &DwarfSections::rnglists},
      };
      for (const auto& k : kSections)
        if (std::strcmp(name, k.name) == 0) s.*k.field = span;
      if (std::strcmp(name, ".text") == 0) {
        const uint8_t* h = bytes.data() + shoff + 64 * i;
        std::memcpy(&text_lo, h + 16, 8);   // sh_addr
        text_hi = text_lo + sec.size;
      }
    }
    return s.info.size > 0;
  }
};

// The program built with `flags` in a directory of its own, removed with
// the object; exe is "" if the build failed.
struct Program {
  TempDir dir{"kg-dwarf-inlines"};
  std::string exe;

  explicit Program(const std::string& flags) {
    if (dir.path().empty()) return;
    std::string src = dir.path() + "/table.cpp", out = dir.path() + "/table";
    std::ofstream(src) << kProgram;
    if (run("g++ -g -O2 " + flags + " -o " + out + " " + src + " 2>&1 && echo built").find("built") != std::string::npos)
      exe = out;
  }
};

// Every instruction address of .text (objdump -d).
std::vector<uint64_t> instructions(const std::string& exe) {
  std::vector<uint64_t> addrs;
  std::istringstream in(run("objdump -d --no-show-raw-insn -j .text " + exe));
  std::string line;
  while (std::getline(in, line)) {
    char* end;
    uint64_t a = std::strtoull(line.c_str(), &end, 16);
    if (end != line.c_str() && *end == ':' && line[0] == ' ') addrs.push_back(a);
  }
  return addrs;
}

// llvm-symbolizer's inline frames of each address (innermost first, the
// physical function left out), by linkage name (else name).
std::vector<std::vector<std::string>> symbolized(const std::string& exe, const std::vector<uint64_t>& addrs) {
  std::string list = exe + ".addrs";
  {
    std::ofstream out(list);
    for (uint64_t a : addrs) out << "0x" << std::hex << a << "\n";
  }
  std::string text = run("llvm-symbolizer-14 --inlining --no-demangle --obj=" + exe + " < " + list);
  std::vector<std::vector<std::string>> chains;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> fns;
  bool name_line = true;
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (!fns.empty()) fns.pop_back();
      chains.push_back(fns);
      fns.clear();
      name_line = true;
      continue;
    }
    if (name_line) fns.push_back(line);
    name_line = !name_line;
  }
  return chains;
}

void expect_chains_equal_symbolizer(const std::string& flags) {
  SCOPED_TRACE(flags);
  if (run("command -v llvm-symbolizer-14").empty()) GTEST_SKIP() << "llvm-symbolizer-14 is not installed";
  Program program(flags);
  const std::string& exe = program.exe;
  ASSERT_FALSE(exe.empty());
  ElfFile f;
  ASSERT_TRUE(f.load(exe));
  DwarfIndex index;
  ASSERT_TRUE(index.init(kHost, f.s));
  std::vector<uint64_t> addrs = instructions(exe);
  ASSERT_GT(addrs.size(), 100u);
  auto expected = symbolized(exe, addrs);
  ASSERT_EQ(expected.size(), addrs.size());
  size_t inlined = 0, qualified = 0;
  std::map<std::string, std::string> by_short;   // short name -> a linkage name
  bool namesakes = false;
  for (size_t i = 0; i < addrs.size(); i++) {
    uint32_t chain[64];
    size_t n = index.chain_at(addrs[i], chain, 64);
    std::vector<std::string> mine;
    for (size_t j = 0; j < n; j++) {
      DwarfNames names;
      ASSERT_TRUE(index.names(index.inlined(chain[j]).origin, &names)) << std::hex << addrs[i];
      mine.push_back(names.linkage ? names.linkage : names.name);
      if (names.linkage) {
        qualified++;
        auto [it, added] = by_short.emplace(names.name, names.linkage);
        if (!added && it->second != names.linkage) namesakes = true;
      }
    }
    EXPECT_EQ(mine, expected[i]) << std::hex << addrs[i];
    inlined += n > 0;
  }
  EXPECT_GT(inlined, addrs.size() / 4);
  EXPECT_GT(qualified, 0u);
  // two inlined functions of one short name (find of std::map and of std::_Rb_tree)
  EXPECT_TRUE(namesakes);
  index.destroy();
}

}  // namespace

TEST(DwarfInlines, ChainsEqualLlvmSymbolizersDwarf5) { expect_chains_equal_symbolizer("-gdwarf-5"); }
TEST(DwarfInlines, ChainsEqualLlvmSymbolizersDwarf4) { expect_chains_equal_symbolizer("-gdwarf-4"); }

// The names of the inlined instances at every instruction (linkage name,
// else scopes and name).
std::vector<std::string> names_at(const DwarfIndex& index, const std::vector<uint64_t>& addrs) {
  std::vector<std::string> out;
  for (uint64_t a : addrs) {
    uint32_t chain[64];
    size_t n = index.chain_at(a, chain, 64);
    std::string line;
    for (size_t j = 0; j < n; j++) {
      DwarfNames names;
      if (!index.names(index.inlined(chain[j]).origin, &names)) {
        line += "? ";
        continue;
      }
      for (uint32_t sc = names.scope; sc; sc = index.scope(sc).parent)
        line += std::string(index.scope(sc).name ? index.scope(sc).name : "") + "::";
      line += std::string(names.name) + "/" + (names.linkage ? names.linkage : "") + " ";
    }
    out.push_back(line);
  }
  return out;
}

TEST(DwarfInlines, DwzSupplementaryFileNamesAlike) {
  if (run("command -v dwz").empty()) GTEST_SKIP() << "dwz is not installed";
  Program program("-gdwarf-4");
  const std::string& exe = program.exe;
  ASSERT_FALSE(exe.empty());
  const std::string& dir = program.dir.path();
  run("cd " + dir + " && cp table one && cp table two && dwz -m common.debug -M common.debug one two");
  ElfFile plain, one, common;
  ASSERT_TRUE(plain.load(exe));
  ASSERT_TRUE(one.load(dir + "/one"));
  ASSERT_TRUE(common.load(dir + "/common.debug"));
  std::vector<uint64_t> addrs = instructions(exe);
  DwarfIndex want, without, with;
  ASSERT_TRUE(want.init(kHost, plain.s));
  ASSERT_TRUE(without.init(kHost, one.s));
  ASSERT_TRUE(with.init(kHost, one.s, &common.s));
  std::vector<std::string> w = names_at(want, addrs), a = names_at(with, addrs), b = names_at(without, addrs);
  size_t unnamed = 0;
  for (size_t i = 0; i < addrs.size(); i++) {
    EXPECT_EQ(a[i], w[i]) << std::hex << addrs[i];
    unnamed += b[i] != w[i];
  }
  // without the supplementary file, names are missing
  EXPECT_GT(unnamed, addrs.size() / 10);
  want.destroy();
  without.destroy();
  with.destroy();
}

TEST(DwarfInlines, ScopesNameFunctionsWithoutLinkageNames) {
  Program program("-gdwarf-5");
  ElfFile f;
  ASSERT_TRUE(f.load(program.exe));
  DwarfIndex index;
  ASSERT_TRUE(index.init(kHost, f.s));
  // Table::get's instance: its scope is the structure Table
  bool found = false;
  for (size_t i = 0; i < index.inlined_count() && !found; i++) {
    DwarfNames names;
    if (!index.names(index.inlined(i).origin, &names) || std::strcmp(names.name, "get") != 0) continue;
    ASSERT_NE(names.scope, 0u);
    EXPECT_STREQ(index.scope(names.scope).name, "Table");
    EXPECT_EQ(index.scope(index.scope(names.scope).parent).name, nullptr);
    found = true;
  }
  EXPECT_TRUE(found);
  index.destroy();
}

TEST(DwarfInlines, DamagedSectionsFailWithoutReadingOutside) {
  Program program("-gdwarf-5");
  ElfFile f;
  ASSERT_TRUE(f.load(program.exe));
  DwarfIndex index;
  // Cut anywhere: fails or reads what is left, within the bytes given
  // (checked under -fsanitize=address by hand; here: no crash).
  for (uint64_t n = 0; n < f.s.info.size; n += 1 + f.s.info.size / 97) {
    DwarfSections cut = f.s;
    cut.info.size = n;
    if (index.init(kHost, cut)) index.destroy();
  }
  std::mt19937 rng(11);
  for (int round = 0; round < 100; round++) {
    std::vector<uint8_t> info(f.s.info.data, f.s.info.data + f.s.info.size);
    std::vector<uint8_t> abbrev(f.s.abbrev.data, f.s.abbrev.data + f.s.abbrev.size);
    for (int i = 0; i < 8; i++) {
      info[rng() % info.size()] ^= (uint8_t)(1u << (rng() % 8));
      abbrev[rng() % abbrev.size()] ^= (uint8_t)(1u << (rng() % 8));
    }
    DwarfSections bad = f.s;
    bad.info = {info.data(), info.size(), 0};
    bad.abbrev = {abbrev.data(), abbrev.size(), 0};
    if (!index.init(kHost, bad)) continue;
    uint32_t chain[8];
    for (uint64_t a = f.text_lo; a < f.text_hi; a += 7) {
      size_t n = index.chain_at(a, chain, 8);
      for (size_t j = 0; j < n; j++) {
        DwarfNames names;
        (void)index.names(index.inlined(chain[j]).origin, &names);
      }
    }
    index.destroy();
  }
  const uint8_t not_elf[64] = {'#', '!'};
  uint64_t shoff, shnum, shstrndx;
  EXPECT_FALSE(elf_section_table(not_elf, sizeof not_elf, &shoff, &shnum, &shstrndx));
}
