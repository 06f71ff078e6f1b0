// Causal multi-head self-attention (GPT-2), scale 1/sqrt(head_size), on a fused qkv activation.
// Layout: qkv[B,T,3C] — for token (b,t) the row holds q (C values), then k (C), then v (C); head h
// uses columns h*hs .. (h+1)*hs-1 of each part, hs = C/NH. out[B,T,C] concatenates the heads.
// Design: forward stores the softmax probabilities att[B,NH,T,T] (zeros above the diagonal) so
// backward is a direct chain rule without recomputation; this is the simple reference, the
// memory-lean flash variant belongs to the CUDA side. Backward accumulates (+=) into dqkv
// (nullptr: nothing to do). Per-thread scratch is O(T); work is split over (b, h) pairs so every
// gradient element is summed in a fixed order (deterministic for any thread count).
#pragma once

namespace tt::kernels {

void attention_forward_cpu(float* out, float* att, const float* qkv, int B, int T, int C, int NH);

void attention_backward_cpu(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                            int NH);

}  // namespace tt::kernels

// ---- CUDA (attention.cu) -----------------------------------------------------------------------
// Flash-style fused causal attention, the fallback the CUDA trainer uses when no better backend is
// available. Forward tiles the queries of one (b, h) over K/V tiles with an online softmax and
// never materialises the T×T matrix; instead of att it saves the per-row logsumexp
// lse[B,NH,T] (fp32), so the signatures differ from the CPU ones by that buffer (and backward also
// needs the forward output to form D = rowsum(dout ⊙ out)). Backward recomputes the probabilities
// tile by tile from lse: one kernel owns a K/V tile (dk, dv), another owns a Q tile (dq), so every
// gradient element is summed by one thread in a fixed order: deterministic, no atomics.
// Accumulates (+=) into dqkv (nullptr: nothing to do), like the CPU version.
// qkv/out/dout/dqkv are float or __nv_bfloat16 (fp32 math); any T >= 1; head size C/NH must be
// 32, 64 or 128 (compile-time tiles; anything else throws a kConfig error).
// Asynchronous on `stream`; backward uses the kRowStats scratch slot for D.
// TODO(cudnn-sdpa): cuDNN's fused SDPA (flash attention on tensor cores, fwd + bwd, bf16) will be
// preferred when cuDNN is available; these kernels stay as the portable, testable fallback.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

// out[B,T,C], lse[B,NH,T] (natural-log logsumexp of the scaled scores of each query row).
void attention_forward_cuda(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                            cudaStream_t stream = 0);
void attention_forward_cuda(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, int B, int T, int C, int NH,
                            cudaStream_t stream = 0);

void attention_backward_cuda(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                             int B, int T, int C, int NH, cudaStream_t stream = 0);
void attention_backward_cuda(__nv_bfloat16* dqkv, const __nv_bfloat16* dout, const __nv_bfloat16* qkv,
                             const __nv_bfloat16* out, const float* lse, int B, int T, int C, int NH,
                             cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
