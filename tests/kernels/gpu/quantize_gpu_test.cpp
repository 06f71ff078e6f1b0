// GPU tests of kernels/quantize and the low-precision GEMMs against the CPU emulation: fp8 and int8
// codes, factors, absmax and counts bit-identical (fp32 and bf16 inputs, plain and transposed
// layouts); the delayed-scaling update bit-identical; the int8 GEMM bit-identical (exact int32
// accumulation, the same dequantisation); the fp8 GEMM within fp32 accumulation-order error; and
// the linear layer's three products (ops, fp8 and int8) within the working precision's tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/exec.h"
#include "kernels/matmul/matmul.h"
#include "kernels/ops/ops.h"
#include "kernels/quantize/quantize.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

template <typename T>
void check_fp8_quantize(int64_t rows, int cols, bool transpose, Fp8Format f) {
  const std::string what = std::string("fp8 ") + dtype_label<T>() + " " + std::to_string(rows) + "x" +
                           std::to_string(cols) + (transpose ? " transposed" : "");
  const auto x = storage_round<T>(random_floats(size_t(rows) * cols, 9, -900.0f, 900.0f));
  const float scale = 0.75f;
  std::vector<uint8_t> ref(x.size());
  float amax = 0;
  uint32_t over = 0, under = 0;
  quantize_fp8_cpu(ref.data(), x.data(), rows, cols, transpose, f, &scale, &amax, &over, &under);
  auto d_x = upload<T>(x);
  auto d_scale = upload<float>({scale}), d_amax = upload<float>({0.0f});
  DeviceBuffer<uint32_t> d_counts(2);
  d_counts.zero();
  DeviceBuffer<uint8_t> d_codes(x.size());
  d_codes.poison();
  quantize_fp8_cuda(d_codes.get(), d_x.get(), rows, cols, transpose, f, d_scale.get(), d_amax.get(), d_counts.get(),
                    d_counts.get() + 1, nullptr);
  expect_bit_identical(download_bytes(d_codes),
                       std::vector<uint8_t>(ref.begin(), ref.end()), what + " codes");
  EXPECT_EQ(download(d_amax)[0], amax) << what;
  std::vector<uint32_t> counts(2);
  TT_CUDA_CHECK(cudaMemcpy(counts.data(), d_counts.get(), 8, cudaMemcpyDeviceToHost));
  EXPECT_EQ(counts[0], over) << what;
  EXPECT_EQ(counts[1], under) << what;
}

TEST(QuantizeGpu, Fp8CodesAndStatisticsMatchTheEmulation) {
  TT_REQUIRE_GPU();
  for (bool t : {false, true})
    for (Fp8Format f : {Fp8Format::kE4M3, Fp8Format::kE5M2}) {
      check_fp8_quantize<float>(1, 1, t, f);
      check_fp8_quantize<float>(67, 45, t, f);
      check_fp8_quantize<bf16>(256, 160, t, f);
      check_fp8_quantize<bf16>(33, 1031, t, f);
    }
}

template <typename T>
void check_int8(int64_t rows, int cols) {
  const std::string what = std::string("int8 ") + dtype_label<T>() + " " + std::to_string(rows) + "x" +
                           std::to_string(cols);
  auto x = storage_round<T>(random_floats(size_t(rows) * cols, 10, -5.0f, 5.0f));
  if (rows > 2) {
    for (int c = 0; c < cols; ++c) x[size_t(cols) + c] = 0.0f;  // a zero row
    x[size_t(2) * cols] = NAN;                                  // a NaN row
  }
  std::vector<int8_t> q(x.size()), qt(x.size());
  std::vector<float> inv(static_cast<size_t>(rows));
  float tinv = 0;
  quantize_int8_rows_cpu(q.data(), inv.data(), x.data(), rows, cols);
  std::vector<float> finite = x;
  for (auto& v : finite) v = std::isnan(v) ? 1.0f : v;
  quantize_int8_tensor_cpu(qt.data(), &tinv, finite.data(), rows, cols, true);
  auto d_x = upload<T>(x), d_f = upload<T>(finite);
  DeviceBuffer<int8_t> d_q(x.size()), d_qt(x.size());
  DeviceBuffer<float> d_inv(static_cast<size_t>(rows)), d_tinv(1);
  quantize_int8_rows_cuda(d_q.get(), d_inv.get(), d_x.get(), rows, cols, nullptr);
  quantize_int8_tensor_cuda(d_qt.get(), d_tinv.get(), d_f.get(), rows, cols, true, nullptr);
  auto bytes = [](const std::vector<int8_t>& v) { return std::vector<uint8_t>(v.begin(), v.end()); };
  expect_bit_identical(download_bytes(d_q), bytes(q), what + " row codes");
  expect_bit_identical(download_bytes(d_qt), bytes(qt), what + " tensor codes (transposed)");
  const auto got_inv = download(d_inv);
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_TRUE(got_inv[size_t(r)] == inv[size_t(r)] || (std::isnan(got_inv[size_t(r)]) && std::isnan(inv[size_t(r)])))
        << what << " row " << r;
  EXPECT_EQ(download(d_tinv)[0], tinv) << what;
}

