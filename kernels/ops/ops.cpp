// Device and dtype dispatch of the ops (see ops.h). Plain C++: the CUDA entry points are declared in
// the ops' headers with __nv_bfloat16 overloads, which this file calls through typed pointers.
#include "kernels/ops/ops.h"

#include <cstring>

#include "core/error.h"
#include "kernels/attention/attention.h"
#include "kernels/embedding/embedding.h"
#include "kernels/gelu/gelu.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/matmul/matmul.h"
#include "kernels/ops/low_precision_linear.h"
#include "kernels/quantize/quantize.h"
#include "kernels/reductions/reductions.h"
#include "kernels/residual/residual.h"
#include "kernels/rmsnorm/rmsnorm.h"
#include "kernels/rope/rope.h"
#include "kernels/softmax_cross_entropy/softmax_cross_entropy.h"
#include "kernels/swiglu/swiglu.h"

#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace tt::ops {

using namespace kernels;

namespace {

template <typename T>
T* as(void* p) {
  return static_cast<T*>(p);
}
template <typename T>
const T* as(const void* p) {
  return static_cast<const T*>(p);
}

// CPU ops compute in fp32 only.
void require_cpu_f32(DType dt, const char* op) {
  TT_ASSERT(dt == DType::kF32, "", op, " on the CPU takes fp32 (got ", dtype_name(dt), ")");
}

#if TOPOTRAIN_HAVE_CUDA
using bf16 = __nv_bfloat16;
cudaStream_t stream(const Exec& e) { return static_cast<cudaStream_t>(e.stream); }

// Calls f(E{}) with the element type E = float or bf16 of the dtype.
template <typename F>
void cuda_typed(DType dt, const char* op, F&& f) {
  if (dt == DType::kF32)
    f(float{});
  else if (dt == DType::kBF16)
    f(bf16{});
  else
    TT_ASSERT(false, "", op, " on CUDA takes fp32 or bf16 (got ", dtype_name(dt), ")");
}
#define TT_CUDA_OP(dt, op, ...)       \
  cuda_typed(dt, op, [&](auto zero) { \
    using E = decltype(zero);         \
    __VA_ARGS__;                      \
  })
#else
#define TT_CUDA_OP(dt, op, ...) TT_ASSERT(false, "", op, " needs CUDA, but this build has none (", dtype_name(dt), ")")
#endif

}  // namespace

void embedding_forward(const Exec& e, DType dt, void* out, const int32_t* tokens, const void* wte, const void* wpe,
                       int B, int T, int C) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "embedding");
    embedding_forward_cpu(as<float>(out), tokens, as<float>(wte), as<float>(wpe), B, T, C);
    return;
  }
  TT_CUDA_OP(dt, "embedding", embedding_forward_cuda(as<E>(out), tokens, as<E>(wte), as<E>(wpe), B, T, C, stream(e)));
}

void embedding_backward(const Exec& e, DType dt, void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int B,
                        int T, int C, int Vp) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "embedding");
    embedding_backward_cpu(as<float>(dwte), as<float>(dwpe), as<float>(dout), tokens, B, T, C);
    return;
  }
  TT_CUDA_OP(dt, "embedding",
             embedding_backward_cuda(as<E>(dwte), as<E>(dwpe), as<E>(dout), tokens, B, T, C, Vp, stream(e)));
}

void norm_forward(const Exec& e, DType dt, const NormSpec& norm, void* out, float* mean, float* rstd, const void* inp,
                  const void* w, const void* b, int N, int C) {
  const bool rms = norm.kind == NormKind::kRMSNorm;
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "norm");
    if (rms)
      rmsnorm_forward_cpu(as<float>(out), rstd, as<float>(inp), as<float>(w), N, C, norm.eps);
    else
      layernorm_forward_cpu(as<float>(out), mean, rstd, as<float>(inp), as<float>(w), as<float>(b), N, C, norm.eps);
    return;
  }
  TT_CUDA_OP(dt, "norm", {
    if (rms)
      rmsnorm_forward_cuda(as<E>(out), rstd, as<E>(inp), as<E>(w), N, C, norm.eps, stream(e));
    else
      layernorm_forward_cuda(as<E>(out), mean, rstd, as<E>(inp), as<E>(w), as<E>(b), N, C, norm.eps, stream(e));
  });
}

