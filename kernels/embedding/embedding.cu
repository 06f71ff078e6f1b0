// CUDA token + position embedding. Forward is a gather (one thread per output element). Backward
// is the sort-free, deterministic vocabulary-bucket scheme described in embedding.h: the scatter of
// dout rows into repeated dwte rows becomes, per block, an ordered scan of the tokens plus
// shared-memory accumulation, so no float atomics and no sort are needed.
#include "kernels/common/cuda_common.cuh"
#include "kernels/embedding/embedding.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;

constexpr int kThreads = 256;
constexpr int kBucketRows = 32;  // vocabulary rows per block: one bit each in a uint32_t mask
constexpr int kColumnTile = kThreads;

template <typename S>
__global__ void embedding_forward_kernel(S* out, const int32_t* tokens, const S* wte, const S* wpe, int T, int C,
                                         int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / C;
    const int c = static_cast<int>(i - row * C);
    const int t = static_cast<int>(row % T);
    const S token = wte[static_cast<int64_t>(tokens[row]) * C + c];
    out[i] = wpe == nullptr ? token : from_f32<S>(to_f32(token) + to_f32(wpe[static_cast<int64_t>(t) * C + c]));
  }
}

// dwpe[t, c] += Σ_b dout[b, t, c], b in order.
template <typename S>
__global__ void embedding_backward_wpe_kernel(S* dwpe, const S* dout, int B, int T, int C) {
  const int64_t n = static_cast<int64_t>(T) * C;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    float acc = to_f32(dwpe[i]);
    for (int b = 0; b < B; ++b) acc += to_f32(dout[static_cast<int64_t>(b) * n + i]);
    dwpe[i] = from_f32<S>(acc);
  }
}

// Block (blockIdx.x = bucket of kBucketRows vocabulary rows, blockIdx.y = tile of kColumnTile
// channels); thread = one channel. See embedding.h for the method.
template <typename S>
__global__ void __launch_bounds__(kThreads)
    embedding_backward_wte_kernel(S* dwte, const S* dout, const int32_t* tokens, int64_t rows, int C, int Vp) {
  __shared__ float acc[kBucketRows][kColumnTile];
  __shared__ int64_t match_row[kThreads];     // token position of each match in this chunk, in order
  __shared__ int match_bucket_row[kThreads];  // its row within the bucket
  __shared__ int warp_count[kThreads / 32];
  const int v0 = blockIdx.x * kBucketRows;
  const int c = blockIdx.y * kColumnTile + threadIdx.x;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint32_t touched = 0;  // bit r: acc[r][threadIdx.x] holds dwte's value plus the matches so far

  for (int64_t base = 0; base < rows; base += kThreads) {
    const int64_t i = base + threadIdx.x;
    const int tok = i < rows ? tokens[i] : -1;
    const bool match = tok >= v0 && tok < min(v0 + kBucketRows, Vp);
    const uint32_t mask = __ballot_sync(0xffffffffu, match);
    if (lane == 0) warp_count[warp] = __popc(mask);
    __syncthreads();
    int offset = 0, total = 0;
    for (int w = 0; w < kThreads / 32; ++w) {
      offset += w < warp ? warp_count[w] : 0;
      total += warp_count[w];
    }
    if (match) {
      const int pos = offset + __popc(mask & ((1u << lane) - 1u));
      match_row[pos] = i;
      match_bucket_row[pos] = tok - v0;
    }
    __syncthreads();
    if (c < C) {
      for (int k = 0; k < total; ++k) {  // index order
        const int r = match_bucket_row[k];
        const float g = to_f32(dout[match_row[k] * C + c]);
        if (touched & (1u << r)) {
          acc[r][threadIdx.x] += g;
        } else {
          acc[r][threadIdx.x] = to_f32(dwte[static_cast<int64_t>(v0 + r) * C + c]) + g;
          touched |= 1u << r;
        }
      }
    }
    __syncthreads();  // match lists and warp_count are rewritten by the next chunk
  }
  if (c >= C) return;
  for (int r = 0; r < kBucketRows; ++r)
    if (touched & (1u << r)) dwte[static_cast<int64_t>(v0 + r) * C + c] = from_f32<S>(acc[r][threadIdx.x]);
}

template <typename S>
void forward(S* out, const int32_t* tokens, const S* wte, const S* wpe, int B, int T, int C, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(B) * T * C;
  if (n <= 0) return;
  embedding_forward_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(out, tokens, wte, wpe, T, C,
                                                                                           n);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename S>
void backward(S* dwte, S* dwpe, const S* dout, const int32_t* tokens, int B, int T, int C, int Vp,
              cudaStream_t stream) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  if (dwpe != nullptr) {
    const int64_t n = static_cast<int64_t>(T) * C;
    embedding_backward_wpe_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(dwpe, dout, B, T, C);
    TT_CUDA_LAUNCH_CHECK();
  }
  if (dwte != nullptr) {
    TT_ASSERT(Vp > 0, "embedding_backward_cuda: Vp=", Vp);
    const dim3 grid(static_cast<unsigned>(cuda::ceil_div(Vp, kBucketRows)),
                    static_cast<unsigned>(cuda::ceil_div(C, kColumnTile)));
    TT_ASSERT(grid.y <= 65535, "embedding_backward_cuda: C=", C, " too large");
    embedding_backward_wte_kernel<<<grid, kThreads, 0, stream>>>(dwte, dout, tokens, static_cast<int64_t>(B) * T, C,
                                                                 Vp);
    TT_CUDA_LAUNCH_CHECK();
  }
}

}  // namespace

void embedding_forward_cuda(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C,
                            cudaStream_t stream) {
  forward(out, tokens, wte, wpe, B, T, C, stream);
}
void embedding_forward_cuda(bf16* out, const int32_t* tokens, const bf16* wte, const bf16* wpe, int B, int T, int C,
                            cudaStream_t stream) {
  forward(out, tokens, wte, wpe, B, T, C, stream);
}
void embedding_backward_cuda(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T, int C,
                             int Vp, cudaStream_t stream) {
  backward(dwte, dwpe, dout, tokens, B, T, C, Vp, stream);
}
void embedding_backward_cuda(bf16* dwte, bf16* dwpe, const bf16* dout, const int32_t* tokens, int B, int T, int C,
                             int Vp, cudaStream_t stream) {
  backward(dwte, dwpe, dout, tokens, B, T, C, Vp, stream);
}

}  // namespace tt::kernels
