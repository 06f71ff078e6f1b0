// What the planner needs to know about a model and its batch: the gradient buffer's tensor layout
// (for bucket assignment), when backward finishes each tensor (for overlap), training FLOPs per token
// and tokens per rank (for compute time), and the compute device's speed.
//
// Design: everything comes from the model's description and parameter layout (core/model), the same
// ones the trainer builds, so there is no separate size table. Backward time is split across layers
// in proportion to their training FLOPs (6·params per token, plus 12·q_dim·T attention FLOPs per
// block), in the order backward runs: the LM head matmul first (a tied head's weight is the token
// embedding, whose gradient is final only at the very end, after the embedding lookup's backward),
// then the final norm, then blocks L-1 … 0, then the embeddings (a scatter-add, ~0 FLOPs). Every
// tensor of a block is final when the block's backward ends. Forward:backward compute is 1:2.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model_desc.h"
#include "kernels/ops/ops.h"
#include "parallel/cost/collective_cost.h"
#include "parallel/ddp/buckets.h"

namespace tt::strategy {

constexpr double kDefaultGpuMfu = 0.4;  // a GPU the device table has no training efficiency for
constexpr double kDefaultCpuMfu = 0.3;
// fp8 / int8 GEMMs reach a smaller fraction of their (2x-4x) peak than bf16 ones reach of theirs:
// calibrated so that fp8 on the linear layers of Llama-3-8B on H100s predicts the published +25%
// step speed-up (torchao, float8 tensorwise, 8xH100), where the peak ratio alone would say ~+80%.
constexpr double kLowPrecisionGemmEfficiency = 0.65;
// Memory traffic per element a low-precision linear quantises (read bf16, write the 1-byte code and,
// for fp8, its transposed copy): priced at the device's memory bandwidth.
constexpr double kQuantiseBytesPerElement = 4;

struct ModelSpec {
  std::string name;        // "gpt2-124m", or ModelDesc::str()
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
  // ZeRO-3's gather units in buffer order (embeddings, block 0 … L-1, the rest: ModelLayout::groups),
  // the order forward and backward acquire them, each with the fraction of that pass's compute that
  // follows the acquire, and the groups kept gathered for a whole update (tied embeddings, used at
  // both ends of forward).
  std::vector<std::pair<int64_t, int64_t>> param_groups;
  std::vector<std::pair<int, double>> forward_acquires, backward_acquires;
  std::vector<int> resident_groups;
  // The description itself, when the spec was made from one: activation memory (memory_model.h) and
  // recompute pricing need it. seq_len: tokens per sequence; the micro-batch is tokens_per_rank /
  // accum_steps / seq_len sequences.
  bool has_desc = false;
  ModelDesc desc;
  int seq_len = 0;
  // Forward FLOPs per token of one block (2·its parameters + 4·q_dim·T of attention), of its MLP
  // down projection, and of its attention core (QKᵀ and ·V): what recompute re-runs.
  double block_forward_flops = 0, block_down_proj_flops = 0, block_attention_flops = 0;
  // The linear layers train.matmul_precision puts in fp8/int8 (every block's q/k/v, output, MLP
  // projections; the LM head with low_precision_lm_head): their training FLOPs per token, the
  // elements of their inputs and outputs per token (quantised every micro-step), and their weights.
  double linear_flops_per_token = 0;
  double linear_io_per_token = 0;
  int64_t linear_weights = 0;
  int micro_batch() const;
  // The run's own gradient buckets (GradReducer's, from its caps), priced instead of the ones the
  // candidate's bucket cap makes (ZeRO 0-2); empty: from the cap.
  std::vector<parallel::Bucket> buckets;
  double grad_bytes = 0;          // gradient bytes per element (buckets, uncompressed payload); 0 = 4
                                  // (fp32); a run's prediction sets its own (bf16 on GPUs: 2)
  double param_gather_bytes = 0;  // ZeRO parameter all-gather bytes per element, the trainer's working
                                  // precision; 0 = auto: kParamGatherBytes (bf16) on a GPU cluster,
                                  // kCpuParamGatherBytes (fp32: the CPU trainer gathers fp32) without GPUs
};

// Elements of one set of ZeRO-3 windows (ShardedParams' for parameters, GradWindows' for gradients,
// WindowSlots::buffer_sizes): the resident groups plus two of the largest other group; 0 without groups.
int64_t zero3_window_elements(const ModelSpec& model);

// The spec of a described model; tokens_per_rank per optimizer step, seq_len for the attention FLOPs.
ModelSpec model_spec(const ModelDesc& desc, int seq_len, int64_t tokens_per_rank, int accum_steps = 1);

// A named published shape (tt::model_preset: gpt2-124m, gpt2-350m, tinyllama-1.1b, llama2-7b or its alias llama-7b,
// llama3-8b, mistral-7b) at its context length capped at 4096. Throws tt::Error(kUsage) listing the
// names for an unknown one.
ModelSpec preset_model_spec(const std::string& name, int64_t tokens_per_rank);

struct ComputeTimes {
  double forward_s = 0, backward_s = 0;  // per optimizer step (all micro-steps)
  double flops_per_s = 0;                // achieved bf16 rate (peak × efficiency), 0 when backward was measured
  ops::MatmulPrecision precision = ops::MatmulPrecision::kDefault;
};
// Forward and backward time per optimizer step. The bf16 rate is the device's peak times its
// training efficiency (the device table's calibrated figure, else model.mfu, else the defaults).
// With fp8 the linear layers' three GEMMs, with int8 their forward and input-gradient GEMMs
// (SwitchBack: the weight gradient stays in the working precision), run at the mode's peak times
// the same efficiency times kLowPrecisionGemmEfficiency, and their quantisation is priced as
// memory traffic. A precision the cluster's GPU lacks is an internal error (offer only
// available_precisions).
ComputeTimes compute_times(const ModelSpec& model, const cost::Cluster& cluster,
                           ops::MatmulPrecision precision = ops::MatmulPrecision::kDefault);
// The matmul precisions the cluster's devices run: default, then int8 and fp8 where the device
// table gives them a peak (CPU ranks: default only; the CPU emulates the others exactly, slowly).
std::vector<ops::MatmulPrecision> available_precisions(const cost::Cluster& cluster);

}  // namespace tt::strategy
