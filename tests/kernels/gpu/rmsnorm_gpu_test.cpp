// GPU tests for rmsnorm.cu against the CPU reference: forward (out, rstd), the fused residual +
// RMSNorm forward (also in place), backward with pre-filled gradients (+=) and nullptr gradients,
// fp32 and bf16, odd shapes; deterministic dweight (two runs bit-identical).
#include <gtest/gtest.h>

#include "kernels/rmsnorm/rmsnorm.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

constexpr float kEps = 1e-6f;

struct Shape {
  int N, C;
};
const Shape kShapes[] = {{1, 1}, {3, 7}, {17, 33}, {64, 768}, {300, 129}, {1030, 64}};

template <typename T>
void check_forward(Shape s) {
  const std::string what =
      std::string("rmsnorm ") + dtype_label<T>() + " N=" + std::to_string(s.N) + " C=" + std::to_string(s.C);
  const size_t nc = static_cast<size_t>(s.N) * s.C;
  const auto inp = storage_round<T>(random_floats(nc, 1, -2.f, 3.f));
  const auto w = storage_round<T>(random_floats(s.C, 2, 0.5f, 1.5f));
  auto d_inp = upload<T>(inp), d_w = upload<T>(w);
  DeviceBuffer<T> d_out(nc);
  DeviceBuffer<float> d_rstd(s.N);
  d_out.poison(), d_rstd.poison();
  rmsnorm_forward_cuda(d_out.get(), d_rstd.get(), d_inp.get(), d_w.get(), s.N, s.C, kEps);
  std::vector<float> out(nc), rstd(s.N);
  rmsnorm_forward_cpu(out.data(), rstd.data(), inp.data(), w.data(), s.N, s.C, kEps);
  expect_close(download(d_out), out, default_tolerance<T>(), what + " out");
  expect_close(download(d_rstd), rstd, {1e-5, 1e-5}, what + " rstd");

  // Fused residual + RMSNorm: residual = round(a + b), RMSNorm of the stored residual.
  const auto a2 = storage_round<T>(random_floats(nc, 4));
  auto d_a2 = upload<T>(a2);
  DeviceBuffer<T> d_res(nc);
  d_res.poison(), d_out.poison(), d_rstd.poison();
  fused_residual_rmsnorm_forward_cuda(d_res.get(), d_out.get(), d_rstd.get(), d_inp.get(), d_a2.get(), d_w.get(), s.N,
                                      s.C, kEps);
  std::vector<float> res(nc);
  for (size_t i = 0; i < nc; ++i) res[i] = inp[i] + a2[i];
  res = storage_round<T>(res);
  rmsnorm_forward_cpu(out.data(), rstd.data(), res.data(), w.data(), s.N, s.C, kEps);
  expect_close(download(d_res), res, kF32Tolerance, what + " fused residual");
  expect_close(download(d_out), out, default_tolerance<T>(), what + " fused out");
  expect_close(download(d_rstd), rstd, {1e-5, 1e-5}, what + " fused rstd");

  // In place: residual written over inp1; rstd not wanted.
  d_out.poison();
  fused_residual_rmsnorm_forward_cuda(d_inp.get(), d_out.get(), nullptr, d_inp.get(), d_a2.get(), d_w.get(), s.N, s.C,
                                      kEps);
  expect_close(download(d_inp), res, kF32Tolerance, what + " fused residual in place");
  expect_close(download(d_out), out, default_tolerance<T>(), what + " fused out in place");
}

template <typename T>
void check_backward(Shape s) {
  const std::string what =
      std::string("rmsnorm backward ") + dtype_label<T>() + " N=" + std::to_string(s.N) + " C=" + std::to_string(s.C);
  const size_t nc = static_cast<size_t>(s.N) * s.C;
  const auto inp = storage_round<T>(random_floats(nc, 1, -2.f, 3.f));
  const auto w = storage_round<T>(random_floats(s.C, 2, 0.5f, 1.5f));
  const auto dout = storage_round<T>(random_floats(nc, 5));
  const auto dinp0 = storage_round<T>(random_floats(nc, 6)), dw0 = storage_round<T>(random_floats(s.C, 7));
  std::vector<float> out(nc), rstd(s.N);
  rmsnorm_forward_cpu(out.data(), rstd.data(), inp.data(), w.data(), s.N, s.C, kEps);
  auto dinp = dinp0, dw = dw0;
  rmsnorm_backward_cpu(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data(), s.N, s.C);

  auto d_inp = upload<T>(inp), d_w = upload<T>(w), d_dout = upload<T>(dout);
  auto d_rstd = upload<float>(rstd);
  std::vector<uint8_t> first_dw;
  for (int run = 0; run < 2; ++run) {
    auto d_dinp = upload<T>(dinp0), d_dw = upload<T>(dw0);
    rmsnorm_backward_cuda(d_dinp.get(), d_dw.get(), d_dout.get(), d_inp.get(), d_w.get(), d_rstd.get(), s.N, s.C);
    const Tolerance tol = default_tolerance<T>();
    expect_close(download(d_dinp), dinp, relative_to_max(tol, dinp), what + " dinp");
    expect_close(download(d_dw), dw, relative_to_max(tol, dw), what + " dweight");
    if (run == 0)
      first_dw = download_bytes(d_dw);
    else
      expect_bit_identical(download_bytes(d_dw), first_dw, what + " dweight determinism");
  }
  // nullptr gradients are skipped; the other is unaffected.
  auto d_dw = upload<T>(dw0);
  rmsnorm_backward_cuda(static_cast<T*>(nullptr), d_dw.get(), d_dout.get(), d_inp.get(), d_w.get(), d_rstd.get(), s.N,
                        s.C);
  expect_close(download(d_dw), dw, relative_to_max(default_tolerance<T>(), dw), what + " dweight only");
  auto d_dinp = upload<T>(dinp0);
  rmsnorm_backward_cuda(d_dinp.get(), static_cast<T*>(nullptr), d_dout.get(), d_inp.get(), d_w.get(), d_rstd.get(), s.N,
                        s.C);
  expect_close(download(d_dinp), dinp, relative_to_max(default_tolerance<T>(), dinp), what + " dinp only");
}

TEST(RMSNormGpu, ForwardF32) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check_forward<float>(s);
}
TEST(RMSNormGpu, ForwardBF16) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check_forward<bf16>(s);
}
TEST(RMSNormGpu, BackwardF32) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check_backward<float>(s);
}
TEST(RMSNormGpu, BackwardBF16) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check_backward<bf16>(s);
}

}  // namespace
}  // namespace tt::test
