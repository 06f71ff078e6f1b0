// Tests for kernels/layernorm: forward (out, mean, rstd) against double loops (two epsilons),
// backward by finite differences for input, weight and bias (+= semantics), determinism across
// thread counts.
#include "kernels/layernorm/layernorm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::kLayerNormEps;
using kernels::layernorm_backward_cpu;
using kernels::layernorm_forward_cpu;

TEST(LayerNorm, ForwardMatchesNaive) {
  const int N = 5, C = 7;
  const auto inp = random_floats(N * C, 1, -2.f, 3.f), w = random_floats(C, 2), b = random_floats(C, 3);
  std::vector<float> out(N * C), mean(N), rstd(N);
  layernorm_forward_cpu(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C, kLayerNormEps);
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0;
    for (int i = 0; i < C; ++i) m += inp[n * C + i];
    m /= C;
    for (int i = 0; i < C; ++i) v += (inp[n * C + i] - m) * (inp[n * C + i] - m);
    v /= C;  // biased variance
    const double s = 1.0 / std::sqrt(v + 1e-5);
    EXPECT_NEAR(mean[n], m, 1e-6);
    EXPECT_NEAR(rstd[n], s, 1e-5 * s);
    for (int i = 0; i < C; ++i) EXPECT_NEAR(out[n * C + i], (inp[n * C + i] - m) * s * w[i] + b[i], 1e-5);
  }
}

TEST(LayerNorm, ForwardUsesTheGivenEps) {
  const int N = 3, C = 5;
  const auto inp = random_floats(N * C, 8), w = random_floats(C, 9), b = random_floats(C, 10);
  std::vector<float> out(N * C), mean(N), rstd(N);
  const float eps = 0.25f;
  layernorm_forward_cpu(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C, eps);
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0;
    for (int i = 0; i < C; ++i) m += inp[n * C + i];
    m /= C;
    for (int i = 0; i < C; ++i) v += (inp[n * C + i] - m) * (inp[n * C + i] - m);
    const double s = 1.0 / std::sqrt(v / C + eps);
    EXPECT_NEAR(rstd[n], s, 1e-6 * s);
  }
}

TEST(LayerNorm, BackwardFiniteDifferencesAndAccumulates) {
  const int N = 4, C = 6;
  auto inp = random_floats(N * C, 1), w = random_floats(C, 2, 0.5f, 1.5f), b = random_floats(C, 3);
  const auto R = random_floats(N * C, 4);
  std::vector<float> out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    layernorm_forward_cpu(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C, kLayerNormEps);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  loss();
  const auto dinp0 = random_floats(N * C, 5), dw0 = random_floats(C, 6), db0 = random_floats(C, 7);
  auto dinp = dinp0, dw = dw0, db = db0;
  layernorm_backward_cpu(dinp.data(), dw.data(), db.data(), R.data(), inp.data(), w.data(), mean.data(), rstd.data(), N,
                         C);
  EXPECT_TRUE(gradients_match(check_gradient(inp, minus(dinp, dinp0), loss)));
  EXPECT_TRUE(gradients_match(check_gradient(w, minus(dw, dw0), loss)));
  EXPECT_TRUE(gradients_match(check_gradient(b, minus(db, db0), loss)));

  std::vector<float> dinp_only(N * C, 0.0f);
  layernorm_backward_cpu(dinp_only.data(), nullptr, nullptr, R.data(), inp.data(), w.data(), mean.data(), rstd.data(),
                         N, C);
  const auto delta = minus(dinp, dinp0);
  for (int i = 0; i < N * C; ++i) EXPECT_NEAR(dinp_only[i], delta[i], 1e-5);
}

TEST(LayerNorm, BackwardBitIdenticalAcrossThreadCounts) {
  const int N = 37, C = 300;
  const auto inp = random_floats(N * C, 1), w = random_floats(C, 2), b = random_floats(C, 3);
  const auto dout = random_floats(N * C, 4);
  std::vector<float> out(N * C), mean(N), rstd(N);
  layernorm_forward_cpu(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C, kLayerNormEps);
  std::vector<float> results[2][3];
  for (int run = 0; run < 2; ++run) {
    with_threads(run + 1, [&] {
      std::vector<float> dinp(N * C, 0.5f), dw(C, 0.25f), db(C, 0.125f);
      layernorm_backward_cpu(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                             rstd.data(), N, C);
      results[run][0] = dinp;
      results[run][1] = dw;
      results[run][2] = db;
    });
  }
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(bit_identical(results[0][k], results[1][k])) << k;
}

}  // namespace
}  // namespace tt::test
