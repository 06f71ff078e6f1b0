// GradCodec: the element-wise work of the gradient reducers (GradReducer, HierarchicalAllReduce),
// run where the gradients live.
//
// Design: the reducers move bytes through a Communicator and never touch gradient elements
// themselves. Every element-wise step goes through this interface: compress with error feedback,
// decompress-add into an fp32 accumulator, decompress into the gradient, accumulate, zero and copy.
// So one reducer serves fp32 gradients on the CPU (MPI) and bf16 or fp32 gradients on a GPU (NCCL).
//  - The CPU codec runs compression.h's functions; bf16 gradients go through an fp32 copy.
//  - The CUDA codec (grad_codec_cuda.cu) runs the same arithmetic as kernels enqueued on one stream
//    and returns without synchronising the host. Ordering comes from two rules. A collective issued
//    afterwards on the NCCL communicator waits for that stream, which must be the communicator's
//    compute stream. And the reducers enqueue a decompression only after waiting for the
//    collective that filled its input.
//  - Both codecs produce bit-identical payloads and results for the same finite input: round to
//    nearest even, no fused multiply-adds, NaN quantised to int8 0 (only bf16 NaN payloads differ).
// Payload format and error-feedback semantics: compression.h. Not thread-safe (one stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "parallel/ddp/compression.h"

namespace tt::parallel {

class GradCodec {
 public:
  // For gradients of `dtype` (fp32 or bf16) on `device` (the CPU, or a CUDA device with `cuda_stream`
  // the cudaStream_t to enqueue on). Throws kConfig for another dtype, or CUDA gradients in a build
  // without CUDA.
  static std::unique_ptr<GradCodec> create(DType dtype, Device device, GradCompression compression,
                                           void* cuda_stream = nullptr);
  virtual ~GradCodec();

  GradCompression compression() const { return compression_; }
  Device device() const { return device_; }
  // A zero-filled buffer on the codec's device.
  Tensor buffer(const std::string& name, int64_t numel, DType dtype) const;

  // x: n elements of `dtype` (fp32 or bf16). With a residual (fp32, n elements): out <- Q(x +
  // residual), residual <- (x + residual) - deQ(out), and fp32 x may be left holding x + residual.
  // Without (nullptr): out <- Q(x). compression() must not be kNone.
  virtual void compress(void* x, DType dtype, float* residual, int64_t n, uint8_t* out) = 0;
  // acc[i] += scale * deQ(in)[i]; acc is fp32.
  virtual void decompress_add(const uint8_t* in, int64_t n, float scale, float* acc) = 0;
  // x[i] <- deQ(in)[i], rounded to `dtype`.
  virtual void decompress(const uint8_t* in, int64_t n, void* x, DType dtype) = 0;
  // acc[i] += in[i], both of `dtype` (ZeRO-2 sums micro-steps into the gradient shard).
  virtual void accumulate(void* acc, const void* in, int64_t n, DType dtype) = 0;
  virtual void zero(void* p, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;

 protected:
  GradCodec(GradCompression compression, Device device) : compression_(compression), device_(device) {}

 private:
  GradCompression compression_;
  Device device_;
};

// The CUDA codec (grad_codec_cuda.cu; throws kConfig in a build without CUDA).
std::unique_ptr<GradCodec> create_cuda_grad_codec(GradCompression compression, Device device, void* cuda_stream);

}  // namespace tt::parallel
