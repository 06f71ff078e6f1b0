// CPU reference for token (+ position) embedding. Forward: rows in parallel. Backward: dwpe in
// parallel over positions (batch summed in order), dwte over column chunks walking all tokens in
// order (see column_chunks.h), so repeated tokens accumulate deterministically.
#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "kernels/common/column_chunks.h"
#include "kernels/embedding/embedding.h"

namespace tt::kernels {

void embedding_forward_cpu(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C) {
  const int64_t rows = static_cast<int64_t>(B) * T;
  for (int64_t r = 0; r < rows; ++r)
    TT_ASSERT(tokens[r] >= 0, "embedding: negative token ", tokens[r], " at position ", r);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int t = static_cast<int>(r % T);
    const float* te = wte + static_cast<int64_t>(tokens[r]) * C;
    float* o = out + r * C;
    if (wpe == nullptr) {
      std::copy(te, te + C, o);
      continue;
    }
    const float* pe = wpe + static_cast<int64_t>(t) * C;
#pragma omp simd
    for (int i = 0; i < C; ++i) o[i] = te[i] + pe[i];
  }
}

void embedding_backward_cpu(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T, int C) {
  if (dwpe != nullptr) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; ++t) {
      float* dp = dwpe + static_cast<int64_t>(t) * C;
      for (int b = 0; b < B; ++b) {
        const float* dy = dout + (static_cast<int64_t>(b) * T + t) * C;
#pragma omp simd
        for (int i = 0; i < C; ++i) dp[i] += dy[i];
      }
    }
  }
  if (dwte != nullptr) {
    const int64_t rows = static_cast<int64_t>(B) * T;
    const int chunks = column_chunk_count(C);
#pragma omp parallel for schedule(static)
    for (int c = 0; c < chunks; ++c) {
      const int j0 = c * kColumnChunk;
      const int w = std::min(kColumnChunk, C - j0);
      for (int64_t r = 0; r < rows; ++r) {
        float* dt = dwte + static_cast<int64_t>(tokens[r]) * C + j0;
        const float* dy = dout + r * C + j0;
#pragma omp simd
        for (int j = 0; j < w; ++j) dt[j] += dy[j];
      }
    }
  }
}

}  // namespace tt::kernels
