// Tests for kernels/softmax_cross_entropy: losses against double, gradient by finite differences,
// padded columns zero, in-place aliasing equal to out-of-place, stability for large logits.
#include "kernels/softmax_cross_entropy/softmax_cross_entropy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::softmax_cross_entropy_cpu;

constexpr int N = 5, V = 7, Vp = 9;

TEST(SoftmaxCrossEntropy, LossesAndGradientMatchNaive) {
  const auto logits = random_floats(N * Vp, 1, -3.f, 3.f);
  const auto targets = random_tokens(N, V, 2);
  const float dloss = 0.3f;
  std::vector<float> losses(N), dlogits(N * Vp, 99.0f);
  softmax_cross_entropy_cpu(losses.data(), dlogits.data(), logits.data(), targets.data(), N, V, Vp, dloss);
  for (int n = 0; n < N; ++n) {
    double mx = -1e300, sum = 0;
    for (int j = 0; j < V; ++j) mx = std::max(mx, static_cast<double>(logits[n * Vp + j]));
    for (int j = 0; j < V; ++j) sum += std::exp(logits[n * Vp + j] - mx);
    EXPECT_NEAR(losses[n], -(logits[n * Vp + targets[n]] - mx - std::log(sum)), 1e-5);
    for (int j = 0; j < V; ++j) {
      const double p = std::exp(logits[n * Vp + j] - mx) / sum;
      EXPECT_NEAR(dlogits[n * Vp + j], (p - (j == targets[n])) * dloss, 1e-6);
    }
    for (int j = V; j < Vp; ++j) EXPECT_EQ(dlogits[n * Vp + j], 0.0f) << "padded column";
  }
  // Losses only (no gradient) give the same losses.
  std::vector<float> losses2(N);
  softmax_cross_entropy_cpu(losses2.data(), nullptr, logits.data(), targets.data(), N, V, Vp, dloss);
  for (int n = 0; n < N; ++n) EXPECT_FLOAT_EQ(losses2[n], losses[n]);

  // In place: dlogits aliases logits.
  auto inplace = logits;
  std::vector<float> losses3(N);
  softmax_cross_entropy_cpu(losses3.data(), inplace.data(), inplace.data(), targets.data(), N, V, Vp, dloss);
  EXPECT_TRUE(bit_identical(inplace, dlogits));
  EXPECT_TRUE(bit_identical(losses3, losses));
}

TEST(SoftmaxCrossEntropy, GradientFiniteDifferences) {
  auto logits = random_floats(N * Vp, 1, -3.f, 3.f);
  const auto targets = random_tokens(N, V, 2);
  const float dloss = 0.7f;
  std::vector<float> losses(N), dlogits(N * Vp);
  auto loss = [&] {  // L = dloss · Σ losses, whose gradient is what dlogits holds
    softmax_cross_entropy_cpu(losses.data(), nullptr, logits.data(), targets.data(), N, V, Vp, dloss);
    double s = 0;
    for (float l : losses) s += l;
    return s * dloss;
  };
  softmax_cross_entropy_cpu(losses.data(), dlogits.data(), logits.data(), targets.data(), N, V, Vp, dloss);
  EXPECT_TRUE(gradients_match(check_gradient(logits, dlogits, loss)));
}

TEST(SoftmaxCrossEntropy, StableForLargeLogits) {
  std::vector<float> logits = {1000.f, 999.f, -1000.f, 0.f};
  const std::vector<int32_t> targets = {1};
  float loss = 0;
  std::vector<float> d(4);
  softmax_cross_entropy_cpu(&loss, d.data(), logits.data(), targets.data(), 1, 3, 4, 1.0f);
  EXPECT_NEAR(loss, std::log(1 + std::exp(1.0)), 1e-5);  // -log(e^-1 / (1 + e^-1))
  for (float x : d) EXPECT_TRUE(std::isfinite(x));
  EXPECT_EQ(d[3], 0.0f);
}

}  // namespace
}  // namespace tt::test
