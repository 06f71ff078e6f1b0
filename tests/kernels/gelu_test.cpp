// Tests for kernels/gelu: forward against the double formula, backward by finite differences.
#include "kernels/gelu/gelu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::gelu_backward_cpu;
using kernels::gelu_forward_cpu;

TEST(Gelu, ForwardMatchesTanhFormula) {
  const auto inp = random_floats(101, 1, -5.f, 5.f);
  std::vector<float> out(inp.size());
  gelu_forward_cpu(out.data(), inp.data(), static_cast<int64_t>(inp.size()));
  for (size_t i = 0; i < inp.size(); ++i) {
    const double x = inp[i];
    const double ref = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(out[i], ref, 1e-6 + 1e-6 * std::fabs(ref));
  }
}

TEST(Gelu, BackwardFiniteDifferencesAndAccumulates) {
  const int64_t n = 57;
  auto inp = random_floats(n, 1, -4.f, 4.f);
  const auto R = random_floats(n, 2);
  std::vector<float> out(n);
  auto loss = [&] {
    gelu_forward_cpu(out.data(), inp.data(), n);
    return weighted_sum(out.data(), R.data(), n);
  };
  const auto d0 = random_floats(n, 3);
  auto dinp = d0;
  gelu_backward_cpu(dinp.data(), inp.data(), R.data(), n);
  EXPECT_TRUE(gradients_match(check_gradient(inp, minus(dinp, d0), loss)));
  gelu_backward_cpu(nullptr, inp.data(), R.data(), n);
}

}  // namespace
}  // namespace tt::test
