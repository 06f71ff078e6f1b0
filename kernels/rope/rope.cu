// CUDA RoPE: one thread per rotated pair (row, q/k head, i < HD/2) in a grid-stride loop, reading the
// fp32 cos/sin tables that rope_tables fills on the host; fp32 or bf16 storage, fp32 math and one
// rounding per element. Backward is the same kernel with the angle negated.
#include "kernels/common/cuda_common.cuh"
#include "kernels/rope/rope.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;

constexpr int kThreads = 256;

template <typename T>
__global__ void rope_kernel(T* x, const float* __restrict__ cos, const float* __restrict__ sin, int64_t pairs,
                            int seq_len, int heads, int HD, int row_dim, float sign) {
  const int half = HD / 2;
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < pairs; k += int64_t{gridDim.x} * blockDim.x) {
    const int i = static_cast<int>(k % half);
    const int64_t rest = k / half;
    const int h = static_cast<int>(rest % heads);
    const int64_t row = rest / heads;
    const int64_t tab = (row % seq_len) * half + i;
    const float c = cos[tab], s = sign * sin[tab];
    T* v = x + row * row_dim + static_cast<int64_t>(h) * HD;
    const float x0 = to_f32(v[i]), x1 = to_f32(v[i + half]);
    v[i] = from_f32<T>(x0 * c - x1 * s);
    v[i + half] = from_f32<T>(x1 * c + x0 * s);
  }
}

template <typename T>
void launch(T* x, const float* cos, const float* sin, const AttentionShape& s, float sign, cudaStream_t stream) {
  const int heads = s.NH + s.NKV;
  const int64_t pairs = static_cast<int64_t>(s.B) * s.T * heads * (s.HD / 2);
  if (pairs <= 0) return;
  rope_kernel<<<cuda::elementwise_blocks(pairs, kThreads), kThreads, 0, stream>>>(x, cos, sin, pairs, s.T, heads, s.HD,
                                                                                  s.qkv_dim(), sign);
  TT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void rope_forward_cuda(float* qkv, const float* cos, const float* sin, const AttentionShape& s, cudaStream_t stream) {
  launch(qkv, cos, sin, s, 1.0f, stream);
}
void rope_forward_cuda(bf16* qkv, const float* cos, const float* sin, const AttentionShape& s, cudaStream_t stream) {
  launch(qkv, cos, sin, s, 1.0f, stream);
}
void rope_backward_cuda(float* dqkv, const float* cos, const float* sin, const AttentionShape& s, cudaStream_t stream) {
  launch(dqkv, cos, sin, s, -1.0f, stream);
}
void rope_backward_cuda(bf16* dqkv, const float* cos, const float* sin, const AttentionShape& s, cudaStream_t stream) {
  launch(dqkv, cos, sin, s, -1.0f, stream);
}

}  // namespace tt::kernels
