// Which activations the model keeps for backward and which it recomputes (activation recompute,
// a.k.a. gradient checkpointing), and the buffers that follows from: one list that Model allocates
// and the memory model sums, so predicted activation memory is what the model allocates.
//
// Design:
//  * Modes (train.recompute): kNone keeps everything backward reads. kSelective keeps the residual
//    stream, q/k/v, the attention output, the residual after attention, the MLP's pre-activation and
//    the norm statistics, and recomputes in backward the large, cheap ones: both norm outputs, the
//    MLP activation (GELU / SwiGLU output) and, where attention keeps its probabilities (the CPU's
//    [B,NH,T,T]; CUDA keeps a logsumexp), the attention probabilities (as llm.c's and Megatron's
//    selective recompute). kFull keeps only each block's input on the residual stream and re-runs the
//    block's forward (up to the MLP activation: the down projection's output is not needed) in its
//    backward.
//  * recompute_blocks (Megatron's recompute-num-layers): the mode applies to blocks 0 … N-1 only
//    (0 = all blocks); the others keep everything.
//  * Per-block buffers are [rows, capacity] with capacity max_batch × max_seq: a block that keeps a
//    tensor has its own row; every recomputed block shares one scratch row (the last), rewritten
//    by the block being recomputed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/model/model_desc.h"
#include "core/tensor.h"

namespace tt {

enum class RecomputeMode { kNone, kSelective, kFull };

struct Recompute {
  RecomputeMode mode = RecomputeMode::kNone;
  int blocks = 0;  // the mode applies to blocks 0 … blocks-1; 0 = all blocks
};

// "none", "selective", "full".
const char* recompute_name(RecomputeMode mode);
// Parses a train.recompute value; throws kConfig naming train.recompute for an unknown one.
RecomputeMode parse_recompute(const std::string& name);
// "none", "full", "selective (8 of 24 blocks)".
std::string describe(const Recompute& r, int n_layer);

// The model's activation buffers (indices into ActivationPlan::buffers).
enum class Act {
  kTokens,
  kTargets,   // int32 [BT]
  kResidual,  // [L + 1, BT, C]: x_0 embeddings, x_{l+1} block l's output
  // Per block:
  kNorm1,
  kNorm1Mean,
  kNorm1Rstd,
  kQkv,
  kAttStats,
  kAttOut,
  kResidualMid,
  kNorm2,
  kNorm2Mean,
  kNorm2Rstd,
  kMlpPre,
  kMlpAct,
  // Once:
  kNormF,
  kNormFMean,
  kNormFRstd,
  kLogits,
  kLosses,
  kLossSum,
  kProjection,
  kDResidual,
  kDNorm,
  kDAttOut,
  kDQkv,
  kDMlpPre,
  kDMlpAct,  // backward scratch
  kRopeCos,
  kRopeSin,  // fp32 [max_seq, HD/2]
  kCount
};

struct ActivationBuffer {
  std::string name;  // "activations.norm1"; empty: not allocated (e.g. LayerNorm means for RMSNorm)
  Shape shape;
  DType dtype = DType::kF32;
  int64_t bytes() const { return name.empty() ? 0 : shape_numel(shape) * int64_t(dtype_size(dtype)); }
};

class ActivationPlan {
 public:
  ActivationPlan(const ModelDesc& desc, Device device, DType dtype, int max_batch, int max_seq,
                 const Recompute& recompute);

  const ActivationBuffer& buffer(Act a) const { return buffers_[size_t(a)]; }
  int64_t total_bytes() const;
  int64_t elements_per_row(Act a) const;  // of a per-block buffer: one block's part
  bool per_block(Act a) const { return a >= Act::kNorm1 && a <= Act::kMlpAct; }
  // Whether block l recomputes tensor a in backward (a per-block tensor).
  bool recomputed(int l, Act a) const;
  // Whether block l recomputes anything.
  bool recomputes_block(int l) const { return l < recompute_blocks_; }
  // The row of block l's part of per-block tensor a.
  int64_t row(int l, Act a) const;
  RecomputeMode mode() const { return recompute_.mode; }
  int recompute_blocks() const { return recompute_blocks_; }  // N: blocks 0 … N-1 recompute

 private:
  bool recomputes_kind(Act a) const;
  ModelDesc desc_;
  Recompute recompute_;
  int recompute_blocks_ = 0;
  bool quadratic_stats_ = false;  // attention keeps probabilities [B,NH,T,T]
  std::vector<ActivationBuffer> buffers_;
};

}  // namespace tt
