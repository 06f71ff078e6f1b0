// GPU tests for layernorm.cu against the CPU reference: forward (out, mean, rstd), the fused
// residual + LayerNorm forward, backward with pre-filled gradients (+=) and nullptr gradients,
// fp32 and bf16, odd shapes; deterministic dweight/dbias (two runs bit-identical).
#include <gtest/gtest.h>

#include "kernels/layernorm/layernorm.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

struct Shape {
  int N, C;
};
const Shape kShapes[] = {{1, 1}, {3, 7}, {17, 33}, {64, 768}, {300, 129}, {1030, 64}};

template <typename T>
void check_forward(Shape s) {
  const std::string what =
      std::string("layernorm ") + dtype_label<T>() + " N=" + std::to_string(s.N) + " C=" + std::to_string(s.C);
  const size_t nc = static_cast<size_t>(s.N) * s.C;
  const auto inp = storage_round<T>(random_floats(nc, 1, -2.f, 3.f));
  const auto w = storage_round<T>(random_floats(s.C, 2, 0.5f, 1.5f)), b = storage_round<T>(random_floats(s.C, 3));
  auto d_inp = upload<T>(inp), d_w = upload<T>(w), d_b = upload<T>(b);
  DeviceBuffer<T> d_out(nc);
  DeviceBuffer<float> d_mean(s.N), d_rstd(s.N);
  d_out.poison(), d_mean.poison(), d_rstd.poison();
  layernorm_forward_cuda(d_out.get(), d_mean.get(), d_rstd.get(), d_inp.get(), d_w.get(), d_b.get(), s.N, s.C,
                         kLayerNormEps);
  std::vector<float> out(nc), mean(s.N), rstd(s.N);
  layernorm_forward_cpu(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), s.N, s.C, kLayerNormEps);
  expect_close(download(d_out), out, default_tolerance<T>(), what + " out");
  expect_close(download(d_mean), mean, kF32Tolerance, what + " mean");
  expect_close(download(d_rstd), rstd, {1e-5, 1e-5}, what + " rstd");

  // Fused residual + LayerNorm: residual = round(a + b), LN of the stored residual.
  const auto a2 = storage_round<T>(random_floats(nc, 4));
  auto d_a2 = upload<T>(a2);
  DeviceBuffer<T> d_res(nc);
  d_res.poison(), d_out.poison(), d_mean.poison(), d_rstd.poison();
  fused_residual_layernorm_forward_cuda(d_res.get(), d_out.get(), d_mean.get(), d_rstd.get(), d_inp.get(), d_a2.get(),
                                        d_w.get(), d_b.get(), s.N, s.C, kLayerNormEps);
  std::vector<float> res(nc);
  for (size_t i = 0; i < nc; ++i) res[i] = inp[i] + a2[i];
  res = storage_round<T>(res);
  layernorm_forward_cpu(out.data(), mean.data(), rstd.data(), res.data(), w.data(), b.data(), s.N, s.C, kLayerNormEps);
  expect_close(download(d_res), res, kF32Tolerance, what + " fused residual");
  expect_close(download(d_out), out, default_tolerance<T>(), what + " fused out");
  expect_close(download(d_mean), mean, kF32Tolerance, what + " fused mean");

  // In place: residual written over inp1.
  d_out.poison();
  fused_residual_layernorm_forward_cuda(d_inp.get(), d_out.get(), nullptr, nullptr, d_inp.get(), d_a2.get(), d_w.get(),
                                        d_b.get(), s.N, s.C, kLayerNormEps);
  expect_close(download(d_inp), res, kF32Tolerance, what + " fused residual in place");
  expect_close(download(d_out), out, default_tolerance<T>(), what + " fused out in place");
}

template <typename T>
void check_backward(Shape s) {
  const std::string what =
      std::string("layernorm backward ") + dtype_label<T>() + " N=" + std::to_string(s.N) + " C=" + std::to_string(s.C);
  const size_t nc = static_cast<size_t>(s.N) * s.C;
  const auto inp = storage_round<T>(random_floats(nc, 1, -2.f, 3.f));
  const auto w = storage_round<T>(random_floats(s.C, 2, 0.5f, 1.5f)), b = storage_round<T>(random_floats(s.C, 3));
  const auto dout = storage_round<T>(random_floats(nc, 5));
  const auto dinp0 = storage_round<T>(random_floats(nc, 6)), dw0 = storage_round<T>(random_floats(s.C, 7)),
             db0 = storage_round<T>(random_floats(s.C, 8));
  std::vector<float> out(nc), mean(s.N), rstd(s.N);
  layernorm_forward_cpu(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), s.N, s.C, kLayerNormEps);
  auto dinp = dinp0, dw = dw0, db = db0;
  layernorm_backward_cpu(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(), rstd.data(),
                         s.N, s.C);

  auto d_inp = upload<T>(inp), d_w = upload<T>(w), d_dout = upload<T>(dout);
  auto d_mean = upload<float>(mean), d_rstd = upload<float>(rstd);
  std::vector<uint8_t> first_dw, first_db;
  for (int run = 0; run < 2; ++run) {
    auto d_dinp = upload<T>(dinp0), d_dw = upload<T>(dw0), d_db = upload<T>(db0);
    layernorm_backward_cuda(d_dinp.get(), d_dw.get(), d_db.get(), d_dout.get(), d_inp.get(), d_w.get(), d_mean.get(),
                            d_rstd.get(), s.N, s.C);
    const Tolerance tol = default_tolerance<T>();
    expect_close(download(d_dinp), dinp, relative_to_max(tol, dinp), what + " dinp");
    expect_close(download(d_dw), dw, relative_to_max(tol, dw), what + " dweight");
    expect_close(download(d_db), db, relative_to_max(tol, db), what + " dbias");
    if (run == 0) {
      first_dw = download_bytes(d_dw), first_db = download_bytes(d_db);
    } else {
      expect_bit_identical(download_bytes(d_dw), first_dw, what + " dweight determinism");
      expect_bit_identical(download_bytes(d_db), first_db, what + " dbias determinism");
    }
  }
  // nullptr gradients are skipped; the others are unaffected.
  auto d_db = upload<T>(db0);
  layernorm_backward_cuda(static_cast<T*>(nullptr), static_cast<T*>(nullptr), d_db.get(), d_dout.get(), d_inp.get(),
                          d_w.get(), d_mean.get(), d_rstd.get(), s.N, s.C);
  expect_close(download(d_db), db, relative_to_max(default_tolerance<T>(), db), what + " dbias only");
}

TEST(LayerNormGpu, ForwardF32) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check_forward<float>(s);
}
TEST(LayerNormGpu, ForwardBF16) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check_forward<bf16>(s);
}
TEST(LayerNormGpu, BackwardF32) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check_backward<float>(s);
}
TEST(LayerNormGpu, BackwardBF16) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes) check_backward<bf16>(s);
}

}  // namespace
}  // namespace tt::test