void residual_norm_forward(const Exec& e, DType dt, const NormSpec& norm, void* residual, void* out, float* mean,
                           float* rstd, const void* a, const void* b_in, const void* w, const void* b, int N, int C) {
  if (!e.is_cuda()) {
    residual_forward(e, dt, residual, a, b_in, int64_t(N) * C);
    norm_forward(e, dt, norm, out, mean, rstd, residual, w, b, N, C);
    return;
  }
  const bool rms = norm.kind == NormKind::kRMSNorm;
  TT_CUDA_OP(dt, "residual_norm", {
    if (rms)
      fused_residual_rmsnorm_forward_cuda(as<E>(residual), as<E>(out), rstd, as<E>(a), as<E>(b_in), as<E>(w), N, C,
                                          norm.eps, stream(e));
    else
      fused_residual_layernorm_forward_cuda(as<E>(residual), as<E>(out), mean, rstd, as<E>(a), as<E>(b_in), as<E>(w),
                                            as<E>(b), N, C, norm.eps, stream(e));
  });
}

void norm_backward(const Exec& e, DType dt, const NormSpec& norm, void* dinp, void* dw, void* db, const void* dout,
                   const void* inp, const void* w, const float* mean, const float* rstd, int N, int C) {
  const bool rms = norm.kind == NormKind::kRMSNorm;
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "norm");
    if (rms)
      rmsnorm_backward_cpu(as<float>(dinp), as<float>(dw), as<float>(dout), as<float>(inp), as<float>(w), rstd, N, C);
    else
      layernorm_backward_cpu(as<float>(dinp), as<float>(dw), as<float>(db), as<float>(dout), as<float>(inp),
                             as<float>(w), mean, rstd, N, C);
    return;
  }
  TT_CUDA_OP(dt, "norm", {
    if (rms)
      rmsnorm_backward_cuda(as<E>(dinp), as<E>(dw), as<E>(dout), as<E>(inp), as<E>(w), rstd, N, C, stream(e));
    else
      layernorm_backward_cuda(as<E>(dinp), as<E>(dw), as<E>(db), as<E>(dout), as<E>(inp), as<E>(w), mean, rstd, N, C,
                              stream(e));
  });
}

void residual_forward(const Exec& e, DType dt, void* out, const void* a, const void* b, int64_t n) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "residual");
    residual_forward_cpu(as<float>(out), as<float>(a), as<float>(b), n);
    return;
  }
  TT_CUDA_OP(dt, "residual", residual_forward_cuda(as<E>(out), as<E>(a), as<E>(b), n, stream(e)));
}

const char* matmul_precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::kDefault:
      return "default";
    case MatmulPrecision::kFp8:
      return "fp8";
    case MatmulPrecision::kInt8:
      return "int8";
  }
  return "?";
}

void linear_forward(const Exec& e, DType dt, void* out, const void* inp, const void* w, const void* b, int M, int K,
                    int N, const LinearPrecision& lp) {
  if (lp.precision != MatmulPrecision::kDefault) {
    low_precision_linear_forward(e, dt, out, inp, w, b, M, K, N, lp);
    return;
  }
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "linear");
    matmul_forward_cpu(as<float>(out), as<float>(inp), as<float>(w), as<float>(b), M, K, N);
    return;
  }
  TT_CUDA_OP(dt, "linear", matmul_forward_cuda(as<E>(out), as<E>(inp), as<E>(w), as<E>(b), M, K, N, stream(e)));
}

void linear_backward(const Exec& e, DType dt, void* dinp, void* dw, void* db, const void* dout, const void* inp,
                     const void* w, int M, int K, int N, const LinearPrecision& lp) {
  if (lp.precision != MatmulPrecision::kDefault) {
    low_precision_linear_backward(e, dt, dinp, dw, db, dout, inp, w, M, K, N, lp);
    return;
  }
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "linear");
    matmul_backward_cpu(as<float>(dinp), as<float>(dw), as<float>(db), as<float>(dout), as<float>(inp), as<float>(w), M,
                        K, N);
    return;
  }
  TT_CUDA_OP(
      dt, "linear",
      matmul_backward_cuda(as<E>(dinp), as<E>(dw), as<E>(db), as<E>(dout), as<E>(inp), as<E>(w), M, K, N, stream(e)));
}

void mlp_up_forward(const Exec& e, DType dt, MlpActivation a, void* act, void* pre, const void* inp, const void* w,
                    const void* b, int M, int K, int Nup, const LinearPrecision& lp) {
  const bool fused = lp.precision == MatmulPrecision::kDefault;
  if (e.is_cuda() && a == MlpActivation::kGeluTanh && fused) {  // GELU in the GEMM's epilogue
    TT_CUDA_OP(dt, "mlp", {
      matmul_gelu_forward_cuda(as<E>(act), as<E>(pre), as<E>(inp), as<E>(w), as<E>(b), M, K, Nup, stream(e));
    });
    return;
  }
  linear_forward(e, dt, pre, inp, w, b, M, K, Nup, lp);
  mlp_activation_forward(e, dt, a, act, pre, M, Nup);
}

