// GradCodec factory and the CPU codec (see grad_codec.h).
#include "parallel/ddp/grad_codec.h"

#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace tt::parallel {

namespace {

// compression.h on host memory; bf16 elements are widened to fp32 and rounded back.
class CpuGradCodec final : public GradCodec {
 public:
  explicit CpuGradCodec(GradCompression c) : GradCodec(c, Device::cpu()) {}

  void compress(void* x, DType dtype, float* residual, int64_t n, uint8_t* out) override {
    TT_ASSERT(compression() != GradCompression::kNone, "GradCodec::compress without a compression");
    compress_with_feedback(as_f32(x, dtype, n), residual, n, compression(), out);
  }

  void decompress_add(const uint8_t* in, int64_t n, float scale, float* acc) override {
    parallel::decompress_add(in, n, compression(), scale, acc);
  }

  void decompress(const uint8_t* in, int64_t n, void* x, DType dtype) override {
    float* f = dtype == DType::kF32 ? static_cast<float*>(x) : widened(n);
    std::memset(f, 0, size_t(n) * sizeof(float));
    parallel::decompress_add(in, n, compression(), 1.0f, f);
    if (dtype == DType::kBF16) narrow(f, n, x);
  }

  void accumulate(void* acc, const void* in, int64_t n, DType dtype) override {
    if (dtype == DType::kF32) {
      float* a = static_cast<float*>(acc);
      const float* b = static_cast<const float*>(in);
      for (int64_t i = 0; i < n; ++i) a[i] += b[i];
      return;
    }
    uint16_t* a = static_cast<uint16_t*>(acc);
    const uint16_t* b = static_cast<const uint16_t*>(in);
    for (int64_t i = 0; i < n; ++i) a[i] = f32_to_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
  }

  void zero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }

 private:
  float* widened(int64_t n) {
    if (wide_.size() < size_t(n)) wide_.resize(size_t(n));
    return wide_.data();
  }
  // fp32 x itself, or bf16 x widened into the scratch buffer.
  float* as_f32(void* x, DType dtype, int64_t n) {
    if (dtype == DType::kF32) return static_cast<float*>(x);
    float* f = widened(n);
    const uint16_t* h = static_cast<const uint16_t*>(x);
    for (int64_t i = 0; i < n; ++i) f[i] = bf16_to_f32(h[i]);
    return f;
  }
  static void narrow(const float* f, int64_t n, void* x) {
    uint16_t* h = static_cast<uint16_t*>(x);
    for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(f[i]);
  }

  std::vector<float> wide_;
};

}  // namespace

GradCodec::~GradCodec() = default;

Tensor GradCodec::buffer(const std::string& name, int64_t numel, DType dtype) const {
  return Tensor::zeros(name, {numel}, dtype, device_);
}

std::unique_ptr<GradCodec> GradCodec::create(DType dtype, Device device, GradCompression compression,
                                             void* cuda_stream) {
  if (dtype != DType::kF32 && dtype != DType::kBF16)
    throw Error(ErrorKind::kConfig, str("gradients of dtype ", dtype_name(dtype), " cannot be reduced"), "gradients",
                "keep gradients in fp32 or bf16");
  if (device.kind == DeviceKind::kCuda) return create_cuda_grad_codec(compression, device, cuda_stream);
  return std::make_unique<CpuGradCodec>(compression);
}

#if !TOPOTRAIN_HAVE_CUDA
std::unique_ptr<GradCodec> create_cuda_grad_codec(GradCompression, Device device, void*) {
  throw Error(ErrorKind::kConfig, "gradients on " + device.str() + " need a build with CUDA", "train.device",
              "rebuild with the CUDA toolkit, or set train.device=cpu");
}
#endif

}  // namespace tt::parallel
