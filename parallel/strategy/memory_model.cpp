// Per-rank memory by consumer (see memory_model.h).
#include "parallel/strategy/memory_model.h"

#include <algorithm>
#include <functional>

#include "core/allocator.h"
#include "core/error.h"

namespace tt::strategy {

std::vector<std::pair<std::string, double>> MemoryBreakdown::parts() const {
  return {{"parameters", params},
          {"gradients", grads},
          {"optimizer state", optimizer},
          {"activations", activations},
          {"comm buffers", comm}};
}

std::string MemoryBreakdown::biggest() const {
  const auto p = parts();
  return std::max_element(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
}

MemoryBreakdown rank_memory(const MemoryInputs& in) {
  TT_ASSERT(in.zero_stage >= 0 && in.zero_stage <= 3, "unknown ZeRO stage ", in.zero_stage);
  const double p = double(in.num_params), n = std::max(1, in.ranks), w = in.working_bytes;
  const double windows = in.zero_stage == 3 ? w * double(in.zero3_window_elements) : 0;
  const double local = in.zero_stage >= 1 ? p / n : p;
  MemoryBreakdown m;
  m.params = in.zero_stage == 3 ? w * p / n + windows : w * p;
  const double reduced_shard = in.zero_stage == 0 ? 0 : in.zero_stage == 1 ? w * p / n : 2 * w * p / n;
  m.grads = (in.zero_stage == 3 ? windows : w * p) + reduced_shard;
  m.optimizer = local * ((in.working_bytes < 4 ? 4 : 0) + state_bytes_per_element(in.state));
  m.comm = in.payload == cost::Payload::kInt8 || in.payload == cost::Payload::kFp8 ? 4 * p : 0;
  if (in.desc && in.batch > 0 && in.seq_len > 0)
    m.activations = double(ActivationPlan(*in.desc, in.device, in.working_bytes == 2 ? DType::kBF16 : DType::kF32,
                                          in.batch, in.seq_len, in.recompute)
                               .total_bytes());
  return m;
}

std::string describe(const MemoryBreakdown& m) {
  std::string out = format_bytes(m.total()) + " (";
  bool first = true;
  for (const auto& [name, bytes] : m.parts()) {
    if (bytes <= 0) continue;
    out += str(first ? "" : ", ", name, " ", format_bytes(bytes));
    first = false;
  }
  return out + ")";
}

std::string levers_that_fit(MemoryInputs in, double limit_bytes) {
  std::string levers;
  auto fits = [&] { return rank_memory(in).total() <= limit_bytes; };
  auto pull = [&](bool applies, const std::string& words, const std::function<void()>& apply) {
    if (!applies || fits()) return;
    apply();
    levers += (levers.empty() ? "" : " ") + words;
  };
  pull(in.desc && in.recompute.mode != RecomputeMode::kFull, "--set train.recompute=full", [&] {
    in.recompute = {RecomputeMode::kFull, 0};
  });
  pull(in.state != StateDType::kInt8, "--set optimizer.state_dtype=int8", [&] { in.state = StateDType::kInt8; });
  pull(in.ranks > 1 && in.zero_stage < 3, "--set parallel.zero_stage=3", [&] { in.zero_stage = 3; });
  const int batch = in.batch;
  while (in.desc && in.batch > 1 && !fits()) in.batch /= 2;
  if (in.batch != batch) levers += str(levers.empty() ? "" : " ", "--set train.batch_size=", in.batch);
  return fits() ? levers : "";
}

}  // namespace tt::strategy
