// Tests for kernels/residual: forward sum, backward accumulates into both branches.
#include "kernels/residual/residual.h"

#include <gtest/gtest.h>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::residual_backward_cpu;
using kernels::residual_forward_cpu;

TEST(Residual, ForwardAndBackward) {
  const int64_t n = 1001;
  const auto a = random_floats(n, 1), b = random_floats(n, 2), dout = random_floats(n, 3);
  std::vector<float> out(n);
  residual_forward_cpu(out.data(), a.data(), b.data(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], a[i] + b[i]);

  const auto da0 = random_floats(n, 4), db0 = random_floats(n, 5);
  auto da = da0, db = db0;
  residual_backward_cpu(da.data(), db.data(), dout.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(da[i], da0[i] + dout[i]);
    EXPECT_EQ(db[i], db0[i] + dout[i]);
  }
  residual_backward_cpu(nullptr, db.data(), dout.data(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(db[i], (db0[i] + dout[i]) + dout[i]);
}

}  // namespace
}  // namespace tt::test
