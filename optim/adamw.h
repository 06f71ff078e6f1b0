// AdamW over this rank's part of the flat parameter buffer (the whole buffer, or its ZeRO shard), on
// the parameters' device. Weight decay is decoupled and applies only to ranges marked `decay`
// (matrices); biases, norm weights and other 1-D tensors are not decayed.
//
// Design: the optimizer owns its state, m and v (fp32, bf16 or block-wise int8: StateDType) and,
// when the working parameters are not fp32 (bf16 on CUDA), the fp32 master weights; an update changes the master (or
// the fp32 parameters directly) and writes the working copy, rounded to nearest even or stochastically by a stateless
// hash of (seed, step, global element index), so the rounding of an element does not depend on how
// the buffer is sharded. The same state is what checkpoints hold (fp32 parameters = the master
// weights, m, v), so a run resumes on either device and with any rank count; load_params reproduces
// the working copy the update that produced a master value wrote, so a resumed bf16 run continues
// bit for bit. bf16 moments travel as their exact fp32 values (read_moments / load_moments); int8
// moments are stored as they are (state8 / state8_array, with their State8Layout), and where a
// reader's layout differs it takes their fp32 values (state8_values) and re-quantises them. Block-wise
// quantisation is idempotent (a block's largest element maps to ±1.0, so re-quantising dequantised
// codes gives the same scale and codes), and a checkpoint of any state dtype resumes into any other.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/exec.h"
#include "core/model/param_layout.h"
#include "core/tensor.h"

namespace tt {

// How the moments m and v are stored: fp32; bf16 (round to nearest even); int8 block-wise (blocks of
// 256 on the global element grid, an fp32 absmax per block, bitsandbytes' dynamic maps: signed for
// m, unsigned for v; ranges under kState8MinElements keep fp32 moments, as bitsandbytes does).
enum class StateDType { kFp32, kBf16, kInt8 };
constexpr int64_t kState8MinElements = 4096;
const char* state_dtype_name(StateDType s);  // "fp32", "bf16", "int8"
// Parses optimizer.state_dtype ("" = fp32); throws kConfig naming the field for an unknown one.
StateDType parse_state_dtype(const std::string& name);
// Bytes of m and v together per element (int8: the codes plus the block absmax share).
double state_bytes_per_element(StateDType s);

struct AdamWSettings {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
};

// A run of the optimizer's buffer with one weight-decay setting.
struct ParamRange {
  int64_t offset = 0, size = 0;  // in the optimizer's (local) buffer
  bool decay = false;
  int64_t global = 0;  // index of element `offset` in the whole flat buffer
};

// Neighbouring ranges with the same `decay` (and consecutive global indices) merged into one.
std::vector<ParamRange> merge_param_ranges(const std::vector<ParamRange>& ranges);
// The ranges of the trainable tensors within [begin, end) of the flat buffer, local offsets counted
// from `local` (where [begin, end) starts in the optimizer's buffer), merged.
std::vector<ParamRange> adamw_ranges(const std::vector<ParamInfo>& tensors, int64_t begin, int64_t end,
                                     int64_t local = 0);

// Where int8 state keeps each (merged) range's moments: codes at the range's local offset with block
// scales from `absmax`, or, for ranges under kState8MinElements, fp32 values from `small`.
struct State8Slot {
  ParamRange range;
  int64_t absmax = -1, small = -1;
};
struct State8Layout {
  std::vector<State8Slot> slots;
  int64_t numel = 0, blocks = 0, small = 0;  // elements of the codes, scale and fp32 arrays
  // The arrays in stored order: m codes, v codes (uint8), m absmax, v absmax, m small, v small (fp32).
  static constexpr int kArrays = 6;
  int64_t array_bytes(int i) const { return i < 2 ? numel : 4 * (i < 4 ? blocks : small); }
  int64_t array_offset(int i) const {  // bytes of the arrays before array i
    int64_t at = 0;
    for (int k = 0; k < i; ++k) at += array_bytes(k);
    return at;
  }
  int64_t total_bytes() const { return array_offset(kArrays); }
  std::string str() const;  // one line per slot: "offset size global decay absmax small"
  bool operator==(const State8Layout& o) const { return str() == o.str(); }
};
// The layout AdamW gives (merged) ranges over numel elements: a pure function, so that a
// checkpoint's writer and reader agree on it, and each can compute any rank's.
State8Layout state8_layout(const std::vector<ParamRange>& merged_ranges, int64_t numel);
// Several owners' layouts (ranks holding a shard each) as one text, and back; parsing throws
// kCheckpoint naming `what` when the text is not one.
std::string state8_owners_str(const std::vector<State8Layout>& owners);
std::vector<State8Layout> parse_state8_owners(const std::string& text, const std::string& what);
// fp32 values of m (which 0) or v (1) at global elements [g0, g0 + count) from int8 state stored with
// layout l, whose arrays `read(array, byte_offset, out, bytes)` reads; elements outside its slots
// are left as they are in out.
using State8Reader = std::function<void(int array, int64_t offset, void* out, int64_t bytes)>;
void state8_values(const State8Layout& l, int which, int64_t g0, int64_t count, const State8Reader& read, float* out);

struct AdamWOptions {
  Exec exec;                         // the parameters' device and stream
  DType param_dtype = DType::kF32;   // working parameters: fp32, or bf16 (fp32 master weights kept)
  DType grad_dtype = DType::kF32;    // gradients: fp32, or bf16 on CUDA
  bool stochastic_rounding = false;  // bf16 working copy: round stochastically
  uint64_t seed = 0;                 // of the stochastic rounding
  StateDType state = StateDType::kFp32;
};

class AdamW {
 public:
  // numel: elements of the optimizer's buffer (the rank's part); ranges inside it.
  AdamW(std::vector<ParamRange> ranges, int64_t numel, AdamWSettings settings, const AdamWOptions& options);

