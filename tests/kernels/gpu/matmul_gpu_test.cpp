// GPU tests for matmul.cu (cuBLASLt) against the OpenBLAS reference: forward with and without
// bias, backward accumulation (+=) into pre-filled dinp/dweight/dbias and nullptr gradients, the
// fused GELU forward and dGELU backward, each with the fused cuBLASLt epilogues on and off, fp32
// and bf16, odd shapes (so some take the unfused fallbacks); backward determinism.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/gelu/gelu.h"
#include "kernels/matmul/matmul.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

struct Shape {
  int M, K, N;
};
// Odd shapes, shapes with N or K a multiple of 8 (fused GELU epilogues) and a GPT-2-like one.
const Shape kShapes[] = {{1, 1, 1}, {3, 5, 7}, {33, 17, 65}, {128, 64, 96}, {257, 129, 200}, {64, 768, 256}};

class FusionGuard {  // restores the default (fused) at scope exit
 public:
  explicit FusionGuard(bool fused) { matmul_cuda_set_fused_epilogues(fused); }
  ~FusionGuard() { matmul_cuda_set_fused_epilogues(true); }
};

std::string label(const char* op, const char* dtype, Shape s, bool fused, bool bias) {
  return str(op, " ", dtype, " M=", s.M, " K=", s.K, " N=", s.N, fused ? " fused" : " unfused",
             bias ? " bias" : " no-bias");
}

// Storage-rounded random inp[M,K], w[N,K] and bias[N] (seeds seed, seed + 1, seed + 2), also uploaded.
template <typename T>
struct MatmulInputs {
  MatmulInputs(Shape s, uint64_t seed)
      : mk(size_t(s.M) * s.K),
        nk(size_t(s.N) * s.K),
        mn(size_t(s.M) * s.N),
        inp(storage_round<T>(random_floats(mk, seed))),
        w(storage_round<T>(random_floats(nk, seed + 1))),
        bias(storage_round<T>(random_floats(s.N, seed + 2))),
        d_inp(upload<T>(inp)),
        d_w(upload<T>(w)),
        d_bias(upload<T>(bias)) {}
  size_t mk, nk, mn;
  std::vector<float> inp, w, bias;
  DeviceBuffer<T> d_inp, d_w, d_bias;
};

template <typename T>
void check_forward_backward(Shape s, bool fused, bool with_bias) {
  FusionGuard guard(fused);
  const auto what = [&](const char* op) { return label(op, dtype_label<T>(), s, fused, with_bias); };
  auto [mk, nk, mn, inp, w, bias, d_inp, d_w, d_bias] = MatmulInputs<T>(s, 1);
  const T* bias_ptr = with_bias ? d_bias.get() : nullptr;

  DeviceBuffer<T> d_out(mn);
  d_out.poison();
  matmul_forward_cuda(d_out.get(), d_inp.get(), d_w.get(), bias_ptr, s.M, s.K, s.N);
  std::vector<float> out(mn);
  matmul_forward_cpu(out.data(), inp.data(), w.data(), with_bias ? bias.data() : nullptr, s.M, s.K, s.N);
  const Tolerance tol = default_tolerance<T>();
  expect_close(download(d_out), out, relative_to_max(tol, out), what("forward"));

  const auto dout = storage_round<T>(random_floats(mn, 4));
  const auto dinp0 = storage_round<T>(random_floats(mk, 5)), dw0 = storage_round<T>(random_floats(nk, 6)),
             db0 = storage_round<T>(random_floats(s.N, 7));
  auto dinp = dinp0, dw = dw0, db = db0;
  matmul_backward_cpu(dinp.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(), inp.data(), w.data(), s.M,
                      s.K, s.N);
  auto d_dout = upload<T>(dout);
  std::vector<uint8_t> first_dinp, first_dw, first_db;
  for (int run = 0; run < 2; ++run) {
    auto d_dinp = upload<T>(dinp0), d_dw = upload<T>(dw0), d_db = upload<T>(db0);
    matmul_backward_cuda(d_dinp.get(), d_dw.get(), with_bias ? d_db.get() : nullptr, d_dout.get(), d_inp.get(),
                         d_w.get(), s.M, s.K, s.N);
    expect_close(download(d_dinp), dinp, relative_to_max(tol, dinp), what("dinp (+=)"));
    expect_close(download(d_dw), dw, relative_to_max(tol, dw), what("dweight (+=)"));
    expect_close(download(d_db), db, relative_to_max(tol, db), what("dbias (+=, untouched without bias)"));
    if (run == 0) {
      first_dinp = download_bytes(d_dinp), first_dw = download_bytes(d_dw), first_db = download_bytes(d_db);
    } else {
      expect_bit_identical(download_bytes(d_dinp), first_dinp, what("dinp determinism"));
      expect_bit_identical(download_bytes(d_dw), first_dw, what("dweight determinism"));
      expect_bit_identical(download_bytes(d_db), first_db, what("dbias determinism"));
    }
  }
  // Only the bias gradient (no GEMM at all), and only dinp.
  if (with_bias) {
    auto d_db = upload<T>(db0);
    matmul_backward_cuda(nullptr, nullptr, d_db.get(), d_dout.get(), d_inp.get(), d_w.get(), s.M, s.K, s.N);
    expect_close(download(d_db), db, relative_to_max(tol, db), what("dbias only"));
  }
  auto d_dinp = upload<T>(dinp0);
  matmul_backward_cuda(d_dinp.get(), nullptr, nullptr, d_dout.get(), d_inp.get(), d_w.get(), s.M, s.K, s.N);
  expect_close(download(d_dinp), dinp, relative_to_max(tol, dinp), what("dinp only"));
}

