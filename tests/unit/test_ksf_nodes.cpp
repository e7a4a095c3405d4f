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
