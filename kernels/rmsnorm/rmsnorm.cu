// CUDA RMSNorm (forward, fused residual + forward, backward), fp32 or bf16 storage, fp32 math.
// Design: the structure of layernorm.cu: one warp per row for everything row-local (mean square,
// normalised output, input gradient): lanes stride over the channels and the warp butterfly-reduces,
// so no shared memory or block synchronisation is needed and any C works. The weight gradient reduces
// over rows, which one warp per row cannot do without atomics, so it goes through the deterministic
// two-pass column reduction of kernels/common/column_reduce.cuh.
#include "kernels/common/column_reduce.cuh"
#include "kernels/common/cuda_common.cuh"
#include "kernels/rmsnorm/rmsnorm.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;
using cuda::warp_sum;

constexpr int kWarpsPerBlock = 8;

// When inp2 != nullptr the row is first formed as residual = round(inp1 + inp2) and stored;
// otherwise inp1 is the row to normalise and residual is unused.
template <typename T>
__global__ void rmsnorm_forward_kernel(T* __restrict__ out, float* __restrict__ rstd, T* residual, const T* inp1,
                                       const T* inp2, const T* __restrict__ weight, int N, int C, float eps) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= N) return;  // warp-uniform
  const int64_t off = static_cast<int64_t>(row) * C;
  const T* x = inp1 + off;
  float sum_sq = 0.0f;
  if (inp2 != nullptr) {
    T* r = residual + off;
    const T* y = inp2 + off;
    for (int i = lane; i < C; i += 32) {
      const T v = from_f32<T>(to_f32(x[i]) + to_f32(y[i]));
      r[i] = v;
      const float f = to_f32(v);
      sum_sq += f * f;
    }
    x = r;  // output from the stored residual (each lane re-reads its own writes)
  } else {
    for (int i = lane; i < C; i += 32) {
      const float f = to_f32(x[i]);
      sum_sq += f * f;
    }
  }
  const float s = 1.0f / sqrtf(warp_sum(sum_sq) / static_cast<float>(C) + eps);
  T* o = out + off;
  for (int i = lane; i < C; i += 32) o[i] = from_f32<T>((to_f32(x[i]) * s) * to_f32(weight[i]));
  if (lane == 0 && rstd != nullptr) rstd[row] = s;
}

template <typename T>
__global__ void rmsnorm_backward_input_kernel(T* __restrict__ dinp, const T* __restrict__ dout,
                                              const T* __restrict__ inp, const T* __restrict__ weight,
                                              const float* __restrict__ rstd, int N, int C) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= N) return;
  const int64_t off = static_cast<int64_t>(row) * C;
  const T* x = inp + off;
  const T* dy = dout + off;
  T* dx = dinp + off;
  const float s = rstd[row];
  float dnorm_norm_sum = 0.0f;
  for (int i = lane; i < C; i += 32) dnorm_norm_sum += to_f32(dy[i]) * to_f32(weight[i]) * (to_f32(x[i]) * s);
  const float dnorm_norm_mean = warp_sum(dnorm_norm_sum) / static_cast<float>(C);
  for (int i = lane; i < C; i += 32) {
    const float g = (to_f32(dy[i]) * to_f32(weight[i]) - (to_f32(x[i]) * s) * dnorm_norm_mean) * s;
    dx[i] = from_f32<T>(to_f32(dx[i]) + g);
  }
}

template <typename T>
struct WeightGradValue {  // dy * normalised x
  const T* dout;
  const T* inp;
  const float* rstd;
  int C;
  __device__ float operator()(int r, int c) const {
    const int64_t i = static_cast<int64_t>(r) * C + c;
    return to_f32(dout[i]) * (to_f32(inp[i]) * rstd[r]);
  }
};

template <typename T>
void forward_impl(T* out, float* rstd, T* residual, const T* inp1, const T* inp2, const T* weight, int N, int C,
                  float eps, cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  const unsigned blocks = static_cast<unsigned>(cuda::ceil_div(N, kWarpsPerBlock));
  rmsnorm_forward_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(out, rstd, residual, inp1, inp2, weight, N, C,
                                                                     eps);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void backward_impl(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const float* rstd, int N, int C,
                   cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  if (dinp != nullptr) {
    const unsigned blocks = static_cast<unsigned>(cuda::ceil_div(N, kWarpsPerBlock));
    rmsnorm_backward_input_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(dinp, dout, inp, weight, rstd, N, C);
    TT_CUDA_LAUNCH_CHECK();
  }
  if (dweight == nullptr) return;
  const int chunks = cuda::column_reduce_chunks(N);
  float* partials = cuda::cuda_scratch_as<float>(cuda::ScratchSlot::kPartials, static_cast<size_t>(chunks) * C, stream);
  cuda::launch_column_partials(partials, N, C, WeightGradValue<T>{dout, inp, rstd, C}, stream);
  cuda::launch_accumulate_partials(dweight, partials, chunks, C, stream);
}

}  // namespace

void rmsnorm_forward_cuda(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps,
                          cudaStream_t stream) {
  forward_impl<float>(out, rstd, nullptr, inp, nullptr, weight, N, C, eps, stream);
}
void rmsnorm_forward_cuda(bf16* out, float* rstd, const bf16* inp, const bf16* weight, int N, int C, float eps,
                          cudaStream_t stream) {
  forward_impl<bf16>(out, rstd, nullptr, inp, nullptr, weight, N, C, eps, stream);
}
void fused_residual_rmsnorm_forward_cuda(float* residual, float* out, float* rstd, const float* inp1, const float* inp2,
                                         const float* weight, int N, int C, float eps, cudaStream_t stream) {
  forward_impl<float>(out, rstd, residual, inp1, inp2, weight, N, C, eps, stream);
}
void fused_residual_rmsnorm_forward_cuda(bf16* residual, bf16* out, float* rstd, const bf16* inp1, const bf16* inp2,
                                         const bf16* weight, int N, int C, float eps, cudaStream_t stream) {
  forward_impl<bf16>(out, rstd, residual, inp1, inp2, weight, N, C, eps, stream);
}
void rmsnorm_backward_cuda(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                           const float* rstd, int N, int C, cudaStream_t stream) {
  backward_impl(dinp, dweight, dout, inp, weight, rstd, N, C, stream);
}
void rmsnorm_backward_cuda(bf16* dinp, bf16* dweight, const bf16* dout, const bf16* inp, const bf16* weight,
                           const float* rstd, int N, int C, cudaStream_t stream) {
  backward_impl(dinp, dweight, dout, inp, weight, rstd, N, C, stream);
}

}  // namespace tt::kernels
