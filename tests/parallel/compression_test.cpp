// Gradient compression: quantisation error bounds, layout, and error feedback — with feedback a
// gradient too small to survive int8 quantisation is delivered over time, without it it is lost.
// Also the chunking of the compressed reduce-scatter and GradReducer's compressed path on one rank
// (the multi-rank path is tested under mpirun in tests/parallel/mpi/collectives_test.cpp).
#include "parallel/ddp/compression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "parallel/comm/local/local_communicator.h"
#include "parallel/ddp/reducer.h"

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
  EXPECT_THROW(parse_grad_compression("fp4"), Error);
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

TEST(Compression, Fp8IsE5M2OfTheBlockScaledValue) {
  EXPECT_EQ(compressed_bytes(1000, GradCompression::kFp8), 1000u + 4u * 4u);
  EXPECT_DOUBLE_EQ(payload_bytes_per_element(GradCompression::kFp8), 1.0 + 4.0 / 256);
  EXPECT_EQ(parse_grad_compression("fp8"), GradCompression::kFp8);
  EXPECT_STREQ(grad_compression_name(GradCompression::kFp8), "fp8");
  // Values over 8 decades: E5M2 keeps each within 2^-3 relative (half an ulp of 2 mantissa bits)
  // down to the smallest normal (2^-14 of 57344 below the block's absmax, ~2^-30), where int8
  // flushes everything below absmax/254 to zero.
  std::vector<float> in(512);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float((i % 2 ? -1 : 1) * std::pow(10.0, -double(i % 9)));
  const auto fp8 = round_trip(in, GradCompression::kFp8), int8 = round_trip(in, GradCompression::kInt8);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_LE(std::fabs(fp8[i] - in[i]), 0.125f * std::fabs(in[i]) * (1 + 1e-6f)) << i << ": " << in[i];
    if (std::fabs(in[i]) < 1.0f / 254) EXPECT_EQ(int8[i], 0.0f) << i;
  }
  // The code is exactly core/dtype.h's E5M2 of x / scale: absmax maps to the largest finite code.
  std::vector<uint8_t> buf(compressed_bytes(2, GradCompression::kFp8));
  const float two[2] = {-3.0f, 1.0f};
  compress(two, 2, GradCompression::kFp8, buf.data());
  float scale;
  std::memcpy(&scale, buf.data(), 4);
  EXPECT_EQ(scale, 3.0f / 57344.0f);
  EXPECT_EQ(buf[4], f32_to_fp8(-3.0f * (1.0f / scale), Fp8Format::kE5M2));
  EXPECT_EQ(buf[4], 0xfb);  // -57344
  EXPECT_EQ(buf[5], f32_to_fp8(1.0f * (1.0f / scale), Fp8Format::kE5M2));
  // NaN codes as 0 and does not raise the block's scale.
  const float nan_block[2] = {std::nanf(""), 0.5f};
  compress(nan_block, 2, GradCompression::kFp8, buf.data());
  std::memcpy(&scale, buf.data(), 4);
  EXPECT_EQ(scale, 0.5f / 57344.0f);
  EXPECT_EQ(buf[4], 0);
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

// A block of subnormal gradients has a scale whose inverse overflows, and a NaN gradient has no
// integer: both quantise to 0 (as the CUDA codec does), and the residual keeps what was dropped.
TEST(Compression, Int8SubnormalBlocksAndNanQuantiseToZero) {
  std::vector<float> g(size_t(2 * kInt8Block), 1e-39f);  // block 0: subnormal
  for (int64_t i = kInt8Block; i < 2 * kInt8Block; ++i) g[size_t(i)] = 0.5f;
  g[size_t(kInt8Block) + 3] = std::nanf("");
  std::vector<uint8_t> out(compressed_bytes(int64_t(g.size()), GradCompression::kInt8));
  std::vector<float> residual(g.size(), 0.0f);
  compress_with_feedback(g.data(), residual.data(), int64_t(g.size()), GradCompression::kInt8, out.data());
  const int8_t* q = reinterpret_cast<const int8_t*>(out.data() + 2 * 4);
  for (int64_t i = 0; i < kInt8Block; ++i) {
    EXPECT_EQ(q[i], 0) << i;
    EXPECT_EQ(residual[size_t(i)], 1e-39f) << i;  // delivered by a later step, not lost
  }
  EXPECT_EQ(q[kInt8Block + 3], 0);
  EXPECT_EQ(q[kInt8Block], 127);  // absmax ignores the NaN: 0.5 is the block's largest
}

