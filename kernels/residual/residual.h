// Residual connection: out = a + b. Backward passes dout through to both branches, accumulating
// (+=) so the residual stream gradient sums naturally; da or db may be nullptr.
#pragma once

#include <cstdint>

namespace tt::kernels {

void residual_forward_cpu(float* out, const float* a, const float* b, int64_t n);  // out may alias a or b
void residual_backward_cpu(float* da, float* db, const float* dout, int64_t n);

}  // namespace tt::kernels

// ---- CUDA (residual.cu) ------------------------------------------------------------------------
// Same contracts on device pointers, fp32 or bf16 storage (fp32 add, one rounding); asynchronous on
// `stream`. For the residual add fused into LayerNorm see layernorm.h (fused_residual_layernorm).
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void residual_forward_cuda(float* out, const float* a, const float* b, int64_t n, cudaStream_t stream = 0);
void residual_forward_cuda(__nv_bfloat16* out, const __nv_bfloat16* a, const __nv_bfloat16* b, int64_t n,
                           cudaStream_t stream = 0);
void residual_backward_cuda(float* da, float* db, const float* dout, int64_t n, cudaStream_t stream = 0);
void residual_backward_cuda(__nv_bfloat16* da, __nv_bfloat16* db, const __nv_bfloat16* dout, int64_t n,
                            cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
