// GPT-2 on one CUDA device: the same model as core/gpt2.h (same flat parameter layout, so
// checkpoints move between CPU and GPU runs unchanged), run over the CUDA kernels in kernels/.
//
// Design: llm.c-style mixed precision. In bf16 mode parameters, gradients and activations are bf16
// (matmuls accumulate in fp32), LayerNorm statistics, attention logsumexp, per-token losses and
// the loss sum stay fp32; the fp32 master weights belong to the optimizer side (launch/), which
// writes the bf16 working copy after each update. fp32 mode keeps everything fp32 (debugging,
// parity with the CPU model). Fusions: residual add + LayerNorm in one kernel, GELU and its
// derivative in the cuBLASLt epilogues, softmax + cross-entropy writing dlogits in place of the
// logits. Activations are allocated once for max_batch × max_seq; attention keeps only its output
// and logsumexp (flash-style backward recomputes the probabilities).
//
// Contracts: everything is enqueued on stream() and returns without waiting for the device, except
// where a function says it synchronises. Host token arrays are validated and copied before forward()
// returns, so the caller may overwrite them at once. One host thread drives a GPT2Cuda at a time.
// The header needs no CUDA headers, so plain C++ code can hold one; the class exists only in builds
// with CUDA (TOPOTRAIN_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/gpt2.h"
#include "core/tensor.h"

struct CUstream_st;  // cudaStream_t == CUstream_st*

namespace tt {

enum class Precision { kFP32, kBF16 };
inline const char* precision_name(Precision p) { return p == Precision::kBF16 ? "bf16" : "fp32"; }

class GPT2Cuda {
 public:
  // Allocates parameters, gradients and activations on CUDA device `device` (which becomes the
  // calling thread's current device) and creates the model's stream. Parameters start at zero.
  GPT2Cuda(const GPT2Config& cfg, int max_batch, int max_seq, Precision precision, int device);
  ~GPT2Cuda();
  GPT2Cuda(const GPT2Cuda&) = delete;
  GPT2Cuda& operator=(const GPT2Cuda&) = delete;

  // Working parameters from / to host fp32 in gpt2_param_layout order (bf16: rounded to nearest
  // even on the way in, exact on the way out). Both synchronise.
  void set_params(const float* host);
  void get_params(float* host) const;
  // The gradient buffer as fp32 on the host (synchronises); for tests and debugging.
  std::vector<float> grads_to_host() const;

  // Runs the model on inputs[B,T]. With targets, adds the mean per-token loss of this batch to the
  // device-side loss sum (see take_loss_sum). Token ids are checked on the host (kData error naming
  // the position) before anything is enqueued.
  void forward(const int32_t* inputs, const int32_t* targets, int B, int T);
  // Waits for the stream; returns the sum of the batch mean losses added since the last call, and
  // resets it to zero.
  float take_loss_sum();
  // Accumulates into grads() the gradient of loss_scale × (mean loss of the last forward), which
  // must have had targets.
  void backward(float loss_scale = 1.0f);
  void zero_grad();

  // Called during backward with [begin, end) element ranges of the gradient buffer, in decreasing
  // offset order, together covering it (the CPU model's contract). A range is reported once every
  // kernel writing it is ENQUEUED on stream(): work ordered after the stream (an event, or a
  // collective that waits for the stream) sees its final values.
  using GradReadyFn = std::function<void(int64_t begin, int64_t end)>;
  void set_grad_ready_callback(GradReadyFn fn) { grad_ready_ = std::move(fn); }

  const GPT2Config& config() const { return cfg_; }
  const std::vector<ParamInfo>& layout() const { return layout_; }
  Precision precision() const { return precision_; }
  DType dtype() const { return precision_ == Precision::kBF16 ? DType::kBF16 : DType::kF32; }
  int64_t num_params() const;
  void* params() const;                // device memory, dtype(), num_params() elements
  void* grads() const;                 // device memory, dtype(), num_params() elements
  const Tensor& grads_tensor() const;  // the same buffer as a Tensor (for the gradient reducer)
  CUstream_st* stream() const;
  int device() const { return device_; }
  int max_batch() const { return max_batch_; }
  int max_seq() const { return max_seq_; }

 private:
  struct Buffers;
  void allocate();  // every device buffer, on buf_->stream's device
  template <typename T>
  void forward_impl(int B, int T_, bool with_targets);
  template <typename T>
  void backward_impl(float loss_scale);
  void report_ready(int64_t begin, int64_t end);

  GPT2Config cfg_;
  int max_batch_, max_seq_;
  Precision precision_;
  int device_;
  std::vector<ParamInfo> layout_;
  std::unique_ptr<Buffers> buf_;
  int last_B_ = 0, last_T_ = 0;
  bool have_targets_ = false;
  GradReadyFn grad_ready_;
};

}  // namespace tt
