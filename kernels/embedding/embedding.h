// Token (+ learned position) embedding: out[b,t,:] = wte[tokens[b,t], :] (+ wpe[t, :]: GPT-2; wpe is
// nullptr for models without a position table, e.g. RoPE models).
// Shapes: tokens int32 [B,T], wte [Vp,C], wpe [maxT,C] (T <= maxT), out [B,T,C].
// Design: backward scatters into dwte with repeated tokens, so it is parallelised over channel
// chunks (each thread owns a column range and walks all tokens in order) rather than over tokens:
// no atomics, no per-call buffers, bit-identical for any thread count. Backward accumulates (+=);
// dwte or dwpe may be nullptr.
#pragma once

#include <cstdint>

namespace tt::kernels {

void embedding_forward_cpu(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C);

void embedding_backward_cpu(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T, int C);

}  // namespace tt::kernels

// ---- CUDA (embedding.cu) -----------------------------------------------------------------------
// Device pointers; wte/wpe/out and their gradients are float or __nv_bfloat16 (fp32 math).
// Asynchronous on `stream`. Tokens must lie in [0, Vp): they are not validated on the device.
// Backward takes one argument more than the CPU version, Vp (rows of dwte), because it is
// parallelised over vocabulary rows. It accumulates (+=), skips nullptr gradients and is
// deterministic without sorting and without float atomics: block (bucket of 32 vocabulary rows,
// tile of 256 channels) scans all B*T tokens in index order, compacts the ones that fall in its
// bucket into shared memory (ballot + prefix count keeps index order), and adds their dout rows
// into fp32 accumulators in that order. Every dwte element therefore sums its tokens in increasing
// position order, starting from its previous value: the fp32 result is bit-identical to the CPU
// reference. dwpe sums the batch in order per (t, c), also bit-identical in fp32. A very frequent
// token costs nothing extra (its adds are shared-memory adds in its bucket's block); the price is
// that every block reads the token array once (B*T*4 bytes per bucket, served from L2).
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void embedding_forward_cuda(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C,
                            cudaStream_t stream = 0);
void embedding_forward_cuda(__nv_bfloat16* out, const int32_t* tokens, const __nv_bfloat16* wte,
                            const __nv_bfloat16* wpe, int B, int T, int C, cudaStream_t stream = 0);

void embedding_backward_cuda(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T, int C,
                             int Vp, cudaStream_t stream = 0);
void embedding_backward_cuda(__nv_bfloat16* dwte, __nv_bfloat16* dwpe, const __nv_bfloat16* dout, const int32_t* tokens,
                             int B, int T, int C, int Vp, cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
