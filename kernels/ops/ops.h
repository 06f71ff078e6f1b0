// Device-generic entry points of the ops a transformer is made of: one call per op, dispatched on the
// device of an Exec (CPU reference or CUDA kernel) and on the element type of the activations. The
// model (core/model) is written once against these calls, so a new op, fusion or numeric recipe is
// one change here and in the op's folder, never a second model.
//
// Contracts: every pointer is memory of exec.device. `dt` is the element type of activations,
// weights and their gradients: fp32 on the CPU (the reference), fp32 or bf16 on CUDA; statistics
// (LayerNorm mean/rstd, attention stats, losses, loss sums) are always fp32, token ids int32.
// Accumulation follows the ops' own contracts: parameter gradients and input gradients accumulate
// (+=) unless a function says OVERWRITTEN; nullptr gradients are skipped. Asynchronous on exec's
// stream on CUDA; done on return on the CPU. An unsupported (device, dtype) pair throws kInternal.
// Fusions that only the CUDA side has (residual + norm, GELU in the GEMM epilogue, dGELU in the
// input-gradient GEMM) are single calls here, and the CPU runs their parts in sequence.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/exec.h"
#include "kernels/attention/attention.h"

namespace tt::ops {

enum class NormKind { kLayerNorm, kRMSNorm };
struct NormSpec {
  NormKind kind = NormKind::kLayerNorm;
  float eps = 1e-5f;
};
enum class MlpActivation { kGeluTanh, kSwiGLU };

// out[B,T,C] = wte[tokens] (+ wpe[t] when wpe is not null).
void embedding_forward(const Exec& e, DType dt, void* out, const int32_t* tokens, const void* wte, const void* wpe,
                       int B, int T, int C);
// dwte[Vp,C] += scatter of dout by token, dwpe (may be null) += Σ_b dout.
void embedding_backward(const Exec& e, DType dt, void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int B,
                        int T, int C, int Vp);

// out[N,C] = norm(inp) · w (+ b for LayerNorm); mean (LayerNorm only) and rstd [N] saved for backward.
void norm_forward(const Exec& e, DType dt, const NormSpec& norm, void* out, float* mean, float* rstd, const void* inp,
                  const void* w, const void* b, int N, int C);
// residual = a + b_in (may alias a or b_in), then norm_forward(out, …, residual, …).
void residual_norm_forward(const Exec& e, DType dt, const NormSpec& norm, void* residual, void* out, float* mean,
                           float* rstd, const void* a, const void* b_in, const void* w, const void* b, int N, int C);
// dinp, dw, db (+=) of norm_forward; mean is ignored for RMSNorm.
void norm_backward(const Exec& e, DType dt, const NormSpec& norm, void* dinp, void* dw, void* db, const void* dout,
                   const void* inp, const void* w, const float* mean, const float* rstd, int N, int C);

// out[n] = a + b (out may alias a or b).
void residual_forward(const Exec& e, DType dt, void* out, const void* a, const void* b, int64_t n);

// ---- Linear layers and their precision recipe ------------------------------------------------
// Every linear layer's three products (forward, input gradient, weight gradient) run in the layer's
// matmul precision:
//   kDefault: the working precision dt (fp32 or bf16 storage, fp32 accumulation).
//   kFp8: Transformer Engine's "hybrid" delayed scaling: inputs and weights E4M3, output gradients
//     E5M2, per-tensor scales chosen from earlier steps' absmax (the state below), fp32
//     accumulation, results in dt; all three products in fp8.
//   kInt8: SwitchBack: the forward and input-gradient products in int8 (row-wise absmax of the
//     activations / output gradients, per-tensor absmax of the weight, exact int32 accumulation);
//     the weight gradient in dt.
// Biases and their gradients stay in dt. On the CPU (fp32) the low-precision modes are the exact
// emulation of the device arithmetic (kernels/quantize, kernels/matmul).
enum class MatmulPrecision { kDefault, kFp8, kInt8 };
const char* matmul_precision_name(MatmulPrecision p);  // "default", "fp8", "int8"

// One linear layer's recipe and, for fp8, its scaling state: fp32 arrays of three entries (x: input,
// w: weight, dy: output gradient) in memory of the exec's device. The scales are read; forward adds
// x's and w's max |value| into amax (max) and their saturated / flushed-to-zero counts into counts
// ([0..3) overflow, [3..6) underflow), backward dy's (the input and weight gradients re-quantise x
// and w with the same scales, recording nothing). Null state pointers with kFp8 are an internal error.
struct LinearPrecision {
  MatmulPrecision precision = MatmulPrecision::kDefault;
  const float* scale = nullptr;      // [3] quantise multipliers
  const float* scale_inv = nullptr;  // [3] their inverses
  float* amax = nullptr;             // [3]
  uint32_t* counts = nullptr;        // [6]
};

// out[M,N] = inp[M,K] · w[N,K]ᵀ (+ b[N]), OVERWRITTEN.
void linear_forward(const Exec& e, DType dt, void* out, const void* inp, const void* w, const void* b, int M, int K,
                    int N, const LinearPrecision& lp = {});
// dinp[M,K] += dout·w; dw[N,K] += doutᵀ·inp; db[N] += Σ_rows dout.
void linear_backward(const Exec& e, DType dt, void* dinp, void* dw, void* db, const void* dout, const void* inp,
                     const void* w, int M, int K, int N, const LinearPrecision& lp = {});

// fp8 delayed scaling after a step: for each of n entries (triples per layer), history[i][pos] =
// amax[i] and scale / scale_inv from the history's max (kernels/quantize/quantize.h).
void fp8_update_scales(const Exec& e, float* history, float* scale, float* scale_inv, const float* amax, int64_t n,
                       int len, int pos, int margin);

// MLP up projection and its activation: pre[M, Nup] = inp·wᵀ (+ b), act = activation(pre), both
// OVERWRITTEN; act is [M, Nup] for GELU (tanh) and [M, Nup/2] for SwiGLU (pre holds gate | up).
void mlp_up_forward(const Exec& e, DType dt, MlpActivation a, void* act, void* pre, const void* inp, const void* w,
                    const void* b, int M, int K, int Nup, const LinearPrecision& lp = {});
// act = activation(pre) alone (mlp_up_forward's second half, for recompute), OVERWRITTEN.
void mlp_activation_forward(const Exec& e, DType dt, MlpActivation a, void* act, const void* pre, int M, int Nup);
// Backward through the down projection and the activation, given dout[M,N] = d(act·w_downᵀ + b_down):
// dw_down += doutᵀ·act, db_down += Σ_rows dout, dpre[M, Nup] OVERWRITTEN with d pre. scratch holds
// [M, Na] elements of dt (Na = act's width), clobbered.
void mlp_down_backward(const Exec& e, DType dt, MlpActivation a, void* dpre, void* dw_down, void* db_down,
                       void* scratch, const void* dout, const void* act, const void* w_down, const void* pre, int M,
                       int Na, int N, const LinearPrecision& lp = {});

// Attention over the fused qkv activation (kernels/attention/attention.h layout). The saved
// statistics differ by device: the CPU keeps the probabilities [B,NH,T,T], CUDA the logsumexp
// [B,NH,T]; attention_stats_elements says how many fp32 elements to allocate.
int64_t attention_stats_elements(Device device, const kernels::AttentionShape& s);
void attention_forward(const Exec& e, DType dt, void* out, float* stats, const void* qkv,
                       const kernels::AttentionShape& s);
// dqkv += gradient given dout (and the forward's qkv, out and stats).
void attention_backward(const Exec& e, DType dt, void* dqkv, const void* dout, const void* qkv, const void* out,
                        const float* stats, const kernels::AttentionShape& s);
// RoPE on the q and k heads of qkv, in place (kernels/rope/rope.h); tables fp32 [T, HD/2].
void rope_forward(const Exec& e, DType dt, void* qkv, const float* cos, const float* sin,
                  const kernels::AttentionShape& s);
void rope_backward(const Exec& e, DType dt, void* dqkv, const float* cos, const float* sin,
                   const kernels::AttentionShape& s);

// losses[N] (may be null) and dlogits (OVERWRITTEN, may alias logits, may be null) over the first V
// of Vp columns (softmax_cross_entropy.h).
void softmax_cross_entropy(const Exec& e, DType dt, float* losses, void* dlogits, const void* logits,
                           const int32_t* targets, int N, int V, int Vp, float dloss);
// *sum += mean(losses[0, n)) (sum: one fp32 on the device).
void add_mean(const Exec& e, float* sum, const float* losses, int64_t n);
// Σ x² accumulated in double, deterministic; synchronises and returns it.
double sum_squares(const Exec& e, DType dt, const void* x, int64_t n);

}  // namespace tt::ops