TEST(QuantizeGpu, Int8CodesAndFactorsMatchTheEmulation) {
  TT_REQUIRE_GPU();
  check_int8<float>(1, 1);
  check_int8<float>(19, 300);
  check_int8<bf16>(128, 4096);
}

TEST(QuantizeGpu, DelayedScalingUpdateMatchesTheEmulation) {
  TT_REQUIRE_GPU();
  const int n = 9, len = 16;
  auto history = random_floats(size_t(n) * len, 12, 0.0f, 50.0f);
  auto amax = random_floats(n, 13, 0.0f, 80.0f);
  amax[4] = 0.0f;
  std::vector<float> scale(n, 1.0f), scale_inv(n, 1.0f);
  auto d_h = upload<float>(history), d_a = upload<float>(amax), d_s = upload<float>(scale),
       d_i = upload<float>(scale_inv);
  fp8_update_scales_cpu(history.data(), scale.data(), scale_inv.data(), amax.data(), n, len, 5, 1);
  fp8_update_scales_cuda(d_h.get(), d_s.get(), d_i.get(), d_a.get(), n, len, 5, 1, nullptr);
  EXPECT_EQ(download(d_h), history);
  EXPECT_EQ(download(d_s), scale);
  EXPECT_EQ(download(d_i), scale_inv);
}

TEST(LowPrecisionGemmGpu, Int8IsBitIdenticalAndFp8WithinAccumulationOrder) {
  TT_REQUIRE_GPU();
  const int M = 64, N = 48, K = 1024;
  const auto a = random_floats(size_t(M) * K, 14, -3.0f, 3.0f), b = random_floats(size_t(N) * K, 15, -0.2f, 0.2f);
  const auto prior = random_floats(size_t(M) * N, 16);
  // int8: the codes from the (tested) quantisers, then GEMM + dequantise, accumulating into prior.
  std::vector<int8_t> qa(a.size()), qb(b.size());
  std::vector<float> ia(M), ib(1);
  quantize_int8_rows_cpu(qa.data(), ia.data(), a.data(), M, K);
  quantize_int8_tensor_cpu(qb.data(), ib.data(), b.data(), N, K, false);
  std::vector<float> ref = prior;
  matmul_int8_cpu(ref.data(), qa.data(), ia.data(), qb.data(), ib.data(), nullptr, M, N, K, true);
  auto d_qa = upload_raw(qa), d_qb = upload_raw(qb);
  auto d_ia = upload<float>(ia), d_ib = upload<float>(ib), d_out = upload<float>(prior);
  matmul_int8_cuda(d_out.get(), d_qa.get(), d_ia.get(), d_qb.get(), d_ib.get(), static_cast<const float*>(nullptr), M,
                   N, K, true, nullptr);
  EXPECT_EQ(download(d_out), ref) << "int8: exact accumulation and the same dequantisation";

  // fp8: E4M3 x E4M3 and E5M2 x E4M3.
  for (Fp8Format fa : {Fp8Format::kE4M3, Fp8Format::kE5M2}) {
    const float sa = 100.0f, sb = 1000.0f, inv_a = 1 / sa, inv_b = 1 / sb;
    std::vector<uint8_t> ca(a.size()), cb(b.size());
    quantize_fp8_cpu(ca.data(), a.data(), M, K, false, fa, &sa, nullptr, nullptr, nullptr);
    quantize_fp8_cpu(cb.data(), b.data(), N, K, false, Fp8Format::kE4M3, &sb, nullptr, nullptr, nullptr);
    std::vector<float> want(size_t(M) * N);
    matmul_fp8_cpu(want.data(), ca.data(), fa, cb.data(), Fp8Format::kE4M3, &inv_a, &inv_b, nullptr, M, N, K, false);
    auto d_ca = upload_raw(ca), d_cb = upload_raw(cb);
    auto d_sa = upload<float>({inv_a}), d_sb = upload<float>({inv_b});
    DeviceBuffer<float> d_f(want.size());
    d_f.poison();
    matmul_fp8_cuda(d_f.get(), d_ca.get(), fa, d_cb.get(), Fp8Format::kE4M3, d_sa.get(), d_sb.get(),
                    static_cast<const float*>(nullptr), M, N, K, false, nullptr);
    // Only the summation order differs: K · 2^-24 of Σ|a b| (|a| <= 3, |b| <= 0.2).
    expect_close(download(d_f), want, {0.0, K * std::ldexp(1.0, -24) * K * 3 * 0.2}, "fp8 GEMM");
  }
}

