// The CUDA GradCodec (see grad_codec.h): compression.h's payload format and arithmetic as kernels
// on one stream. Bit-identical to the CPU codec: explicit round-to-nearest intrinsics (__fmul_rn,
// __fadd_rn, __fsub_rn) keep nvcc from contracting into fused multiply-adds, IEEE division for
// the inverse scale, and compression.h's 1-byte codes (encode_block_code / decode_block_code, the
// same functions as the CPU). int8 and fp8: one 256-thread block per quantisation block
// (kInt8Block elements), absmax by a block reduction.
#include "core/dtype.h"
#include "kernels/common/cuda_common.cuh"
#include "parallel/ddp/grad_codec.h"

namespace tt::parallel {

namespace {

using kernels::cuda::bf16;
using kernels::cuda::elementwise_blocks;
using kernels::cuda::from_f32;
using kernels::cuda::to_f32;

constexpr int kThreads = 256;
static_assert(kInt8Block == kThreads, "one thread per element of a scale block");

// Blocks of an int8 / fp8 payload of n elements; its scales come first.
__host__ __device__ __forceinline__ int64_t int8_blocks(int64_t n) { return (n + kInt8Block - 1) / kInt8Block; }

__device__ __forceinline__ float block_max(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = kernels::cuda::warp_max(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float m = lane < kThreads / 32 ? shared[lane] : 0.0f;
  return kernels::cuda::warp_max(m);
}

// x (+ residual) of element i, in fp32; x holds the sum afterwards when it is fp32 (as on the CPU).
template <typename T>
__device__ __forceinline__ float load_with_feedback(T* x, const float* residual, int64_t i) {
  float v = to_f32(x[i]);
  if (residual) v = __fadd_rn(v, residual[i]);
  return v;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    compress_blocks_kernel(T* x, float* residual, int64_t n, GradCompression c, uint8_t* out) {
  __shared__ float shared[kThreads / 32];
  const int64_t blocks = int8_blocks(n);
  const int64_t i = blockIdx.x * int64_t{kInt8Block} + threadIdx.x;
  const bool in = i < n;
  const float v = in ? load_with_feedback(x, residual, i) : 0.0f;
  const float absmax = block_max(in ? fabsf(v) : 0.0f, shared);
  const float scale = absmax / block_code_max(c);
  float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  if (!isfinite(inv)) inv = 0.0f;  // subnormal scale: as compression.cpp's inverse_scale
  if (threadIdx.x == 0) reinterpret_cast<float*>(out)[blockIdx.x] = scale;
  if (!in) return;
  const uint8_t q = encode_block_code(__fmul_rn(v, inv), c);
  out[blocks * 4 + i] = q;
  if (residual) residual[i] = __fsub_rn(v, __fmul_rn(scale, decode_block_code(q, c)));
}

template <typename T>
__global__ void compress_bf16_kernel(T* x, float* residual, int64_t n, bf16* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const float v = load_with_feedback(x, residual, i);
    const bf16 o = __float2bfloat16_rn(v);
    out[i] = o;
    if (residual) residual[i] = __fsub_rn(v, __bfloat162float(o));
  }
}

// deQ(in)[i] of a payload of n elements, times `scale` as the CPU does: bf16 scale * value;
// int8 / fp8 (scale * block scale) * value.
__device__ __forceinline__ float value(const uint8_t* in, int64_t n, int64_t i, GradCompression c, float scale) {
  if (c == GradCompression::kBf16) return __fmul_rn(scale, __bfloat162float(reinterpret_cast<const bf16*>(in)[i]));
  const int64_t blocks = int8_blocks(n);
  const float s = __fmul_rn(scale, reinterpret_cast<const float*>(in)[i / kInt8Block]);
  return __fmul_rn(s, decode_block_code(in[blocks * 4 + i], c));
}

__global__ void decompress_add_kernel(const uint8_t* in, int64_t n, GradCompression c, float scale, float* acc) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    acc[i] = __fadd_rn(acc[i], value(in, n, i, c, scale));
}

template <typename T>
__global__ void decompress_kernel(const uint8_t* in, int64_t n, GradCompression c, T* x) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    x[i] = from_f32<T>(__fadd_rn(0.0f, value(in, n, i, c, 1.0f)));  // 0 + d as the CPU codec (-0 becomes +0)
}

template <typename T>
__global__ void accumulate_kernel(T* acc, const T* in, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    acc[i] = from_f32<T>(__fadd_rn(to_f32(acc[i]), to_f32(in[i])));
}

class CudaGradCodec final : public GradCodec {
 public:
  CudaGradCodec(GradCompression c, Device device, cudaStream_t stream) : GradCodec(c, device), stream_(stream) {}