// One large and one tiny gradient in the same block, every step: 1e-3 is below half the int8 step
// (1/127/2 = 3.9e-3), so each quantisation alone rounds it to 0.
TEST(Compression, ErrorFeedbackDeliversWhatQuantisationDrops) {
  // A gradient below half a step of its block: int8's step is absmax/127; E5M2's smallest
  // subnormal is 2^-16 of the scale (absmax/57344), ~2.7e-10 of the absmax.
  struct Case {
    GradCompression c;
    float small, quantum;
  };
  for (const Case k : {Case{GradCompression::kInt8, 1e-3f, 1.0f / 127}, Case{GradCompression::kFp8, 1e-10f, 3e-10f}}) {
    SCOPED_TRACE(grad_compression_name(k.c));
    const int64_t n = kInt8Block;
    const int steps = 100;
    for (bool feedback : {true, false}) {
      std::vector<float> residual(size_t(n), 0.0f);
      std::vector<uint8_t> buf(compressed_bytes(n, k.c));
      std::vector<float> delivered(size_t(n), 0.0f);
      for (int s = 0; s < steps; ++s) {
        std::vector<float> g(size_t(n), 0.0f);
        g[0] = 1.0f;
        g[1] = k.small;
        compress_with_feedback(g.data(), feedback ? residual.data() : nullptr, n, k.c, buf.data());
        decompress_add(buf.data(), n, k.c, 1.0f, delivered.data());
      }
      if (feedback) {
        EXPECT_NEAR(delivered[1], steps * k.small, k.quantum) << "error feedback must deliver the small gradient";
        EXPECT_NEAR(delivered[0], float(steps), 1e-3f);
      } else {
        EXPECT_EQ(delivered[1], 0.0f) << "without error feedback the residual is lost";
      }
    }
  }
}

TEST(Compression, ChunkBoundsAreBlockAlignedEvenAndCoverTheBucket) {
  for (int64_t n : {0, 1, 255, 256, 257, 1000, 4096, 100000, 262144 + 17})
    for (int parts : {1, 2, 3, 4, 7, 8}) {
      const std::vector<int64_t> b = chunk_bounds(n, parts);
      ASSERT_EQ(b.size(), size_t(parts) + 1);
      EXPECT_EQ(b.front(), 0);
      EXPECT_EQ(b.back(), n) << n << " / " << parts;
      const int64_t blocks = (n + kInt8Block - 1) / kInt8Block;
      for (int r = 0; r < parts; ++r) {
        EXPECT_LE(b[size_t(r)], b[size_t(r) + 1]);
        if (b[size_t(r) + 1] < n) EXPECT_EQ(b[size_t(r) + 1] % kInt8Block, 0) << n << " / " << parts << " r " << r;
        // Whole blocks dealt evenly: chunk lengths differ by at most one block (the tail aside).
        const int64_t len_blocks = (b[size_t(r) + 1] - b[size_t(r)] + kInt8Block - 1) / kInt8Block;
        EXPECT_TRUE(len_blocks == blocks / parts || len_blocks == blocks / parts + 1) << n << " / " << parts;
      }
      EXPECT_EQ(chunk_bounds(n, parts), b) << "a pure function";
    }
  EXPECT_EQ(chunk_bounds(1000, 2), (std::vector<int64_t>{0, 512, 1000}));
  EXPECT_EQ(chunk_bounds(300, 4), (std::vector<int64_t>{0, 256, 300, 300, 300}));
}

// Compressing chunk by chunk at chunk_bounds equals compressing the whole buffer: same blocks.
TEST(Compression, ChunkedInt8CompressionQuantisesTheSameBlocks) {
  const auto in = random_values(5000, 9, 0.1);
  const auto whole = round_trip(in, GradCompression::kInt8);
  const std::vector<int64_t> b = chunk_bounds(5000, 3);
  for (int r = 0; r < 3; ++r) {
    const std::vector<float> part(in.begin() + b[size_t(r)], in.begin() + b[size_t(r) + 1]);
    const auto out = round_trip(part, GradCompression::kInt8);
    for (size_t i = 0; i < part.size(); ++i) ASSERT_EQ(out[i], whole[size_t(b[size_t(r)]) + i]) << r << " " << i;
  }
}

