// GPU tests for the elementwise kernels (gelu.cu, residual.cu) against their CPU references, fp32
// and bf16, over odd sizes; outputs poisoned first, gradients pre-filled to check accumulation.
#include <gtest/gtest.h>

#include "kernels/gelu/gelu.h"
#include "kernels/residual/residual.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

const int64_t kSizes[] = {1, 7, 1000, 65537};

template <typename T>
void check_gelu(int64_t n) {
  const std::string what = std::string("gelu ") + dtype_label<T>() + " n=" + std::to_string(n);
  const auto inp = storage_round<T>(random_floats(n, 1, -4.f, 4.f));
  const auto dout = storage_round<T>(random_floats(n, 2));
  const auto dinp0 = storage_round<T>(random_floats(n, 3));
  auto d_inp = upload<T>(inp), d_dout = upload<T>(dout), d_dinp = upload<T>(dinp0);
  DeviceBuffer<T> d_out(n);
  d_out.poison();
  gelu_forward_cuda(d_out.get(), d_inp.get(), n);
  std::vector<float> ref(n), dref = dinp0;
  gelu_forward_cpu(ref.data(), inp.data(), n);
  expect_close(download(d_out), ref, default_tolerance<T>(), what + " forward");
  gelu_backward_cuda(d_dinp.get(), d_inp.get(), d_dout.get(), n);
  gelu_backward_cpu(dref.data(), inp.data(), dout.data(), n);
  expect_close(download(d_dinp), dref, default_tolerance<T>(), what + " backward (+=)");
  gelu_backward_cuda(static_cast<T*>(nullptr), d_inp.get(), d_dout.get(), n);  // skipped, no crash
  TT_CUDA_CHECK(cudaDeviceSynchronize());
}

template <typename T>
void check_residual(int64_t n) {
  const std::string what = std::string("residual ") + dtype_label<T>() + " n=" + std::to_string(n);
  const auto a = storage_round<T>(random_floats(n, 4)), b = storage_round<T>(random_floats(n, 5));
  const auto dout = storage_round<T>(random_floats(n, 6));
  const auto da0 = storage_round<T>(random_floats(n, 7)), db0 = storage_round<T>(random_floats(n, 8));
  auto d_a = upload<T>(a), d_b = upload<T>(b), d_dout = upload<T>(dout);
  DeviceBuffer<T> d_out(n);
  d_out.poison();
  residual_forward_cuda(d_out.get(), d_a.get(), d_b.get(), n);
  std::vector<float> ref(n);
  residual_forward_cpu(ref.data(), a.data(), b.data(), n);
  expect_close(download(d_out), ref, default_tolerance<T>(), what + " forward");

  auto d_da = upload<T>(da0), d_db = upload<T>(db0);
  residual_backward_cuda(d_da.get(), d_db.get(), d_dout.get(), n);
  auto da_ref = da0, db_ref = db0;
  residual_backward_cpu(da_ref.data(), db_ref.data(), dout.data(), n);
  expect_close(download(d_da), da_ref, default_tolerance<T>(), what + " da (+=)");
  expect_close(download(d_db), db_ref, default_tolerance<T>(), what + " db (+=)");
  // Only one branch: the other buffer must stay untouched.
  auto d_da2 = upload<T>(da0);
  residual_backward_cuda(d_da2.get(), static_cast<T*>(nullptr), d_dout.get(), n);
  expect_close(download(d_da2), da_ref, default_tolerance<T>(), what + " da only");
}

TEST(ElementwiseGpu, GeluF32) {
  TT_REQUIRE_GPU();
  for (int64_t n : kSizes) check_gelu<float>(n);
}
TEST(ElementwiseGpu, GeluBF16) {
  TT_REQUIRE_GPU();
  for (int64_t n : kSizes) check_gelu<bf16>(n);
}
TEST(ElementwiseGpu, ResidualF32) {
  TT_REQUIRE_GPU();
  for (int64_t n : kSizes) check_residual<float>(n);
}
TEST(ElementwiseGpu, ResidualBF16) {
  TT_REQUIRE_GPU();
  for (int64_t n : kSizes) check_residual<bf16>(n);
}

// The skip path itself: a machine without a device reports why.
TEST(GpuTestUtil, DeviceDetectionGivesAReason) {
  std::string reason;
  const bool ok = cuda_device_available(&reason);
  if (!ok)
    EXPECT_FALSE(reason.empty());
  else
    EXPECT_TRUE(reason.empty());
}

}  // namespace
}  // namespace tt::test
