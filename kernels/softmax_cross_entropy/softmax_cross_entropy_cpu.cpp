// CPU reference for fused softmax cross-entropy: one pass for the row max, one pass that writes
// exp(x - max) straight into dlogits (safe in place: element j is read before it is written) while
// summing in double, one pass that scales to the gradient. Rows run in parallel.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "kernels/softmax_cross_entropy/softmax_cross_entropy.h"

namespace tt::kernels {

void softmax_cross_entropy_cpu(float* losses, float* dlogits, const float* logits, const int32_t* targets, int N, int V,
                               int Vp, float dloss) {
  TT_ASSERT(V > 0 && V <= Vp, "softmax_cross_entropy: V=", V, " Vp=", Vp);
  for (int n = 0; n < N; ++n) {
    TT_ASSERT(targets[n] >= 0 && targets[n] < V, "softmax_cross_entropy: target ", targets[n], " at row ", n,
              " outside [0, ", V, ")");
  }
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = logits + static_cast<int64_t>(n) * Vp;
    const int target = targets[n];
    float maxv = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : maxv)
    for (int j = 0; j < V; ++j) maxv = x[j] > maxv ? x[j] : maxv;
    const float x_target = x[target];  // read before an in-place overwrite
    double sum = 0.0;
    if (dlogits != nullptr) {
      float* d = dlogits + static_cast<int64_t>(n) * Vp;
      for (int j = 0; j < V; ++j) {
        const float e = std::exp(x[j] - maxv);
        d[j] = e;
        sum += e;
      }
      const float p_scale = static_cast<float>(1.0 / sum) * dloss;
#pragma omp simd
      for (int j = 0; j < V; ++j) d[j] *= p_scale;
      d[target] -= dloss;
      for (int j = V; j < Vp; ++j) d[j] = 0.0f;
    } else {
      for (int j = 0; j < V; ++j) sum += std::exp(x[j] - maxv);
    }
    if (losses != nullptr) losses[n] = static_cast<float>(std::log(sum) - static_cast<double>(x_target - maxv));
  }
}

}  // namespace tt::kernels
