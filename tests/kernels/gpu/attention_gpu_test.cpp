// GPU tests for the flash-style attention in attention.cu (bf16 calls forced onto it; cuDNN SDPA is
// attention_cudnn_gpu_test.cpp's) against the CPU reference (which keeps the full probability
// matrix): forward output and logsumexp, backward accumulation into a pre-filled dqkv, head sizes
// 32/64/128, T below, at and not a multiple of the 32-row tiles, fp32 and bf16, multi-head,
// grouped-query (NKV = 2, 3 of NH = 4, 6, 8) and multi-query (NKV = 1) shapes; a grouped shape
// equals multi-head on explicitly repeated key/value heads (forward bit-identical); causality
// (future tokens leave earlier outputs bit-identical); backward determinism.
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

// Multi-head (NKV = NH) first, then grouped-query and multi-query.
const AttentionShape kShapes[] = {
    attention_shape(1, 1, 1, 1, 32),    attention_shape(2, 7, 2, 2, 64),    attention_shape(1, 33, 3, 3, 64),
    attention_shape(2, 100, 2, 2, 128), attention_shape(1, 65, 1, 1, 32),   attention_shape(1, 31, 2, 2, 128),
    attention_shape(2, 64, 2, 2, 64),   attention_shape(1, 257, 1, 1, 64),  attention_shape(2, 7, 4, 2, 64),
    attention_shape(1, 33, 4, 1, 32),   attention_shape(2, 100, 6, 3, 128), attention_shape(1, 65, 8, 2, 64),
    attention_shape(1, 1, 4, 1, 64),    attention_shape(2, 70, 4, 1, 128),
};

template <typename T>
void check(const AttentionShape& s) {
  const std::string what = str("attention ", dtype_label<T>(), " ", shape_label(s));
  AttentionCase<T> c(s);
  attention_forward_cuda(c.d_out.get(), c.d_lse.get(), c.d_qkv.get(), s);
  const Tolerance tol = default_tolerance<T>();
  expect_close(download(c.d_out), c.out, relative_to_max(tol, c.out), what + " out");
  expect_close(download(c.d_lse), reference_lse(c.qkv, s), {1e-5, 1e-5}, what + " lse");

  // Backward from the GPU's own forward (out, lse), as in training.
  // fp32: the backward sums up to T products (times the group size, for dk and dv) per element in
  // another order than the CPU and uses expf against std::exp; 1e-4 of the largest gradient is still
  // far below any real error.
  const Tolerance btol = std::is_same_v<T, float> ? Tolerance{1e-4, 1e-4} : Tolerance{2e-2, 2e-2};
  std::vector<uint8_t> first;
  for (int run = 0; run < 2; ++run) {
    auto d_dqkv = upload<T>(c.dqkv0);
    attention_backward_cuda(d_dqkv.get(), c.d_dout.get(), c.d_qkv.get(), c.d_out.get(), c.d_lse.get(), s);
    expect_close(download(d_dqkv), c.dqkv, relative_to_max(btol, c.dqkv), what + " dqkv (+=)");
    if (run == 0)
      first = download_bytes(d_dqkv);
    else
      expect_bit_identical(download_bytes(d_dqkv), first, what + " dqkv determinism");
  }
}

TEST(AttentionGpu, F32) {
  TT_REQUIRE_GPU();
  for (const AttentionShape& s : kShapes) check<float>(s);
}
TEST(AttentionGpu, BF16) {
  TT_REQUIRE_GPU();
  const ScopedAttentionBackend flash(AttentionBackend::kFlash);  // bf16 would otherwise prefer cuDNN
  for (const AttentionShape& s : kShapes) check<bf16>(s);
}

