// AdamW (see adamw.h): one kernel call per run of equal `decay`, on the CPU reference or the CUDA
// kernels (mixed precision with master weights when the working parameters are bf16).
#include "optim/adamw.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/adamw/adamw.h"

#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#endif

namespace tt {

std::vector<ParamRange> merge_param_ranges(const std::vector<ParamRange>& ranges) {
  std::vector<ParamRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && out.back().decay == r.decay && out.back().offset + out.back().size == r.offset &&
        out.back().global + out.back().size == r.global)
      out.back().size += r.size;
    else
      out.push_back(r);
  }
  return out;
}

std::vector<ParamRange> adamw_ranges(const std::vector<ParamInfo>& tensors, int64_t begin, int64_t end, int64_t local) {
  std::vector<ParamRange> ranges;
  for (const auto& p : tensors) {
    if (!p.trainable) continue;
    const int64_t b = std::max(p.offset, begin), e = std::min(p.offset + shape_numel(p.shape), end);
    if (e > b) ranges.push_back({local + (b - begin), e - b, p.decay, b});
  }
  return merge_param_ranges(ranges);
}

AdamW::AdamW(std::vector<ParamRange> ranges, int64_t numel, AdamWSettings settings, const AdamWOptions& options)
    : ranges_(merge_param_ranges(ranges)), settings_(settings), opt_(options), numel_(numel) {
  const Device dev = opt_.exec.device;
  const int64_t n = std::max<int64_t>(numel, 1);
  m_ = Tensor::zeros("adamw.m", {n}, DType::kF32, dev);
  v_ = Tensor::zeros("adamw.v", {n}, DType::kF32, dev);
  if (opt_.param_dtype != DType::kF32) master_ = Tensor::zeros("adamw.master_weights", {n}, DType::kF32, dev);
  TT_ASSERT(opt_.exec.is_cuda() || (opt_.param_dtype == DType::kF32 && opt_.grad_dtype == DType::kF32),
            "AdamW on the CPU takes fp32 parameters and gradients");
  TT_ASSERT(opt_.param_dtype == DType::kF32 || opt_.param_dtype == DType::kBF16, "AdamW: working parameters ",
            dtype_name(opt_.param_dtype));
}

void AdamW::step(void* params, const void* grads, float lr, float grad_scale) {
  ++step_;
  float* m = m_.data<float>();
  float* v = v_.data<float>();
  for (const auto& r : ranges_) {
    const kernels::AdamWHyper h{
        lr, settings_.beta1, settings_.beta2, settings_.eps, r.decay ? settings_.weight_decay : 0.0f, step_};
    if (!opt_.exec.is_cuda()) {
      kernels::adamw_update_cpu(static_cast<float*>(params) + r.offset, m + r.offset, v + r.offset,
                                static_cast<const float*>(grads) + r.offset, r.size, h, grad_scale);
      continue;
    }
#if TOPOTRAIN_HAVE_CUDA
    auto* s = static_cast<cudaStream_t>(opt_.exec.stream);
    const bool bf16_grads = opt_.grad_dtype == DType::kBF16;
    const auto* g32 = static_cast<const float*>(grads) + r.offset;
    const auto* g16 = static_cast<const __nv_bfloat16*>(grads) + r.offset;
    if (master_.defined()) {
      const kernels::BF16Rounding rounding{opt_.stochastic_rounding, opt_.seed, r.global};
      auto* working = static_cast<__nv_bfloat16*>(params) + r.offset;
      float* master = master_.data<float>() + r.offset;
      if (bf16_grads)
        kernels::adamw_update_mixed_cuda(master, m + r.offset, v + r.offset, working, g16, r.size, h, grad_scale,
                                         rounding, s);
      else
        kernels::adamw_update_mixed_cuda(master, m + r.offset, v + r.offset, working, g32, r.size, h, grad_scale,
                                         rounding, s);
    } else {
      float* p = static_cast<float*>(params) + r.offset;
      if (bf16_grads)
        kernels::adamw_update_cuda(p, m + r.offset, v + r.offset, g16, r.size, h, grad_scale, s);
      else
        kernels::adamw_update_cuda(p, m + r.offset, v + r.offset, g32, r.size, h, grad_scale, s);
    }
#endif
  }
}

const float* AdamW::fp32_params(const void* params) const {
  return master_.defined() ? master_.data<float>() : static_cast<const float*>(params);
}

void AdamW::load_params(void* params, int64_t local, const float* values, int64_t count) {
  TT_ASSERT(local >= 0 && local + count <= numel_, "AdamW::load_params [", local, ", ", local + count, ") of ", numel_);
  const Exec& e = opt_.exec;
  if (!master_.defined()) {
    copy_sync(e, static_cast<float*>(params) + local, values, size_t(count) * sizeof(float));
    return;
  }
  copy_async(e, master_.data<float>() + local, values, size_t(count) * sizeof(float));
  // The bf16 working copy as the update that produced these values wrote it.
  std::vector<uint16_t> bits(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) bits[size_t(i)] = f32_to_bf16(values[i]);
  if (opt_.stochastic_rounding && step_ > 0)
    for (const ParamRange& r : ranges_) {
      const int64_t lo = std::max(local, r.offset), hi = std::min(local + count, r.offset + r.size);
      for (int64_t i = lo; i < hi; ++i)
        bits[size_t(i - local)] = kernels::f32_to_bf16_stochastic(
            values[i - local], kernels::adamw_rounding_bits(opt_.seed, step_, r.global + (i - r.offset)));
    }
  copy_sync(e, static_cast<uint16_t*>(params) + local, bits.data(), bits.size() * sizeof(uint16_t));
}

void AdamW::load_moments(int64_t local, const float* m, const float* v, int64_t count) {
  TT_ASSERT(local >= 0 && local + count <= numel_, "AdamW::load_moments [", local, ", ", local + count, ") of ",
            numel_);
  if (m) copy_async(opt_.exec, m_.data<float>() + local, m, size_t(count) * sizeof(float));
  if (v) copy_async(opt_.exec, v_.data<float>() + local, v, size_t(count) * sizeof(float));
  synchronize(opt_.exec);
}

}  // namespace tt
