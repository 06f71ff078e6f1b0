// CUDA causal attention with grouped key/value heads: the public entry points, which dispatch bf16
// calls to cuDNN SDPA (attention_cudnn.cpp) when allowed and accepted, and the flash-style fallback:
// forward with an online softmax over K/V tiles (logsumexp saved) and a deterministic two-kernel
// backward (dk/dv owned by key tiles of one kv head, walking the query heads of its group in head
// order; dq owned by query tiles), fp32 accumulation, head size a template parameter (32, 64, 128).
// Design: plain fp32 FMAs on shared-memory tiles, no tensor cores: the fallback's job is to be
// obviously correct for any T (tails masked, causal tiles skipped) and never need O(T²) memory; the
// fast path is cuDNN SDPA.
// Shared-memory layouts are chosen so every hot read is either a broadcast (all lanes, one address)
// or conflict-free (rows padded to HS+1 floats where lanes index different rows).
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/logging.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_cudnn.h"
#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_scratch.cuh"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;

constexpr int kThreads = 128;  // 4 warps
constexpr int kWarps = kThreads / 32;
constexpr int kTileQ = 32;   // query rows per forward / dq block
constexpr int kTileK = 32;   // keys per tile (one per lane)
constexpr int kBatchQ = 16;  // query rows per step of the dk/dv kernel

// AttentionShape as the kernels see it (B is the grid's z); HD is also the kernels' HS template
// parameter. qkv rows are (NH + 2·NKV)·HD wide: query head h at column h·HD, key head g at
// NH·HD + g·HD, value head g at (NH + NKV)·HD + g·HD; out/dout rows are NH·HD wide.
struct Dims {
  int T, NH, NKV, HD;
  float scale;
  __host__ __device__ int group() const { return NH / NKV; }  // query heads per kv head
  __host__ __device__ int64_t row_stride() const { return static_cast<int64_t>(NH + 2 * NKV) * HD; }
  __host__ __device__ int64_t q_dim() const { return static_cast<int64_t>(NH) * HD; }
  __host__ __device__ int64_t q_col(int h) const { return static_cast<int64_t>(h) * HD; }
  __host__ __device__ int64_t k_col(int kvh) const { return static_cast<int64_t>(NH + kvh) * HD; }
  __host__ __device__ int64_t v_col(int kvh) const { return static_cast<int64_t>(NH + NKV + kvh) * HD; }
};

// Loads rows [t0, t0 + rows) of the qkv columns col .. col+HS-1 (one head of q, k or v) into
// dst[r * ld + d] as fp32; rows at or beyond T are zero-filled. All threads of the block participate.
template <typename S, int HS>
__device__ void load_tile(float* dst, int ld, const S* qkv, int b, int64_t col, int t0, int rows, const Dims& dm) {
  for (int idx = threadIdx.x; idx < rows * HS; idx += blockDim.x) {
    const int r = idx / HS, d = idx % HS, t = t0 + r;
    float v = 0.0f;
    if (t < dm.T) v = to_f32(qkv[(static_cast<int64_t>(b) * dm.T + t) * dm.row_stride() + col + d]);
    dst[r * ld + d] = v;
  }
}

// Same for query head h of a [B,T,NH·HD] tensor (dout, out).
template <typename S, int HS>
__device__ void load_rows(float* dst, int ld, const S* x, int b, int h, int t0, int rows, const Dims& dm) {
  for (int idx = threadIdx.x; idx < rows * HS; idx += blockDim.x) {
    const int r = idx / HS, d = idx % HS, t = t0 + r;
    float v = 0.0f;
    if (t < dm.T) v = to_f32(x[(static_cast<int64_t>(b) * dm.T + t) * dm.q_dim() + dm.q_col(h) + d]);
    dst[r * ld + d] = v;
  }
}

// ---- forward ---------------------------------------------------------------------------------

