// Per-rank memory of a training run, by consumer: the one function the planner, `plan`, `simulate`
// and `train`'s budget check use, written from what the trainer allocates so that it predicts the
// measured peak (tests/parallel/strategy/memory_model_test.cpp holds it to 10% on the CPU).
//
// With Ψ parameters, N ranks, w bytes per working element (4 fp32; 2 bf16 on GPUs) and L = Ψ/N (ZeRO
// 1-3) or Ψ (ZeRO-0) elements updated by this rank:
//   parameters   wΨ (ZeRO-3: wΨ/N, plus its gather windows w·W)
//   gradients    wΨ, the model's buffer (ZeRO-3: the windows w·W), plus the reduced shard wΨ/N
//                (ZeRO-1) or the shard and its receive buffer 2wΨ/N (ZeRO-2/3)
//   optimizer    L·(4 [fp32 master weights, when w < 4] + m and v: 8 fp32, 4 bf16, 2 + 8/256 int8)
//   activations  ActivationPlan::total_bytes() for the micro-batch and recompute policy
//   comm         the int8 payload's error-feedback residual, 4Ψ
// W is zero3_window_elements (ModelSpec). Buffers below a few MB (staging, the allocator's slack)
// are not counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/activation_plan.h"
#include "core/model/model_desc.h"
#include "optim/adamw.h"
#include "parallel/cost/collective_cost.h"

namespace tt::strategy {

struct MemoryInputs {
  int64_t num_params = 0;  // Ψ
  int ranks = 1;
  int zero_stage = 0;
  int working_bytes = 4;  // parameters, gradients and activations: 4 fp32, 2 bf16
  StateDType state = StateDType::kFp32;
  cost::Payload payload = cost::Payload::kFp32;
  int64_t zero3_window_elements = 0;
  // Activations (none counted without a description): the micro-batch on `device`.
  const ModelDesc* desc = nullptr;
  Device device = Device::cpu();
  int batch = 0, seq_len = 0;
  Recompute recompute;
};

struct MemoryBreakdown {
  double params = 0, grads = 0, optimizer = 0, activations = 0, comm = 0;
  double total() const { return params + grads + optimizer + activations + comm; }
  // (name, bytes) in a fixed order: parameters, gradients, optimizer state, activations, comm buffers.
  std::vector<std::pair<std::string, double>> parts() const;
  std::string biggest() const;  // name of the largest part
};

MemoryBreakdown rank_memory(const MemoryInputs& in);

// The settings that make `in` fit in limit_bytes, tried in this order and kept as they accumulate:
// full activation recompute, int8 optimizer state, ZeRO-3 (several ranks), then halving the
// micro-batch; as `--set field=value` words, "" when nothing would fit (the model is too big).
std::string levers_that_fit(MemoryInputs in, double limit_bytes);

// "1.20 GB (parameters 0.50, gradients 0.50, optimizer state 0.10, activations 0.10)".
std::string describe(const MemoryBreakdown& m);

}  // namespace tt::strategy
