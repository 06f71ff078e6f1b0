// GPT-2 on the CPU in fp32: token + position embedding, pre-LayerNorm blocks (causal multi-head
// attention, GELU(tanh) MLP), final LayerNorm, LM head tied to the token embedding, vocabulary padded
// to a multiple of 128. Hand-written forward and backward over the kernels/ ops, llm.c style.
//
// Design: parameters live in ONE contiguous buffer (and gradients in a second one of the same
// layout) ordered embeddings, layer 0 … layer L-1, final LayerNorm. Backward finishes gradients in
// reverse buffer order, and reports each finished range through a callback, so data parallelism can
// all-reduce buckets while the rest of backward runs. Activations are allocated once for the largest
// (B, T) the model will see; forward/backward accept any smaller B×T.
//
// Forward and backward read the parameters one group at a time (embeddings, block 0 … block L-1,
// final LayerNorm: gpt2_param_groups) through a ParamSource. The model's own buffer is the default
// source; ZeRO-3 (parallel/ddp/sharded_params.h) gathers each group from the ranks' shards instead,
// and the model then holds no parameter buffer at all.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tt {

struct GPT2Config {
  int max_seq_len = 1024;
  int vocab_size = 50257;
  int padded_vocab_size = 50304;  // vocab_size rounded up to a multiple of 128
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;

  static GPT2Config make(int n_layer, int n_head, int n_embd, int vocab_size, int max_seq_len);
  std::string str() const;  // "L=12 H=12 C=768 V=50257(50304) T=1024"
};

// One parameter tensor's place in the flat buffer.
struct ParamInfo {
  std::string name;  // e.g. "h.3.attn.c_attn.weight"
  Shape shape;
  int64_t offset = 0;  // in elements
  bool decay = false;  // weight decay applies (2-D weights only)
  int layer = -1;      // -1 embeddings, 0..L-1 blocks, L final LayerNorm
};

std::vector<ParamInfo> gpt2_param_layout(const GPT2Config& cfg);

// A contiguous range [begin, end) of the parameter buffer that forward/backward use together.
struct ParamGroup {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
// Group 0: wte + wpe; group 1 + l: block l; group L + 1: final LayerNorm. Together they cover the
// buffer in order. Forward acquires 0, 1 … L, L+1, 0 (the tied LM head); backward 0, L+1, L … 1 (the
// embedding backward needs gradients only). Group 0 is the one used at both ends (kGpt2ReusedGroup):
// a gathering source does well to keep it.
constexpr int kGpt2ReusedGroup = 0;
std::vector<ParamGroup> gpt2_param_groups(const GPT2Config& cfg);
std::vector<ParamGroup> gpt2_param_groups(const std::vector<ParamInfo>& layout);  // by ParamInfo::layer
// [begin, end) of each group (as bucket ranges and ZeRO shard units are given).
std::vector<std::pair<int64_t, int64_t>> group_ranges(const std::vector<ParamGroup>& groups);

// Where forward/backward read parameter values.
class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // The values of group g (gpt2_param_groups), readable at the returned pointer until the next
  // acquire. next_group (-1: none) is the group the model will acquire next, for prefetching.
  virtual const float* acquire(int group, int next_group) = 0;
};
// Where backward accumulates gradients. The model's own buffer is the default; ZeRO-3
// (parallel/ddp/grad_windows.h) hands out one group's buffer at a time instead, and the model then
// holds no gradient buffer at all.
class GradSink {
 public:
  virtual ~GradSink() = default;
  // Group g's gradients (laid out as the group's part of the flat buffer), to accumulate into until
  // backward reports the group ready.
  virtual float* grads(int group) = 0;
};
int64_t gpt2_num_params(const GPT2Config& cfg);  // elements, including vocabulary padding
// Training FLOPs per token: 6N (non-padded weights) + 12·L·C·T (attention), as in the PaLM/llm.c MFU.
double gpt2_flops_per_token(const GPT2Config& cfg, int seq_len);
// N(0, std) weights, residual projections scaled by 1/sqrt(2·n_layer), LayerNorm weight 1, biases
// and vocabulary padding rows zero, into params[gpt2_num_params(cfg)] (fp32, gpt2_param_layout order).
// GPT2::init_weights calls it; code that needs only the initial parameters (the CUDA trainer) can call
// it without building a CPU model.
void gpt2_init_weights(const GPT2Config& cfg, float* params, uint64_t seed, float std);
// Throws ErrorKind::kData naming the first of ids[0, n) outside [0, vocab_size); `what` is "token"
// or "target". The CPU and CUDA models' input check.
void gpt2_check_token_ids(const int32_t* ids, int64_t n, int vocab_size, const char* what);

