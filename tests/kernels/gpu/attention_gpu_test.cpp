// GPU tests for the flash-style attention in attention.cu (bf16 calls forced onto it; cuDNN SDPA is
// attention_cudnn_gpu_test.cpp's) against the CPU reference (which keeps the full probability
// matrix): forward output and logsumexp, backward accumulation into a pre-filled dqkv, head sizes
// 32/64/128, T below, at and not a multiple of the 32-row tiles, fp32 and bf16; causality (future
// tokens leave earlier outputs bit-identical); backward determinism.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "kernels/attention/attention.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/gpu/attention_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

using Shape = AttentionShape;
const Shape kShapes[] = {{1, 1, 1, 32},  {2, 7, 2, 64},   {1, 33, 3, 64}, {2, 100, 2, 128},
                         {1, 65, 1, 32}, {1, 31, 2, 128}, {2, 64, 2, 64}, {1, 257, 1, 64}};

template <typename T>
void check(Shape s) {
  const std::string what = str("attention ", dtype_label<T>(), " B=", s.B, " T=", s.T, " NH=", s.NH, " HS=", s.HS);
  AttentionCase<T> c(s);
  attention_forward_cuda(c.d_out.get(), c.d_lse.get(), c.d_qkv.get(), s.B, s.T, c.C, s.NH);
  const Tolerance tol = default_tolerance<T>();
  expect_close(download(c.d_out), c.out, relative_to_max(tol, c.out), what + " out");
  expect_close(download(c.d_lse), reference_lse(c.qkv, s), {1e-5, 1e-5}, what + " lse");

  // Backward from the GPU's own forward (out, lse), as in training.
  // fp32: the backward sums up to T products per element in another order than the CPU and uses
  // expf against std::exp; 1e-4 of the largest gradient is still far below any real error.
  const Tolerance btol = std::is_same_v<T, float> ? Tolerance{1e-4, 1e-4} : Tolerance{2e-2, 2e-2};
  std::vector<uint8_t> first;
  for (int run = 0; run < 2; ++run) {
    auto d_dqkv = upload<T>(c.dqkv0);
    attention_backward_cuda(d_dqkv.get(), c.d_dout.get(), c.d_qkv.get(), c.d_out.get(), c.d_lse.get(), s.B, s.T, c.C,
                            s.NH);
    expect_close(download(d_dqkv), c.dqkv, relative_to_max(btol, c.dqkv), what + " dqkv (+=)");
    if (run == 0)
      first = download_bytes(d_dqkv);
    else
      expect_bit_identical(download_bytes(d_dqkv), first, what + " dqkv determinism");
  }
}

TEST(AttentionGpu, F32) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check<float>(s);
}
TEST(AttentionGpu, BF16) {
  TT_REQUIRE_GPU();
  const ScopedAttentionBackend flash(AttentionBackend::kFlash);  // bf16 would otherwise prefer cuDNN
  for (Shape s : kShapes) check<bf16>(s);
}

TEST(AttentionGpu, Causal) {
  TT_REQUIRE_GPU();
  const int B = 2, T = 70, NH = 2, HS = 64, C = NH * HS, changed = 40;
  auto qkv = random_floats(size_t(B) * T * 3 * C, 1);
  auto d_qkv = upload<float>(qkv);
  DeviceBuffer<float> d_out(size_t(B) * T * C), d_lse(size_t(B) * NH * T);
  attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv.get(), B, T, C, NH);
  const auto out1 = download(d_out);
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < 3 * C; ++j) qkv[(size_t(b) * T + changed) * 3 * C + j] += 0.75f;
  auto d_qkv2 = upload<float>(qkv);
  attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv2.get(), B, T, C, NH);
  const auto out2 = download(d_out);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) {
        const size_t i = (size_t(b) * T + t) * C + c;
        if (t < changed) ASSERT_EQ(out1[i], out2[i]) << "b=" << b << " t=" << t;
      }
}

TEST(AttentionGpu, NullGradientIsANoOp) {
  TT_REQUIRE_GPU();
  attention_backward_cuda(static_cast<float*>(nullptr), nullptr, nullptr, nullptr, nullptr, 1, 4, 64, 1);
  TT_CUDA_CHECK(cudaDeviceSynchronize());
}

// Runs without a device: the head size is checked before anything is launched.
TEST(AttentionGpu, UnsupportedHeadSizeThrows) {
  EXPECT_THROW(attention_forward_cuda(static_cast<float*>(nullptr), nullptr, nullptr, 1, 4, 48, 1), tt::Error);
}

}  // namespace
}  // namespace tt::test
