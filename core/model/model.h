// The model: one decoder-only transformer described by a ModelDesc, on one device. GPT-2 and Llama
// are descriptions, not classes, and the CPU and CUDA are devices, not classes: forward and backward
// are written once over kernels/ops, which dispatch every op to its CPU reference or CUDA kernel.
//
// Design:
//  * Precision: the CPU computes in fp32. CUDA runs fp32 (parity checks) or bf16, llm.c style: bf16
//    parameters, gradients and activations with fp32 GEMM accumulation, fp32 norm statistics,
//    attention logsumexp, losses and loss sum; the fp32 master weights belong to the optimizer.
//  * Parameters live in one flat buffer of the working dtype (param_layout.h), gradients in a second
//    one, unless a ParamSource / GradSink hands out one group at a time (ZeRO-3): the model then
//    holds neither. Backward reports each finished group's range (decreasing offsets, covering the
//    buffer) through a callback, so data parallelism reduces buckets while backward continues.
//  * Activations are allocated once for max_batch × max_seq; forward/backward take any smaller B×T.
//    Per block the model keeps the block's input x_l and what its backward reads (norm outputs and
//    statistics, q/k/v after RoPE, attention output and statistics, the residual after attention,
//    the MLP's pre-activation and activation); the projections' outputs are consumed at once by the
//    residual adds and share one scratch buffer. A block can be re-run from its stored input
//    (forward_block).
//  * Activation recompute (ModelOptions::recompute, activation_plan.h): blocks that recompute keep
//    only part of the above (selective) or only their input (full) and rebuild the rest in their
//    backward, with the parameters backward acquires anyway (ZeRO-3 gathers a block once for both).
//    The scratch row of the recomputed tensors still holds the last recomputing block's forward when
//    backward reaches it, so that block is not recomputed. The kernels are deterministic on the CPU,
//    so gradients are bit-identical to no recompute there.
//  * Matmul precision (ModelOptions::low_precision): every linear layer's three products run through
//    ops::linear_* with the layer's recipe (default, fp8, int8), so a new numeric format is a kernels
//    change. fp8's scaling state (LowPrecisionState: per layer, fixed for an optimizer step) belongs
//    to the model; the trainer reduces its statistics over the ranks and updates its scales.
//  * The attention statistics differ by device (probabilities on the CPU, logsumexp on CUDA: see
//    ops::attention_stats_elements); everything else is laid out identically.
//
// Contracts: work is enqueued on the Exec's stream (on the CPU it is done on return) except where a
// function says it synchronises. Host token arrays are validated (kData naming the position) and
// staged before forward() returns, so the caller may reuse them at once. One host thread drives a
// Model at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/exec.h"
#include "core/model/activation_plan.h"
#include "core/model/low_precision_state.h"
#include "core/model/model_desc.h"
#include "core/model/param_layout.h"
#include "core/model/param_source.h"
#include "core/tensor.h"

namespace tt {

// The matmul precision of the model's linear layers (kernels/ops: MatmulPrecision): the blocks'
// projections always, the LM head when lm_head is set; fp8's delayed-scaling settings.
struct LowPrecisionOptions {
  ops::MatmulPrecision matmul = ops::MatmulPrecision::kDefault;
  bool lm_head = false;
  int amax_history_len = 1024;  // Transformer Engine's defaults
  int margin = 0;
};

struct ModelOptions {
  int max_batch = 1;
  int max_seq = 1;
  Exec exec;                  // device and stream (not owned); the CPU by default
  DType dtype = DType::kF32;  // working precision: fp32, or bf16 on CUDA
  bool hold_params = true;    // false: no parameter buffer, set_param_source must supply the values
  bool hold_grads = true;     // false: no gradient buffer, set_grad_sink must take the gradients
  Recompute recompute;        // activations rebuilt in backward instead of kept
  LowPrecisionOptions low_precision;
};

class Model {
 public:
  // Allocates parameters (zero), gradients and activations. Throws kConfig when max_seq exceeds the
  // description's max_seq_len, kMemory (naming the batch and what to lower) when they do not fit.
  Model(const ModelDesc& desc, const ModelOptions& options);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelDesc& desc() const { return desc_; }
  const ModelLayout& layout() const { return layout_; }
  const Exec& exec() const { return opt_.exec; }
  DType dtype() const { return opt_.dtype; }
  int64_t num_params() const { return layout_.numel; }
  int max_batch() const { return opt_.max_batch; }
  int max_seq() const { return opt_.max_seq; }
  const ActivationPlan& activation_plan() const { return plan_; }
  ops::MatmulPrecision matmul_precision() const { return opt_.low_precision.matmul; }
  // fp8's scaling state (low_precision_state.h); null in the other precisions.
  LowPrecisionState* low_precision_state() { return lowp_.get(); }

