// CUDA fused softmax + cross-entropy + dlogits: one block per row.
// Design: pass 1 reads the row once and keeps an online (running max, running sum of exp) pair per
// thread, rescaling the sum whenever the max grows; the pairs are combined across the block in a
// fixed tree. Pass 2 writes dlogits = (exp(x - max) / sum - [j == target]) · dloss straight from
// the logits (the probabilities are never stored) and zeroes the padded columns V..Vp-1. In place
// is safe: each element is read and then written by the same thread, after the whole block has
// finished pass 1 (barrier in the block reduction), and the target logit is read in pass 1.
#include <cmath>

#include "kernels/common/cuda_common.cuh"
#include "kernels/softmax_cross_entropy/softmax_cross_entropy.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;

constexpr int kThreads = 512;

struct MaxSum {
  float m, s;  // running max and Σ exp(x - m)
};

// Combines two (max, sum) pairs; an empty pair has m = -inf, s = 0. The products use __fmul_rn so
// both orders of the operands give the same bits (no FMA contraction).
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  const float sa = a.m == -INFINITY ? 0.0f : __fmul_rn(a.s, expf(a.m - m));
  const float sb = b.m == -INFINITY ? 0.0f : __fmul_rn(b.s, expf(b.m - m));
  return {m, sa + sb};
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_cross_entropy_kernel(float* losses, T* dlogits, const T* logits, const int32_t* targets, int V, int Vp,
                                 float dloss) {
  __shared__ MaxSum warp_partials[32];
  __shared__ MaxSum total;
  __shared__ float x_target_shared;
  const int row = blockIdx.x;
  const T* x = logits + static_cast<int64_t>(row) * Vp;
  const int target = targets[row];
  const bool target_ok = target >= 0 && target < V;

  MaxSum acc{-INFINITY, 0.0f};
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    const float v = to_f32(x[j]);
    if (v > acc.m) {
      acc.s = (acc.m == -INFINITY ? 0.0f : acc.s * expf(acc.m - v)) + 1.0f;
      acc.m = v;
    } else if (acc.m != -INFINITY) {
      acc.s += expf(v - acc.m);
    }
  }
  if (threadIdx.x == 0) x_target_shared = target_ok ? to_f32(x[target]) : NAN;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, acc.m, o), __shfl_xor_sync(0xffffffffu, acc.s, o)};
    acc = combine(acc, other);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (lane == 0) warp_partials[warp] = acc;
  __syncthreads();  // every read of the row in pass 1 is complete after this barrier
  if (warp == 0) {
    MaxSum w = lane < warps ? warp_partials[lane] : MaxSum{-INFINITY, 0.0f};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      MaxSum other{__shfl_xor_sync(0xffffffffu, w.m, o), __shfl_xor_sync(0xffffffffu, w.s, o)};
      w = combine(w, other);
    }
    if (lane == 0) total = w;
  }
  __syncthreads();
  const float maxv = total.m, sum = total.s;
  if (threadIdx.x == 0 && losses != nullptr) losses[row] = logf(sum) - (x_target_shared - maxv);
  if (dlogits == nullptr) return;
  T* d = dlogits + static_cast<int64_t>(row) * Vp;
  const float p_scale = (1.0f / sum) * dloss;
  for (int j = threadIdx.x; j < Vp; j += blockDim.x) {
    float g = 0.0f;
    if (j < V) {
      g = expf(to_f32(x[j]) - maxv) * p_scale;
      if (j == target) g -= dloss;
    }
    d[j] = from_f32<T>(g);
  }
}

template <typename T>
void launch(float* losses, T* dlogits, const T* logits, const int32_t* targets, int N, int V, int Vp, float dloss,
            cudaStream_t stream) {
  TT_ASSERT(V > 0 && V <= Vp, "softmax_cross_entropy: V=", V, " Vp=", Vp);
  if (N <= 0 || (losses == nullptr && dlogits == nullptr)) return;
  softmax_cross_entropy_kernel<<<static_cast<unsigned>(N), kThreads, 0, stream>>>(losses, dlogits, logits, targets, V,
                                                                                  Vp, dloss);
  TT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void softmax_cross_entropy_cuda(float* losses, float* dlogits, const float* logits, const int32_t* targets, int N,
                                int V, int Vp, float dloss, cudaStream_t stream) {
  launch(losses, dlogits, logits, targets, N, V, Vp, dloss, stream);
}
void softmax_cross_entropy_cuda(float* losses, bf16* dlogits, const bf16* logits, const int32_t* targets, int N, int V,
                                int Vp, float dloss, cudaStream_t stream) {
  launch(losses, dlogits, logits, targets, N, V, Vp, dloss, stream);
}

}  // namespace tt::kernels
