// AdamW: one kernel call per contiguous run of equal `decay`, merging neighbours to keep calls few.
#include "optim/adamw.h"

#include <algorithm>

#include "kernels/adamw/adamw.h"

namespace tt {

std::vector<ParamRange> merge_param_ranges(const std::vector<ParamRange>& ranges) {
  std::vector<ParamRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && out.back().decay == r.decay && out.back().offset + out.back().size == r.offset)
      out.back().size += r.size;
    else
      out.push_back(r);
  }
  return out;
}

std::vector<ParamRange> adamw_ranges(const std::vector<ParamInfo>& layout, int64_t begin, int64_t end) {
  std::vector<ParamRange> ranges;
  for (const auto& p : layout) {
    const int64_t b = std::max(p.offset, begin), e = std::min(p.offset + shape_numel(p.shape), end);
    if (e > b) ranges.push_back({b - begin, e - b, p.decay});
  }
  return merge_param_ranges(ranges);
}

AdamW::AdamW(std::vector<ParamRange> ranges, int64_t numel, AdamWSettings settings)
    : ranges_(merge_param_ranges(ranges)),
      settings_(settings),
      m_(Tensor::zeros("adamw.m", {numel})),
      v_(Tensor::zeros("adamw.v", {numel})) {}

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
