// Tests for kernels/rmsnorm: forward (out, rstd) against double loops for two epsilons, backward by
// finite differences for input and weight (+= semantics, nullptr gradients), determinism across
// thread counts.
#include "kernels/rmsnorm/rmsnorm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::rmsnorm_backward_cpu;
using kernels::rmsnorm_forward_cpu;

constexpr float kEps = 1e-6f;

TEST(RMSNorm, ForwardMatchesNaive) {
  const int N = 5, C = 7;
  const auto inp = random_floats(N * C, 1, -2.f, 3.f), w = random_floats(C, 2);
  for (float eps : {kEps, 0.5f}) {  // a large eps shows it is used
    std::vector<float> out(N * C), rstd(N);
    rmsnorm_forward_cpu(out.data(), rstd.data(), inp.data(), w.data(), N, C, eps);
    for (int n = 0; n < N; ++n) {
      double ms = 0;
      for (int i = 0; i < C; ++i) ms += static_cast<double>(inp[n * C + i]) * inp[n * C + i];
      ms /= C;
      const double s = 1.0 / std::sqrt(ms + eps);
      EXPECT_NEAR(rstd[n], s, 1e-6 * s) << "eps=" << eps;
      for (int i = 0; i < C; ++i)
        EXPECT_NEAR(out[n * C + i], inp[n * C + i] * s * w[i], 1e-6 + 1e-6 * std::fabs(inp[n * C + i] * s * w[i]))
            << "eps=" << eps;
    }
    std::vector<float> out2(N * C);
    rmsnorm_forward_cpu(out2.data(), nullptr, inp.data(), w.data(), N, C, eps);  // rstd not wanted
    EXPECT_TRUE(bit_identical(out, out2));
  }
}

TEST(RMSNorm, ForwardIsScaleInvariantUpToEps) {
  // RMSNorm(a·x) = RMSNorm(x) for a > 0 when eps is negligible: catches a missing 1/C or square root.
  const int N = 3, C = 64;
  const auto inp = random_floats(N * C, 11), w = random_floats(C, 12);
  auto scaled = inp;
  for (auto& v : scaled) v *= 8.0f;
  std::vector<float> a(N * C), b(N * C);
  rmsnorm_forward_cpu(a.data(), nullptr, inp.data(), w.data(), N, C, 1e-12f);
  rmsnorm_forward_cpu(b.data(), nullptr, scaled.data(), w.data(), N, C, 1e-12f);
  for (int i = 0; i < N * C; ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
}

TEST(RMSNorm, BackwardFiniteDifferencesAndAccumulates) {
  const int N = 4, C = 6;
  auto inp = random_floats(N * C, 1), w = random_floats(C, 2, 0.5f, 1.5f);
  const auto R = random_floats(N * C, 4);
  std::vector<float> out(N * C), rstd(N);
  auto loss = [&] {
    rmsnorm_forward_cpu(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  loss();
  const auto dinp0 = random_floats(N * C, 5), dw0 = random_floats(C, 6);
  auto dinp = dinp0, dw = dw0;
  rmsnorm_backward_cpu(dinp.data(), dw.data(), R.data(), inp.data(), w.data(), rstd.data(), N, C);
  EXPECT_TRUE(gradients_match(check_gradient(inp, minus(dinp, dinp0), loss)));
  EXPECT_TRUE(gradients_match(check_gradient(w, minus(dw, dw0), loss)));

  std::vector<float> dinp_only(N * C, 0.0f);
  rmsnorm_backward_cpu(dinp_only.data(), nullptr, R.data(), inp.data(), w.data(), rstd.data(), N, C);
  const auto delta = minus(dinp, dinp0);
  for (int i = 0; i < N * C; ++i) EXPECT_NEAR(dinp_only[i], delta[i], 1e-5);
  std::vector<float> dw_only(C, 0.0f);
  rmsnorm_backward_cpu(nullptr, dw_only.data(), R.data(), inp.data(), w.data(), rstd.data(), N, C);
  const auto dw_delta = minus(dw, dw0);
  for (int i = 0; i < C; ++i) EXPECT_NEAR(dw_only[i], dw_delta[i], 1e-5);
}

TEST(RMSNorm, BitIdenticalAcrossThreadCounts) {
  const int N = 37, C = 300;
  const auto inp = random_floats(N * C, 1), w = random_floats(C, 2);
  const auto dout = random_floats(N * C, 4);
  std::vector<float> results[2][4];
  for (int run = 0; run < 2; ++run) {
    with_threads(run + 1, [&] {
      std::vector<float> out(N * C), rstd(N);
      rmsnorm_forward_cpu(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps);
      std::vector<float> dinp(N * C, 0.5f), dw(C, 0.25f);
      rmsnorm_backward_cpu(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data(), N, C);
      results[run][0] = out;
      results[run][1] = rstd;
      results[run][2] = dinp;
      results[run][3] = dw;
    });
  }
  for (int k = 0; k < 4; ++k) EXPECT_TRUE(bit_identical(results[0][k], results[1][k])) << k;
}

}  // namespace
}  // namespace tt::test
