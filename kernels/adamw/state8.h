// Compact AdamW optimizer state: block-wise dynamic 8-bit moments (Dettmers et al. 2022, "8-bit
// Optimizers via Block-wise Quantization") and bf16 moments.
// Design: a moment is stored as one uint8 code per element plus one fp32 absmax per block of
// kState8Block elements; element = map[code] * absmax, where map is a sorted 256-entry dynamic
// (non-linear) quantisation map: signed for m, unsigned for v. Blocks follow the grid of GLOBAL
// indices (k·256 .. (k+1)·256 in the whole flat parameter buffer), so a run that starts mid-block
// (a ZeRO shard, a bucket) holds a partial first block, whole blocks, then a tail, and any split of
// a buffer at multiples of 256 gives the same bits as one call. An update dequantises a block, runs
// adamw_element (adamw.h) on every element in fp32, takes the block's new absmax and requantises
// to the nearest code. The CPU reference (state8_cpu.cpp) and the CUDA kernels (state8.cu) do the
// same fp32 operations in the same order and both are built without fused multiply-adds, so fp32
// results are bit-identical. The bf16 state keeps m and v as bf16 (round to nearest even on write).
//
// Dynamic map: a code's bits after the sign (signed) are E leading zeros, an indicator 1, then F
// linear fraction bits; the value is 10^-E times the midpoint of one of 2^F equal parts of
// [0.1, 1]. Signed: E = 0..6, F = 6-E (127 magnitudes a sign); unsigned: E = 0..6, F = 7-E (254
// values). The all-zero code is 0 and the one left over (signed: "-0") is 1.0. One deviation from
// bitsandbytes' signed map: the smallest negative magnitude (-5.5e-7) is replaced by -1.0, so a
// block's largest |x| round-trips exactly whatever its sign, and quantise(dequantise(codes)) is
// the identity on codes.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/host_device.h"
#include "kernels/adamw/adamw.h"

namespace tt::kernels {

constexpr int kState8Block = 256;

// The 256 values of the signed (m) or unsigned (v) dynamic map, sorted ascending, distinct;
// signed spans [-1, 1], unsigned [0, 1]; both hold 0 and 1.0 exactly.
std::array<float, 256> dynamic_map(bool is_signed);
// The same values, built once per process (thread-safe).
const std::array<float, 256>& cached_dynamic_map(bool is_signed);
// Index of 0.0 in dynamic_map(is_signed): the code of every element of an all-zero block. A zero
// state is codes = state8_zero_code, absmax = 0 (quantise_state8 of zeros gives exactly that).
constexpr uint8_t state8_zero_code(bool is_signed) { return is_signed ? 127 : 0; }

// Nearest code of x in a sorted 256-entry map (binary search; a tie goes to the lower index;
// below map[0] or NaN -> 0, above map[255] -> 255).
TT_HOST_DEVICE inline uint8_t quantize_nearest(const float* sorted_map, float x) {
  if (!(x > sorted_map[0])) return 0;
  if (x >= sorted_map[255]) return 255;
  int lo = 0, hi = 255;  // sorted_map[lo] <= x < sorted_map[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (sorted_map[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return static_cast<uint8_t>(sorted_map[hi] - x < x - sorted_map[lo] ? hi : lo);
}

TT_HOST_DEVICE inline float dequantize_code(const float* sorted_map, uint8_t code, float absmax) {
  return sorted_map[code] * absmax;
}

// max over |x| that keeps a NaN once one is seen (fmax would drop it): a NaN anywhere in a block
// makes its absmax NaN, so the whole block dequantises to NaN instead of hiding it.
TT_HOST_DEVICE inline float state8_absmax_combine(float a, float b) { return (b > a || b != b) ? b : a; }

// Code of x in a block with absmax `absmax` (an absmax of 0 means an all-zero block).
TT_HOST_DEVICE inline uint8_t quantize_in_block(const float* sorted_map, float x, float absmax, uint8_t zero_code) {
  return absmax == 0.0f ? zero_code : quantize_nearest(sorted_map, x / absmax);
}

// Number of absmax entries for a run of n elements starting at global index global_begin: the
// blocks [k·256, (k+1)·256) that the run [global_begin, global_begin + n) intersects.
inline int64_t state8_blocks(int64_t global_begin, int64_t n) {
  TT_ASSERT(global_begin >= 0 && n >= 0, "state8: bad run ", global_begin, "+", n);
  if (n == 0) return 0;
  return (global_begin + n - 1) / kState8Block - global_begin / kState8Block + 1;
}

// ---- CPU (state8_cpu.cpp) ----------------------------------------------------------------------
// codes: n bytes; absmax: state8_blocks(global_begin, n) floats.
void quantize_state8_cpu(uint8_t* codes, float* absmax, const float* x, int64_t n, int64_t global_begin,
                         bool is_signed);
void dequantize_state8_cpu(float* x, const uint8_t* codes, const float* absmax, int64_t n, int64_t global_begin,
                           bool is_signed);

// AdamW with 8-bit moments (m: signed map, v: unsigned map), fp32 parameters and gradients.
void adamw_update_state8_cpu(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                             const float* grad, int64_t n, int64_t global_begin, const AdamWHyper& h, float grad_scale);

// AdamW with bf16 moments (bit patterns; computed in fp32, written back round-to-nearest-even).
void adamw_update_bf16_state_cpu(float* param, uint16_t* m, uint16_t* v, const float* grad, int64_t n,
                                 const AdamWHyper& h, float grad_scale);

}  // namespace tt::kernels

