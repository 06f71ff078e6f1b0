// CPU reference for the compact AdamW states (state8.h): the dynamic maps, block-wise 8-bit
// quantisation over the global 256-grid, and the 8-bit and bf16 moment updates. Parallel over
// quantisation blocks (8-bit) or elements (bf16); every element's arithmetic is the same fp32
// sequence as state8.cu. Built with -ffp-contract=off (CMakeLists.txt): a fused multiply-add here
// would break bit-identity with the device, which is built with --fmad=false.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/adamw/adamw.h"
#include "kernels/adamw/state8.h"

namespace tt::kernels {

std::array<float, 256> dynamic_map(bool is_signed) {
  std::vector<double> values = {0.0, 1.0};  // the all-zero code and the spare one
  const int fraction_bits_at_e0 = is_signed ? 6 : 7;
  for (int e = 0; e <= 6; ++e) {  // e leading zeros: magnitude 10^-e · [0.1, 1]
    const double scale = std::pow(10.0, -e);
    const int count = 1 << (fraction_bits_at_e0 - e);
    for (int j = 0; j < count; ++j) {
      const double value = scale * (0.1 + 0.9 * (j + 0.5) / count);  // midpoint of part j
      values.push_back(value);
      if (is_signed && e < 6) values.push_back(-value);
    }
  }
  if (is_signed) values.push_back(-1.0);  // instead of the smallest negative magnitude
  TT_ASSERT(values.size() == 256, "dynamic_map: ", values.size(), " values");
  std::sort(values.begin(), values.end());
  std::array<float, 256> map{};
  for (int i = 0; i < 256; ++i) map[i] = static_cast<float>(values[i]);
  for (int i = 1; i < 256; ++i) TT_ASSERT(map[i - 1] < map[i], "dynamic_map: not strictly increasing at ", i);
  TT_ASSERT(map[state8_zero_code(is_signed)] == 0.0f && map[255] == 1.0f, "dynamic_map: zero code / 1.0");
  return map;
}

const std::array<float, 256>& cached_dynamic_map(bool is_signed) {
  static const std::array<float, 256> signed_map = dynamic_map(true);
  static const std::array<float, 256> unsigned_map = dynamic_map(false);
  return is_signed ? signed_map : unsigned_map;
}

namespace {

// Local range [begin, end) of block b of the run (global_begin, n).
struct BlockRange {
  int64_t begin, end;
};
BlockRange block_range(int64_t global_begin, int64_t n, int64_t b) {
  const int64_t start = (global_begin / kState8Block + b) * kState8Block;
  return {std::max(start, global_begin) - global_begin,
          std::min(start + kState8Block, global_begin + n) - global_begin};
}

}  // namespace

void quantize_state8_cpu(uint8_t* codes, float* absmax, const float* x, int64_t n, int64_t global_begin,
                         bool is_signed) {
  const int64_t blocks = state8_blocks(global_begin, n);
  const float* map = cached_dynamic_map(is_signed).data();
  const uint8_t zero = state8_zero_code(is_signed);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockRange r = block_range(global_begin, n, b);
    float amax = 0.0f;
    for (int64_t i = r.begin; i < r.end; ++i) amax = state8_absmax_combine(amax, std::fabs(x[i]));
    for (int64_t i = r.begin; i < r.end; ++i) codes[i] = quantize_in_block(map, x[i], amax, zero);
    absmax[b] = amax;
  }
}

void dequantize_state8_cpu(float* x, const uint8_t* codes, const float* absmax, int64_t n, int64_t global_begin,
                           bool is_signed) {
  const int64_t blocks = state8_blocks(global_begin, n);
  const float* map = cached_dynamic_map(is_signed).data();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockRange r = block_range(global_begin, n, b);
    for (int64_t i = r.begin; i < r.end; ++i) x[i] = dequantize_code(map, codes[i], absmax[b]);
  }
}

void adamw_update_state8_cpu(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                             const float* grad, int64_t n, int64_t global_begin, const AdamWHyper& h,
                             float grad_scale) {
  float bc1, bc2;
  adamw_bias_corrections(h, &bc1, &bc2);
  const int64_t blocks = state8_blocks(global_begin, n);
  const float* smap = cached_dynamic_map(true).data();
  const float* umap = cached_dynamic_map(false).data();
  const uint8_t mzero = state8_zero_code(true), vzero = state8_zero_code(false);
  const float lr = h.lr, b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weight_decay;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockRange r = block_range(global_begin, n, b);
    float m[kState8Block], v[kState8Block];
    const float am = m_absmax[b], av = v_absmax[b];
    float new_am = 0.0f, new_av = 0.0f;
    for (int64_t i = r.begin; i < r.end; ++i) {
      float& mi = m[i - r.begin];
      float& vi = v[i - r.begin];
      mi = dequantize_code(smap, m_codes[i], am);
      vi = dequantize_code(umap, v_codes[i], av);
      adamw_element(param[i], mi, vi, grad[i], lr, b1, b2, eps, wd, bc1, bc2, grad_scale);
      new_am = state8_absmax_combine(new_am, std::fabs(mi));
      new_av = state8_absmax_combine(new_av, std::fabs(vi));
    }
    for (int64_t i = r.begin; i < r.end; ++i) {
      m_codes[i] = quantize_in_block(smap, m[i - r.begin], new_am, mzero);
      v_codes[i] = quantize_in_block(umap, v[i - r.begin], new_av, vzero);
    }
    m_absmax[b] = new_am;
    v_absmax[b] = new_av;
  }
}

void adamw_update_bf16_state_cpu(float* param, uint16_t* m, uint16_t* v, const float* grad, int64_t n,
                                 const AdamWHyper& h, float grad_scale) {
  float bc1, bc2;
  adamw_bias_corrections(h, &bc1, &bc2);
  const float lr = h.lr, b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weight_decay;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float mi = bf16_to_f32(m[i]), vi = bf16_to_f32(v[i]);
    adamw_element(param[i], mi, vi, grad[i], lr, b1, b2, eps, wd, bc1, bc2, grad_scale);
    m[i] = f32_to_bf16(mi);
    v[i] = f32_to_bf16(vi);
  }
}

}  // namespace tt::kernels
