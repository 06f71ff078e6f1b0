// Residual connection: out = a + b. Backward passes dout through to both branches, accumulating
// (+=) so the residual stream gradient sums naturally; da or db may be nullptr.
#pragma once

#include <cstdint>

namespace tt::kernels {

void residual_forward_cpu(float* out, const float* a, const float* b, int64_t n);  // out may alias a or b
void residual_backward_cpu(float* da, float* db, const float* dout, int64_t n);

}  // namespace tt::kernels