// A grouped shape runs the per-query-head arithmetic of multi-head attention on the kv head it
// reads, so its forward equals multi-head attention on explicitly repeated key/value heads bit for
// bit.
TEST(AttentionGpu, GroupedForwardEqualsMultiHeadOnRepeatedKvHeads) {
  TT_REQUIRE_GPU();
  for (const AttentionShape& s : {attention_shape(2, 45, 4, 2, 64), attention_shape(1, 70, 4, 1, 32)}) {
    SCOPED_TRACE(shape_label(s));
    const AttentionShape m = attention_shape(s.B, s.T, s.NH, s.NH, s.HD);
    const int group = s.NH / s.NKV, C = s.q_dim();
    const auto qkv = random_floats(size_t(s.B) * s.T * s.qkv_dim(), 1);
    std::vector<float> qkv_m(size_t(s.B) * s.T * m.qkv_dim());
    for (size_t row = 0; row < size_t(s.B) * s.T; ++row)
      for (int part = 0; part < 3; ++part)
        for (int h = 0; h < s.NH; ++h)
          for (int i = 0; i < s.HD; ++i) {
            const int src_head = part == 0 ? h : s.NH + (part - 1) * s.NKV + h / group;
            qkv_m[row * m.qkv_dim() + size_t(part) * C + size_t(h) * s.HD + i] =
                qkv[row * s.qkv_dim() + size_t(src_head) * s.HD + i];
          }
    auto d_qkv = upload<float>(qkv), d_qkv_m = upload<float>(qkv_m);
    DeviceBuffer<float> d_out(size_t(s.B) * s.T * C), d_lse(size_t(s.B) * s.NH * s.T);
    DeviceBuffer<float> d_out_m(size_t(s.B) * s.T * C), d_lse_m(size_t(s.B) * s.NH * s.T);
    attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv.get(), s);
    attention_forward_cuda(d_out_m.get(), d_lse_m.get(), d_qkv_m.get(), m);
    expect_bit_identical(download_bytes(d_out), download_bytes(d_out_m), "out");
    expect_bit_identical(download_bytes(d_lse), download_bytes(d_lse_m), "lse");
  }
}

TEST(AttentionGpu, Causal) {
  TT_REQUIRE_GPU();
  for (const AttentionShape& s : {attention_shape(2, 70, 2, 2, 64), attention_shape(2, 70, 4, 2, 64)}) {
    SCOPED_TRACE(shape_label(s));
    const int B = s.B, T = s.T, C = s.q_dim(), D = s.qkv_dim(), changed = 40;
    auto qkv = random_floats(size_t(B) * T * D, 1);
    auto d_qkv = upload<float>(qkv);
    DeviceBuffer<float> d_out(size_t(B) * T * C), d_lse(size_t(B) * s.NH * T);
    attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv.get(), s);
    const auto out1 = download(d_out);
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < D; ++j) qkv[(size_t(b) * T + changed) * D + j] += 0.75f;
    auto d_qkv2 = upload<float>(qkv);
    attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv2.get(), s);
    const auto out2 = download(d_out);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < C; ++c) {
          const size_t i = (size_t(b) * T + t) * C + c;
          if (t < changed) ASSERT_EQ(out1[i], out2[i]) << "b=" << b << " t=" << t;
        }
  }
}

TEST(AttentionGpu, NullGradientIsANoOp) {
  TT_REQUIRE_GPU();
  attention_backward_cuda(static_cast<float*>(nullptr), nullptr, nullptr, nullptr, nullptr,
                          attention_shape(1, 4, 1, 1, 64));
  TT_CUDA_CHECK(cudaDeviceSynchronize());
}

// Runs without a device: the head size is checked before anything is launched.
TEST(AttentionGpu, UnsupportedHeadSizeThrows) {
  EXPECT_THROW(attention_forward_cuda(static_cast<float*>(nullptr), nullptr, nullptr, attention_shape(1, 4, 1, 1, 48)),
               tt::Error);
  EXPECT_THROW(attention_forward_cuda(static_cast<float*>(nullptr), nullptr, nullptr, attention_shape(1, 4, 4, 2, 48)),
               tt::Error);
}

}  // namespace
}  // namespace tt::test