template <int HS>
constexpr size_t forward_smem_bytes() {
  return sizeof(float) * (kTileQ * HS + kTileK * (HS + 1) + kTileK * HS);
}

// grid (ceil(T / kTileQ), NH, B); the block reads the K/V of kv head h / group. Warp w owns query
// rows w*R .. w*R+R-1 of the tile, R = 8; lane = key within a K tile for the scores, lane = output
// dims lane + 32*j for the accumulation.
template <typename S, int HS>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(S* out, float* lse, const S* qkv, Dims dm) {
  constexpr int R = kTileQ / kWarps;
  constexpr int DPL = HS / 32;  // output dims per lane
  extern __shared__ float smem[];
  float* Qs = smem;                    // [kTileQ][HS]
  float* Ks = Qs + kTileQ * HS;        // [kTileK][HS + 1]
  float* Vs = Ks + kTileK * (HS + 1);  // [kTileK][HS]
  const int q0 = blockIdx.x * kTileQ, h = blockIdx.y, b = blockIdx.z, kvh = h / dm.group();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  load_tile<S, HS>(Qs, HS, qkv, b, dm.q_col(h), q0, kTileQ, dm);
  float m[R], l[R], o[R][DPL];
#pragma unroll
  for (int j = 0; j < R; ++j) {
    m[j] = -INFINITY;
    l[j] = 0.0f;
#pragma unroll
    for (int e = 0; e < DPL; ++e) o[j][e] = 0.0f;
  }
  const int last = min(dm.T - 1, q0 + kTileQ - 1);  // last query row of this block
  for (int k0 = 0; k0 <= last; k0 += kTileK) {
    __syncthreads();  // previous tile fully consumed (and Qs loaded, first time round)
    load_tile<S, HS>(Ks, HS + 1, qkv, b, dm.k_col(kvh), k0, kTileK, dm);
    load_tile<S, HS>(Vs, HS, qkv, b, dm.v_col(kvh), k0, kTileK, dm);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < R; ++j) {
      const int r = warp * R + j, t = q0 + r;
      if (t >= dm.T || k0 > t) continue;  // warp-uniform: row past the end / tile entirely in the future
      const int key = k0 + lane;
      float s = -INFINITY;
      if (key <= t) {
        float dot = 0.0f;
#pragma unroll 8
        for (int i = 0; i < HS; ++i) dot += Qs[r * HS + i] * Ks[lane * (HS + 1) + i];
        s = dot * dm.scale;
      }
      const float m_new = fmaxf(m[j], cuda::warp_max(s));  // finite: key k0 <= t is in this tile
      const float p = key <= t ? expf(s - m_new) : 0.0f;
      const float alpha = expf(m[j] - m_new);  // 0 on the first tile (m = -inf)
      l[j] = l[j] * alpha + cuda::warp_sum(p);
#pragma unroll
      for (int e = 0; e < DPL; ++e) o[j][e] *= alpha;
      const int keys = min(kTileK, t - k0 + 1);
      for (int kk = 0; kk < keys; ++kk) {
        const float pk = __shfl_sync(0xffffffffu, p, kk);
#pragma unroll
        for (int e = 0; e < DPL; ++e) o[j][e] += pk * Vs[kk * HS + lane + 32 * e];
      }
      m[j] = m_new;
    }
  }
#pragma unroll
  for (int j = 0; j < R; ++j) {
    const int t = q0 + warp * R + j;
    if (t >= dm.T) continue;
    const float inv = 1.0f / l[j];
    S* orow = out + (static_cast<int64_t>(b) * dm.T + t) * dm.q_dim() + dm.q_col(h);
#pragma unroll
    for (int e = 0; e < DPL; ++e) orow[lane + 32 * e] = from_f32<S>(o[j][e] * inv);
    if (lane == 0) lse[(static_cast<int64_t>(b) * dm.NH + h) * dm.T + t] = m[j] + logf(l[j]);
  }
}

// ---- backward --------------------------------------------------------------------------------

