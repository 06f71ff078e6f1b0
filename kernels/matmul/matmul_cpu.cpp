// CPU reference for the linear layer: both products go to OpenBLAS sgemm (row-major, weight used
// transposed in forward); the bias gradient is a column-chunked row sum (see column_chunks.h).
//
// Determinism across thread counts: OpenBLAS's own threading tiles the output by the thread count,
// and its edge kernels round differently from its main one (with the Haswell/Zen kernels, 1 and 2
// threads differ in the last bit). So every product is cut into fixed 128 x 128 tiles of its output,
// each its own single-threaded sgemm (OpenBLAS runs one thread inside an OpenMP region): the same
// tiling, and the same bits, for any thread count. Each tile reduces over the full inner dimension.
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <vector>

#include "kernels/common/column_chunks.h"
#include "kernels/matmul/matmul.h"

namespace tt::kernels {

namespace {
constexpr int kTile = 128;

// Calls f(r0, rows, c0, cols) for the fixed kTile x kTile tiles of a rows_total x cols_total output
// (a tile never depends on the thread count), spread over the OpenMP threads.
template <typename F>
void for_tiles(int rows_total, int cols_total, const F& f) {
  const int row_tiles = (rows_total + kTile - 1) / kTile, col_tiles = (cols_total + kTile - 1) / kTile;
#pragma omp parallel for schedule(dynamic)
  for (int t = 0; t < row_tiles * col_tiles; ++t) {
    const int r0 = t / col_tiles * kTile, c0 = t % col_tiles * kTile;
    f(r0, std::min(kTile, rows_total - r0), c0, std::min(kTile, cols_total - c0));
  }
}
}  // namespace

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
  for_tiles(M, N, [&](int i0, int rows, int j0, int cols) {  // out tile = inp rows · (weight rows)ᵀ (+ bias)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, K, 1.0f, inp + int64_t(i0) * K, K,
                weight + int64_t(j0) * K, K, beta, out + int64_t(i0) * N + j0, N);
  });
}

void matmul_backward_cpu(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* weight, int M, int K, int N) {
  if (M <= 0 || N <= 0) return;
  if (K > 0) {
    if (dinp != nullptr) {  // [M,K] += [M,N] · [N,K], by tiles of dinp
      for_tiles(M, K, [&](int i0, int rows, int k0, int cols) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, cols, N, 1.0f, dout + int64_t(i0) * N, N,
                    weight + k0, K, 1.0f, dinp + int64_t(i0) * K + k0, K);
      });
    }
    if (dweight != nullptr) {  // [N,K] += [M,N]ᵀ · [M,K], by tiles of dweight
      for_tiles(N, K, [&](int j0, int rows, int k0, int cols) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, rows, cols, M, 1.0f, dout + j0, N, inp + k0, K, 1.0f,
                    dweight + int64_t(j0) * K + k0, K);
      });
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

void matmul_fp8_cpu(float* out, const uint8_t* a, Fp8Format fa, const uint8_t* b, Fp8Format fb, const float* a_scale_inv,
                    const float* b_scale_inv, const float* bias, int M, int N, int K, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  // The codes' values are exact in fp32: the emulation is an fp32 GEMM of the decoded codes (fp32
  // accumulation, as the tensor cores), scaled once by the two dequantise factors.
  std::vector<float> da(size_t(M) * K), db(size_t(N) * K), acc(size_t(M) * N, 0.0f);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(M) * K; ++i) da[size_t(i)] = fp8_to_f32(a[i], fa);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(N) * K; ++i) db[size_t(i)] = fp8_to_f32(b[i], fb);
  if (K > 0)
    for_tiles(M, N, [&](int i0, int rows, int j0, int cols) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, K, 1.0f, da.data() + int64_t(i0) * K, K,
                  db.data() + int64_t(j0) * K, K, 0.0f, acc.data() + int64_t(i0) * N + j0, N);
    });
  const float s = a_scale_inv[0] * b_scale_inv[0];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(M); ++i)
    for (int j = 0; j < N; ++j) {
      float v = acc[size_t(i * N + j)] * s;
      if (bias != nullptr) v += bias[j];
      float& o = out[i * N + j];
      o = accumulate ? o + v : v;
    }
}

void matmul_int8_cpu(float* out, const int8_t* a, const float* a_row_inv, const int8_t* b, const float* b_inv,
                     const float* bias, int M, int N, int K, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  // int32 accumulation, exactly: products of int8 codes summed in double are exact integers (|sum| <
  // K · 127² < 2^53), and the int32 GEMM's sum does not overflow for K < 133,000.
  std::vector<double> da(size_t(M) * K), db(size_t(N) * K), acc(size_t(M) * N, 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(M) * K; ++i) da[size_t(i)] = a[i];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(N) * K; ++i) db[size_t(i)] = b[i];
  if (K > 0)
    for_tiles(M, N, [&](int i0, int rows, int j0, int cols) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, K, 1.0, da.data() + int64_t(i0) * K, K,
                  db.data() + int64_t(j0) * K, K, 0.0, acc.data() + int64_t(i0) * N + j0, N);
    });
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(M); ++i) {
    const float s = a_row_inv[i] * b_inv[0];
    for (int j = 0; j < N; ++j) {
      float v = float(acc[size_t(i * N + j)]) * s;  // int32 -> fp32 rounds to nearest even, as on the device
      if (bias != nullptr) v += bias[j];
      float& o = out[i * N + j];
      o = accumulate ? o + v : v;
    }
  }
}

}  // namespace tt::kernels