template <typename T>
void check_linear(ops::MatmulPrecision p) {
  const int M = 128, K = 96, N = 160;
  const std::string what = std::string(ops::matmul_precision_name(p)) + " linear " + dtype_label<T>();
  const auto x = storage_round<T>(random_floats(size_t(M) * K, 17, -2.0f, 2.0f));
  const auto w = storage_round<T>(random_floats(size_t(N) * K, 18, -0.1f, 0.1f));
  const auto dy = storage_round<T>(random_floats(size_t(M) * N, 19, -0.01f, 0.01f));
  const std::vector<float> scale = {100.0f, 2000.0f, 1e6f}, scale_inv = {1e-2f, 5e-4f, 1e-6f};
  // CPU emulation.
  std::vector<float> amax(3, 0.0f);
  std::vector<uint32_t> counts(6, 0);
  ops::LinearPrecision lp{p, scale.data(), scale_inv.data(), amax.data(), counts.data()};
  std::vector<float> out(size_t(M) * N), dx(size_t(M) * K, 0.0f), dw(size_t(N) * K, 0.0f);
  const Exec cpu;
  ops::linear_forward(cpu, DType::kF32, out.data(), x.data(), w.data(), nullptr, M, K, N, lp);
  ops::linear_backward(cpu, DType::kF32, dx.data(), dw.data(), nullptr, dy.data(), x.data(), w.data(), M, K, N, lp);
  // The device.
  auto d_x = upload<T>(x), d_w = upload<T>(w), d_dy = upload<T>(dy);
  auto d_scale = upload<float>(scale), d_inv = upload<float>(scale_inv), d_amax = upload<float>({0, 0, 0});
  DeviceBuffer<uint32_t> d_counts(6);
  d_counts.zero();
  DeviceBuffer<T> d_out(out.size()), d_dx(dx.size()), d_dw(dw.size());
  d_out.poison();
  d_dx.zero();
  d_dw.zero();
  ops::LinearPrecision dlp{p, d_scale.get(), d_inv.get(), d_amax.get(), d_counts.get()};
  const Exec gpu{Device::cuda(0), nullptr};
  const DType dt = std::is_same_v<T, float> ? DType::kF32 : DType::kBF16;
  ops::linear_forward(gpu, dt, d_out.get(), d_x.get(), d_w.get(), nullptr, M, K, N, dlp);
  ops::linear_backward(gpu, dt, d_dx.get(), d_dw.get(), nullptr, d_dy.get(), d_x.get(), d_w.get(), M, K, N, dlp);
  const Tolerance tol = std::is_same_v<T, float> ? Tolerance{1e-5, 1e-6} : kBF16Tolerance;
  expect_close(download(d_out), out, relative_to_max(tol, out), what + " forward");
  expect_close(download(d_dx), dx, relative_to_max(tol, dx), what + " input gradient");
  expect_close(download(d_dw), dw, relative_to_max(tol, dw), what + " weight gradient");
  if (p == ops::MatmulPrecision::kFp8) {
    EXPECT_EQ(download(d_amax), amax) << what;
    std::vector<uint32_t> got(6);
    TT_CUDA_CHECK(cudaMemcpy(got.data(), d_counts.get(), 24, cudaMemcpyDeviceToHost));
    EXPECT_EQ(got, counts) << what;
  }
}

TEST(LowPrecisionLinearGpu, ThreeProductsMatchTheEmulation) {
  TT_REQUIRE_GPU();
  int major = 0, minor = 0;
  TT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  TT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  check_linear<float>(ops::MatmulPrecision::kInt8);
  check_linear<bf16>(ops::MatmulPrecision::kInt8);
  if (major * 10 + minor < 89) GTEST_SKIP() << "fp8 GEMMs need sm_89+ (this GPU: sm_" << major << minor << ")";
  check_linear<float>(ops::MatmulPrecision::kFp8);
  check_linear<bf16>(ops::MatmulPrecision::kFp8);
}

}  // namespace
}  // namespace tt::test
