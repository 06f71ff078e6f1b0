// Linear layer (matmul + optional bias), the FLOP-dominant op of every transformer block.
// Design: weights are stored [out, in] (llm.c / PyTorch nn.Linear), all tensors row-major fp32,
// so forward is inp · weightᵀ and both backward products map onto one GEMM each (BLAS on the CPU,
// cuBLAS(Lt) in matmul.cu). Backward accumulates (+=) into every gradient so callers can sum
// contributions across micro-batches; a nullptr gradient means "not needed" and is skipped.
// Results are deterministic for any thread count (the bias reduction runs over column chunks, each
// summing rows in a fixed order; BLAS GEMMs partition M/N, never K).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace tt::kernels {

// out[M,N] = inp[M,K] · weight[N,K]ᵀ (+ bias[N] when bias != nullptr). Overwrites out.
void matmul_forward_cpu(float* out, const float* inp, const float* weight, const float* bias, int M, int K, int N);

// dinp[M,K] += dout[M,N] · weight[N,K];  dweight[N,K] += doutᵀ · inp;  dbias[N] += Σ_rows dout.
// Any of dinp, dweight, dbias may be nullptr.
void matmul_backward_cpu(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* weight, int M, int K, int N);

// ---- Low-precision products (the fp8 / int8 linear layers) ------------------------------------
// "TN" GEMMs of quantised operands, both stored with the reduced dimension innermost (A[M,K],
// B[N,K], as the tensor cores take them; kernels/quantize writes transposed codes where a backward
// product needs them): out[M,N] = (accumulate ? out : 0) + dequantised(A · Bᵀ) (+ bias[N]).
//   fp8: fp32 accumulation of the codes' values, then × a_scale_inv[0] · b_scale_inv[0].
//   int8: exact int32 accumulation, then float(acc) × (a_row_inv[m] · b_inv[0]).
// The CPU versions are the exact emulation (fp32 sgemm of the decoded codes; int8 in double, which is
// exact), the references the CUDA versions are tested against.
void matmul_fp8_cpu(float* out, const uint8_t* a, Fp8Format fa, const uint8_t* b, Fp8Format fb, const float* a_scale_inv,
                    const float* b_scale_inv, const float* bias, int M, int N, int K, bool accumulate);
void matmul_int8_cpu(float* out, const int8_t* a, const float* a_row_inv, const int8_t* b, const float* b_inv,
                     const float* bias, int M, int N, int K, bool accumulate);

}  // namespace tt::kernels

// ---- CUDA (matmul.cu) --------------------------------------------------------------------------
// Device pointers, same [out, in] layouts and the same += / nullptr contract as the CPU version; T
// is float (fp32 GEMM, no TF32) or __nv_bfloat16 (bf16 storage, fp32 accumulation). Asynchronous
// on `stream`. GEMMs run through cuBLASLt: the TN layout (weightᵀ) in forward, NN for dinp, NT for
// dweight, accumulating in place with beta = 1. Epilogues are fused where cuBLASLt offers them
// (bias in forward, bias gradient via BGRADB in the dweight GEMM, GELU with the pre-activation
// stored, dGELU + bias gradient); when cuBLASLt returns no algorithm for a fused configuration the
// same result is produced unfused (plain GEMM + separate deterministic kernels).
// Resources: one cuBLASLt handle per device, created on first use; one 32 MiB workspace per
// (device, stream) from kernels/common/cuda_scratch.cuh. Both live until matmul_cuda_release().
// Determinism: cuBLASLt picks the same algorithm for the same problem, workspace and device, and
// its results are then bit-reproducible; bias gradients are deterministic either way.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void matmul_forward_cuda(float* out, const float* inp, const float* weight, const float* bias, int M, int K, int N,
                         cudaStream_t stream = 0);
void matmul_forward_cuda(__nv_bfloat16* out, const __nv_bfloat16* inp, const __nv_bfloat16* weight,
                         const __nv_bfloat16* bias, int M, int K, int N, cudaStream_t stream = 0);

