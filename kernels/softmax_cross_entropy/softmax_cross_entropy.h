// Fused softmax + cross-entropy loss (and its gradient) over a padded vocabulary.
// Design: fused so the [N,Vp] probabilities are never materialised next to the logits — the
// gradient is written straight into dlogits, which may alias logits (in-place, as llm.c does with
// its logits buffer). Only the first V of Vp columns are real; the padding gets gradient 0.
#pragma once

#include <cstdint>

namespace tt::kernels {

// losses[n] = -log softmax(logits[n, :V])[targets[n]], targets[n] in [0, V).
// When dlogits != nullptr it is OVERWRITTEN: dlogits[n,j] = (softmax_j - [j == target]) * dloss for
// j < V and 0 for V <= j < Vp. dloss is the gradient of the final loss w.r.t. each losses[n]
// (1/N for a mean). dlogits may equal logits.
void softmax_cross_entropy_cpu(float* losses, float* dlogits, const float* logits,
                               const int32_t* targets, int N, int V, int Vp, float dloss);

}  // namespace tt::kernels
