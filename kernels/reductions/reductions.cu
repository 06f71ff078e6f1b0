// CUDA sum of squares (global gradient norm): deterministic two-pass block reduction in double, see
// reductions.h. The pass-1 grid is a function of n alone (never of the SM count), so the partition
// of the additions, and hence the result bits, do not depend on the device. The mean accumulation
// (a batch's losses into a running loss sum) is small enough for one block and its fixed tree.
#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_scratch.cuh"
#include "kernels/reductions/reductions.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::to_f32;

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;        // pass-2 block reduces at most this many partials
constexpr int64_t kItemsPerThread = 8;  // lower bound before adding blocks

__global__ void __launch_bounds__(kThreads) sum_squares_partials_kernel(double* partials, const float* x, int64_t n) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads) {
    const double v = x[i];
    s += v * v;
  }
  s = cuda::block_sum(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void __launch_bounds__(kThreads) sum_squares_partials_kernel(double* partials, const bf16* x, int64_t n) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n; i += int64_t{gridDim.x} * kThreads) {
    const double v = to_f32(x[i]);
    s += v * v;
  }
  s = cuda::block_sum(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <typename R>
__global__ void __launch_bounds__(kMaxBlocks) sum_partials_kernel(R* result, const double* partials, int count) {
  __shared__ double shared[32];
  double s = threadIdx.x < count ? partials[threadIdx.x] : 0.0;
  s = cuda::block_sum(s, shared);
  if (threadIdx.x == 0) *result = static_cast<R>(s);
}

template <typename R, typename X>
void launch(R* result, const X* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) {
    TT_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(R), stream));
    return;
  }
  const int blocks = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(kMaxBlocks, cuda::ceil_div(n, kThreads * kItemsPerThread))));
  double* partials = cuda::cuda_scratch_as<double>(cuda::ScratchSlot::kPartials, kMaxBlocks, stream);
  sum_squares_partials_kernel<<<blocks, kThreads, 0, stream>>>(partials, x, n);
  TT_CUDA_LAUNCH_CHECK();
  sum_partials_kernel<R><<<1, kMaxBlocks, 0, stream>>>(result, partials, blocks);
  TT_CUDA_LAUNCH_CHECK();
}

constexpr int kMeanThreads = 1024;

__global__ void __launch_bounds__(kMeanThreads) mean_accumulate_kernel(float* sum, const float* x, int64_t n) {
  __shared__ float shared[32];
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kMeanThreads) s += x[i];
  s = cuda::block_sum(s, shared);
  if (threadIdx.x == 0) *sum += s / static_cast<float>(n);
}

}  // namespace

void sum_squares_cuda(double* result, const float* x, int64_t n, cudaStream_t stream) { launch(result, x, n, stream); }
void sum_squares_cuda(double* result, const bf16* x, int64_t n, cudaStream_t stream) { launch(result, x, n, stream); }
void sum_squares_cuda(float* result, const float* x, int64_t n, cudaStream_t stream) { launch(result, x, n, stream); }
void sum_squares_cuda(float* result, const bf16* x, int64_t n, cudaStream_t stream) { launch(result, x, n, stream); }

void mean_accumulate_cuda(float* sum, const float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  mean_accumulate_kernel<<<1, kMeanThreads, 0, stream>>>(sum, x, n);
  TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::kernels