// D[b,h,t] = Σ_d dout·out over the head's dims; one warp per (b, t, h).
template <typename S, int HS>
__global__ void attention_backward_rowdot_kernel(float* D, const S* dout, const S* out, int B, Dims dm) {
  const int lane = threadIdx.x % 32;
  const int64_t w = blockIdx.x * int64_t{kWarps} + threadIdx.x / 32;  // (b * T + t) * NH + h
  if (w >= static_cast<int64_t>(B) * dm.T * dm.NH) return;
  const int h = static_cast<int>(w % dm.NH);
  const int64_t bt = w / dm.NH;
  const int64_t off = bt * dm.q_dim() + dm.q_col(h);
  float s = 0.0f;
#pragma unroll
  for (int e = 0; e < HS / 32; ++e) s += to_f32(dout[off + lane + 32 * e]) * to_f32(out[off + lane + 32 * e]);
  s = cuda::warp_sum(s);
  const int64_t b = bt / dm.T, t = bt % dm.T;
  if (lane == 0) D[(b * dm.NH + h) * dm.T + t] = s;
}

template <int HS>
constexpr size_t dkdv_smem_bytes() {
  return sizeof(float) * (2 * kTileK * (HS + 1) + 2 * kBatchQ * HS + 2 * kBatchQ * kTileK + 2 * kBatchQ);
}

// grid (ceil(T / kTileK), NKV, B): the block owns keys k0 .. k0+31 of kv head kvh and, for each query
// head h of its group in head order, walks the query rows t >= k0 in batches of kBatchQ. Phase 1:
// thread (key kk = tid % 32, rows tid/32 + 4j) computes P and dS for its (row, key) pairs. Phase 2:
// thread (key kk, dims tid/32 + 4e) accumulates dv += P·dO and dk += dS·Q over the batch rows in
// order. dk, dv stay in registers across the group's heads: one fixed summation order, no atomics.
template <typename S, int HS>
__global__ void __launch_bounds__(kThreads)
    attention_backward_dkdv_kernel(S* dqkv, const S* dout, const S* qkv, const float* lse, const float* D, Dims dm) {
  constexpr int DPT = HS / kWarps;  // dims per thread in phase 2
  extern __shared__ float smem[];
  float* Ks = smem;                       // [kTileK][HS + 1]
  float* Vs = Ks + kTileK * (HS + 1);     // [kTileK][HS + 1]
  float* Qs = Vs + kTileK * (HS + 1);     // [kBatchQ][HS]
  float* dOs = Qs + kBatchQ * HS;         // [kBatchQ][HS]
  float* Ps = dOs + kBatchQ * HS;         // [kBatchQ][kTileK]
  float* dSs = Ps + kBatchQ * kTileK;     // [kBatchQ][kTileK]
  float* lse_s = dSs + kBatchQ * kTileK;  // [kBatchQ]
  float* D_s = lse_s + kBatchQ;           // [kBatchQ]
  const int k0 = blockIdx.x * kTileK, kvh = blockIdx.y, b = blockIdx.z;
  const int kk = threadIdx.x % 32, warp = threadIdx.x / 32;

  load_tile<S, HS>(Ks, HS + 1, qkv, b, dm.k_col(kvh), k0, kTileK, dm);
  load_tile<S, HS>(Vs, HS + 1, qkv, b, dm.v_col(kvh), k0, kTileK, dm);
  float dk[DPT], dv[DPT];
#pragma unroll
  for (int e = 0; e < DPT; ++e) dk[e] = dv[e] = 0.0f;
  const int key = k0 + kk;

  const int h_end = (kvh + 1) * dm.group();
  for (int h = kvh * dm.group(); h < h_end; ++h) {
    const int64_t stat0 = (static_cast<int64_t>(b) * dm.NH + h) * dm.T;
    for (int t0 = k0; t0 < dm.T; t0 += kBatchQ) {
      __syncthreads();  // previous batch consumed (K/V loaded, first time round)
      load_tile<S, HS>(Qs, HS, qkv, b, dm.q_col(h), t0, kBatchQ, dm);
      load_rows<S, HS>(dOs, HS, dout, b, h, t0, kBatchQ, dm);
      if (threadIdx.x < kBatchQ) {
        const int t = t0 + threadIdx.x;
        lse_s[threadIdx.x] = t < dm.T ? lse[stat0 + t] : 0.0f;
        D_s[threadIdx.x] = t < dm.T ? D[stat0 + t] : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int j = 0; j < kBatchQ / kWarps; ++j) {
        const int r = warp + kWarps * j, t = t0 + r;
        float p = 0.0f, ds = 0.0f;
        if (t < dm.T && key <= t) {
          float qk = 0.0f, dp = 0.0f;
#pragma unroll 8
          for (int i = 0; i < HS; ++i) {
            qk += Qs[r * HS + i] * Ks[kk * (HS + 1) + i];
            dp += dOs[r * HS + i] * Vs[kk * (HS + 1) + i];
          }
          p = expf(qk * dm.scale - lse_s[r]);
          ds = p * (dp - D_s[r]);
        }
        Ps[r * kTileK + kk] = p;
        dSs[r * kTileK + kk] = ds;
      }
      __syncthreads();
      for (int r = 0; r < kBatchQ; ++r) {
        const float p = Ps[r * kTileK + kk], ds = dSs[r * kTileK + kk];
#pragma unroll
        for (int e = 0; e < DPT; ++e) {
          const int d = warp + kWarps * e;
          dv[e] += p * dOs[r * HS + d];
          dk[e] += ds * Qs[r * HS + d];
        }
      }
    }
  }
  if (key >= dm.T) return;
  S* row = dqkv + (static_cast<int64_t>(b) * dm.T + key) * dm.row_stride();
  S* krow = row + dm.k_col(kvh);
  S* vrow = row + dm.v_col(kvh);
#pragma unroll
  for (int e = 0; e < DPT; ++e) {
    const int d = warp + kWarps * e;
    krow[d] = from_f32<S>(to_f32(krow[d]) + dk[e] * dm.scale);
    vrow[d] = from_f32<S>(to_f32(vrow[d]) + dv[e]);
  }
}

