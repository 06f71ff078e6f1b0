// Linear layer (matmul + optional bias), the FLOP-dominant op of every transformer block.
// Design: weights are stored [out, in] (llm.c / PyTorch nn.Linear), all tensors row-major fp32,
// so forward is inp · weightᵀ and both backward products map onto one GEMM each (BLAS on the CPU,
// cuBLAS(Lt) in matmul.cu). Backward accumulates (+=) into every gradient so callers can sum
// contributions across micro-batches; a nullptr gradient means "not needed" and is skipped.
// Results are deterministic for any thread count (the bias reduction runs over column chunks, each
// summing rows in a fixed order; BLAS GEMMs partition M/N, never K).
#pragma once

namespace tt::kernels {

// out[M,N] = inp[M,K] · weight[N,K]ᵀ (+ bias[N] when bias != nullptr). Overwrites out.
void matmul_forward_cpu(float* out, const float* inp, const float* weight, const float* bias, int M,
                        int K, int N);

// dinp[M,K] += dout[M,N] · weight[N,K];  dweight[N,K] += doutᵀ · inp;  dbias[N] += Σ_rows dout.
// Any of dinp, dweight, dbias may be nullptr.
void matmul_backward_cpu(float* dinp, float* dweight, float* dbias, const float* dout,
                         const float* inp, const float* weight, int M, int K, int N);

}  // namespace tt::kernels