// ---- CUDA (state8.cu) --------------------------------------------------------------------------
// Device pointers, asynchronous on `stream`. 8-bit state: one thread block of 256 threads per
// quantisation block; the maps travel as kernel parameters (no device globals, so any device and
// any thread may call). Bit-identical to the CPU functions above for fp32 parameters (and for
// bf16 gradients against the CPU run on the same values in fp32). Mixed: fp32 master weights
// updated as the fp32 variant, then param_bf16[i] = bf16(master[i]) rounded as `rounding` says,
// exactly as adamw_update_mixed_cuda (rounding.index_base is normally global_begin).
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void quantize_state8_cuda(uint8_t* codes, float* absmax, const float* x, int64_t n, int64_t global_begin,
                          bool is_signed, cudaStream_t stream = 0);
void dequantize_state8_cuda(float* x, const uint8_t* codes, const float* absmax, int64_t n, int64_t global_begin,
                            bool is_signed, cudaStream_t stream = 0);

void adamw_update_state8_cuda(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                              const float* grad, int64_t n, int64_t global_begin, const AdamWHyper& h, float grad_scale,
                              cudaStream_t stream = 0);
void adamw_update_state8_cuda(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                              const __nv_bfloat16* grad, int64_t n, int64_t global_begin, const AdamWHyper& h,
                              float grad_scale, cudaStream_t stream = 0);
void adamw_update_state8_mixed_cuda(float* master, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                                    __nv_bfloat16* param_bf16, const float* grad, int64_t n, int64_t global_begin,
                                    const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding,
                                    cudaStream_t stream = 0);
void adamw_update_state8_mixed_cuda(float* master, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                                    __nv_bfloat16* param_bf16, const __nv_bfloat16* grad, int64_t n,
                                    int64_t global_begin, const AdamWHyper& h, float grad_scale,
                                    const BF16Rounding& rounding, cudaStream_t stream = 0);

void adamw_update_bf16_state_cuda(float* param, __nv_bfloat16* m, __nv_bfloat16* v, const float* grad, int64_t n,
                                  const AdamWHyper& h, float grad_scale, cudaStream_t stream = 0);
void adamw_update_bf16_state_cuda(float* param, __nv_bfloat16* m, __nv_bfloat16* v, const __nv_bfloat16* grad,
                                  int64_t n, const AdamWHyper& h, float grad_scale, cudaStream_t stream = 0);
void adamw_update_bf16_state_mixed_cuda(float* master, __nv_bfloat16* m, __nv_bfloat16* v, __nv_bfloat16* param_bf16,
                                        const float* grad, int64_t n, const AdamWHyper& h, float grad_scale,
                                        const BF16Rounding& rounding, cudaStream_t stream = 0);
void adamw_update_bf16_state_mixed_cuda(float* master, __nv_bfloat16* m, __nv_bfloat16* v, __nv_bfloat16* param_bf16,
                                        const __nv_bfloat16* grad, int64_t n, const AdamWHyper& h, float grad_scale,
                                        const BF16Rounding& rounding, cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
