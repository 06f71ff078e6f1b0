// Global-norm gradient clipping: the norm over every gradient element (in double), and the scale
// min(1, max_norm / norm) that the optimizer folds into its update instead of rewriting gradients.
#pragma once

#include <cstdint>

namespace tt {

double global_grad_norm(const float* grads, int64_t n);
// 1 when max_norm <= 0 (clipping off) or norm <= max_norm; a non-finite norm returns 0 (skip step).
float clip_scale(double norm, float max_norm);

}  // namespace tt
