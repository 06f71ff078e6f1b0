// Quantisation of activations, weights and gradients for the low-precision linear layers (fp8 and
// int8 matmul precision), and the fp8 delayed-scaling update.
// Design:
//  * fp8 is per-tensor with a scale chosen before the tensor is seen (delayed scaling, as
//    Transformer Engine): code = fp8(x · scale), round to nearest even, saturating (core/dtype.h).
//    The quantiser also records what the next scale needs: max |x| (max-accumulated; NaN ignored)
//    and how many elements saturated (|x · scale| > the format's max, or inf) or were flushed to
//    zero (x ≠ 0, code ±0), so a trend is visible before training diverges.
//  * int8 is SwitchBack-style just-in-time absmax: per row for activations and gradients, per tensor
//    for weights: q = clamp(rint(x · 127 / amax), -127, 127) and inv = amax / 127 (the dequantise
//    factor); amax 0 gives q = 0, inv = 1; a non-finite amax gives q = 0, inv = NaN, so a NaN
//    input still poisons the product instead of vanishing.
//  * Codes can be written transposed ([cols, rows]): the tensor-core GEMMs take only the "TN"
//    layout, so a backward product reads some operands transposed.
//  * One scalar body per element (TT_HOST_DEVICE), shared by the CPU loops and the CUDA grid, so the
//    codes, scales and counts are bit-identical on both; the CPU reference is the exact emulation.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "core/host_device.h"

namespace tt::kernels {

// fp8 code of x · scale and whether it saturated / flushed to zero.
TT_HOST_DEVICE inline uint8_t fp8_quantize_scalar(float x, float scale, Fp8Format f, bool* overflow,
                                                 bool* underflow) {
  const float v = x * scale;
  const uint8_t c = f32_to_fp8(v, f);
  *overflow = fabsf(v) > fp8_max(f);  // false for NaN
  *underflow = x != 0.0f && (c & 0x7fu) == 0u;
  return c;
}

// int8 of x with quantise factor `scale` (127 / amax).
TT_HOST_DEVICE inline int8_t int8_quantize_scalar(float x, float scale) {
  const float r = rintf(x * scale);
  if (r != r) return 0;  // inf · 0 in a row whose factor is NaN
  return int8_t(r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r);
}

// Max with NaN propagation (the int8 row amax: a NaN makes the row's factor NaN).
TT_HOST_DEVICE inline float max_abs_nan(float m, float x) {
  const float a = fabsf(x);
  return (a > m || a != a) ? a : m;
}

// The int8 quantise and dequantise factors of an absmax (see above).
TT_HOST_DEVICE inline void int8_factors(float amax, float* scale, float* inv) {
  if (!(amax < INFINITY)) {  // inf or NaN
    *scale = 0.0f;
    *inv = NAN;
  } else if (amax > 0.0f) {
    *scale = 127.0f / amax;
    *inv = amax / 127.0f;
  } else {
    *scale = 0.0f;
    *inv = 1.0f;
  }
}

// Transformer Engine's delayed-scaling update of one tensor: history[pos] = amax, m = the history's
// max; when m is finite and > 0, scale = fp8_max / m / 2^margin and scale_inv = 1 / scale, else
// both stay.
TT_HOST_DEVICE inline void fp8_update_scale(float* history, int len, int pos, float amax, float fmt_max, int margin,
                                            float* scale, float* scale_inv) {
  history[pos] = amax;
  float m = 0.0f;
  for (int i = 0; i < len; ++i) m = fmaxf(m, history[i]);
  if (!(m > 0.0f) || !(m < INFINITY)) return;
  const float s = ldexpf(fmt_max / m, -margin);
  if (!(s < INFINITY)) return;
  *scale = s;
  *scale_inv = 1.0f / s;
}

// The fp8 format of entry i of a scaling state laid out in triples per linear layer (x, w, dy):
// inputs and weights E4M3, output gradients E5M2 (the "hybrid" recipe).
TT_HOST_DEVICE inline Fp8Format fp8_role_format(int64_t i) { return i % 3 == 2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3; }

// codes = fp8(x[rows, cols] · scale[0]), [rows, cols] or transposed to [cols, rows]. When amax is
// not null: amax[0] = max(amax[0], max |x|), overflow[0] and underflow[0] += the counts.
void quantize_fp8_cpu(uint8_t* codes, const float* x, int64_t rows, int cols, bool transpose, Fp8Format f,
                      const float* scale, float* amax, uint32_t* overflow, uint32_t* underflow);
// Row-wise int8: q[rows, cols], inv[rows].
void quantize_int8_rows_cpu(int8_t* q, float* inv, const float* x, int64_t rows, int cols);
// Per-tensor int8: q as is or transposed, inv[0].
void quantize_int8_tensor_cpu(int8_t* q, float* inv, const float* x, int64_t rows, int cols, bool transpose);
// fp8_update_scale for n entries (triples per layer, fp8_role_format): history [n, len] row-major,
// scale, scale_inv, amax [n]; pos in [0, len).
void fp8_update_scales_cpu(float* history, float* scale, float* scale_inv, const float* amax, int64_t n, int len,
                           int pos, int margin);

}  // namespace tt::kernels

// ---- CUDA (quantize.cu) ------------------------------------------------------------------------
// Same contracts on device pointers (scale, amax, counts, inv: device memory); T is float or
// __nv_bfloat16. Asynchronous on `stream`. amax and counts are accumulated with atomics (max and
// integer sums: the result does not depend on their order).
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

template <typename T>
void quantize_fp8_cuda(uint8_t* codes, const T* x, int64_t rows, int cols, bool transpose, Fp8Format f,
                       const float* scale, float* amax, uint32_t* overflow, uint32_t* underflow, cudaStream_t stream);
template <typename T>
void quantize_int8_rows_cuda(int8_t* q, float* inv, const T* x, int64_t rows, int cols, cudaStream_t stream);
template <typename T>
void quantize_int8_tensor_cuda(int8_t* q, float* inv, const T* x, int64_t rows, int cols, bool transpose,
                               cudaStream_t stream);
void fp8_update_scales_cuda(float* history, float* scale, float* scale_inv, const float* amax, int64_t n, int len,
                            int pos, int margin, cudaStream_t stream);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
