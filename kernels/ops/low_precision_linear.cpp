// fp8 / int8 linear layers over the quantisers and low-precision GEMMs (see low_precision_linear.h).
// Operands of the three products, with the reduced dimension innermost (the "TN" GEMMs):
//   forward  out[M,N]  = x[M,K]      · w[N,K]ᵀ
//   dinp     dx[M,K]  += dy[M,N]     · (wᵀ)[K,N]ᵀ     (w's codes transposed)
//   dweight  dw[N,K]  += (dyᵀ)[N,M]  · (xᵀ)[K,M]ᵀ     (fp8 only: dy's and x's codes transposed)
#include "kernels/ops/low_precision_linear.h"

#include <type_traits>
#include <vector>

#include "core/error.h"
#include "kernels/matmul/matmul.h"
#include "kernels/quantize/quantize.h"

#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/common/cuda_scratch.cuh"
#endif

namespace tt::ops {

using namespace kernels;

namespace {

constexpr Fp8Format kE4M3 = Fp8Format::kE4M3, kE5M2 = Fp8Format::kE5M2;
enum Role { kX = 0, kW = 1, kDy = 2 };
constexpr int kOperandSlots = 4, kFactorSlot = 4;

// Scratch memory of the exec's device, valid until the next call with the same slot (per thread on
// the CPU, per stream on CUDA).
void* scratch(const Exec& e, int slot, size_t bytes) {
  if (!e.is_cuda()) {
    thread_local std::vector<char> buffers[kOperandSlots + 1];
    std::vector<char>& b = buffers[slot];
    if (b.size() < bytes) b.resize(bytes);
    return b.data();
  }
#if TOPOTRAIN_HAVE_CUDA
  const auto s = static_cast<cuda::ScratchSlot>(int(cuda::ScratchSlot::kLowpOperand0) + slot);
  return cuda::cuda_scratch(s, bytes, static_cast<cudaStream_t>(e.stream));
#else
  TT_ASSERT(false, "low-precision linear on CUDA, but this build has none");
  return nullptr;
#endif
}
template <typename T>
T* scratch_as(const Exec& e, int slot, int64_t count) {
  return static_cast<T*>(scratch(e, slot, size_t(count) * sizeof(T)));
}

#if TOPOTRAIN_HAVE_CUDA
using bf16 = __nv_bfloat16;
cudaStream_t stream(const Exec& e) { return static_cast<cudaStream_t>(e.stream); }
#endif

// Calls f(E{}) with E the element type of dt on the exec's device (float on the CPU).
template <typename F>
void typed(const Exec& e, DType dt, F&& f) {
  if (!e.is_cuda()) {
    TT_ASSERT(dt == DType::kF32, "low-precision linear on the CPU takes fp32 (got ", dtype_name(dt), ")");
    f(float{});
    return;
  }
#if TOPOTRAIN_HAVE_CUDA
  if (dt == DType::kF32)
    f(float{});
  else if (dt == DType::kBF16)
    f(bf16{});
  else
    TT_ASSERT(false, "low-precision linear on CUDA takes fp32 or bf16 (got ", dtype_name(dt), ")");
#else
  TT_ASSERT(false, "low-precision linear on CUDA, but this build has none");
#endif
}

// The device's quantisers and GEMMs for element type E.
template <typename E>
struct Device {
  const Exec& e;
  void fp8(uint8_t* codes, const void* x, int64_t rows, int cols, bool transpose, Fp8Format f, const float* scale,
           float* amax, uint32_t* over, uint32_t* under) const {
    const E* xe = static_cast<const E*>(x);
    if (!e.is_cuda()) {
      if constexpr (std::is_same_v<E, float>)
        quantize_fp8_cpu(codes, xe, rows, cols, transpose, f, scale, amax, over, under);
      return;
    }
#if TOPOTRAIN_HAVE_CUDA
    quantize_fp8_cuda(codes, xe, rows, cols, transpose, f, scale, amax, over, under, stream(e));
#endif
  }
  void int8_rows(int8_t* q, float* inv, const void* x, int64_t rows, int cols) const {
    const E* xe = static_cast<const E*>(x);
    if (!e.is_cuda()) {
      if constexpr (std::is_same_v<E, float>) quantize_int8_rows_cpu(q, inv, xe, rows, cols);
      return;
    }
#if TOPOTRAIN_HAVE_CUDA
    quantize_int8_rows_cuda(q, inv, xe, rows, cols, stream(e));
#endif
  }
  void int8_tensor(int8_t* q, float* inv, const void* x, int64_t rows, int cols, bool transpose) const {
    const E* xe = static_cast<const E*>(x);
    if (!e.is_cuda()) {
      if constexpr (std::is_same_v<E, float>) quantize_int8_tensor_cpu(q, inv, xe, rows, cols, transpose);
      return;
    }
#if TOPOTRAIN_HAVE_CUDA
    quantize_int8_tensor_cuda(q, inv, xe, rows, cols, transpose, stream(e));
#endif
  }
  void gemm_fp8(void* out, const uint8_t* a, Fp8Format fa, const uint8_t* b, Fp8Format fb, const float* a_inv,
                const float* b_inv, const void* bias, int M, int N, int K, bool accumulate) const {
    E* o = static_cast<E*>(out);
    const E* be = static_cast<const E*>(bias);
    if (!e.is_cuda()) {
      if constexpr (std::is_same_v<E, float>) matmul_fp8_cpu(o, a, fa, b, fb, a_inv, b_inv, be, M, N, K, accumulate);
      return;
    }
#if TOPOTRAIN_HAVE_CUDA
    matmul_fp8_cuda(o, a, fa, b, fb, a_inv, b_inv, be, M, N, K, accumulate, stream(e));
#endif
  }
  void gemm_int8(void* out, const int8_t* a, const float* a_inv, const int8_t* b, const float* b_inv,
                 const void* bias, int M, int N, int K, bool accumulate) const {
    E* o = static_cast<E*>(out);
    const E* be = static_cast<const E*>(bias);
    if (!e.is_cuda()) {
      if constexpr (std::is_same_v<E, float>) matmul_int8_cpu(o, a, a_inv, b, b_inv, be, M, N, K, accumulate);
      return;
    }
#if TOPOTRAIN_HAVE_CUDA
    matmul_int8_cuda(o, a, a_inv, b, b_inv, be, M, N, K, accumulate, stream(e));
#endif
  }
};

void check_fp8_state(const LinearPrecision& lp) {
  TT_ASSERT(lp.scale && lp.scale_inv && lp.amax && lp.counts, "an fp8 linear layer needs its scaling state");
}

}  // namespace

void low_precision_linear_forward(const Exec& e, DType dt, void* out, const void* inp, const void* w, const void* b,
                                  int M, int K, int N, const LinearPrecision& lp) {
  if (M <= 0 || N <= 0) return;
  typed(e, dt, [&](auto zero) {
    const Device<decltype(zero)> d{e};
    if (lp.precision == MatmulPrecision::kFp8) {
      check_fp8_state(lp);
      uint8_t* qx = scratch_as<uint8_t>(e, 0, int64_t(M) * K);
      uint8_t* qw = scratch_as<uint8_t>(e, 1, int64_t(N) * K);
      d.fp8(qx, inp, M, K, false, kE4M3, lp.scale + kX, lp.amax + kX, lp.counts + kX, lp.counts + 3 + kX);
      d.fp8(qw, w, N, K, false, kE4M3, lp.scale + kW, lp.amax + kW, lp.counts + kW, lp.counts + 3 + kW);
      d.gemm_fp8(out, qx, kE4M3, qw, kE4M3, lp.scale_inv + kX, lp.scale_inv + kW, b, M, N, K, false);
      return;
    }
    int8_t* qx = scratch_as<int8_t>(e, 0, int64_t(M) * K);
    int8_t* qw = scratch_as<int8_t>(e, 1, int64_t(N) * K);
    float* factors = scratch_as<float>(e, kFactorSlot, int64_t(M) + 1);  // x's rows, then w's
    d.int8_rows(qx, factors, inp, M, K);
    d.int8_tensor(qw, factors + M, w, N, K, false);
    d.gemm_int8(out, qx, factors, qw, factors + M, b, M, N, K, false);
  });
}

void low_precision_linear_backward(const Exec& e, DType dt, void* dinp, void* dw, void* db, const void* dout,
                                   const void* inp, const void* w, int M, int K, int N, const LinearPrecision& lp) {
  if (M <= 0 || N <= 0) return;
  typed(e, dt, [&](auto zero) {
    const Device<decltype(zero)> d{e};
    if (lp.precision == MatmulPrecision::kFp8) {
      check_fp8_state(lp);
      // dy's statistics are recorded by its first quantisation only.
      bool record_dy = true;
      auto dy_stats = [&](float** amax, uint32_t** over, uint32_t** under) {
        *amax = record_dy ? lp.amax + kDy : nullptr;
        *over = record_dy ? lp.counts + kDy : nullptr;
        *under = record_dy ? lp.counts + 3 + kDy : nullptr;
        record_dy = false;
      };
      float* amax;
      uint32_t *over, *under;
      if (dinp != nullptr && K > 0) {
        uint8_t* qdy = scratch_as<uint8_t>(e, 0, int64_t(M) * N);
        uint8_t* qwt = scratch_as<uint8_t>(e, 1, int64_t(K) * N);
        dy_stats(&amax, &over, &under);
        d.fp8(qdy, dout, M, N, false, kE5M2, lp.scale + kDy, amax, over, under);
        d.fp8(qwt, w, N, K, true, kE4M3, lp.scale + kW, nullptr, nullptr, nullptr);
        d.gemm_fp8(dinp, qdy, kE5M2, qwt, kE4M3, lp.scale_inv + kDy, lp.scale_inv + kW, nullptr, M, K, N, true);
      }
      if (dw != nullptr && K > 0) {
        uint8_t* qdyt = scratch_as<uint8_t>(e, 2, int64_t(N) * M);
        uint8_t* qxt = scratch_as<uint8_t>(e, 3, int64_t(K) * M);
        dy_stats(&amax, &over, &under);
        d.fp8(qdyt, dout, M, N, true, kE5M2, lp.scale + kDy, amax, over, under);
        d.fp8(qxt, inp, M, K, true, kE4M3, lp.scale + kX, nullptr, nullptr, nullptr);
        d.gemm_fp8(dw, qdyt, kE5M2, qxt, kE4M3, lp.scale_inv + kDy, lp.scale_inv + kX, nullptr, N, K, M, true);
      }
      if (db != nullptr) linear_backward(e, dt, nullptr, nullptr, db, dout, inp, w, M, K, N);
      return;
    }
    if (dinp != nullptr && K > 0) {
      int8_t* qdy = scratch_as<int8_t>(e, 0, int64_t(M) * N);
      int8_t* qwt = scratch_as<int8_t>(e, 1, int64_t(K) * N);
      float* factors = scratch_as<float>(e, kFactorSlot, int64_t(M) + 1);
      d.int8_rows(qdy, factors, dout, M, N);
      d.int8_tensor(qwt, factors + M, w, N, K, true);
      d.gemm_int8(dinp, qdy, factors, qwt, factors + M, nullptr, M, K, N, true);
    }
    // SwitchBack: the weight gradient (and the bias's) in the working precision.
    if (dw != nullptr || db != nullptr) linear_backward(e, dt, nullptr, dw, db, dout, inp, w, M, K, N);
  });
}

}  // namespace tt::ops
