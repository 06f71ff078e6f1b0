// AdamW over a flat parameter buffer with fp32 moments. Weight decay is decoupled and applies only to
// the ranges marked `decay` (2-D weights); biases, LayerNorm and other 1-D tensors are not decayed.
// The optimizer owns its moment buffers; params/grads are the model's flat buffers.
#pragma once

#include <cstdint>
#include <vector>

#include "core/gpt2.h"
#include "core/tensor.h"

namespace tt {

struct AdamWSettings {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
};

struct ParamRange {
  int64_t offset = 0, size = 0;
  bool decay = false;
};

// Neighbouring ranges with the same `decay` merged into one (fewer kernel calls, same updates).
std::vector<ParamRange> merge_param_ranges(const std::vector<ParamRange>& ranges);
// The AdamW ranges of a model's parameters within [begin, end) of its flat buffer (this rank's ZeRO
// shard, or the whole buffer): each tensor clipped to it, offsets counted from `begin`, merged.
std::vector<ParamRange> adamw_ranges(const std::vector<ParamInfo>& layout, int64_t begin, int64_t end);

class AdamW {
 public:
  AdamW(std::vector<ParamRange> ranges, int64_t numel, AdamWSettings settings);

  // One update with learning rate `lr`; gradients are multiplied by grad_scale (clipping) first.
  void step(float* params, const float* grads, float lr, float grad_scale);

  int64_t steps_taken() const { return step_; }
  void set_steps_taken(int64_t s) { step_ = s; }
  Tensor& m() { return m_; }
  Tensor& v() { return v_; }

 private:
  std::vector<ParamRange> ranges_;
  AdamWSettings settings_;
  Tensor m_, v_;
  int64_t step_ = 0;
};

}  // namespace tt