template <typename T>
void check_gelu_fusions(Shape s, bool fused, bool with_bias) {
  FusionGuard guard(fused);
  const auto what = [&](const char* op) { return label(op, dtype_label<T>(), s, fused, with_bias); };
  auto [mk, nk, mn, inp, w, bias, d_inp, d_w, d_bias] = MatmulInputs<T>(s, 11);
  const Tolerance tol = default_tolerance<T>();

  // Forward: pre = inp·wᵀ + bias, out = gelu(pre).
  DeviceBuffer<T> d_out(mn), d_pre(mn);
  d_out.poison(), d_pre.poison();
  matmul_gelu_forward_cuda(d_out.get(), d_pre.get(), d_inp.get(), d_w.get(), with_bias ? d_bias.get() : nullptr, s.M,
                           s.K, s.N);
  std::vector<float> pre(mn), out(mn);
  matmul_forward_cpu(pre.data(), inp.data(), w.data(), with_bias ? bias.data() : nullptr, s.M, s.K, s.N);
  gelu_forward_cpu(out.data(), pre.data(), mn);
  expect_close(download(d_pre), pre, relative_to_max(tol, pre), what("gelu forward pre"));
  expect_close(download(d_out), out, relative_to_max(tol, out), what("gelu forward out"));

  // dGELU backward of a layer [K -> N] whose input was gelu(pre2[M,K]):
  // dpre2 = (dout·w) ⊙ gelu'(pre2) (overwritten), dbias2[K] += Σ_rows dpre2.
  const auto pre2 = storage_round<T>(random_floats(mk, 14, -3.f, 3.f));
  const auto dout = storage_round<T>(random_floats(mn, 15));
  const auto db0 = storage_round<T>(random_floats(s.K, 16));
  std::vector<float> prod(mk, 0.0f), dpre2(mk, 0.0f);
  matmul_backward_cpu(prod.data(), nullptr, nullptr, dout.data(), inp.data(), w.data(), s.M, s.K, s.N);
  gelu_backward_cpu(dpre2.data(), pre2.data(), prod.data(), mk);
  std::vector<float> db = db0;
  for (int k = 0; k < s.K; ++k) {
    double acc = 0.0;
    for (int m = 0; m < s.M; ++m) acc += dpre2[size_t(m) * s.K + k];
    db[k] = static_cast<float>(db[k] + acc);
  }
  auto d_pre2 = upload<T>(pre2), d_dout = upload<T>(dout), d_db = upload<T>(db0);
  DeviceBuffer<T> d_dpre2(mk);
  d_dpre2.poison();
  matmul_dgelu_backward_cuda(d_dpre2.get(), with_bias ? d_db.get() : nullptr, d_dout.get(), d_w.get(), d_pre2.get(),
                             s.M, s.K, s.N);
  expect_close(download(d_dpre2), dpre2, relative_to_max(tol, dpre2), what("dgelu backward dpre"));
  expect_close(download(d_db), with_bias ? db : db0, relative_to_max(tol, db), what("dgelu backward dbias (+=)"));
}

template <typename T>
void run_all() {
  for (Shape s : kShapes)
    for (bool fused : {true, false})
      for (bool bias : {true, false}) {
        check_forward_backward<T>(s, fused, bias);
        check_gelu_fusions<T>(s, fused, bias);
      }
}

TEST(MatmulGpu, F32) {
  TT_REQUIRE_GPU();
  run_all<float>();
}
TEST(MatmulGpu, BF16) {
  TT_REQUIRE_GPU();
  run_all<bf16>();
}

// K == 0: out is the bias broadcast (or zeros), as on the CPU.
TEST(MatmulGpu, ZeroInnerDimension) {
  TT_REQUIRE_GPU();
  const int M = 3, N = 5;
  const auto bias = random_floats(N, 1);
  auto d_bias = upload<float>(bias);
  DeviceBuffer<float> d_out(M * N);
  d_out.poison();
  matmul_forward_cuda(d_out.get(), nullptr, nullptr, d_bias.get(), M, 0, N);
  std::vector<float> want(M * N);
  for (int i = 0; i < M * N; ++i) want[i] = bias[i % N];
  expect_close(download(d_out), want, kF32Tolerance, "K=0 with bias");
  d_out.poison();
  matmul_forward_cuda(d_out.get(), nullptr, nullptr, static_cast<const float*>(nullptr), M, 0, N);
  expect_close(download(d_out), std::vector<float>(M * N, 0.0f), kF32Tolerance, "K=0 without bias");
}

}  // namespace
}  // namespace tt::test
