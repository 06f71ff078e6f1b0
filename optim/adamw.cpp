// AdamW (see adamw.h): one kernel call per run of equal `decay`, on the CPU reference or the CUDA
// kernels (mixed precision with master weights when the working parameters are bf16).
#include "optim/adamw.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "kernels/adamw/adamw.h"
#include "kernels/adamw/state8.h"

#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#endif

namespace tt {

const char* state_dtype_name(StateDType s) {
  switch (s) {
    case StateDType::kFp32:
      return "fp32";
    case StateDType::kBf16:
      return "bf16";
    case StateDType::kInt8:
      return "int8";
  }
  return "?";
}

StateDType parse_state_dtype(const std::string& name) {
  if (name.empty() || name == "fp32") return StateDType::kFp32;
  if (name == "bf16") return StateDType::kBf16;
  if (name == "int8") return StateDType::kInt8;
  throw Error(ErrorKind::kConfig, str("optimizer.state_dtype \"", name, "\" is not supported"), "optimizer.state_dtype",
              "use \"fp32\", \"bf16\" or \"int8\" (block-wise 8-bit AdamW moments)");
}

double state_bytes_per_element(StateDType s) {
  switch (s) {
    case StateDType::kFp32:
      return 8;
    case StateDType::kBf16:
      return 4;
    case StateDType::kInt8:
      return 2 + 2 * 4.0 / 256;
  }
  return 8;
}

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

namespace {
uint8_t* u8(const Tensor& t, int64_t offset = 0) { return static_cast<uint8_t*>(t.raw()) + offset; }
uint16_t* u16(const Tensor& t, int64_t offset = 0) { return static_cast<uint16_t*>(t.raw()) + offset; }
float* f32(const Tensor& t, int64_t offset = 0) { return t.data<float>() + offset; }
// Index of the absmax of the block holding global element g, in a range starting at global r0.
int64_t block_index(int64_t r0, int64_t g) { return g / kernels::kState8Block - r0 / kernels::kState8Block; }
}  // namespace

AdamW::AdamW(std::vector<ParamRange> ranges, int64_t numel, AdamWSettings settings, const AdamWOptions& options)
    : ranges_(merge_param_ranges(ranges)), settings_(settings), opt_(options), numel_(numel) {
  const Device dev = opt_.exec.device;
  const int64_t n = std::max<int64_t>(numel, 1);
  TT_ASSERT(opt_.exec.is_cuda() || (opt_.param_dtype == DType::kF32 && opt_.grad_dtype == DType::kF32),
            "AdamW on the CPU takes fp32 parameters and gradients");
  TT_ASSERT(opt_.param_dtype == DType::kF32 || opt_.param_dtype == DType::kBF16, "AdamW: working parameters ",
            dtype_name(opt_.param_dtype));
  if (opt_.param_dtype != DType::kF32) master_ = Tensor::zeros("adamw.master_weights", {n}, DType::kF32, dev);
  layout_ = opt_.state == StateDType::kInt8 ? state8_layout(ranges_, numel_) : State8Layout{};
  if (opt_.state != StateDType::kInt8)
    for (const ParamRange& r : ranges_) layout_.slots.push_back({r});
  switch (opt_.state) {
    case StateDType::kFp32:
      m_ = Tensor::zeros("adamw.m", {n}, DType::kF32, dev);
      v_ = Tensor::zeros("adamw.v", {n}, DType::kF32, dev);
      break;
    case StateDType::kBf16:
      m_ = Tensor::zeros("adamw.m", {n}, DType::kBF16, dev);
      v_ = Tensor::zeros("adamw.v", {n}, DType::kBF16, dev);
      break;
    case StateDType::kInt8: {
      const int64_t blocks = layout_.blocks, small = layout_.small;
      m_ = Tensor::zeros("adamw.m_small_ranges", {std::max<int64_t>(small, 1)}, DType::kF32, dev);
      v_ = Tensor::zeros("adamw.v_small_ranges", {std::max<int64_t>(small, 1)}, DType::kF32, dev);
      m_codes_ = Tensor::zeros("adamw.m_codes", {n}, DType::kI8, dev);
      v_codes_ = Tensor::zeros("adamw.v_codes", {n}, DType::kI8, dev);
      m_absmax_ = Tensor::zeros("adamw.m_absmax", {std::max<int64_t>(blocks, 1)}, DType::kF32, dev);
      v_absmax_ = Tensor::zeros("adamw.v_absmax", {std::max<int64_t>(blocks, 1)}, DType::kF32, dev);
      // A zero state: every code is the code of 0 (absmax 0 marks an all-zero block).
      std::vector<uint8_t> zeros(size_t(n), kernels::state8_zero_code(true));
      copy_async(opt_.exec, m_codes_.raw(), zeros.data(), zeros.size());
      std::fill(zeros.begin(), zeros.end(), kernels::state8_zero_code(false));
      copy_sync(opt_.exec, v_codes_.raw(), zeros.data(), zeros.size());
      break;
    }
  }
}

State8Layout state8_layout(const std::vector<ParamRange>& merged_ranges, int64_t numel) {
  State8Layout l;
  l.numel = std::max<int64_t>(numel, 1);
  for (const ParamRange& r : merged_ranges) {
    State8Slot slot{r};
    if (r.size < kState8MinElements) {
      slot.small = l.small;
      l.small += r.size;
    } else {
      slot.absmax = l.blocks;
      l.blocks += kernels::state8_blocks(r.global, r.size);
    }
    l.slots.push_back(slot);
  }
  l.blocks = std::max<int64_t>(l.blocks, 1);  // as allocated: at least one element each
  l.small = std::max<int64_t>(l.small, 1);
  return l;
}

std::string State8Layout::str() const {
  std::string out = tt::str("numel ", numel, " blocks ", blocks, " small ", small, "\n");
  for (const State8Slot& s : slots)
    out += tt::str(s.range.offset, " ", s.range.size, " ", s.range.global, " ", int(s.range.decay), " ", s.absmax, " ",
                   s.small, "\n");
  return out;
}

namespace {
State8Layout parse_state8_layout(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  State8Layout l;
  std::string w1, w2, w3;
  if (!(in >> w1 >> l.numel >> w2 >> l.blocks >> w3 >> l.small) || w1 != "numel" || w2 != "blocks" || w3 != "small")
    throw Error(ErrorKind::kCheckpoint, "unreadable 8-bit optimizer state layout", what,
                "the checkpoint is damaged; resume from an earlier one");
  for (State8Slot s; in >> s.range.offset >> s.range.size >> s.range.global;) {
    int decay = 0;
    if (!(in >> decay >> s.absmax >> s.small))
      throw Error(ErrorKind::kCheckpoint, "truncated 8-bit optimizer state layout", what,
                  "the checkpoint is damaged; resume from an earlier one");
    s.range.decay = decay != 0;
    l.slots.push_back(s);
  }
  return l;
}
}  // namespace

std::string state8_owners_str(const std::vector<State8Layout>& owners) {
  std::string out = str("owners ", owners.size(), "\n");
  for (const State8Layout& l : owners) out += "owner\n" + l.str();
  return out;
}

std::vector<State8Layout> parse_state8_owners(const std::string& text, const std::string& what) {
  std::vector<State8Layout> owners;
  for (size_t b = text.find("owner\n"); b != std::string::npos;) {
    const size_t e = text.find("owner\n", b + 6);
    owners.push_back(parse_state8_layout(text.substr(b + 6, e == std::string::npos ? e : e - b - 6), what));
    b = e;
  }
  return owners;
}

void state8_values(const State8Layout& l, int which, int64_t g0, int64_t count, const State8Reader& read, float* out) {
  const int64_t g1 = g0 + count;
  for (const State8Slot& s : l.slots) {
    const int64_t lo = std::max(g0, s.range.global), hi = std::min(g1, s.range.global + s.range.size);
    if (hi <= lo) continue;
    const int64_t len = hi - lo, within = lo - s.range.global;
    float* dst = out + (lo - g0);
    if (s.small >= 0) {
      read(4 + which, (s.small + within) * 4, dst, len * 4);
      continue;
    }
    std::vector<uint8_t> codes(static_cast<size_t>(len));
    std::vector<float> absmax(static_cast<size_t>(kernels::state8_blocks(lo, len)));
    read(which, s.range.offset + within, codes.data(), len);
    read(2 + which, (s.absmax + block_index(s.range.global, lo)) * 4, absmax.data(), int64_t(absmax.size()) * 4);
    kernels::dequantize_state8_cpu(dst, codes.data(), absmax.data(), len, lo, which == 0);
  }
}

Tensor& AdamW::state8_array(int i) {
  TT_ASSERT(opt_.state == StateDType::kInt8 && i >= 0 && i < State8Layout::kArrays, "state8_array(", i, ")");
  Tensor* arrays[State8Layout::kArrays] = {&m_codes_, &v_codes_, &m_absmax_, &v_absmax_, &m_, &v_};
  return *arrays[i];
}

int64_t AdamW::state_bytes() const {
  int64_t b = m_.nbytes() + v_.nbytes();
  if (m_codes_.defined()) b += m_codes_.nbytes() + v_codes_.nbytes() + m_absmax_.nbytes() + v_absmax_.nbytes();
  return b;
}

int64_t AdamW::state_chunk_end(int64_t at, int64_t global_at, int64_t end, int64_t max_count) {
  TT_ASSERT(max_count % kernels::kState8Block == 0, "state chunk ", max_count, " is not whole blocks");
  return std::min(end, at + max_count - global_at % kernels::kState8Block);
}

void AdamW::step(void* params, const void* grads, float lr, float grad_scale) {
  ++step_;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const ParamRange& r = ranges_[i];
    const kernels::AdamWHyper h{
        lr, settings_.beta1, settings_.beta2, settings_.eps, r.decay ? settings_.weight_decay : 0.0f, step_};
    const State8Slot& st = layout_.slots[i];
    // fp32 moments: the whole buffer's (fp32 state) or the small ranges' (int8 state).
    const bool fp32_moments = opt_.state == StateDType::kFp32 || st.small >= 0;
    const int64_t mo = opt_.state == StateDType::kFp32 ? r.offset : st.small;
    if (!opt_.exec.is_cuda()) {
      float* p = static_cast<float*>(params) + r.offset;
      const float* g = static_cast<const float*>(grads) + r.offset;
      if (fp32_moments)
        kernels::adamw_update_cpu(p, f32(m_, mo), f32(v_, mo), g, r.size, h, grad_scale);
      else if (opt_.state == StateDType::kBf16)
        kernels::adamw_update_bf16_state_cpu(p, u16(m_, r.offset), u16(v_, r.offset), g, r.size, h, grad_scale);
      else
        kernels::adamw_update_state8_cpu(p, u8(m_codes_, r.offset), f32(m_absmax_, st.absmax), u8(v_codes_, r.offset),
                                         f32(v_absmax_, st.absmax), g, r.size, r.global, h, grad_scale);
      continue;
    }
#if TOPOTRAIN_HAVE_CUDA
    auto* s = static_cast<cudaStream_t>(opt_.exec.stream);
    const bool bf16_grads = opt_.grad_dtype == DType::kBF16;
    const auto* g32 = static_cast<const float*>(grads) + r.offset;
    const auto* g16 = static_cast<const __nv_bfloat16*>(grads) + r.offset;
    auto* m16 = reinterpret_cast<__nv_bfloat16*>(u16(m_, r.offset));
    auto* v16 = reinterpret_cast<__nv_bfloat16*>(u16(v_, r.offset));
    uint8_t *mq = u8(m_codes_, r.offset), *vq = u8(v_codes_, r.offset);
    float *ma = f32(m_absmax_, std::max<int64_t>(st.absmax, 0)), *va = f32(v_absmax_, std::max<int64_t>(st.absmax, 0));
    // Runs `update` with the gradients as their dtype.
    auto with_grads = [&](auto&& update) { bf16_grads ? update(g16) : update(g32); };
    if (master_.defined()) {
      const kernels::BF16Rounding rounding{opt_.stochastic_rounding, opt_.seed, r.global};
      auto* working = static_cast<__nv_bfloat16*>(params) + r.offset;
      float* master = f32(master_, r.offset);
      with_grads([&](auto g) {
        if (fp32_moments)
          kernels::adamw_update_mixed_cuda(master, f32(m_, mo), f32(v_, mo), working, g, r.size, h, grad_scale,
                                           rounding, s);
        else if (opt_.state == StateDType::kBf16)
          kernels::adamw_update_bf16_state_mixed_cuda(master, m16, v16, working, g, r.size, h, grad_scale, rounding, s);
        else
          kernels::adamw_update_state8_mixed_cuda(master, mq, ma, vq, va, working, g, r.size, r.global, h, grad_scale,
                                                  rounding, s);
      });
    } else {
      float* p = static_cast<float*>(params) + r.offset;
      with_grads([&](auto g) {
        if (fp32_moments)
          kernels::adamw_update_cuda(p, f32(m_, mo), f32(v_, mo), g, r.size, h, grad_scale, s);
        else if (opt_.state == StateDType::kBf16)
          kernels::adamw_update_bf16_state_cuda(p, m16, v16, g, r.size, h, grad_scale, s);
        else
          kernels::adamw_update_state8_cuda(p, mq, ma, vq, va, g, r.size, r.global, h, grad_scale, s);
      });
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
  const Exec& e = opt_.exec;
  if (opt_.state == StateDType::kFp32) {
    if (m) copy_async(e, f32(m_, local), m, size_t(count) * sizeof(float));
    if (v) copy_async(e, f32(v_, local), v, size_t(count) * sizeof(float));
    synchronize(e);
    return;
  }
  if (opt_.state == StateDType::kBf16) {
    std::vector<uint16_t> bits(static_cast<size_t>(count));
    for (auto [src, dst] : {std::pair{m, &m_}, std::pair{v, &v_}}) {
      if (!src) continue;
      for (int64_t i = 0; i < count; ++i) bits[size_t(i)] = f32_to_bf16(src[i]);
      copy_sync(e, u16(*dst, local), bits.data(), bits.size() * sizeof(uint16_t));
    }
    return;
  }
  // int8: quantise each range's part on the host (the same arithmetic as the kernels), then copy.
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const ParamRange& r = ranges_[i];
    const int64_t lo = std::max(local, r.offset), hi = std::min(local + count, r.offset + r.size);
    if (hi <= lo) continue;
    const int64_t g0 = r.global + (lo - r.offset), len = hi - lo;
    const bool sm = !quantized(i);
    for (int which = 0; which < 2; ++which) {
      const float* src = which == 0 ? m : v;
      if (!src) continue;
      if (sm) {
        copy_sync(e, f32(which == 0 ? m_ : v_, layout_.slots[i].small + (lo - r.offset)), src + (lo - local),
                  size_t(len) * sizeof(float));
        continue;
      }
      TT_ASSERT((lo == r.offset || g0 % kernels::kState8Block == 0) &&
                    (hi == r.offset + r.size || (g0 + len) % kernels::kState8Block == 0),
                "AdamW::load_moments [", local, ", ", local + count, ") splits a quantisation block");
      std::vector<uint8_t> codes(static_cast<size_t>(len));
      std::vector<float> absmax(size_t(kernels::state8_blocks(g0, len)));
      kernels::quantize_state8_cpu(codes.data(), absmax.data(), src + (lo - local), len, g0, which == 0);
      copy_async(e, u8(which == 0 ? m_codes_ : v_codes_, lo), codes.data(), codes.size());
      copy_sync(e, f32(which == 0 ? m_absmax_ : v_absmax_, layout_.slots[i].absmax + block_index(r.global, g0)),
                absmax.data(), absmax.size() * sizeof(float));
    }
  }
}

const float* AdamW::read_moments(int which, int64_t local, int64_t count) {
  TT_ASSERT(which == 0 || which == 1, "read_moments: which ", which);
  TT_ASSERT(local >= 0 && local + count <= numel_ && count <= kMomentChunk, "AdamW::read_moments [", local, ", ",
            local + count, ") of ", numel_);
  const Tensor& fp = which == 0 ? m_ : v_;
  if (opt_.state == StateDType::kFp32) return f32(fp, local);
  const Exec& e = opt_.exec;
  if (!scratch_.defined())
    scratch_ = Tensor::zeros("adamw.moment_chunk", {std::min(std::max<int64_t>(numel_, 1), kMomentChunk)}, DType::kF32,
                             e.device);
  std::vector<float> host(size_t(count), 0.0f);
  if (opt_.state == StateDType::kBf16) {
    std::vector<uint16_t> bits(static_cast<size_t>(count));
    copy_sync(e, bits.data(), u16(fp, local), bits.size() * sizeof(uint16_t));
    for (int64_t i = 0; i < count; ++i) host[size_t(i)] = bf16_to_f32(bits[size_t(i)]);
  } else {
    for (size_t i = 0; i < ranges_.size(); ++i) {
      const ParamRange& r = ranges_[i];
      const int64_t lo = std::max(local, r.offset), hi = std::min(local + count, r.offset + r.size);
      if (hi <= lo) continue;
      const int64_t g0 = r.global + (lo - r.offset), len = hi - lo;
      float* out = host.data() + (lo - local);
      if (!quantized(i)) {
        copy_sync(e, out, f32(fp, layout_.slots[i].small + (lo - r.offset)), size_t(len) * sizeof(float));
        continue;
      }
      std::vector<uint8_t> codes(static_cast<size_t>(len));
      std::vector<float> absmax(size_t(kernels::state8_blocks(g0, len)));
      copy_async(e, codes.data(), u8(which == 0 ? m_codes_ : v_codes_, lo), codes.size());
      copy_sync(e, absmax.data(),
                f32(which == 0 ? m_absmax_ : v_absmax_, layout_.slots[i].absmax + block_index(r.global, g0)),
                absmax.size() * sizeof(float));
      kernels::dequantize_state8_cpu(out, codes.data(), absmax.data(), len, g0, which == 0);
    }
  }
  copy_sync(e, scratch_.raw(), host.data(), host.size() * sizeof(float));
  return scratch_.data<float>();
}

}  // namespace tt
