// CPU reference for the linear layer: both products go to OpenBLAS sgemm (row-major, weight used
// transposed in forward); the bias gradient is a column-chunked row sum (see column_chunks.h).
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/common/column_chunks.h"
#include "kernels/matmul/matmul.h"

namespace tt::kernels {

void matmul_forward_cpu(float* out, const float* inp, const float* weight, const float* bias, int M, int K, int N) {
  if (M <= 0 || N <= 0) return;
  float beta = 0.0f;
  if (bias != nullptr) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; ++i) std::memcpy(out + static_cast<int64_t>(i) * N, bias, sizeof(float) * N);
    beta = 1.0f;
  }
  if (K <= 0) {
    if (bias == nullptr) std::memset(out, 0, sizeof(float) * static_cast<size_t>(M) * N);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, inp, K, weight, K, beta, out, N);
}

void matmul_backward_cpu(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* weight, int M, int K, int N) {
  if (M <= 0 || N <= 0) return;
  if (K > 0) {
    if (dinp != nullptr) {  // [M,K] += [M,N] · [N,K]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1.0f, dout, N, weight, K, 1.0f, dinp, K);
    }
    if (dweight != nullptr) {  // [N,K] += [M,N]ᵀ · [M,K]
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1.0f, dout, N, inp, K, 1.0f, dweight, K);
    }
  }
  if (dbias != nullptr) {
    const int chunks = column_chunk_count(N);
#pragma omp parallel for schedule(static)
    for (int c = 0; c < chunks; ++c) {
      const int j0 = c * kColumnChunk;
      const int w = std::min(kColumnChunk, N - j0);
      float acc[kColumnChunk] = {};
      for (int i = 0; i < M; ++i) {
        const float* row = dout + static_cast<int64_t>(i) * N + j0;
#pragma omp simd
        for (int j = 0; j < w; ++j) acc[j] += row[j];
      }
      for (int j = 0; j < w; ++j) dbias[j0 + j] += acc[j];
    }
  }
}

}  // namespace tt::kernels
