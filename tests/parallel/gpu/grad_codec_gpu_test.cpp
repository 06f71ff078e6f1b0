// The CUDA GradCodec against the CPU codec (parallel/ddp/grad_codec.h): the same inputs must give
// the same payload bytes, residuals and decompressed values, bit for bit, for fp32 and bf16
// gradients, bf16 and int8 payloads, and sizes that end inside an int8 block. Outputs are poisoned
// first so an unwritten element shows up.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cuda_check.h"
#include "parallel/ddp/grad_codec.h"
#include "tests/gpu_test_util.h"

namespace tt::parallel {
namespace {

const int64_t kSizes[] = {1, 255, 256, 257, 1000, 4097};

// Gradient-like values, with a zero block (scale 0) at [256, 512) when n reaches it.
std::vector<float> values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = (i >= 256 && i < 512) ? 0.0f : normal(rng) * float(1 + i % 7);
  return v;
}

// Host bytes of v stored as dtype.
std::vector<uint8_t> stored(const std::vector<float>& v, DType dtype) {
  std::vector<uint8_t> out(v.size() * dtype_size(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = f32_to_bf16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

// A CPU tensor and a CUDA tensor of the same bytes.
struct Pair {
  Tensor cpu, gpu;
};
Pair pair_of(const std::string& name, const std::vector<uint8_t>& bytes, DType dtype) {
  const int64_t n = int64_t(bytes.size() / dtype_size(dtype));
  Pair p{Tensor::zeros(name, {std::max<int64_t>(n, 1)}, dtype),
         Tensor::zeros(name, {std::max<int64_t>(n, 1)}, dtype, Device::cuda(0))};
  std::memcpy(p.cpu.raw(), bytes.data(), bytes.size());
  TT_CUDA_CHECK(cudaMemcpy(p.gpu.raw(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return p;
}
void poison(const Pair& p, size_t bytes) {
  std::memset(p.cpu.raw(), 0xFF, bytes);
  TT_CUDA_CHECK(cudaMemset(p.gpu.raw(), 0xFF, bytes));
}
// Number of differing bytes in the first `bytes` bytes of the two tensors.
int64_t differing_bytes(const Pair& p, size_t bytes) {
  TT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint8_t> g(bytes);
  TT_CUDA_CHECK(cudaMemcpy(g.data(), p.gpu.raw(), bytes, cudaMemcpyDeviceToHost));
  const uint8_t* c = static_cast<const uint8_t*>(p.cpu.raw());
  int64_t d = 0;
  for (size_t i = 0; i < bytes; ++i) d += c[i] != g[i];
  return d;
}

struct Codecs {
  std::unique_ptr<GradCodec> cpu, gpu;
};
Codecs codecs(GradCompression c, DType dtype) {
  return {GradCodec::create(dtype, Device::cpu(), c),
          GradCodec::create(dtype, Device::cuda(0), c, /*cuda_stream=*/nullptr)};
}

TEST(GradCodecGpu, CompressWithAndWithoutFeedbackMatchesTheCpu) {
  TT_REQUIRE_GPU();
  for (GradCompression c : {GradCompression::kBf16, GradCompression::kInt8, GradCompression::kFp8})
    for (DType dtype : {DType::kF32, DType::kBF16})
      for (bool feedback : {false, true})
        for (int64_t n : kSizes) {
          const std::string what =
              str(grad_compression_name(c), " ", dtype_name(dtype), feedback ? " feedback" : "", " n=", n);
          Codecs k = codecs(c, dtype);
          Pair residual = pair_of("residual", stored(values(n, 9), DType::kF32), DType::kF32);
          const size_t bytes = compressed_bytes(n, c);
          Pair out = pair_of("out", std::vector<uint8_t>((bytes + 3) / 4 * 4), DType::kI8);
          poison(out, bytes);
          for (int round = 0; round < 2; ++round) {  // the second round compresses with the updated residual
            // Fresh x each round: the CPU codec may leave fp32 x holding x + residual.
            Pair x = pair_of("x", stored(values(n, 1 + round), dtype), dtype);
            k.cpu->compress(x.cpu.raw(), dtype, feedback ? residual.cpu.data<float>() : nullptr, n,
                            out.cpu.data<uint8_t>());
            k.gpu->compress(x.gpu.raw(), dtype, feedback ? residual.gpu.data<float>() : nullptr, n,
                            out.gpu.data<uint8_t>());
            EXPECT_EQ(differing_bytes(out, bytes), 0) << what << " round " << round << ": payload";
            if (feedback) EXPECT_EQ(differing_bytes(residual, size_t(n) * 4), 0) << what << ": residual";
          }
        }
}

TEST(GradCodecGpu, DecompressAddDecompressAndAccumulateMatchTheCpu) {
  TT_REQUIRE_GPU();
  for (GradCompression c : {GradCompression::kBf16, GradCompression::kInt8, GradCompression::kFp8})
    for (int64_t n : kSizes) {
      const std::string what = str(grad_compression_name(c), " n=", n);
      Codecs k = codecs(c, DType::kF32);
      const size_t bytes = compressed_bytes(n, c);
      std::vector<uint8_t> payload((bytes + 3) / 4 * 4);
      {
        Tensor x = Tensor::zeros("x", {n});
        std::memcpy(x.raw(), values(n, 3).data(), size_t(n) * 4);
        k.cpu->compress(x.raw(), DType::kF32, nullptr, n, payload.data());
      }
      Pair in = pair_of("in", payload, DType::kI8);
      Pair acc = pair_of("acc", stored(values(n, 4), DType::kF32), DType::kF32);
      k.cpu->decompress_add(in.cpu.data<uint8_t>(), n, 0.25f, acc.cpu.data<float>());
      k.gpu->decompress_add(in.gpu.data<uint8_t>(), n, 0.25f, acc.gpu.data<float>());
      EXPECT_EQ(differing_bytes(acc, size_t(n) * 4), 0) << what << ": decompress_add";
      for (DType dtype : {DType::kF32, DType::kBF16}) {
        Pair g = pair_of("g", stored(values(n, 5), dtype), dtype);
        poison(g, size_t(n) * dtype_size(dtype));
        k.cpu->decompress(in.cpu.data<uint8_t>(), n, g.cpu.raw(), dtype);
        k.gpu->decompress(in.gpu.data<uint8_t>(), n, g.gpu.raw(), dtype);
        EXPECT_EQ(differing_bytes(g, size_t(n) * dtype_size(dtype)), 0) << what << " " << dtype_name(dtype);
        Pair more = pair_of("more", stored(values(n, 6), dtype), dtype);
        k.cpu->accumulate(g.cpu.raw(), more.cpu.raw(), n, dtype);
        k.gpu->accumulate(g.gpu.raw(), more.gpu.raw(), n, dtype);
        EXPECT_EQ(differing_bytes(g, size_t(n) * dtype_size(dtype)), 0) << what << " accumulate " << dtype_name(dtype);
      }
    }
}

TEST(GradCodecGpu, Int8KeepsTheErrorWithinHalfAStep) {
  TT_REQUIRE_GPU();  // the GPU payload decoded on the host: a real check, not only CPU == GPU
  const int64_t n = 1000;
  Codecs k = codecs(GradCompression::kInt8, DType::kF32);
  const std::vector<float> v = values(n, 7);
  Pair x = pair_of("x", stored(v, DType::kF32), DType::kF32);
  const size_t bytes = compressed_bytes(n, GradCompression::kInt8);
  Pair out = pair_of("out", std::vector<uint8_t>((bytes + 3) / 4 * 4), DType::kI8);
  k.gpu->compress(x.gpu.raw(), DType::kF32, nullptr, n, out.gpu.data<uint8_t>());
  TT_CUDA_CHECK(cudaMemcpy(out.cpu.raw(), out.gpu.raw(), bytes, cudaMemcpyDeviceToHost));
  std::vector<float> back(size_t(n), 0.0f);
  decompress_add(out.cpu.data<uint8_t>(), n, GradCompression::kInt8, 1.0f, back.data());
  for (int64_t b = 0; b * kInt8Block < n; ++b) {
    float absmax = 0;
    for (int64_t i = b * kInt8Block; i < std::min(n, (b + 1) * kInt8Block); ++i)
      absmax = std::max(absmax, std::fabs(v[size_t(i)]));
    for (int64_t i = b * kInt8Block; i < std::min(n, (b + 1) * kInt8Block); ++i)
      ASSERT_LE(std::fabs(back[size_t(i)] - v[size_t(i)]), absmax / 127 / 2 * 1.0001f) << "element " << i;
  }
}

}  // namespace
}  // namespace tt::parallel
