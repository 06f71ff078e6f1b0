// Reductions used around the optimizer (gradient-norm clipping, logging).
// Design: accumulate in double over fixed-size blocks whose layout depends only on n, then sum the
// block partials in block order, so the result is bit-identical for any number of threads.
#pragma once

#include <cstdint>

namespace tt::kernels {

// Σ x[i]², accumulated in double; deterministic for any thread count.
double sum_squares_cpu(const float* x, int64_t n);

// *sum += (Σ x[i]) / n with the sum accumulated in double (a batch's mean loss into a loss sum).
void mean_accumulate_cpu(float* sum, const float* x, int64_t n);

}  // namespace tt::kernels

// ---- CUDA (reductions.cu) ----------------------------------------------------------------------
// Σ x[i]² of an fp32 or bf16 device array, accumulated in double, written to *result (device
// pointer, double or float; OVERWRITTEN) without synchronising the host: the global gradient norm
// for clipping stays on the device. Deterministic two-pass reduction: pass 1 runs a grid whose
// size depends only on n, each block reducing a fixed grid-stride subset in a fixed tree into one
// double partial; pass 2 (one block) reduces the partials in a fixed tree. Bit-identical run to
// run and across devices. Partials live in the kPartials scratch slot of `stream`.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void sum_squares_cuda(double* result, const float* x, int64_t n, cudaStream_t stream = 0);
void sum_squares_cuda(double* result, const __nv_bfloat16* x, int64_t n, cudaStream_t stream = 0);
void sum_squares_cuda(float* result, const float* x, int64_t n, cudaStream_t stream = 0);
void sum_squares_cuda(float* result, const __nv_bfloat16* x, int64_t n, cudaStream_t stream = 0);

// *sum += (Σ x[i]) / n on the device (sum: one fp32 in device memory), one block with a fixed
// reduction tree: deterministic. Asynchronous on `stream`.
void mean_accumulate_cuda(float* sum, const float* x, int64_t n, cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