class GPT2 {
 public:
  // Allocates parameters, gradients and activations for micro-batches up to max_batch × max_seq.
  // hold_params=false allocates no parameter buffer: set_param_source must supply the values;
  // hold_grads=false no gradient buffer: set_grad_sink must take the gradients.
  GPT2(const GPT2Config& cfg, int max_batch, int max_seq, bool hold_params = true, bool hold_grads = true);

  // Reads parameters from `source` (not owned; null: the model's own buffer) from now on.
  void set_param_source(ParamSource* source) { source_ = source; }
  // Accumulates gradients into `sink` (not owned; null: the model's own buffer) from now on.
  void set_grad_sink(GradSink* sink) { sink_ = sink; }

  // gpt2_init_weights into params().
  void init_weights(uint64_t seed, float std);

  // Runs the model on inputs[B,T]. With targets, computes the per-token losses and returns their
  // mean; without, leaves logits [B,T,Vp] readable via logits() and returns NaN.
  float forward(const int32_t* inputs, const int32_t* targets, int B, int T);
  // Accumulates into grads() (or the GradSink) the gradient of loss_scale × (mean loss of the last
  // forward). Requires the last forward to have had targets.
  void backward(float loss_scale = 1.0f);
  void zero_grad();  // of the model's own buffer (nothing to do without one)

  // Called during backward with [begin, end) element ranges of the gradient buffer once they are
  // final for this backward pass, in decreasing offset order; together they cover the buffer.
  using GradReadyFn = std::function<void(int64_t begin, int64_t end)>;
  void set_grad_ready_callback(GradReadyFn fn) { grad_ready_ = std::move(fn); }

  const GPT2Config& config() const { return cfg_; }
  const std::vector<ParamInfo>& layout() const { return layout_; }
  const ParamInfo& param(const std::string& name) const;  // throws naming the unknown name
  Tensor& params() { return params_; }                    // undefined when built with hold_params=false
  Tensor& grads() { return grads_; }                      // undefined when built with hold_grads=false
  const float* logits() const { return acts_.logits.data<float>(); }
  int max_batch() const { return max_batch_; }
  int max_seq() const { return max_seq_; }

 private:
  struct LayerParams {
    float *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
  };
  struct Activations {
    Tensor encoded, ln1, ln1_mean, ln1_rstd, qkv, atty, att, attproj, residual2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu,
        fcproj, residual3, lnf, lnf_mean, lnf_rstd, logits, losses;
  };
  struct Scratch {  // backward-only buffers, reused across layers
    Tensor dresidual, dbtc, dbtc2, dqkv, dfch, dfch_gelu;
  };

  // Block l's tensors in a buffer that starts at element `base_offset` of the layout.
  LayerParams layer_params(float* base, int64_t base_offset, int l) const;
  const float* acquire(int group, int next_group);
  float* grads_for(int group);  // the sink's window, or the group's part of the model's buffer
  void report_ready(int64_t begin, int64_t end);

  GPT2Config cfg_;
  int max_batch_, max_seq_;
  std::vector<ParamInfo> layout_;
  std::vector<ParamGroup> groups_;
  Tensor params_, grads_;
  ParamSource* source_ = nullptr;
  GradSink* sink_ = nullptr;
  Activations acts_;
  Scratch scratch_;
  std::vector<int32_t> last_inputs_, last_targets_;
  int last_B_ = 0, last_T_ = 0;
  bool have_targets_ = false;
  GradReadyFn grad_ready_;
};

}  // namespace tt
