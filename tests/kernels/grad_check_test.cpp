// Tests of the finite-difference helper itself: it accepts correct gradients and rejects the
// mistakes it exists to catch (wrong sign, 10% scale error, transposed index, missing term).
#include "tests/kernels/grad_check.h"

#include <gtest/gtest.h>

#include "kernels/matmul/matmul.h"

namespace tt::test {
namespace {

using kernels::matmul_backward_cpu;
using kernels::matmul_forward_cpu;

TEST(GradCheck, AcceptsExactAndRejectsScaledOrFlipped) {
  const std::vector<int64_t> idx = {0, 1, 2, 3};
  const std::vector<double> numeric = {0.5, -1.0, 2.0, 0.25};
  std::vector<float> exact = {0.5f, -1.0f, 2.0f, 0.25f};
  EXPECT_TRUE(gradients_match(compare_gradients(exact.data(), idx, numeric)));
  std::vector<float> scaled = exact, flipped = exact, one_wrong = exact;
  for (auto& x : scaled) x *= 1.1f;
  for (auto& x : flipped) x = -x;
  one_wrong[3] = 0.3f;  // a single element 20% off, with a small l2 error overall
  EXPECT_FALSE(compare_gradients(scaled.data(), idx, numeric).ok);
  EXPECT_FALSE(compare_gradients(flipped.data(), idx, numeric).ok);
  EXPECT_FALSE(compare_gradients(one_wrong.data(), idx, numeric).ok);
}

TEST(GradCheck, NumericGradientOfKnownFunction) {
  // L = Σ r_i x_i³  ->  dL/dx_i = 3 r_i x_i²
  auto x = random_floats(50, 1);
  const auto r = random_floats(50, 2);
  std::vector<float> analytic(50);
  for (int i = 0; i < 50; ++i) analytic[i] = 3 * r[i] * x[i] * x[i];
  auto loss = [&] {
    double s = 0;
    for (int i = 0; i < 50; ++i) s += static_cast<double>(r[i]) * x[i] * x[i] * x[i];
    return s;
  };
  EXPECT_TRUE(gradients_match(check_gradient(x, analytic, loss)));
  const auto x_before = x;
  check_gradient(x, analytic, loss);
  EXPECT_TRUE(bit_identical(x, x_before)) << "perturbations must be undone exactly";
}

// Mutations of a real kernel gradient (square weight so a transposed layout has the same size).
TEST(GradCheck, RejectsMutatedMatmulGradients) {
  const int M = 6, K = 5, N = 5;
  auto inp = random_floats(M * K, 11), w = random_floats(N * K, 12), bias = random_floats(N, 13);
  const auto R = random_floats(M * N, 14);
  std::vector<float> out(M * N), dinp(M * K, 0.f), dw(N * K, 0.f), db(N, 0.f);
  auto loss = [&] {
    matmul_forward_cpu(out.data(), inp.data(), w.data(), bias.data(), M, K, N);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  matmul_backward_cpu(dinp.data(), dw.data(), db.data(), R.data(), inp.data(), w.data(), M, K, N);
  EXPECT_TRUE(gradients_match(check_gradient(w, dw, loss)));

  std::vector<float> transposed(N * K), scaled = dw, flipped = dw, missing_bias_term = db;
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) transposed[k * N + n] = dw[n * K + k];
  for (auto& x : scaled) x *= 1.1f;
  for (auto& x : flipped) x = -x;
  missing_bias_term[2] -= R[(M - 1) * N + 2];  // drop one row's contribution
  EXPECT_FALSE(check_gradient(w, transposed, loss).ok);
  EXPECT_FALSE(check_gradient(w, scaled, loss).ok);
  EXPECT_FALSE(check_gradient(w, flipped, loss).ok);
  EXPECT_TRUE(gradients_match(check_gradient(bias, db, loss)));
  EXPECT_FALSE(check_gradient(bias, missing_bias_term, loss).ok);
}

}  // namespace
}  // namespace tt::test