template <int HS>
constexpr size_t dq_smem_bytes() {
  return sizeof(float) * (2 * kTileQ * HS + 2 * kTileK * (HS + 1) + kTileQ * (kTileK + 1) + 2 * kTileQ);
}

// grid (ceil(T / kTileQ), NH, B): the block owns query rows q0 .. q0+31 of query head h and walks
// the key tiles of kv head h / group up to the diagonal. Phase 1: thread (key kk = tid % 32, rows
// tid/32 + 4j) computes dS. Phase 2: thread (row r = tid % 32, dims tid/32 + 4e) accumulates
// dq += dS·K over the tile's keys in order.
template <typename S, int HS>
__global__ void __launch_bounds__(kThreads)
    attention_backward_dq_kernel(S* dqkv, const S* dout, const S* qkv, const float* lse, const float* D, Dims dm) {
  constexpr int DPT = HS / kWarps;
  extern __shared__ float smem[];
  float* Qs = smem;                     // [kTileQ][HS]
  float* dOs = Qs + kTileQ * HS;        // [kTileQ][HS]
  float* Ks = dOs + kTileQ * HS;        // [kTileK][HS + 1]
  float* Vs = Ks + kTileK * (HS + 1);   // [kTileK][HS + 1]
  float* dSs = Vs + kTileK * (HS + 1);  // [kTileQ][kTileK + 1]
  float* lse_s = dSs + kTileQ * (kTileK + 1);
  float* D_s = lse_s + kTileQ;
  const int q0 = blockIdx.x * kTileQ, h = blockIdx.y, b = blockIdx.z, kvh = h / dm.group();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t stat0 = (static_cast<int64_t>(b) * dm.NH + h) * dm.T;

  load_tile<S, HS>(Qs, HS, qkv, b, dm.q_col(h), q0, kTileQ, dm);
  load_rows<S, HS>(dOs, HS, dout, b, h, q0, kTileQ, dm);
  if (threadIdx.x < kTileQ) {
    const int t = q0 + threadIdx.x;
    lse_s[threadIdx.x] = t < dm.T ? lse[stat0 + t] : 0.0f;
    D_s[threadIdx.x] = t < dm.T ? D[stat0 + t] : 0.0f;
  }
  float dq[DPT];
#pragma unroll
  for (int e = 0; e < DPT; ++e) dq[e] = 0.0f;
  const int last = min(dm.T - 1, q0 + kTileQ - 1);
  for (int k0 = 0; k0 <= last; k0 += kTileK) {
    __syncthreads();
    load_tile<S, HS>(Ks, HS + 1, qkv, b, dm.k_col(kvh), k0, kTileK, dm);
    load_tile<S, HS>(Vs, HS + 1, qkv, b, dm.v_col(kvh), k0, kTileK, dm);
    __syncthreads();
    const int key = k0 + lane;
#pragma unroll
    for (int j = 0; j < kTileQ / kWarps; ++j) {
      const int r = warp + kWarps * j, t = q0 + r;
      float ds = 0.0f;
      if (t < dm.T && key <= t) {
        float qk = 0.0f, dp = 0.0f;
#pragma unroll 8
        for (int i = 0; i < HS; ++i) {
          qk += Qs[r * HS + i] * Ks[lane * (HS + 1) + i];
          dp += dOs[r * HS + i] * Vs[lane * (HS + 1) + i];
        }
        const float p = expf(qk * dm.scale - lse_s[r]);
        ds = p * (dp - D_s[r]);
      }
      dSs[r * (kTileK + 1) + lane] = ds;
    }
    __syncthreads();
    const int r = lane;  // phase 2 row
    for (int k = 0; k < kTileK; ++k) {
      const float ds = dSs[r * (kTileK + 1) + k];
#pragma unroll
      for (int e = 0; e < DPT; ++e) dq[e] += ds * Ks[k * (HS + 1) + warp + kWarps * e];
    }
  }
  const int t = q0 + lane;
  if (t >= dm.T) return;
  S* qrow = dqkv + (static_cast<int64_t>(b) * dm.T + t) * dm.row_stride() + dm.q_col(h);
#pragma unroll
  for (int e = 0; e < DPT; ++e) {
    const int d = warp + kWarps * e;
    qrow[d] = from_f32<S>(to_f32(qrow[d]) + dq[e] * dm.scale);
  }
}

