// GPU tests for reductions.cu: sum of squares of fp32 and bf16 arrays into a double or float
// device result, against the CPU reference, including n = 0 and sizes that are not multiples of
// the block; two runs bit-identical. mean_accumulate into a pre-set fp32 sum likewise.
#include <gtest/gtest.h>

#include "kernels/reductions/reductions.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

const int64_t kSizes[] = {0, 1, 1000, (1 << 20) + 3, 7'000'001};

template <typename X, typename R>
void check(int64_t n) {
  const std::string what = str("sum_squares ", dtype_label<X>(), " -> ", sizeof(R) == 8 ? "f64" : "f32", " n=", n);
  const auto x = storage_round<X>(random_floats(n, 1, -3.f, 3.f));
  const double want = sum_squares_cpu(x.data(), n);
  auto d_x = upload<X>(x);
  R got[2];
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<R> d_r(1);
    d_r.poison();
    sum_squares_cuda(d_r.get(), d_x.get(), n);
    TT_CUDA_CHECK(cudaDeviceSynchronize());
    TT_CUDA_CHECK(cudaMemcpy(&got[run], d_r.get(), sizeof(R), cudaMemcpyDeviceToHost));
  }
  const double rtol = sizeof(R) == 8 ? 1e-12 : 1e-6;
  EXPECT_NEAR(static_cast<double>(got[0]), want, rtol * want + 1e-30) << what;
  EXPECT_EQ(std::memcmp(&got[0], &got[1], sizeof(R)), 0) << what << " determinism";
}

TEST(ReductionsGpu, SumSquares) {
  TT_REQUIRE_GPU();
  for (int64_t n : kSizes) {
    check<float, double>(n);
    check<float, float>(n);
    check<bf16, double>(n);
    check<bf16, float>(n);
  }
}

TEST(ReductionsGpu, MeanAccumulate) {
  TT_REQUIRE_GPU();
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{65537}}) {
    const std::string what = str("mean_accumulate n=", n);
    const auto x = random_floats(n, 2, 0.f, 11.f);
    float want = 1.5f;
    mean_accumulate_cpu(&want, x.data(), n);
    auto d_x = upload<float>(x);
    float got[2];
    for (int run = 0; run < 2; ++run) {
      auto d_sum = upload<float>({1.5f});
      mean_accumulate_cuda(d_sum.get(), d_x.get(), n);
      got[run] = download(d_sum)[0];
    }
    EXPECT_NEAR(got[0], want, 1e-5 * want) << what;
    EXPECT_EQ(std::memcmp(&got[0], &got[1], sizeof(float)), 0) << what << " determinism";
  }
}

}  // namespace
}  // namespace tt::test
