// GPU tests for swiglu.cu against the CPU reference, fp32 and bf16, odd shapes; outputs poisoned
// first, input gradients pre-filled to check accumulation, nullptr dinp skipped.
#include <gtest/gtest.h>

#include "kernels/swiglu/swiglu.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

struct Shape {
  int64_t N;
  int I;
};
const Shape kShapes[] = {{1, 1}, {3, 7}, {17, 300}, {64, 1376}, {1030, 33}};

template <typename T>
void check(Shape s) {
  const std::string what =
      std::string("swiglu ") + dtype_label<T>() + " N=" + std::to_string(s.N) + " I=" + std::to_string(s.I);
  const size_t n_out = static_cast<size_t>(s.N) * s.I, n_inp = 2 * n_out;
  const auto inp = storage_round<T>(random_floats(n_inp, 1, -6.f, 6.f));
  const auto dout = storage_round<T>(random_floats(n_out, 2));
  const auto dinp0 = storage_round<T>(random_floats(n_inp, 3));
  auto d_inp = upload<T>(inp), d_dout = upload<T>(dout), d_dinp = upload<T>(dinp0);
  DeviceBuffer<T> d_out(n_out);
  d_out.poison();
  swiglu_forward_cuda(d_out.get(), d_inp.get(), s.N, s.I);
  std::vector<float> ref(n_out), dref = dinp0;
  swiglu_forward_cpu(ref.data(), inp.data(), s.N, s.I);
  expect_close(download(d_out), ref, default_tolerance<T>(), what + " forward");
  swiglu_backward_cuda(d_dinp.get(), d_dout.get(), d_inp.get(), s.N, s.I);
  swiglu_backward_cpu(dref.data(), dout.data(), inp.data(), s.N, s.I);
  expect_close(download(d_dinp), dref, default_tolerance<T>(), what + " backward (+=)");
  swiglu_backward_cuda(static_cast<T*>(nullptr), d_dout.get(), d_inp.get(), s.N, s.I);  // skipped, no crash
  TT_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(SwiGLUGpu, F32) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check<float>(s);
}
TEST(SwiGLUGpu, BF16) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check<bf16>(s);
}

}  // namespace
}  // namespace tt::test