// ---- launch ----------------------------------------------------------------------------------

template <typename Kernel>
void allow_smem(Kernel kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    TT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

Dims make_dims(const AttentionShape& s) {
  TT_ASSERT(s.B >= 0 && s.T >= 0 && s.NH > 0 && s.NKV > 0 && s.HD > 0 && s.NH % s.NKV == 0,
            "attention_cuda: bad shape B=", s.B, " T=", s.T, " NH=", s.NH, " NKV=", s.NKV, " HD=", s.HD,
            " (NKV must divide NH)");
  return Dims{s.T, s.NH, s.NKV, s.HD, 1.0f / std::sqrt(static_cast<float>(s.HD))};
}

[[noreturn]] void unsupported_head_size(int hs) {
  throw Error(ErrorKind::kConfig, str("attention_cuda: head size ", hs, " is not supported"), "",
              "the CUDA attention kernels are compiled for head sizes 32, 64 and 128; pick the head size among them");
}

template <typename S, int HS>
void forward_hs(S* out, float* lse, const S* qkv, int B, const Dims& dm, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(cuda::ceil_div(dm.T, kTileQ)), dm.NH, B);
  constexpr size_t smem = forward_smem_bytes<HS>();
  allow_smem(attention_forward_kernel<S, HS>, smem);
  attention_forward_kernel<S, HS><<<grid, kThreads, smem, stream>>>(out, lse, qkv, dm);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename S, int HS>
void backward_hs(S* dqkv, const S* dout, const S* qkv, const S* out, const float* lse, int B, const Dims& dm,
                 cudaStream_t stream) {
  const int64_t rows = static_cast<int64_t>(B) * dm.T * dm.NH;
  float* D = cuda::cuda_scratch_as<float>(cuda::ScratchSlot::kRowStats, static_cast<size_t>(rows), stream);
  attention_backward_rowdot_kernel<S, HS>
      <<<static_cast<unsigned>(cuda::ceil_div(rows, kWarps)), kThreads, 0, stream>>>(D, dout, out, B, dm);
  TT_CUDA_LAUNCH_CHECK();

  const dim3 grid_k(static_cast<unsigned>(cuda::ceil_div(dm.T, kTileK)), dm.NKV, B);
  constexpr size_t smem_k = dkdv_smem_bytes<HS>();
  allow_smem(attention_backward_dkdv_kernel<S, HS>, smem_k);
  attention_backward_dkdv_kernel<S, HS><<<grid_k, kThreads, smem_k, stream>>>(dqkv, dout, qkv, lse, D, dm);
  TT_CUDA_LAUNCH_CHECK();

  const dim3 grid_q(static_cast<unsigned>(cuda::ceil_div(dm.T, kTileQ)), dm.NH, B);
  constexpr size_t smem_q = dq_smem_bytes<HS>();
  allow_smem(attention_backward_dq_kernel<S, HS>, smem_q);
  attention_backward_dq_kernel<S, HS><<<grid_q, kThreads, smem_q, stream>>>(dqkv, dout, qkv, lse, D, dm);
  TT_CUDA_LAUNCH_CHECK();
}

// ---- dispatch --------------------------------------------------------------------------------

std::atomic<int> g_backend{-1};  // AttentionBackend, or -1 before TOPOTRAIN_ATTENTION was read
thread_local AttentionImpl t_last_impl = AttentionImpl::kNone;

// Logs a cuDNN refusal once per distinct reason (the reasons name the shape).
void warn_fallback_once(const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(why).second) log_warn("attention: ", why, "; using the flash attention kernel instead");
}

