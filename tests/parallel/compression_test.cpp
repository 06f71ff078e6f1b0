// Gradient compression: quantisation error bounds, layout, and error feedback — with feedback a
// gradient too small to survive int8 quantisation is delivered over time, without it it is lost.
#include "parallel/ddp/compression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"

namespace tt::parallel {
namespace {

std::vector<float> random_values(int64_t n, uint64_t seed, double scale) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = float(rng.normal() * scale);
  return v;
}

std::vector<float> round_trip(const std::vector<float>& in, GradCompression c) {
  std::vector<uint8_t> buf(compressed_bytes(int64_t(in.size()), c));
  compress(in.data(), int64_t(in.size()), c, buf.data());
  std::vector<float> out(in.size(), 0.0f);
  decompress_add(buf.data(), int64_t(in.size()), c, 1.0f, out.data());
  return out;
}

TEST(Compression, SizesAndNames) {
  EXPECT_EQ(compressed_bytes(1000, GradCompression::kNone), 4000u);
  EXPECT_EQ(compressed_bytes(1000, GradCompression::kBf16), 2000u);
  EXPECT_EQ(compressed_bytes(1000, GradCompression::kInt8), 1000u + 4u * 4u);  // 4 blocks of 256
  EXPECT_DOUBLE_EQ(payload_bytes_per_element(GradCompression::kInt8), 1.0 + 4.0 / 256);
  EXPECT_EQ(parse_grad_compression("int8"), GradCompression::kInt8);
  EXPECT_EQ(parse_grad_compression(""), GradCompression::kNone);
  EXPECT_THROW(parse_grad_compression("fp8"), Error);
}

TEST(Compression, Int8ErrorIsAtMostHalfAStepPerBlock) {
  const auto in = random_values(1000, 1, 0.01);  // odd tail block of 232
  const auto out = round_trip(in, GradCompression::kInt8);
  for (int64_t b = 0; b * kInt8Block < 1000; ++b) {
    float absmax = 0;
    for (int64_t i = b * kInt8Block; i < std::min<int64_t>(1000, (b + 1) * kInt8Block); ++i)
      absmax = std::max(absmax, std::fabs(in[size_t(i)]));
    const float step = absmax / 127.0f;
    for (int64_t i = b * kInt8Block; i < std::min<int64_t>(1000, (b + 1) * kInt8Block); ++i)
      EXPECT_LE(std::fabs(in[size_t(i)] - out[size_t(i)]), 0.5f * step * 1.0001f) << i;
  }
}

TEST(Compression, Bf16IsRoundToNearestAndNoneIsExact) {
  const auto in = random_values(300, 2, 1.0);
  const auto bf = round_trip(in, GradCompression::kBf16);
  const auto none = round_trip(in, GradCompression::kNone);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_LE(std::fabs(in[i] - bf[i]), std::fabs(in[i]) * (1.0f / 256)) << i;
    EXPECT_EQ(none[i], in[i]);
  }
}

TEST(Compression, ZeroBlockStaysZero) {
  const std::vector<float> zeros(300, 0.0f);
  for (float x : round_trip(zeros, GradCompression::kInt8)) EXPECT_EQ(x, 0.0f);
}

// One large and one tiny gradient in the same block, every step: 1e-3 is below half the int8 step
// (1/127/2 = 3.9e-3), so each quantisation alone rounds it to 0.
TEST(Compression, ErrorFeedbackDeliversWhatQuantisationDrops) {
  const int64_t n = kInt8Block;
  const int steps = 100;
  for (bool feedback : {true, false}) {
    std::vector<float> residual(size_t(n), 0.0f);
    std::vector<uint8_t> buf(compressed_bytes(n, GradCompression::kInt8));
    std::vector<float> delivered(size_t(n), 0.0f);
    for (int s = 0; s < steps; ++s) {
      std::vector<float> g(size_t(n), 0.0f);
      g[0] = 1.0f;
      g[1] = 1e-3f;
      compress_with_feedback(g.data(), feedback ? residual.data() : nullptr, n, GradCompression::kInt8, buf.data());
      decompress_add(buf.data(), n, GradCompression::kInt8, 1.0f, delivered.data());
    }
    if (feedback) {
      EXPECT_NEAR(delivered[1], steps * 1e-3f, 1.0f / 127) << "error feedback must deliver the small gradient";
      EXPECT_NEAR(delivered[0], float(steps), 1e-3f);
    } else {
      EXPECT_EQ(delivered[1], 0.0f) << "without error feedback the residual is lost";
    }
  }
}

}  // namespace
}  // namespace tt::parallel
