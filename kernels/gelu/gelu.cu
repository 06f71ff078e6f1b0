// CUDA GELU (tanh approximation): grid-stride elementwise kernels over the scalar bodies shared with
// the CPU reference (gelu_scalar / gelu_grad_scalar in gelu.h), fp32 or bf16 storage.
// (The GELU fused into a matmul epilogue lives in matmul.cu.)
#include "kernels/common/cuda_common.cuh"
#include "kernels/gelu/gelu.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;

constexpr int kThreads = 256;

template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* inp, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = from_f32<T>(gelu_scalar(to_f32(inp[i])));
}

template <typename T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dinp[i] = from_f32<T>(to_f32(dinp[i]) + gelu_grad_scalar(to_f32(inp[i])) * to_f32(dout[i]));
}

template <typename T>
void forward(T* out, const T* inp, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  gelu_forward_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(out, inp, n);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void backward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t stream) {
  if (dinp == nullptr || n <= 0) return;
  gelu_backward_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(dinp, inp, dout, n);
  TT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void gelu_forward_cuda(float* out, const float* inp, int64_t n, cudaStream_t stream) { forward(out, inp, n, stream); }
void gelu_forward_cuda(bf16* out, const bf16* inp, int64_t n, cudaStream_t stream) { forward(out, inp, n, stream); }
void gelu_backward_cuda(float* dinp, const float* inp, const float* dout, int64_t n, cudaStream_t stream) {
  backward(dinp, inp, dout, n, stream);
}
void gelu_backward_cuda(bf16* dinp, const bf16* inp, const bf16* dout, int64_t n, cudaStream_t stream) {
  backward(dinp, inp, dout, n, stream);
}

}  // namespace tt::kernels