void matmul_backward_cuda(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, int M, int K, int N, cudaStream_t stream = 0);
void matmul_backward_cuda(__nv_bfloat16* dinp, __nv_bfloat16* dweight, __nv_bfloat16* dbias, const __nv_bfloat16* dout,
                          const __nv_bfloat16* inp, const __nv_bfloat16* weight, int M, int K, int N,
                          cudaStream_t stream = 0);

// Linear layer followed by GELU (GPT-2's c_fc): pre_gelu[M,N] = inp · weightᵀ (+ bias) and
// out[M,N] = gelu(pre_gelu), both OVERWRITTEN (CUBLASLT_EPILOGUE_GELU_AUX_BIAS). Same as
// matmul_forward_cuda(pre_gelu, ...) followed by gelu_forward_cuda(out, pre_gelu, M*N).
void matmul_gelu_forward_cuda(float* out, float* pre_gelu, const float* inp, const float* weight, const float* bias,
                              int M, int K, int N, cudaStream_t stream = 0);
void matmul_gelu_forward_cuda(__nv_bfloat16* out, __nv_bfloat16* pre_gelu, const __nv_bfloat16* inp,
                              const __nv_bfloat16* weight, const __nv_bfloat16* bias, int M, int K, int N,
                              cudaStream_t stream = 0);

// Input gradient of a linear layer whose input was gelu(pre_gelu) (GPT-2's c_proj, reaching back
// through the GELU into c_fc): dpre[M,K] = (dout[M,N] · weight[N,K]) ⊙ gelu'(pre_gelu[M,K]),
// OVERWRITTEN (not accumulated: it is a fresh activation gradient), and dbias_pre[K] += Σ_rows dpre
// (c_fc's bias gradient; nullptr: skipped). CUBLASLT_EPILOGUE_DGELU_BGRAD when available.
void matmul_dgelu_backward_cuda(float* dpre, float* dbias_pre, const float* dout, const float* weight,
                                const float* pre_gelu, int M, int K, int N, cudaStream_t stream = 0);
void matmul_dgelu_backward_cuda(__nv_bfloat16* dpre, __nv_bfloat16* dbias_pre, const __nv_bfloat16* dout,
                                const __nv_bfloat16* weight, const __nv_bfloat16* pre_gelu, int M, int K, int N,
                                cudaStream_t stream = 0);

// The low-precision products above on device pointers (scale factors too); T (out, bias) is float
// or __nv_bfloat16. fp8: cuBLASLt FP8 GEMM (sm_89+; E4M3 x E4M3, E5M2 x E4M3), the factors as its
// A/B scale pointers, beta = 1 when accumulating. int8: cuBLASLt IMMA GEMM (COMPUTE_32I) into an
// int32 scratch, then one kernel dequantises (and adds bias / accumulates). M, N and K must be
// multiples of 16 (the tensor cores' tiles); otherwise, or when cuBLASLt has no algorithm, throws
// kConfig naming the shape.
template <typename T>
void matmul_fp8_cuda(T* out, const uint8_t* a, Fp8Format fa, const uint8_t* b, Fp8Format fb, const float* a_scale_inv,
                     const float* b_scale_inv, const T* bias, int M, int N, int K, bool accumulate,
                     cudaStream_t stream = 0);
template <typename T>
void matmul_int8_cuda(T* out, const int8_t* a, const float* a_row_inv, const int8_t* b, const float* b_inv,
                      const T* bias, int M, int N, int K, bool accumulate, cudaStream_t stream = 0);

// Process-wide switch for the fused cuBLASLt epilogues (default on). Off: every op takes the
// unfused path. Lets tests check both paths against the CPU reference.
void matmul_cuda_set_fused_epilogues(bool enabled);

// Synchronises every device that has a handle, destroys the handles and frees all scratch buffers
// (kernels/common/cuda_scratch.cuh). Later calls recreate them lazily.
void matmul_cuda_release();

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
