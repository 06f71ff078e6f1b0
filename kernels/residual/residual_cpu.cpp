// CPU reference for the residual add: elementwise loops split across threads.
#include <cstdint>

#include "kernels/residual/residual.h"

namespace tt::kernels {

void residual_forward_cpu(float* out, const float* a, const float* b, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void residual_backward_cpu(float* da, float* db, const float* dout, int64_t n) {
  if (da != nullptr) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) da[i] += dout[i];
  }
  if (db != nullptr) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) db[i] += dout[i];
  }
}

}  // namespace tt::kernels
