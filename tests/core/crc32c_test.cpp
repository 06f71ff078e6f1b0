// CRC-32C against published vectors (RFC 3720 B.4), incremental/combine consistency, TFRecord
// masking.
#include "core/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace tt {
namespace {

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  const std::vector<uint8_t> zeros(32, 0x00), ones(32, 0xff);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::vector<uint8_t> inc(32), dec(32);
  for (int i = 0; i < 32; ++i) inc[i] = uint8_t(i), dec[i] = uint8_t(31 - i);
  EXPECT_EQ(crc32c(inc.data(), inc.size()), 0x46DD794Eu);
  EXPECT_EQ(crc32c(dec.data(), dec.size()), 0x113FDB5Cu);
  EXPECT_EQ(crc32c("", 0), 0u);
  EXPECT_EQ(crc32c("a", 1), 0xC1D04330u);
}

TEST(Crc32c, IncrementalEqualsOneShotAtEveryAlignment) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(4099);
  for (auto& b : data) b = uint8_t(rng());
  for (size_t offset = 0; offset < 9; ++offset) {
    const uint8_t* p = data.data() + offset;
    const size_t n = data.size() - offset;
    const uint32_t whole = crc32c(p, n);
    for (size_t split : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(13), size_t(1000), n}) {
      uint32_t crc = crc32c_update(0, p, split);
      crc = crc32c_update(crc, p + split, n - split);
      EXPECT_EQ(crc, whole) << "offset " << offset << " split " << split;
    }
  }
  // Byte at a time.
  uint32_t crc = 0;
  for (uint8_t b : data) crc = crc32c_update(crc, &b, 1);
  EXPECT_EQ(crc, crc32c(data.data(), data.size()));
}

TEST(Crc32c, CombineMatchesConcatenation) {
  std::mt19937 rng(11);
  std::vector<uint8_t> data(100000);
  for (auto& b : data) b = uint8_t(rng());
  const uint32_t whole = crc32c(data.data(), data.size());
  for (size_t split : {size_t(0), size_t(1), size_t(8), size_t(4097), size_t(99999), data.size()}) {
    const uint32_t a = crc32c(data.data(), split);
    const uint32_t b = crc32c(data.data() + split, data.size() - split);
    EXPECT_EQ(crc32c_combine(a, b, data.size() - split), whole) << "split " << split;
  }
}

TEST(Crc32c, MaskRoundTrips) {
  const uint32_t crc = crc32c("123456789", 9);
  EXPECT_EQ(masked_crc32c(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  EXPECT_EQ(unmask_crc32c(masked_crc32c(crc)), crc);
  EXPECT_EQ(unmask_crc32c(masked_crc32c(0)), 0u);
  EXPECT_EQ(unmask_crc32c(masked_crc32c(0xffffffffu)), 0xffffffffu);
}

}  // namespace
}  // namespace tt
