// Counter-based initialisation (see init_weights.h): a splitmix64 hash of (seed, index) gives two
// uniforms per element, Box-Muller one normal. A pure function of the index: any thread count, any
// range, the same values.
#include "core/model/init_weights.h"

#include <algorithm>
#include <cmath>

namespace tt {

namespace {
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Standard normal for element `index` of the run seeded with `seed`.
float normal_at(uint64_t seed, int64_t index) {
  const uint64_t base = mix(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);
  const uint64_t a = mix(base ^ (uint64_t(index) * 2 + 1) * 0xD1B54A32D192ED03ull);
  const uint64_t b = mix(a ^ 0xA0761D6478BD642Full);
  const double u1 = (double(a >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = double(b >> 11) * 0x1.0p-53;          // [0, 1)
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

enum class Fill { kZero, kOne, kNormal };
}  // namespace

void init_weights(const ModelDesc& d, const ModelLayout& layout, uint64_t seed, int64_t begin, int64_t end,
                  float* out) {
  const float residual_std = d.init_std / std::sqrt(2.0f * float(d.n_layer));
  std::vector<int64_t> residual_projections, norm_weights{layout.final_norm_w};
  for (const BlockOffsets& b : layout.blocks) {
    residual_projections.push_back(b.out_w);
    residual_projections.push_back(b.down_w);
    norm_weights.push_back(b.norm1_w);
    norm_weights.push_back(b.norm2_w);
  }
  auto contains = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  for (const ParamInfo& p : layout.tensors) {
    const int64_t t_begin = p.offset, t_end = p.offset + shape_numel(p.shape);
    const int64_t lo = std::max(begin, t_begin), hi = std::min(end, t_end);
    if (lo >= hi) continue;
    const Fill fill = p.shape.size() == 2 ? Fill::kNormal : contains(norm_weights, p.offset) ? Fill::kOne : Fill::kZero;
    const bool residual = contains(residual_projections, p.offset);
    const float std_dev = residual ? residual_std : d.init_std;
    // Vocabulary tables: rows past vocab_size are padding and stay zero.
    const bool vocab_table = p.offset == layout.tok_emb || p.offset == layout.lm_head;
    const int64_t real_end = vocab_table ? t_begin + int64_t(d.vocab_size) * d.n_embd : t_end;
    float* dst = out + (lo - begin);
#pragma omp parallel for schedule(static)
    for (int64_t i = lo; i < hi; ++i) {
      float v = 0.0f;
      if (fill == Fill::kOne)
        v = 1.0f;
      else if (fill == Fill::kNormal && i < real_end)
        v = normal_at(seed, i) * std_dev;
      dst[i - lo] = v;
    }
  }
}

}  // namespace tt
