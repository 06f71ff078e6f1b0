// Tests for kernels/swiglu: forward against a double loop, backward by finite differences for the
// gate and up halves (+= semantics), finite results for large |gate|, determinism across threads.
#include "kernels/swiglu/swiglu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::swiglu_backward_cpu;
using kernels::swiglu_forward_cpu;

double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }

TEST(SwiGLU, ForwardMatchesNaive) {
  const int64_t N = 5;
  const int I = 9;
  const auto inp = random_floats(N * 2 * I, 1, -6.f, 6.f);
  std::vector<float> out(N * I);
  swiglu_forward_cpu(out.data(), inp.data(), N, I);
  for (int64_t n = 0; n < N; ++n)
    for (int i = 0; i < I; ++i) {
      const double want = silu_ref(inp[n * 2 * I + i]) * inp[n * 2 * I + I + i];
      EXPECT_NEAR(out[n * I + i], want, 1e-6 + 1e-6 * std::fabs(want)) << n << "," << i;
    }
}

TEST(SwiGLU, BackwardFiniteDifferencesAndAccumulates) {
  const int64_t N = 4;
  const int I = 7;
  auto inp = random_floats(N * 2 * I, 1, -4.f, 4.f);
  const auto R = random_floats(N * I, 2);
  std::vector<float> out(N * I);
  auto loss = [&] {
    swiglu_forward_cpu(out.data(), inp.data(), N, I);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  const auto dinp0 = random_floats(N * 2 * I, 3);
  auto dinp = dinp0;
  swiglu_backward_cpu(dinp.data(), R.data(), inp.data(), N, I);
  EXPECT_TRUE(gradients_match(check_gradient(inp, minus(dinp, dinp0), loss)));
  swiglu_backward_cpu(nullptr, R.data(), inp.data(), N, I);  // nothing to do, no crash
}

TEST(SwiGLU, LargeGatesStayFinite) {
  const float gates[] = {-100.f, -30.f, 0.f, 30.f, 100.f};
  const int I = 5;
  std::vector<float> inp(2 * I), out(I), dinp(2 * I, 0.0f), dout(I, 1.0f);
  for (int i = 0; i < I; ++i) inp[i] = gates[i], inp[I + i] = 2.0f;
  swiglu_forward_cpu(out.data(), inp.data(), 1, I);
  swiglu_backward_cpu(dinp.data(), dout.data(), inp.data(), 1, I);
  for (int i = 0; i < I; ++i) {
    EXPECT_TRUE(std::isfinite(out[i])) << gates[i];
    EXPECT_NEAR(out[i], 2.0 * silu_ref(gates[i]), 1e-5 * std::fabs(gates[i]) + 1e-30) << gates[i];
    EXPECT_TRUE(std::isfinite(dinp[i]) && std::isfinite(dinp[I + i])) << gates[i];
  }
  EXPECT_NEAR(dinp[0], 0.0, 1e-30);       // silu'(−100) underflows to 0
  EXPECT_FLOAT_EQ(dinp[4], 2.0f);         // silu'(100) = 1, times up = 2
  EXPECT_FLOAT_EQ(dinp[2], 2.0f * 0.5f);  // silu'(0) = 1/2
}

TEST(SwiGLU, BitIdenticalAcrossThreadCounts) {
  const int64_t N = 37;
  const int I = 300;
  const auto inp = random_floats(N * 2 * I, 1, -5.f, 5.f), dout = random_floats(N * I, 2);
  std::vector<float> results[2][2];
  for (int run = 0; run < 2; ++run) {
    with_threads(run + 1, [&] {
      std::vector<float> out(N * I), dinp(N * 2 * I, 0.5f);
      swiglu_forward_cpu(out.data(), inp.data(), N, I);
      swiglu_backward_cpu(dinp.data(), dout.data(), inp.data(), N, I);
      results[run][0] = out;
      results[run][1] = dinp;
    });
  }
  for (int k = 0; k < 2; ++k) EXPECT_TRUE(bit_identical(results[0][k], results[1][k])) << k;
}

}  // namespace
}  // namespace tt::test
