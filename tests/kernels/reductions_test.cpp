// Tests for kernels/reductions: sum_squares and mean_accumulate against double loops and bit-identical
// across threads.
#include "kernels/reductions/reductions.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::mean_accumulate_cpu;
using kernels::sum_squares_cpu;

TEST(Reductions, SumSquaresMatchesDoubleLoop) {
  EXPECT_EQ(sum_squares_cpu(nullptr, 0), 0.0);
  for (int64_t n : {1, 7, 16385, 100003, 5000011}) {
    const auto x = random_floats(n, n, -3.f, 3.f);
    double ref = 0;
    for (float f : x) ref += static_cast<double>(f) * f;
    EXPECT_NEAR(sum_squares_cpu(x.data(), n), ref, 1e-10 * ref) << "n=" << n;
  }
}

TEST(Reductions, SumSquaresBitIdenticalAcrossThreadCounts) {
  const int64_t n = 3000017;
  const auto x = random_floats(n, 9);
  double r[2];
  for (int run = 0; run < 2; ++run) with_threads(run + 1, [&] { r[run] = sum_squares_cpu(x.data(), n); });
  EXPECT_EQ(std::memcmp(&r[0], &r[1], sizeof(double)), 0) << r[0] << " vs " << r[1];
}

TEST(Reductions, MeanAccumulateAddsTheMean) {
  for (int64_t n : {1, 7, 16385, 100003}) {
    const auto x = random_floats(n, n, 0.f, 11.f);
    double s = 0;
    for (float f : x) s += f;
    float sum = 1.5f;
    mean_accumulate_cpu(&sum, x.data(), n);
    EXPECT_FLOAT_EQ(sum, 1.5f + static_cast<float>(s / n)) << "n=" << n;  // the double mean, rounded once
    mean_accumulate_cpu(&sum, x.data(), n);                               // accumulates
    EXPECT_NEAR(sum, 1.5 + 2 * s / n, 1e-6 * (1.5 + 2 * s / n)) << "n=" << n;
  }
  float sum = 2.0f;
  mean_accumulate_cpu(&sum, nullptr, 0);  // empty: nothing added
  EXPECT_EQ(sum, 2.0f);
}

TEST(Reductions, MeanAccumulateBitIdenticalAcrossThreadCounts) {
  const int64_t n = 3000017;
  const auto x = random_floats(n, 10);
  float r[2] = {0.25f, 0.25f};
  for (int run = 0; run < 2; ++run) with_threads(run + 1, [&] { mean_accumulate_cpu(&r[run], x.data(), n); });
  EXPECT_EQ(std::memcmp(&r[0], &r[1], sizeof(float)), 0) << r[0] << " vs " << r[1];
}

}  // namespace
}  // namespace tt::test
