// CUDA LayerNorm (forward, fused residual + forward, backward), fp32 or bf16 storage, fp32 math.
// Design: one warp per row for everything row-local (statistics, normalised output, input
// gradient): lanes stride over the channels and the warp butterfly-reduces, so no shared memory or
// block synchronisation is needed and any C works. Statistics use two passes (mean, then the
// centred variance) exactly as the CPU reference. The parameter gradients reduce over rows, which
// one warp per row cannot do without atomics, so they go through the deterministic two-pass column
// reduction of kernels/common/column_reduce.cuh.
#include "kernels/common/column_reduce.cuh"
#include "kernels/common/cuda_common.cuh"
#include "kernels/layernorm/layernorm.h"

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
__global__ void layernorm_forward_kernel(T* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                                         T* residual, const T* inp1, const T* inp2, const T* __restrict__ weight,
                                         const T* __restrict__ bias, int N, int C, float eps) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= N) return;  // warp-uniform
  const int64_t off = static_cast<int64_t>(row) * C;
  const T* x = inp1 + off;
  float sum = 0.0f;
  if (inp2 != nullptr) {
    T* r = residual + off;
    const T* y = inp2 + off;
    for (int i = lane; i < C; i += 32) {
      const T v = from_f32<T>(to_f32(x[i]) + to_f32(y[i]));
      r[i] = v;
      sum += to_f32(v);
    }
    x = r;  // statistics and output from the stored residual (each lane re-reads its own writes)
  } else {
    for (int i = lane; i < C; i += 32) sum += to_f32(x[i]);
  }
  const float m = warp_sum(sum) / static_cast<float>(C);
  float var = 0.0f;
  for (int i = lane; i < C; i += 32) {
    const float d = to_f32(x[i]) - m;
    var += d * d;
  }
  const float s = 1.0f / sqrtf(warp_sum(var) / static_cast<float>(C) + eps);
  T* o = out + off;
  for (int i = lane; i < C; i += 32) o[i] = from_f32<T>((to_f32(x[i]) - m) * s * to_f32(weight[i]) + to_f32(bias[i]));
  if (lane == 0) {
    if (mean != nullptr) mean[row] = m;
    if (rstd != nullptr) rstd[row] = s;
  }
}

template <typename T>
__global__ void layernorm_backward_input_kernel(T* __restrict__ dinp, const T* __restrict__ dout,
                                                const T* __restrict__ inp, const T* __restrict__ weight,
                                                const float* __restrict__ mean, const float* __restrict__ rstd, int N,
                                                int C) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= N) return;
  const int64_t off = static_cast<int64_t>(row) * C;
  const T* x = inp + off;
  const T* dy = dout + off;
  T* dx = dinp + off;
  const float m = mean[row], s = rstd[row];
  float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
  for (int i = lane; i < C; i += 32) {
    const float dnorm = to_f32(dy[i]) * to_f32(weight[i]);
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * (to_f32(x[i]) - m) * s;
  }
  const float dnorm_mean = warp_sum(dnorm_sum) / static_cast<float>(C);
  const float dnorm_norm_mean = warp_sum(dnorm_norm_sum) / static_cast<float>(C);
  for (int i = lane; i < C; i += 32) {
    const float norm = (to_f32(x[i]) - m) * s;
    const float g = (to_f32(dy[i]) * to_f32(weight[i]) - dnorm_mean - norm * dnorm_norm_mean) * s;
    dx[i] = from_f32<T>(to_f32(dx[i]) + g);
  }
}

template <typename T>
struct WeightGradValue {  // dy * normalised x
  const T* dout;
  const T* inp;
  const float* mean;
  const float* rstd;
  int C;
  __device__ float operator()(int r, int c) const {
    const int64_t i = static_cast<int64_t>(r) * C + c;
    return to_f32(dout[i]) * ((to_f32(inp[i]) - mean[r]) * rstd[r]);
  }
};

template <typename T>
void forward_impl(T* out, float* mean, float* rstd, T* residual, const T* inp1, const T* inp2, const T* weight,
                  const T* bias, int N, int C, float eps, cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  const unsigned blocks = static_cast<unsigned>(cuda::ceil_div(N, kWarpsPerBlock));
  layernorm_forward_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(out, mean, rstd, residual, inp1, inp2, weight,
                                                                       bias, N, C, eps);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void backward_impl(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const float* mean,
                   const float* rstd, int N, int C, cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  if (dinp != nullptr) {
    const unsigned blocks = static_cast<unsigned>(cuda::ceil_div(N, kWarpsPerBlock));
    layernorm_backward_input_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(dinp, dout, inp, weight, mean, rstd, N,
                                                                                C);
    TT_CUDA_LAUNCH_CHECK();
  }
  if (dweight == nullptr && dbias == nullptr) return;
  const int chunks = cuda::column_reduce_chunks(N);
  const size_t per = static_cast<size_t>(chunks) * C;
  float* partials = cuda::cuda_scratch_as<float>(cuda::ScratchSlot::kPartials, 2 * per, stream);
  if (dweight != nullptr) {
    cuda::launch_column_partials(partials, N, C, WeightGradValue<T>{dout, inp, mean, rstd, C}, stream);
    cuda::launch_accumulate_partials(dweight, partials, chunks, C, stream);
  }
  if (dbias != nullptr) {
    cuda::launch_column_partials(partials + per, N, C, cuda::RowMajorValue<T>{dout, C}, stream);
    cuda::launch_accumulate_partials(dbias, partials + per, chunks, C, stream);
  }
}

}  // namespace

void layernorm_forward_cuda(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                            const float* bias, int N, int C, float eps, cudaStream_t stream) {
  forward_impl<float>(out, mean, rstd, nullptr, inp, nullptr, weight, bias, N, C, eps, stream);
}
void layernorm_forward_cuda(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight, const bf16* bias,
                            int N, int C, float eps, cudaStream_t stream) {
  forward_impl<bf16>(out, mean, rstd, nullptr, inp, nullptr, weight, bias, N, C, eps, stream);
}
void fused_residual_layernorm_forward_cuda(float* residual, float* out, float* mean, float* rstd, const float* inp1,
                                           const float* inp2, const float* weight, const float* bias, int N, int C,
                                           float eps, cudaStream_t stream) {
  forward_impl<float>(out, mean, rstd, residual, inp1, inp2, weight, bias, N, C, eps, stream);
}
void fused_residual_layernorm_forward_cuda(bf16* residual, bf16* out, float* mean, float* rstd, const bf16* inp1,
                                           const bf16* inp2, const bf16* weight, const bf16* bias, int N, int C,
                                           float eps, cudaStream_t stream) {
  forward_impl<bf16>(out, mean, rstd, residual, inp1, inp2, weight, bias, N, C, eps, stream);
}
void layernorm_backward_cuda(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                             const float* weight, const float* mean, const float* rstd, int N, int C,
                             cudaStream_t stream) {
  backward_impl(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, stream);
}
void layernorm_backward_cuda(bf16* dinp, bf16* dweight, bf16* dbias, const bf16* dout, const bf16* inp,
                             const bf16* weight, const float* mean, const float* rstd, int N, int C,
                             cudaStream_t stream) {
  backward_impl(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, stream);
}

}  // namespace tt::kernels
