// Tests for kernels/matmul: forward against a double loop, backward by finite differences
// (with += semantics and nullptr gradients), determinism across thread counts.
#include "kernels/matmul/matmul.h"

#include <gtest/gtest.h>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::matmul_backward_cpu;
using kernels::matmul_forward_cpu;

std::vector<double> naive_matmul(const std::vector<float>& inp, const std::vector<float>& w, const float* bias, int M,
                                 int K, int N) {
  std::vector<double> out(M * N);
  for (int i = 0; i < M; ++i)
    for (int n = 0; n < N; ++n) {
      double s = bias ? bias[n] : 0.0;
      for (int k = 0; k < K; ++k) s += static_cast<double>(inp[i * K + k]) * w[n * K + k];
      out[i * N + n] = s;
    }
  return out;
}

TEST(Matmul, ForwardMatchesNaiveWithAndWithoutBias) {
  const int M = 7, K = 5, N = 3;
  const auto inp = random_floats(M * K, 1), w = random_floats(N * K, 2), bias = random_floats(N, 3);
  for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
    std::vector<float> out(M * N, 123.0f);  // overwritten, not accumulated
    matmul_forward_cpu(out.data(), inp.data(), w.data(), b, M, K, N);
    const auto ref = naive_matmul(inp, w, b, M, K, N);
    for (int i = 0; i < M * N; ++i) EXPECT_NEAR(out[i], ref[i], 1e-5) << "element " << i;
  }
}

TEST(Matmul, BackwardFiniteDifferencesAndAccumulates) {
  const int M = 7, K = 5, N = 3;
  auto inp = random_floats(M * K, 1), w = random_floats(N * K, 2), bias = random_floats(N, 3);
  const auto R = random_floats(M * N, 4);
  std::vector<float> out(M * N);
  auto loss = [&] {
    matmul_forward_cpu(out.data(), inp.data(), w.data(), bias.data(), M, K, N);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  // Pre-filled gradients: backward must add to them.
  const auto dinp0 = random_floats(M * K, 5), dw0 = random_floats(N * K, 6), db0 = random_floats(N, 7);
  auto dinp = dinp0, dw = dw0, db = db0;
  matmul_backward_cpu(dinp.data(), dw.data(), db.data(), R.data(), inp.data(), w.data(), M, K, N);
  EXPECT_TRUE(gradients_match(check_gradient(inp, minus(dinp, dinp0), loss)));
  EXPECT_TRUE(gradients_match(check_gradient(w, minus(dw, dw0), loss)));
  EXPECT_TRUE(gradients_match(check_gradient(bias, minus(db, db0), loss)));

  // nullptr gradients are skipped; the others are unchanged by that.
  std::vector<float> dw_only(N * K, 0.0f);
  matmul_backward_cpu(nullptr, dw_only.data(), nullptr, R.data(), inp.data(), w.data(), M, K, N);
  const auto dw_delta = minus(dw, dw0);
  for (int i = 0; i < N * K; ++i) EXPECT_NEAR(dw_only[i], dw_delta[i], 1e-5);
  matmul_backward_cpu(nullptr, nullptr, nullptr, R.data(), inp.data(), w.data(), M, K, N);
}

// Forward and backward: OpenBLAS's own threading would tile by thread count (and differ in the
// last bit with its Haswell/Zen kernels); the fixed tiles keep every bit. Sizes span several tiles.
TEST(Matmul, BitIdenticalAcrossThreadCounts) {
  const int M = 67, K = 130, N = 201;
  const auto inp = random_floats(M * K, 1), w = random_floats(N * K, 2), dout = random_floats(M * N, 3);
  const auto bias = random_floats(N, 4);
  std::vector<float> results[2][4];
  for (int run = 0; run < 2; ++run) {
    with_threads(run + 1, [&] {
      results[run][3].assign(size_t(M) * N, 0.0f);
      matmul_forward_cpu(results[run][3].data(), inp.data(), w.data(), bias.data(), M, K, N);
      std::vector<float> dinp(M * K, 0.5f), dw(N * K, 0.25f), db(N, 0.125f);
      matmul_backward_cpu(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), M, K, N);
      results[run][0] = dinp;
      results[run][1] = dw;
      results[run][2] = db;
    });
  }
  EXPECT_TRUE(bit_identical(results[0][0], results[1][0])) << "dinp";
  EXPECT_TRUE(bit_identical(results[0][1], results[1][1])) << "dweight";
  EXPECT_TRUE(bit_identical(results[0][2], results[1][2])) << "dbias";
  EXPECT_TRUE(bit_identical(results[0][3], results[1][3])) << "forward";
}

}  // namespace
}  // namespace tt::test
