// Fused softmax + cross-entropy loss (and its gradient) over a padded vocabulary.
// Design: fused so the [N,Vp] probabilities are never materialised next to the logits — the
// gradient is written straight into dlogits, which may alias logits (in-place, as llm.c does with
// its logits buffer). Only the first V of Vp columns are real; the padding gets gradient 0.
#pragma once

#include <cstdint>

namespace tt::kernels {

// losses[n] = -log softmax(logits[n, :V])[targets[n]], targets[n] in [0, V).
// When dlogits != nullptr it is OVERWRITTEN: dlogits[n,j] = (softmax_j - [j == target]) * dloss for
// j < V and 0 for V <= j < Vp. dloss is the gradient of the final loss w.r.t. each losses[n]
// (1/N for a mean). dlogits may equal logits.
void softmax_cross_entropy_cpu(float* losses, float* dlogits, const float* logits, const int32_t* targets, int N, int V,
                               int Vp, float dloss);

}  // namespace tt::kernels

// ---- CUDA (softmax_cross_entropy.cu) -----------------------------------------------------------
// Same contract on device pointers: logits/dlogits are float or __nv_bfloat16 (fp32 math), losses
// and targets stay fp32/int32; dlogits may equal logits; losses or dlogits may be nullptr.
// Asynchronous on `stream`; bit-reproducible. The targets are not validated on the host (that
// would need a copy back): a row whose target lies outside [0, V) gets a NaN loss and no one-hot term.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void softmax_cross_entropy_cuda(float* losses, float* dlogits, const float* logits, const int32_t* targets, int N,
                                int V, int Vp, float dloss, cudaStream_t stream = 0);
void softmax_cross_entropy_cuda(float* losses, __nv_bfloat16* dlogits, const __nv_bfloat16* logits,
                                const int32_t* targets, int N, int V, int Vp, float dloss, cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
