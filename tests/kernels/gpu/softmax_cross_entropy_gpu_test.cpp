// GPU tests for softmax_cross_entropy.cu against the CPU reference: losses and dlogits over padded
// vocabularies (padding exactly 0), in place (dlogits == logits), losses-only and gradient-only
// calls, fp32 and bf16, a GPT-2-sized vocabulary; determinism.
#include <gtest/gtest.h>

#include "kernels/softmax_cross_entropy/softmax_cross_entropy.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

struct Shape {
  int N, V, Vp;
};
const Shape kShapes[] = {{1, 1, 1}, {3, 10, 16}, {5, 1000, 1003}, {7, 50257, 50304}};

template <typename T>
void check(Shape s) {
  const std::string what = str("softmax_cross_entropy ", dtype_label<T>(), " N=", s.N, " V=", s.V, " Vp=", s.Vp);
  const size_t nv = size_t(s.N) * s.Vp;
  const auto logits = storage_round<T>(random_floats(nv, 1, -4.f, 4.f));
  const auto targets = random_tokens(s.N, s.V, 2);
  const float dloss = 1.0f / s.N;
  std::vector<float> losses(s.N), dlogits(nv);
  softmax_cross_entropy_cpu(losses.data(), dlogits.data(), logits.data(), targets.data(), s.N, s.V, s.Vp, dloss);

  auto d_logits = upload<T>(logits);
  auto d_targets = upload_raw(targets);
  const Tolerance tol = default_tolerance<T>();
  const Tolerance grad_tol{tol.rtol, tol.atol * dloss};  // gradients are O(dloss)
  std::vector<uint8_t> first;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> d_losses(s.N);
    DeviceBuffer<T> d_dlogits(nv);
    d_losses.poison(), d_dlogits.poison();
    softmax_cross_entropy_cuda(d_losses.get(), d_dlogits.get(), d_logits.get(), d_targets.get(), s.N, s.V, s.Vp, dloss);
    expect_close(download(d_losses), losses, {1e-5, 1e-5}, what + " losses");
    const auto got = download(d_dlogits);
    expect_close(got, dlogits, grad_tol, what + " dlogits");
    for (int n = 0; n < s.N; ++n)
      for (int j = s.V; j < s.Vp; ++j) ASSERT_EQ(got[size_t(n) * s.Vp + j], 0.0f) << what << " padding";
    if (run == 0)
      first = download_bytes(d_dlogits);
    else
      expect_bit_identical(download_bytes(d_dlogits), first, what + " determinism");
  }
  // Losses only, then in place (the gradient overwrites the logits).
  DeviceBuffer<float> d_losses(s.N);
  d_losses.poison();
  softmax_cross_entropy_cuda(d_losses.get(), static_cast<T*>(nullptr), d_logits.get(), d_targets.get(), s.N, s.V, s.Vp,
                             dloss);
  expect_close(download(d_losses), losses, {1e-5, 1e-5}, what + " losses only");
  d_losses.poison();
  softmax_cross_entropy_cuda(d_losses.get(), d_logits.get(), d_logits.get(), d_targets.get(), s.N, s.V, s.Vp, dloss);
  expect_close(download(d_losses), losses, {1e-5, 1e-5}, what + " in-place losses");
  expect_close(download(d_logits), dlogits, grad_tol, what + " in-place dlogits");
}

TEST(SoftmaxCrossEntropyGpu, F32) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check<float>(s);
}
TEST(SoftmaxCrossEntropyGpu, BF16) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check<bf16>(s);
}

// A target outside [0, V) cannot throw from the device: the row's loss is NaN (documented).
TEST(SoftmaxCrossEntropyGpu, BadTargetGivesNaNLoss) {
  TT_REQUIRE_GPU();
  const int N = 2, V = 5, Vp = 8;
  auto d_logits = upload<float>(random_floats(N * Vp, 1));
  auto d_targets = upload_raw(std::vector<int32_t>{1, 7});
  DeviceBuffer<float> d_losses(N);
  softmax_cross_entropy_cuda(d_losses.get(), static_cast<float*>(nullptr), d_logits.get(), d_targets.get(), N, V, Vp,
                             1.0f);
  const auto got = download(d_losses);
  EXPECT_TRUE(std::isfinite(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));
}

}  // namespace
}  // namespace tt::test
