// AdamW: one kernel call per contiguous run of equal `decay`, merging neighbours to keep calls few.
#include "optim/adamw.h"

#include "kernels/adamw/adamw.h"

namespace tt {

AdamW::AdamW(std::vector<ParamRange> ranges, int64_t numel, AdamWSettings settings)
    : settings_(settings), m_(Tensor::zeros("adamw.m", {numel})), v_(Tensor::zeros("adamw.v", {numel})) {
  for (const auto& r : ranges) {
    if (!ranges_.empty() && ranges_.back().decay == r.decay && ranges_.back().offset + ranges_.back().size == r.offset)
      ranges_.back().size += r.size;
    else
      ranges_.push_back(r);
  }
}

void AdamW::step(float* params, const float* grads, float lr, float grad_scale) {
  ++step_;
  float* m = m_.data<float>();
  float* v = v_.data<float>();
  for (const auto& r : ranges_) {
    kernels::AdamWHyper h{
        lr, settings_.beta1, settings_.beta2, settings_.eps, r.decay ? settings_.weight_decay : 0.0f, step_};
    kernels::adamw_update_cpu(params + r.offset, m + r.offset, v + r.offset, grads + r.offset, r.size, h, grad_scale);
  }
}

}  // namespace tt