// Runs `call` (a cudnn_sdpa function taking the refusal reason) when the backend allows it; true
// when cuDNN did the work, false when the flash kernel must.
template <typename Call>
bool via_cudnn(const Call& call) {
  const AttentionBackend backend = attention_backend();
  if (backend == AttentionBackend::kFlash) return false;
  if (backend == AttentionBackend::kAuto && !cudnn_sdpa::compiled()) return false;
  std::string why;
  if (call(&why)) {
    t_last_impl = AttentionImpl::kCudnn;
    return true;
  }
  if (backend == AttentionBackend::kCudnn)
    throw Error(ErrorKind::kConfig, str("attention backend 'cudnn' cannot run this call: ", why), "",
                "use TOPOTRAIN_ATTENTION=auto (falls back to the flash kernel) or flash");
  warn_fallback_once(why);
  return false;
}

template <typename S>
void forward(S* out, float* lse, const S* qkv, const AttentionShape& s, cudaStream_t stream) {
  const Dims dm = make_dims(s);
  if (s.B <= 0 || s.T <= 0) return;
  if constexpr (std::is_same_v<S, bf16>) {
    if (via_cudnn([&](std::string* why) { return cudnn_sdpa::forward(out, lse, qkv, s, stream, why); })) return;
  }
  t_last_impl = AttentionImpl::kFlash;
  TT_ASSERT(s.NH <= 65535 && s.B <= 65535, "attention_cuda: B=", s.B, " NH=", s.NH, " exceed the grid limits");
  switch (s.HD) {
    case 32:
      return forward_hs<S, 32>(out, lse, qkv, s.B, dm, stream);
    case 64:
      return forward_hs<S, 64>(out, lse, qkv, s.B, dm, stream);
    case 128:
      return forward_hs<S, 128>(out, lse, qkv, s.B, dm, stream);
    default:
      unsupported_head_size(s.HD);
  }
}