void mlp_activation_forward(const Exec& e, DType dt, MlpActivation a, void* act, const void* pre, int M, int Nup) {
  const bool swiglu = a == MlpActivation::kSwiGLU;
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "mlp");
    if (swiglu)
      swiglu_forward_cpu(as<float>(act), as<float>(pre), M, Nup / 2);
    else
      gelu_forward_cpu(as<float>(act), as<float>(pre), int64_t(M) * Nup);
    return;
  }
  TT_CUDA_OP(dt, "mlp", {
    if (swiglu)
      swiglu_forward_cuda(as<E>(act), as<E>(pre), M, Nup / 2, stream(e));
    else
      gelu_forward_cuda(as<E>(act), as<E>(pre), int64_t(M) * Nup, stream(e));
  });
}

namespace {
// dpre += d act / d pre · dact (GELU: [M, Na]; SwiGLU: dpre [M, 2Na] over gate | up).
void mlp_activation_backward(const Exec& e, DType dt, MlpActivation a, void* dpre, const void* dact, const void* pre,
                             int M, int Na) {
  const bool swiglu = a == MlpActivation::kSwiGLU;
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "mlp");
    if (swiglu)
      swiglu_backward_cpu(as<float>(dpre), as<float>(dact), as<float>(pre), M, Na);
    else
      gelu_backward_cpu(as<float>(dpre), as<float>(pre), as<float>(dact), int64_t(M) * Na);
    return;
  }
  TT_CUDA_OP(dt, "mlp", {
    if (swiglu)
      swiglu_backward_cuda(as<E>(dpre), as<E>(dact), as<E>(pre), M, Na, stream(e));
    else
      gelu_backward_cuda(as<E>(dpre), as<E>(pre), as<E>(dact), int64_t(M) * Na, stream(e));
  });
}
}  // namespace

void mlp_down_backward(const Exec& e, DType dt, MlpActivation a, void* dpre, void* dw_down, void* db_down,
                       void* scratch, const void* dout, const void* act, const void* w_down, const void* pre, int M,
                       int Na, int N, const LinearPrecision& lp) {
  const bool swiglu = a == MlpActivation::kSwiGLU;
  const int Nup = swiglu ? 2 * Na : Na;
  const size_t es = dtype_size(dt);
  if (lp.precision != MatmulPrecision::kDefault) {  // the down projection's products in low precision, unfused
    zero_async(e, scratch, size_t(M) * Na * es);
    linear_backward(e, dt, scratch, dw_down, db_down, dout, act, w_down, M, Na, N, lp);
    zero_async(e, dpre, size_t(M) * Nup * es);
    mlp_activation_backward(e, dt, a, dpre, scratch, pre, M, Na);
    return;
  }
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "mlp");
    // dact = dout · w_down, then through the activation into dpre.
    std::memset(scratch, 0, size_t(M) * Na * es);
    matmul_backward_cpu(as<float>(scratch), as<float>(dw_down), as<float>(db_down), as<float>(dout), as<float>(act),
                        as<float>(w_down), M, Na, N);
    std::memset(dpre, 0, size_t(M) * Nup * es);
    if (swiglu)
      swiglu_backward_cpu(as<float>(dpre), as<float>(scratch), as<float>(pre), M, Na);
    else
      gelu_backward_cpu(as<float>(dpre), as<float>(pre), as<float>(scratch), int64_t(M) * Na);
    return;
  }
  TT_CUDA_OP(dt, "mlp", {
    cudaStream_t s = stream(e);
    matmul_backward_cuda(static_cast<E*>(nullptr), as<E>(dw_down), as<E>(db_down), as<E>(dout), as<E>(act),
                         as<E>(w_down), M, Na, N, s);
    if (swiglu) {
      TT_CUDA_CHECK(cudaMemsetAsync(scratch, 0, size_t(M) * Na * es, s));
      matmul_backward_cuda(as<E>(scratch), static_cast<E*>(nullptr), static_cast<E*>(nullptr), as<E>(dout), as<E>(act),
                           as<E>(w_down), M, Na, N, s);
      TT_CUDA_CHECK(cudaMemsetAsync(dpre, 0, size_t(M) * Nup * es, s));
      swiglu_backward_cuda(as<E>(dpre), as<E>(scratch), as<E>(pre), M, Na, s);
    } else {  // dGELU in the input-gradient GEMM's epilogue; dpre overwritten
      matmul_dgelu_backward_cuda(as<E>(dpre), static_cast<E*>(nullptr), as<E>(dout), as<E>(w_down), as<E>(pre), M, Na,
                                 N, s);
    }
  });
}

