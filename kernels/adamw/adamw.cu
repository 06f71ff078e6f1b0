// CUDA AdamW: one grid-stride elementwise kernel over the per-element body shared with the CPU
// reference (adamw_element in adamw.h). Gradients may be fp32 or bf16; master weights and moments
// are fp32. The mixed-precision variant also writes the bf16 working copy of the parameters, with
// round-to-nearest or seeded stochastic rounding (adamw_rounding_bits / f32_to_bf16_stochastic,
// the same functions the tests use on the host, so the rounding is checked bit for bit).
#include <cmath>

#include "core/error.h"
#include "kernels/adamw/adamw.h"
#include "kernels/adamw/adamw_step.cuh"
#include "kernels/common/cuda_common.cuh"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::to_f32;

constexpr int kThreads = 256;

// param_bf16 == nullptr: fp32 update only.
template <typename G>
__global__ void adamw_kernel(float* __restrict__ param, float* __restrict__ m, float* __restrict__ v,
                             bf16* __restrict__ param_bf16, const G* __restrict__ grad, int64_t n, AdamWStep s,
                             BF16Rounding rounding) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    float p = param[i], mi = m[i], vi = v[i];
    adamw_element(p, mi, vi, to_f32(grad[i]), s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, s.bc1, s.bc2,
                  s.grad_scale);
    param[i] = p;
    m[i] = mi;
    v[i] = vi;
    if (param_bf16 != nullptr) write_bf16_copy(param_bf16, p, i, s, rounding);
  }
}

template <typename G>
void launch(float* param, float* m, float* v, bf16* param_bf16, const G* grad, int64_t n, const AdamWHyper& h,
            float grad_scale, const BF16Rounding& rounding, cudaStream_t stream) {
  const AdamWStep s = make_adamw_step(h, grad_scale);
  if (n <= 0) return;
  adamw_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(param, m, v, param_bf16, grad, n, s,
                                                                               rounding);
  TT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void adamw_update_cuda(float* param, float* m, float* v, const float* grad, int64_t n, const AdamWHyper& h,
                       float grad_scale, cudaStream_t stream) {
  launch(param, m, v, nullptr, grad, n, h, grad_scale, BF16Rounding{}, stream);
}
void adamw_update_cuda(float* param, float* m, float* v, const bf16* grad, int64_t n, const AdamWHyper& h,
                       float grad_scale, cudaStream_t stream) {
  launch(param, m, v, nullptr, grad, n, h, grad_scale, BF16Rounding{}, stream);
}
void adamw_update_mixed_cuda(float* master, float* m, float* v, bf16* param_bf16, const float* grad, int64_t n,
                             const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding, cudaStream_t stream) {
  launch(master, m, v, param_bf16, grad, n, h, grad_scale, rounding, stream);
}
void adamw_update_mixed_cuda(float* master, float* m, float* v, bf16* param_bf16, const bf16* grad, int64_t n,
                             const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding, cudaStream_t stream) {
  launch(master, m, v, param_bf16, grad, n, h, grad_scale, rounding, stream);
}

}  // namespace tt::kernels