// GradReducer's compressed path over one rank: one chunk per bucket, compressed, exchanged,
// "reduced" (the average of one copy), re-compressed and gathered. The result is Q(Q(g)) per bucket —
// decompress(compress(g)) up to the second quantisation, which for bf16 is exact (a bf16 value is
// its own rounding) and for int8 moves a value by at most float rounding of the block scale.
void run_local_reducer(GradCompression c, bool feedback) {
  const int64_t n = 3000;
  // Three tensors, buckets small enough that the gradient spans several of them.
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 1000}, {1000, 1700}, {1700, 3000}};
  BucketCaps caps;
  caps.cap_bytes = 4 * 1500;
  caps.first_cap_bytes = 4 * 1000;
  LocalCommunicator comm;
  Tensor grads = Tensor::zeros("grads", {n});
  GradReducer reducer(comm, grads, ranges, 0, caps, c, feedback);
  ASSERT_GE(reducer.buckets().size(), 2u);
  EXPECT_EQ(reducer.residual().defined(), feedback);
  for (int step = 0; step < 3; ++step) {
    const auto g = random_values(n, 100 + uint64_t(step), 0.02);
    std::copy(g.begin(), g.end(), grads.data<float>());
    std::vector<float> residual_before;
    if (feedback) residual_before.assign(reducer.residual().data<float>(), reducer.residual().data<float>() + n);
    const int64_t issued_before = comm.collectives_issued();
    reducer.begin_backward(0, 1);
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) reducer.on_grads_ready(it->first, it->second);
    reducer.finish_backward();
    // One all_to_all and one all_gather per bucket.
    EXPECT_EQ(comm.collectives_issued() - issued_before, int64_t(2 * reducer.buckets().size()));
    // What the rank sent: g (+ its residual), compressed.
    std::vector<float> sent = g;
    if (feedback)
      for (int64_t i = 0; i < n; ++i) sent[size_t(i)] += residual_before[size_t(i)];
    // int8 blocks start at each bucket's beginning.
    std::vector<float> expected(size_t(n), 0.0f);
    for (const Bucket& b : reducer.buckets()) {
      const auto part = round_trip(std::vector<float>(sent.begin() + b.begin, sent.begin() + b.end), c);
      std::copy(part.begin(), part.end(), expected.begin() + b.begin);
    }
    const float* got = grads.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      if (c == GradCompression::kBf16)
        ASSERT_EQ(got[i], expected[size_t(i)]) << "step " << step << " element " << i;
      else
        ASSERT_NEAR(got[i], expected[size_t(i)], 1e-6f * std::fabs(expected[size_t(i)]) + 1e-12f)
            << "step " << step << " element " << i;
    }
    if (feedback) {
      const float* res = reducer.residual().data<float>();
      ASSERT_GT(reducer.residual().numel(), n) << "owner residual slots follow the gradient residual";
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(res[i], sent[size_t(i)] - expected[size_t(i)], 1e-6f * std::fabs(sent[size_t(i)]) + 1e-12f)
            << "worker residual " << i;  // up to a fused multiply-add's rounding
      // Re-quantising a quantised value drops (almost) nothing.
      for (int64_t i = n; i < reducer.residual().numel(); ++i) ASSERT_LE(std::fabs(res[i]), 1e-7f) << "owner " << i;
    }
  }
}

TEST(GradReducerCompressed, OneRankBf16) {
  run_local_reducer(GradCompression::kBf16, false);
  run_local_reducer(GradCompression::kBf16, true);
}

TEST(GradReducerCompressed, OneRankInt8) {
  run_local_reducer(GradCompression::kInt8, false);
  run_local_reducer(GradCompression::kInt8, true);
}

TEST(GradReducerCompressed, OneRankFp8) {
  run_local_reducer(GradCompression::kFp8, false);
  run_local_reducer(GradCompression::kFp8, true);
}

TEST(GradReducerCompressed, NeedsZeroStage0) {
  LocalCommunicator comm;
  Tensor grads = Tensor::zeros("grads", {512});
  EXPECT_THROW(GradReducer(comm, grads, {{0, 512}}, 1, BucketCaps{}, GradCompression::kInt8), Error);
}

}  // namespace
}  // namespace tt::parallel