int64_t attention_stats_elements(Device device, const AttentionShape& s) {
  const int64_t rows = int64_t(s.B) * s.NH * s.T;
  return device.kind == DeviceKind::kCuda ? rows : rows * s.T;
}

void attention_forward(const Exec& e, DType dt, void* out, float* stats, const void* qkv, const AttentionShape& s) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "attention");
    attention_forward_cpu(as<float>(out), stats, as<float>(qkv), s);
    return;
  }
  TT_CUDA_OP(dt, "attention", attention_forward_cuda(as<E>(out), stats, as<E>(qkv), s, stream(e)));
}

void attention_backward(const Exec& e, DType dt, void* dqkv, const void* dout, const void* qkv, const void* out,
                        const float* stats, const AttentionShape& s) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "attention");
    attention_backward_cpu(as<float>(dqkv), as<float>(dout), as<float>(qkv), stats, s);
    return;
  }
  TT_CUDA_OP(dt, "attention",
             attention_backward_cuda(as<E>(dqkv), as<E>(dout), as<E>(qkv), as<E>(out), stats, s, stream(e)));
}

void rope_forward(const Exec& e, DType dt, void* qkv, const float* cos, const float* sin, const AttentionShape& s) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "rope");
    rope_forward_cpu(as<float>(qkv), cos, sin, s);
    return;
  }
  TT_CUDA_OP(dt, "rope", rope_forward_cuda(as<E>(qkv), cos, sin, s, stream(e)));
}

void rope_backward(const Exec& e, DType dt, void* dqkv, const float* cos, const float* sin, const AttentionShape& s) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "rope");
    rope_backward_cpu(as<float>(dqkv), cos, sin, s);
    return;
  }
  TT_CUDA_OP(dt, "rope", rope_backward_cuda(as<E>(dqkv), cos, sin, s, stream(e)));
}

void softmax_cross_entropy(const Exec& e, DType dt, float* losses, void* dlogits, const void* logits,
                           const int32_t* targets, int N, int V, int Vp, float dloss) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "softmax_cross_entropy");
    softmax_cross_entropy_cpu(losses, as<float>(dlogits), as<float>(logits), targets, N, V, Vp, dloss);
    return;
  }
  TT_CUDA_OP(dt, "softmax_cross_entropy",
             softmax_cross_entropy_cuda(losses, as<E>(dlogits), as<E>(logits), targets, N, V, Vp, dloss, stream(e)));
}

void add_mean(const Exec& e, float* sum, const float* losses, int64_t n) {
  if (!e.is_cuda()) {
    mean_accumulate_cpu(sum, losses, n);
    return;
  }
#if TOPOTRAIN_HAVE_CUDA
  mean_accumulate_cuda(sum, losses, n, stream(e));
#else
  TT_ASSERT(false, "add_mean needs CUDA, but this build has none");
#endif
}

double sum_squares(const Exec& e, DType dt, const void* x, int64_t n) {
  if (!e.is_cuda()) {
    require_cpu_f32(dt, "sum_squares");
    return sum_squares_cpu(as<float>(x), n);
  }
  double result = 0.0;
#if TOPOTRAIN_HAVE_CUDA
  double* device_result = nullptr;
  TT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&device_result), sizeof(double), stream(e)));
  TT_CUDA_OP(dt, "sum_squares", sum_squares_cuda(device_result, as<E>(x), n, stream(e)));
  TT_CUDA_CHECK(cudaMemcpyAsync(&result, device_result, sizeof(double), cudaMemcpyDeviceToHost, stream(e)));
  TT_CUDA_CHECK(cudaFreeAsync(device_result, stream(e)));
  TT_CUDA_CHECK(cudaStreamSynchronize(stream(e)));
#else
  TT_ASSERT(false, "sum_squares needs CUDA, but this build has none");
#endif
  return result;
}

void fp8_update_scales(const Exec& e, float* history, float* scale, float* scale_inv, const float* amax, int64_t n,
                       int len, int pos, int margin) {
  if (!e.is_cuda()) {
    fp8_update_scales_cpu(history, scale, scale_inv, amax, n, len, pos, margin);
    return;
  }
#if TOPOTRAIN_HAVE_CUDA
  fp8_update_scales_cuda(history, scale, scale_inv, amax, n, len, pos, margin, stream(e));
#else
  TT_ASSERT(false, "fp8_update_scales needs CUDA, but this build has none");
#endif
}

}  // namespace tt::ops