  void compress(void* x, DType dtype, float* residual, int64_t n, uint8_t* out) override {
    if (n <= 0) return;
    if (dtype == DType::kF32)
      compress_typed(static_cast<float*>(x), residual, n, out);
    else
      compress_typed(static_cast<bf16*>(x), residual, n, out);
  }

  void decompress_add(const uint8_t* in, int64_t n, float scale, float* acc) override {
    TT_ASSERT(compression() != GradCompression::kNone, "GradCodec::decompress_add without a compression");
    if (n <= 0) return;
    decompress_add_kernel<<<grid(n), kThreads, 0, stream_>>>(in, n, compression(), scale, acc);
    TT_CUDA_LAUNCH_CHECK();
  }

  void decompress(const uint8_t* in, int64_t n, void* x, DType dtype) override {
    TT_ASSERT(compression() != GradCompression::kNone, "GradCodec::decompress without a compression");
    if (n <= 0) return;
    if (dtype == DType::kF32)
      decompress_typed(in, n, static_cast<float*>(x));
    else
      decompress_typed(in, n, static_cast<bf16*>(x));
  }

  void accumulate(void* acc, const void* in, int64_t n, DType dtype) override {
    if (n <= 0) return;
    if (dtype == DType::kF32)
      accumulate_kernel<<<grid(n), kThreads, 0, stream_>>>(static_cast<float*>(acc), static_cast<const float*>(in), n);
    else
      accumulate_kernel<<<grid(n), kThreads, 0, stream_>>>(static_cast<bf16*>(acc), static_cast<const bf16*>(in), n);
    TT_CUDA_LAUNCH_CHECK();
  }

  void zero(void* p, size_t bytes) override {
    if (bytes) TT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }

 private:
  static unsigned grid(int64_t n) { return elementwise_blocks(n, kThreads); }

  template <typename T>
  void compress_typed(T* x, float* residual, int64_t n, uint8_t* out) {
    TT_ASSERT(compression() != GradCompression::kNone, "GradCodec::compress without a compression");
    if (block_scaled(compression())) {
      const int64_t blocks = int8_blocks(n);
      TT_ASSERT(blocks < (int64_t{1} << 31), "block-scaled payload of ", n, " elements");
      compress_blocks_kernel<<<unsigned(blocks), kThreads, 0, stream_>>>(x, residual, n, compression(), out);
    } else {
      compress_bf16_kernel<<<grid(n), kThreads, 0, stream_>>>(x, residual, n, reinterpret_cast<bf16*>(out));
    }
    TT_CUDA_LAUNCH_CHECK();
  }

  template <typename T>
  void decompress_typed(const uint8_t* in, int64_t n, T* x) {
    decompress_kernel<<<grid(n), kThreads, 0, stream_>>>(in, n, compression(), x);
    TT_CUDA_LAUNCH_CHECK();
  }

  cudaStream_t stream_;
};

}  // namespace

std::unique_ptr<GradCodec> create_cuda_grad_codec(GradCompression compression, Device device, void* cuda_stream) {
  return std::make_unique<CudaGradCodec>(compression, device, static_cast<cudaStream_t>(cuda_stream));
}

}  // namespace tt::parallel
