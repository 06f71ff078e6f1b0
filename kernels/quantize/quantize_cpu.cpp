// CPU reference of the quantisers (see quantize.h): the scalar bodies over rows, OpenMP across rows;
// amax and counts are reduced per row and combined in row order, so the result does not depend on
// the thread count.
#include <algorithm>
#include <vector>

#include "kernels/quantize/quantize.h"

namespace tt::kernels {

void quantize_fp8_cpu(uint8_t* codes, const float* x, int64_t rows, int cols, bool transpose, Fp8Format f,
                      const float* scale, float* amax, uint32_t* overflow, uint32_t* underflow) {
  const float s = scale[0];
  std::vector<float> row_amax(amax ? size_t(rows) : 0, 0.0f);
  std::vector<uint32_t> row_over(amax ? size_t(rows) : 0, 0), row_under(row_over.size(), 0);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    float m = 0.0f;
    uint32_t over = 0, under = 0;
    for (int c = 0; c < cols; ++c) {
      const float v = x[r * cols + c];
      bool o, u;
      const uint8_t code = fp8_quantize_scalar(v, s, f, &o, &u);
      codes[transpose ? int64_t(c) * rows + r : r * cols + c] = code;
      m = fmaxf(m, fabsf(v));
      over += o;
      under += u;
    }
    if (amax) {
      row_amax[size_t(r)] = m;
      row_over[size_t(r)] = over;
      row_under[size_t(r)] = under;
    }
  }
  if (!amax) return;
  for (int64_t r = 0; r < rows; ++r) {
    amax[0] = fmaxf(amax[0], row_amax[size_t(r)]);
    overflow[0] += row_over[size_t(r)];
    underflow[0] += row_under[size_t(r)];
  }
}

void quantize_int8_rows_cpu(int8_t* q, float* inv, const float* x, int64_t rows, int cols) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float m = 0.0f;
    for (int c = 0; c < cols; ++c) m = max_abs_nan(m, row[c]);
    float scale;
    int8_factors(m, &scale, &inv[r]);
    for (int c = 0; c < cols; ++c) q[r * cols + c] = int8_quantize_scalar(row[c], scale);
  }
}

void quantize_int8_tensor_cpu(int8_t* q, float* inv, const float* x, int64_t rows, int cols, bool transpose) {
  const int64_t n = rows * cols;
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = max_abs_nan(m, x[i]);
  float scale;
  int8_factors(m, &scale, &inv[0]);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      q[transpose ? int64_t(c) * rows + r : r * cols + c] = int8_quantize_scalar(x[r * cols + c], scale);
}

void fp8_update_scales_cpu(float* history, float* scale, float* scale_inv, const float* amax, int64_t n, int len,
                           int pos, int margin) {
  for (int64_t i = 0; i < n; ++i)
    fp8_update_scale(history + i * len, len, pos, amax[i], fp8_max(fp8_role_format(i)), margin, &scale[i],
                     &scale_inv[i]);
}

}  // namespace tt::kernels
