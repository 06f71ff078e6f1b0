// Global gradient norm through the deterministic sum-of-squares kernel.
#include "optim/grad_clip.h"

#include <cmath>

#include "kernels/reductions/reductions.h"

namespace tt {

double global_grad_norm(const float* grads, int64_t n) { return std::sqrt(kernels::sum_squares_cpu(grads, n)); }

float clip_scale(double norm, float max_norm) {
  if (!std::isfinite(norm)) return 0.0f;
  if (max_norm <= 0.0f || norm <= max_norm) return 1.0f;
  return float(max_norm / norm);
}

}  // namespace tt
