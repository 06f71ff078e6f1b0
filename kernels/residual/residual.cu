// CUDA residual add and its backward: grid-stride elementwise kernels, fp32 or bf16 storage with an
// fp32 add and one rounding per stored value.
#include "kernels/common/cuda_common.cuh"
#include "kernels/residual/residual.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;

constexpr int kThreads = 256;

template <typename T>
__global__ void residual_forward_kernel(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = from_f32<T>(to_f32(a[i]) + to_f32(b[i]));
}

// da and/or db may be nullptr (then that branch is skipped); they never alias each other.
template <typename T>
__global__ void residual_backward_kernel(T* da, T* db, const T* dout, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const float g = to_f32(dout[i]);
    if (da != nullptr) da[i] = from_f32<T>(to_f32(da[i]) + g);
    if (db != nullptr) db[i] = from_f32<T>(to_f32(db[i]) + g);
  }
}

template <typename T>
void forward(T* out, const T* a, const T* b, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  residual_forward_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(out, a, b, n);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void backward(T* da, T* db, const T* dout, int64_t n, cudaStream_t stream) {
  if ((da == nullptr && db == nullptr) || n <= 0) return;
  residual_backward_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(da, db, dout, n);
  TT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void residual_forward_cuda(float* out, const float* a, const float* b, int64_t n, cudaStream_t stream) {
  forward(out, a, b, n, stream);
}
void residual_forward_cuda(bf16* out, const bf16* a, const bf16* b, int64_t n, cudaStream_t stream) {
  forward(out, a, b, n, stream);
}
void residual_backward_cuda(float* da, float* db, const float* dout, int64_t n, cudaStream_t stream) {
  backward(da, db, dout, n, stream);
}
void residual_backward_cuda(bf16* da, bf16* db, const bf16* dout, int64_t n, cudaStream_t stream) {
  backward(da, db, dout, n, stream);
}

}  // namespace tt::kernels
