// The "# ksf-nodes" encoding (kgrind/core/ksf_nodes.h): BER as Perl's
// pack "w" writes it, base64 as RFC 4648's test vectors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kgrind/core/ksf_nodes.h"

using namespace kg::core;

static std::vector<uint8_t> ber(uint64_t v) {
  uint8_t out[kMaxBerBytes];
  unsigned n = put_ber(v, out);
  return std::vector<uint8_t>(out, out + n);
}

TEST(KsfNodes, BerMatchesPackW) {
  EXPECT_EQ(ber(0), (std::vector<uint8_t>{0x00}));
  EXPECT_EQ(ber(1), (std::vector<uint8_t>{0x01}));
  EXPECT_EQ(ber(127), (std::vector<uint8_t>{0x7F}));
  EXPECT_EQ(ber(128), (std::vector<uint8_t>{0x81, 0x00}));
  EXPECT_EQ(ber(300), (std::vector<uint8_t>{0x82, 0x2C}));
  EXPECT_EQ(ber(16383), (std::vector<uint8_t>{0xFF, 0x7F}));
  EXPECT_EQ(ber(16384), (std::vector<uint8_t>{0x81, 0x80, 0x00}));
  std::vector<uint8_t> max = ber(UINT64_MAX);
  ASSERT_EQ(max.size(), kMaxBerBytes);
  EXPECT_EQ(max.front(), 0x81);
  for (size_t i = 1; i + 1 < max.size(); i++) EXPECT_EQ(max[i], 0xFF);
  EXPECT_EQ(max.back(), 0x7F);
}

// Decoding what put_ber wrote gives the number back (bytes in a row).
TEST(KsfNodes, BerRoundTrips) {
  uint8_t buf[kMaxBerBytes * 64];
  std::vector<uint64_t> values;
  for (unsigned s = 0; s < 64; s++) values.push_back((uint64_t)1 << s | (s * 0x9E3779B97F4A7C15ull >> (63 - s)));
  size_t used = 0;
  for (uint64_t v : values) used += put_ber(v, buf + used);
  size_t at = 0;
  for (uint64_t v : values) {
    uint64_t got = 0;
    while (buf[at] & 0x80) got = got << 7 | (buf[at++] & 0x7F);
    got = got << 7 | buf[at++];
    EXPECT_EQ(got, v);
  }
  EXPECT_EQ(at, used);
}

static std::string b64(const std::string& s) {
  std::string out(base64_length(s.size()), '?');
  size_t n = base64_encode((const uint8_t*)s.data(), s.size(), &out[0]);
  EXPECT_EQ(n, out.size());
  return out;
}

TEST(KsfNodes, Base64Rfc4648) {
  EXPECT_EQ(b64(""), "");
  EXPECT_EQ(b64("f"), "Zg==");
  EXPECT_EQ(b64("fo"), "Zm8=");
  EXPECT_EQ(b64("foo"), "Zm9v");
  EXPECT_EQ(b64("foob"), "Zm9vYg==");
  EXPECT_EQ(b64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(b64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(b64(std::string("\xff\xfe\x00", 3)), "//4A");
}

// ---- A forest's nodes packed (kgrind/core/packed_nodes.h) -------------------

#include "kgrind/core/packed_nodes.h"

// Packs nodes in a row (each after the one before) and reads them back.
static std::vector<uint8_t> pack_all(const std::vector<PackedNode>& nodes) {
  std::vector<uint8_t> out(nodes.size() * kMaxPackedNodeBytes);
  size_t used = 0;
  int64_t depth = -1;
  for (const PackedNode& n : nodes) {
    used += pack_node(n, depth, out.data() + used);
    depth = n.depth;
  }
  out.resize(used);
  return out;
}

static std::vector<PackedNode> unpack_all(const std::vector<uint8_t>& bytes) {
  std::vector<PackedNode> nodes;
  const uint8_t* p = bytes.data();
  int64_t depth = -1;
  while (p < bytes.data() + bytes.size()) {
    nodes.push_back(unpack_node(p, depth));
    depth = nodes.back().depth;
  }
  EXPECT_EQ(p, bytes.data() + bytes.size());
  return nodes;
}

static bool same(const PackedNode& a, const PackedNode& b) {
  return a.depth == b.depth && a.label == b.label && a.calls == b.calls && a.excl == b.excl && a.incl == b.incl;
}

// Every field at its escapes' edges: calls 6/7/8, rises 0-9 (a return from
// deep in a tree to a new root), costs 0, equal, different, 2^64 - 1.
TEST(PackedNodes, RoundTripsAtEveryEscape) {
  std::vector<PackedNode> nodes;
  const uint64_t values[] = {0, 1, 6, 7, 8, 127, 128, 1u << 20, UINT64_MAX};
  uint32_t depth = 0;
  uint32_t labels[] = {0, 1, 127, 128, 16384, 0xFFFFFFFFu};
  unsigned i = 0;
  for (uint64_t calls : values)
    for (uint64_t excl : values)
      for (uint64_t incl : {excl, excl + 1, uint64_t(0), UINT64_MAX}) {
        // Down one level at a time to depth 12, then back up by i % 13.
        depth = (i % 14 == 13) ? depth - (depth < i % 13 ? depth : i % 13) : depth + (i ? 1 : 0);
        nodes.push_back({depth, labels[i % 6], calls, excl, incl});
        ++i;
      }
  nodes.push_back({0, 5, 1, 0, 0});  // a new root after the deepest node
  std::vector<PackedNode> back = unpack_all(pack_all(nodes));
  ASSERT_EQ(back.size(), nodes.size());
  for (size_t j = 0; j < nodes.size(); j++) EXPECT_TRUE(same(back[j], nodes[j])) << j;
}

// The usual node takes a head, its label and its cost; one with nothing
// but a label and few calls (a tree's top region) a head and its label.
TEST(PackedNodes, UsualNodesAreSmall) {
  EXPECT_EQ(pack_all({{0, 3, 1, 0, 0}}).size(), 2u);
  EXPECT_EQ(pack_all({{0, 300, 2, 1000, 1000}}).size(), 5u);
  EXPECT_EQ(pack_all({{0, 300, 2, 1000, 5000}}).size(), 7u);
  EXPECT_EQ(pack_all({{0, 3, 9, 0, 0}}).size(), 3u);  // calls - 7 follows
  // A rise of 7 or more takes a number after the head.
  std::vector<PackedNode> deep;
  for (uint32_t d = 0; d < 9; d++) deep.push_back({d, 1, 1, 0, 0});
  std::vector<uint8_t> shallow_bytes = pack_all(deep);
  deep.push_back({0, 1, 1, 0, 0});  // rise 9
  EXPECT_EQ(pack_all(deep).size(), shallow_bytes.size() + 3);
}
