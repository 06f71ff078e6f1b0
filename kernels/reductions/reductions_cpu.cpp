// CPU reference reductions. The block layout depends only on n (at most kMaxBlocks blocks of at
// least kMinBlock elements), partials live on the stack and are summed in block order.
#include <algorithm>
#include <cstdint>

#include "kernels/reductions/reductions.h"

namespace tt::kernels {

namespace {
constexpr int64_t kMaxBlocks = 256;
constexpr int64_t kMinBlock = 1 << 14;

// Σ term(x[i]) in double over the fixed block layout of n.
template <typename Term>
double blocked_sum(const float* x, int64_t n, Term term) {
  if (n <= 0) return 0.0;
  const int64_t block = std::max(kMinBlock, (n + kMaxBlocks - 1) / kMaxBlocks);
  const int64_t blocks = (n + block - 1) / block;
  double partial[kMaxBlocks];
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t begin = k * block;
    const int64_t end = std::min(n, begin + block);
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = begin; i < end; ++i) s += term(static_cast<double>(x[i]));
    partial[k] = s;
  }
  double total = 0.0;
  for (int64_t k = 0; k < blocks; ++k) total += partial[k];
  return total;
}

}  // namespace

double sum_squares_cpu(const float* x, int64_t n) {
  return blocked_sum(x, n, [](double v) { return v * v; });
}

void mean_accumulate_cpu(float* sum, const float* x, int64_t n) {
  if (n <= 0) return;
  const double s = blocked_sum(x, n, [](double v) { return v; });
  *sum += static_cast<float>(s / static_cast<double>(n));
}

}  // namespace tt::kernels
