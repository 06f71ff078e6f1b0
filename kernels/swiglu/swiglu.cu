// CUDA SwiGLU: grid-stride elementwise kernels over the N·I (gate, up) pairs, on the scalar bodies
// shared with the CPU reference (silu_scalar / silu_grad_scalar in swiglu.h), fp32 or bf16 storage.
#include "kernels/common/cuda_common.cuh"
#include "kernels/swiglu/swiglu.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;

constexpr int kThreads = 256;

template <typename T>
__global__ void swiglu_forward_kernel(T* out, const T* inp, int64_t n, int I) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < n; k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = k / I, i = k % I;
    const T* gate = inp + row * 2 * I;
    out[k] = from_f32<T>(silu_scalar(to_f32(gate[i])) * to_f32(gate[I + i]));
  }
}

template <typename T>
__global__ void swiglu_backward_kernel(T* dinp, const T* dout, const T* inp, int64_t n, int I) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < n; k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = k / I, i = k % I;
    const int64_t g = row * 2 * I + i, u = g + I;
    const float x = to_f32(inp[g]), up = to_f32(inp[u]), dy = to_f32(dout[k]);
    dinp[g] = from_f32<T>(to_f32(dinp[g]) + dy * up * silu_grad_scalar(x));
    dinp[u] = from_f32<T>(to_f32(dinp[u]) + dy * silu_scalar(x));
  }
}

template <typename T>
void forward(T* out, const T* inp, int64_t N, int I, cudaStream_t stream) {
  const int64_t n = N * I;
  if (n <= 0) return;
  swiglu_forward_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(out, inp, n, I);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void backward(T* dinp, const T* dout, const T* inp, int64_t N, int I, cudaStream_t stream) {
  const int64_t n = N * I;
  if (dinp == nullptr || n <= 0) return;
  swiglu_backward_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(dinp, dout, inp, n, I);
  TT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void swiglu_forward_cuda(float* out, const float* inp, int64_t N, int I, cudaStream_t stream) {
  forward(out, inp, N, I, stream);
}
void swiglu_forward_cuda(bf16* out, const bf16* inp, int64_t N, int I, cudaStream_t stream) {
  forward(out, inp, N, I, stream);
}
void swiglu_backward_cuda(float* dinp, const float* dout, const float* inp, int64_t N, int I, cudaStream_t stream) {
  backward(dinp, dout, inp, N, I, stream);
}
void swiglu_backward_cuda(bf16* dinp, const bf16* dout, const bf16* inp, int64_t N, int I, cudaStream_t stream) {
  backward(dinp, dout, inp, N, I, stream);
}

}  // namespace tt::kernels
