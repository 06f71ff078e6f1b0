// What the planner needs to know about a model and its batch: the gradient buffer's tensor layout
// (for bucket assignment), when backward finishes each tensor (for overlap), training FLOPs per token
// and tokens per rank (for compute time), and the compute device's speed.
//
// Design: backward time is split across layers in proportion to their training FLOPs (6·params per
// token, plus 12·C·T attention FLOPs per block), in the order backward runs: the LM head matmul
// first (its weight is tied to wte in GPT-2, so wte's gradient is final only at the very end, after
// the embedding lookup's backward), then the final norm, then blocks L-1 … 0, then the embeddings
// (a scatter-add, ~0 FLOPs). Every tensor of a block is final when the block's backward ends.
// Forward:backward compute is 1:2.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/gpt2.h"
#include "parallel/cost/collective_cost.h"

namespace tt::strategy {

constexpr double kDefaultGpuMfu = 0.4;
constexpr double kDefaultCpuMfu = 0.3;

struct ModelSpec {
  std::string name;        // "gpt2-124m", or GPT2Config::str()
  int64_t num_params = 0;  // Ψ: elements of the gradient buffer
  int n_layer = 0;
  std::vector<std::pair<int64_t, int64_t>> tensor_ranges;  // buffer order, contiguous over [0, Ψ)
  std::vector<double> ready_fraction;  // parallel: fraction of backward elapsed when the tensor is final
  double flops_per_token = 0;          // training (forward + backward)
  int64_t tokens_per_rank = 0;         // per optimizer step, all micro-steps together
  int accum_steps = 1;                 // micro-steps per optimizer step
  double peak_tflops = 0;              // per device; 0 = from the topology's GPU (device table)
  double mfu = 0;                      // 0 = kDefaultGpuMfu on GPUs, kDefaultCpuMfu on CPUs
  double measured_backward_s = 0;      // > 0: backward time per optimizer step, overriding peak × MFU
  double measured_forward_s = 0;       // > 0 (with measured_backward_s): forward time per step, else backward/2
  double measured_optimizer_s = 0;     // > 0: optimizer pass over all Ψ on one rank (ZeRO-1/2 scale it by 1/N),
                                       // overriding the memory-bandwidth estimate (planner.h)
  // ZeRO-3's gather units in buffer order (embeddings, block 0 … L-1, the rest: gpt2_param_groups'
  // cut), the order forward and backward acquire them, each with the fraction of that pass's compute
  // that follows the acquire, and the groups kept gathered for a whole update (GPT-2's tied
  // embeddings, used at both ends of forward).
  std::vector<std::pair<int64_t, int64_t>> param_groups;
  std::vector<std::pair<int, double>> forward_acquires, backward_acquires;
  std::vector<int> resident_groups;
  double param_gather_bytes = 0;  // ZeRO parameter all-gather bytes per element, the trainer's working
                                  // precision; 0 = auto: kParamGatherBytes (bf16) on a GPU cluster,
                                  // kCpuParamGatherBytes (fp32: the CPU trainer gathers fp32) without GPUs
};

// Elements of one set of ZeRO-3 windows (ShardedParams' for parameters, GradWindows' for gradients,
// WindowSlots::buffer_sizes): the resident groups plus two of the largest other group; 0 without groups.
int64_t zero3_window_elements(const ModelSpec& model);

// GPT-2 from its config; tokens_per_rank per optimizer step, seq_len for the attention FLOPs.
ModelSpec gpt2_model_spec(const GPT2Config& cfg, int seq_len, int64_t tokens_per_rank, int accum_steps = 1);

// A decoder-only transformer known only by its size (Llama-style, untied LM head): per block
// (num_params − 2·vocab·hidden) / n_layer parameters, split generically as attention 1/3 (four
// equal projections) and MLP 2/3 (three equal projections) — the Llama ratio 4h² : 3·h·(8/3)h —
// plus two norms; buffer order embeddings, blocks, final norm, LM head.
ModelSpec layered_model_spec(const std::string& name, int64_t num_params, int n_layer, int hidden, int vocab,
                             int seq_len, int64_t tokens_per_rank);

// "gpt2-124m" (12×768), "gpt2-350m" (24×1024, 16 heads), "llama-7b" (32×4096, 6.74B, vocab 32000);
// T = 1024 for GPT-2, 4096 for Llama. Throws tt::Error(kUsage) listing the names for an unknown one.
ModelSpec model_preset(const std::string& name, int64_t tokens_per_rank);
std::vector<std::string> model_preset_names();

struct ComputeTimes {
  double forward_s = 0, backward_s = 0;  // per optimizer step (all micro-steps)
  double flops_per_s = 0;                // achieved (peak × MFU), 0 when backward was measured
};
ComputeTimes compute_times(const ModelSpec& model, const cost::Cluster& cluster);

}  // namespace tt::strategy