  // One update with learning rate `lr`; gradients (the rank's part, grad_dtype) are multiplied by
  // grad_scale (clipping) first. params: the working parameters of the rank's part (param_dtype).
  void step(void* params, const void* grads, float lr, float grad_scale);

  // fp32 values of the parameters for checkpoints: the master weights, or (fp32 training) params.
  const float* fp32_params(const void* params) const;
  // Sets elements [local, local + count) of the rank's part from host fp32 values: master weights
  // (when kept) and the working copy as the update that produced them wrote it (round to nearest
  // before the first step; the stochastic rounding of step steps_taken() after). Synchronises.
  void load_params(void* params, int64_t local, const float* values, int64_t count);
  // Sets elements [local, local + count) of m and v (either may be null) from host fp32 values,
  // rounded or quantised into the state dtype. With int8 state, local and local + count must be
  // quantisation block boundaries (multiples of kState8Block in global index, or range ends): see
  // state_chunk_end. Synchronises.
  void load_moments(int64_t local, const float* m, const float* v, int64_t count);
  // Elements [local, local + count) of m (which 0) or v (which 1) as fp32, in memory of the
  // optimizer's device valid until the next call (elements outside the ranges read 0). count is at
  // most kMomentChunk.
  const float* read_moments(int which, int64_t local, int64_t count);
  static constexpr int64_t kMomentChunk = int64_t(1) << 22;
  // The end of a chunk of at most max_count elements starting at local `at` of the piece that holds
  // the global elements [global_at, ...) up to local `end`: the largest that ends on a quantisation
  // block boundary (what load_moments needs); max_count is a multiple of kState8Block.
  static int64_t state_chunk_end(int64_t at, int64_t global_at, int64_t end, int64_t max_count);

  int64_t steps_taken() const { return step_; }
  void set_steps_taken(int64_t s) { step_ = s; }
  int64_t numel() const { return numel_; }
  StateDType state_dtype() const { return opt_.state; }
  // int8 state as stored (the checkpoint writes and reads it as is): the layout and its arrays.
  const State8Layout& state8() const { return layout_; }
  Tensor& state8_array(int i);
  int64_t state_bytes() const;  // m and v as stored (codes, scales, fp32 small ranges)

 private:
  // fp32 / bf16 state index m_ and v_ by local offset; int8 state as layout_ says (m_ and v_ then
  // hold the small ranges' fp32 moments).
  bool quantized(size_t r) const { return layout_.slots[r].absmax >= 0; }

  std::vector<ParamRange> ranges_;
  State8Layout layout_;  // slots without absmax / small unless the state is int8
  AdamWSettings settings_;
  AdamWOptions opt_;
  int64_t numel_;
  Tensor m_, v_, master_;     // master_: only with non-fp32 working parameters
  Tensor m_codes_, v_codes_;  // int8 state
  Tensor m_absmax_, v_absmax_;
  Tensor scratch_;  // read_moments' fp32 chunk
  int64_t step_ = 0;
};

}  // namespace tt