template <typename S>
void backward(S* dqkv, const S* dout, const S* qkv, const S* out, const float* lse, const AttentionShape& s,
              cudaStream_t stream) {
  if (dqkv == nullptr) return;
  const Dims dm = make_dims(s);
  if (s.B <= 0 || s.T <= 0) return;
  if constexpr (std::is_same_v<S, bf16>) {
    if (via_cudnn([&](std::string* why) { return cudnn_sdpa::backward(dqkv, dout, qkv, out, lse, s, stream, why); }))
      return;
  }
  t_last_impl = AttentionImpl::kFlash;
  TT_ASSERT(s.NH <= 65535 && s.B <= 65535, "attention_cuda: B=", s.B, " NH=", s.NH, " exceed the grid limits");
  switch (s.HD) {
    case 32:
      return backward_hs<S, 32>(dqkv, dout, qkv, out, lse, s.B, dm, stream);
    case 64:
      return backward_hs<S, 64>(dqkv, dout, qkv, out, lse, s.B, dm, stream);
    case 128:
      return backward_hs<S, 128>(dqkv, dout, qkv, out, lse, s.B, dm, stream);
    default:
      unsupported_head_size(s.HD);
  }
}

}  // namespace

void attention_forward_cuda(float* out, float* lse, const float* qkv, const AttentionShape& s, cudaStream_t stream) {
  forward(out, lse, qkv, s, stream);
}
void attention_forward_cuda(bf16* out, float* lse, const bf16* qkv, const AttentionShape& s, cudaStream_t stream) {
  forward(out, lse, qkv, s, stream);
}
void attention_backward_cuda(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                             const AttentionShape& s, cudaStream_t stream) {
  backward(dqkv, dout, qkv, out, lse, s, stream);
}
void attention_backward_cuda(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                             const AttentionShape& s, cudaStream_t stream) {
  backward(dqkv, dout, qkv, out, lse, s, stream);
}

AttentionBackend parse_attention_backend(const std::string& name) {
  if (name == "auto") return AttentionBackend::kAuto;
  if (name == "flash") return AttentionBackend::kFlash;
  if (name == "cudnn") return AttentionBackend::kCudnn;
  throw Error(ErrorKind::kConfig, str("unknown attention backend '", name, "'"), "TOPOTRAIN_ATTENTION",
              "use auto, flash or cudnn");
}

const char* attention_backend_name(AttentionBackend backend) {
  switch (backend) {
    case AttentionBackend::kFlash:
      return "flash";
    case AttentionBackend::kCudnn:
      return "cudnn";
    case AttentionBackend::kAuto:
      break;
  }
  return "auto";
}

void set_attention_backend(AttentionBackend backend) { g_backend.store(static_cast<int>(backend)); }

AttentionBackend attention_backend() {
  int b = g_backend.load();
  if (b < 0) {
    const char* env = std::getenv("TOPOTRAIN_ATTENTION");
    const AttentionBackend parsed =
        env == nullptr || *env == '\0' ? AttentionBackend::kAuto : parse_attention_backend(env);
    int expected = -1;  // a concurrent set_attention_backend() wins
    g_backend.compare_exchange_strong(expected, static_cast<int>(parsed));
    b = g_backend.load();
  }
  return static_cast<AttentionBackend>(b);
}

AttentionImpl last_attention_impl() { return t_last_impl; }

bool cudnn_sdpa_compiled() { return cudnn_sdpa::compiled(); }
std::string cudnn_sdpa_version() { return cudnn_sdpa::version_string(); }

}  // namespace tt::kernels
