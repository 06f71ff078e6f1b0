// SHA-256 against the FIPS 180-4 / NIST example vectors, and incremental == one-shot hashing.
#include "core/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace tt {
namespace {

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  EXPECT_EQ(sha256_hex(million.data(), million.size()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShotAtEveryPaddingBoundary) {
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>(i * 131 + 7));
  for (size_t n : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 300}) {
    const std::string msg = data.substr(0, n);
    for (size_t step : {1, 3, 64, 100}) {
      Sha256 h;
      for (size_t i = 0; i < n; i += step) h.update(msg.data() + i, std::min(step, n - i));
      EXPECT_EQ(h.hex_digest(), sha256_hex(msg)) << "n=" << n << " step=" << step;
    }
  }
}

TEST(Sha256, MillionAInUnevenPieces) {
  Sha256 h;
  const std::string block(997, 'a');
  size_t left = 1000000;
  while (left > 0) {
    const size_t n = std::min(left, block.size());
    h.update(block.data(), n);
    left -= n;
  }
  uint8_t digest[32];
  h.digest(digest);
  EXPECT_EQ(digest[0], 0xcd);
  EXPECT_EQ(digest[31], 0xd0);
}

}  // namespace
}  // namespace tt