  // Reads parameters from `source` / accumulates gradients into `sink` from now on (not owned;
  // null: the model's own buffer).
  void set_param_source(ParamSource* source) { source_ = source; }
  void set_grad_sink(GradSink* sink) { sink_ = sink; }
  using GradReadyFn = std::function<void(int64_t begin, int64_t end)>;
  // Called during backward with [begin, end) element ranges of the gradient buffer once every op
  // writing them is enqueued (final on the CPU; ordered after the stream on CUDA), in decreasing
  // offset order, together covering the buffer.
  void set_grad_ready_callback(GradReadyFn fn) { grad_ready_ = std::move(fn); }

  Tensor& params() { return params_; }  // undefined without hold_params
  Tensor& grads() { return grads_; }    // undefined without hold_grads

  // Runs the model on inputs[B,T] (host). With targets, adds the batch's mean per-token loss to the
  // loss sum (take_loss_sum); without, leaves the logits for logits_at.
  void forward(const int32_t* inputs, const int32_t* targets, int B, int T);
  // Synchronises; returns the sum of the batch mean losses since the last call and resets it.
  float take_loss_sum();
  // Accumulates the gradient of loss_scale × (mean loss of the last forward, which had targets).
  void backward(float loss_scale = 1.0f);
  void zero_grad();  // of the model's own gradient buffer (nothing without one)

  // Re-runs block l's forward from its stored input, rewriting its activations (bit-identical on
  // deterministic kernels). Needs a forward first.
  void forward_block(int l);
  // The vocab_size logits of sequence b, position t of the last forward, as fp32 on the host
  // (synchronises).
  std::vector<float> logits_at(int b, int t) const;

 private:
  struct Activations;
  // Block l's stored activations: its input and output on the residual stream, and what its
  // backward reads (norm statistics are null where the norm has none).
  struct BlockActs {
    char *x_in, *x_out, *n1, *qkv, *atty, *xmid, *n2, *pre, *act;
    float *n1_mean, *n1_rstd, *n2_mean, *n2_rstd, *stats;
  };
  struct GroupPtr;
  BlockActs block_acts(int l) const;
  void allocate();
  void check_low_precision_shapes() const;  // kConfig for a GPU run whose GEMM shapes the tensor cores refuse
  const void* acquire(int group, int next_group);
  GroupPtr acquire_ptr(int group, int next_group);
  void* grads_of(int group);
  void run_block_forward(int l, int next_group);
  // Block l's forward up to the MLP activation (what its backward reads), with parameters p.
  void block_forward_to_mlp(int l, const GroupPtr& p, const BlockActs& b);
  // Rebuilds what block l recomputes (nothing when it keeps everything or the scratch holds it).
  void recompute_block(int l, const GroupPtr& p, const BlockActs& b);
  void run_block_backward(int l, int next_group);
  void report_ready(int group);
  // The recipe of block l's linear layer at `site`, and the LM head's.
  ops::LinearPrecision linear(int l, LinearSite site) const;
  ops::LinearPrecision head_linear() const;

  ModelDesc desc_;
  ModelLayout layout_;
  ModelOptions opt_;
  ActivationPlan plan_;
  int scratch_block_ = -1;  // the block whose recomputed tensors the scratch rows hold
  Tensor params_, grads_;
  ParamSource* source_ = nullptr;
  GradSink* sink_ = nullptr;
  GradReadyFn grad_ready_;
  std::unique_ptr<Activations> acts_;
  std::unique_ptr<LowPrecisionState> lowp_;
  std::unique_ptr<HostStaging> token_staging_, target_staging_;  // inputs and targets on their way
  int last_B_ = 0, last_T_ = 0;
  bool have_targets_ = false;
};

// Throws kData naming the first of ids[0, n) outside [0, vocab_size); `what` is "token" or "target".
void check_token_ids(const int32_t* ids, int64_t n, int vocab_size, const char* what);

}  // namespace tt
