// Reductions used around the optimizer (gradient-norm clipping, logging).
// Design: accumulate in double over fixed-size blocks whose layout depends only on n, then sum the
// block partials in block order, so the result is bit-identical for any number of threads.
#pragma once

#include <cstdint>

namespace tt::kernels {

// Σ x[i]², accumulated in double; deterministic for any thread count.
double sum_squares_cpu(const float* x, int64_t n);

}  // namespace tt::kernels
