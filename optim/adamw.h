// AdamW over this rank's part of the flat parameter buffer (the whole buffer, or its ZeRO shard), on
// the parameters' device. Weight decay is decoupled and applies only to ranges marked `decay`
// (matrices); biases, norm weights and other 1-D tensors are not decayed.
//
// Design: the optimizer owns its fp32 state, m and v and, when the working parameters are not fp32
// (bf16 on CUDA), the fp32 master weights; an update changes the master (or the fp32 parameters
// directly) and writes the working copy, rounded to nearest even or stochastically by a stateless
// hash of (seed, step, global element index), so the rounding of an element does not depend on how
// the buffer is sharded. The same state is what checkpoints hold (fp32 parameters = the master
// weights, m, v), so a run resumes on either device and with any rank count; load_params reproduces
// the working copy the update that produced a master value wrote, so a resumed bf16 run continues
// bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "core/exec.h"
#include "core/model/param_layout.h"
#include "core/tensor.h"

namespace tt {

struct AdamWSettings {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
};

// A run of the optimizer's buffer with one weight-decay setting.
struct ParamRange {
  int64_t offset = 0, size = 0;  // in the optimizer's (local) buffer
  bool decay = false;
  int64_t global = 0;  // index of element `offset` in the whole flat buffer
};

// Neighbouring ranges with the same `decay` (and consecutive global indices) merged into one.
std::vector<ParamRange> merge_param_ranges(const std::vector<ParamRange>& ranges);
// The ranges of the trainable tensors within [begin, end) of the flat buffer, local offsets counted
// from `local` (where [begin, end) starts in the optimizer's buffer), merged.
std::vector<ParamRange> adamw_ranges(const std::vector<ParamInfo>& tensors, int64_t begin, int64_t end,
                                     int64_t local = 0);

struct AdamWOptions {
  Exec exec;                         // the parameters' device and stream
  DType param_dtype = DType::kF32;   // working parameters: fp32, or bf16 (fp32 master weights kept)
  DType grad_dtype = DType::kF32;    // gradients: fp32, or bf16 on CUDA
  bool stochastic_rounding = false;  // bf16 working copy: round stochastically
  uint64_t seed = 0;                 // of the stochastic rounding
};

class AdamW {
 public:
  // numel: elements of the optimizer's buffer (the rank's part); ranges inside it.
  AdamW(std::vector<ParamRange> ranges, int64_t numel, AdamWSettings settings, const AdamWOptions& options);

  // One update with learning rate `lr`; gradients (the rank's part, grad_dtype) are multiplied by
  // grad_scale (clipping) first. params: the working parameters of the rank's part (param_dtype).
  void step(void* params, const void* grads, float lr, float grad_scale);

  // fp32 values of the parameters for checkpoints: the master weights, or (fp32 training) params.
  const float* fp32_params(const void* params) const;
  // Sets elements [local, local + count) of the rank's part from host fp32 values: master weights
  // (when kept) and the working copy as the update that produced them wrote it (round to nearest
  // before the first step; the stochastic rounding of step steps_taken() after). Synchronises.
  void load_params(void* params, int64_t local, const float* values, int64_t count);
  // Sets elements [local, local + count) of m and v from host fp32 values. Synchronises.
  void load_moments(int64_t local, const float* m, const float* v, int64_t count);

  int64_t steps_taken() const { return step_; }
  void set_steps_taken(int64_t s) { step_ = s; }
  const Tensor& m() const { return m_; }
  const Tensor& v() const { return v_; }
  int64_t numel() const { return numel_; }

 private:
  std::vector<ParamRange> ranges_;
  AdamWSettings settings_;
  AdamWOptions opt_;
  int64_t numel_;
  Tensor m_, v_, master_;  // master_: only with non-fp32 working parameters
  int64_t step_ = 0;
};

}  // namespace tt
