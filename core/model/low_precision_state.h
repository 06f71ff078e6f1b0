// The fp8 delayed-scaling state of a model's linear layers: per layer ("site") and per tensor role
// (x: input, w: weight, dy: output gradient), an amax history, the scale in use and its inverse, and
// what the current step has seen (max |value|, saturated and flushed-to-zero counts).
//
// Design: one state per model, on the model's device, laid out as ops::LinearPrecision reads it
// (triples per site; counts as [over x, w, dy, under x, w, dy] per site). A step's scales are fixed
// for the whole optimizer step: every micro-step and every rank quantises with the same scales, so N
// ranks equal one rank accumulating N micro-steps. The caller (the trainer) clears the step's
// statistics before it (begin_step), reduces them over the ranks (amax by max, counts by sum: the
// arrays are exposed for that), then update() rolls the history and computes the next scales
// (Transformer Engine's recipe, kernels/quantize). Scales start at 1. save()/load() carry the
// history, scales and update count through checkpoints, so a resumed run quantises exactly as the
// uninterrupted one. Sites: 4 per block (qkv, out, up, down) and the LM head when it runs in low
// precision.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/exec.h"
#include "core/tensor.h"
#include "kernels/ops/ops.h"

namespace tt {

enum class LinearSite { kQkv = 0, kOut = 1, kUp = 2, kDown = 3 };
constexpr int kSitesPerBlock = 4;

class LowPrecisionState {
 public:
  // history_len >= 1 steps of amax per tensor; margin: scales are 2^-margin below the max.
  LowPrecisionState(int sites, int history_len, int margin, const Exec& exec);

  int sites() const { return sites_; }
  int history_len() const { return history_len_; }
  int margin() const { return margin_; }
  int64_t updates() const { return updates_; }
  // Site i's recipe: kFp8 with this state's pointers.
  ops::LinearPrecision site(int i) const;
  // "block 3 qkv", "head".
  static std::string site_name(int i, int n_layer);

  void begin_step();                                 // clears amax and counts (enqueued)
  float* amax() { return amax_.data<float>(); }      // [3 · sites], device memory
  uint32_t* counts() { return counts_.data<uint32_t>(); }  // [6 · sites]
  void update();                                     // history, scales from this step's amax (enqueued)

  // What the step saw and the scales in use, on the host (synchronises).
  struct Stats {
    std::vector<float> amax, scale;  // [3 · sites]
    std::vector<uint32_t> counts;    // [6 · sites]
  };
  Stats stats() const;

  // The state as checkpoint bytes: a layout line and the arrays (history, scale, scale_inv as fp32,
  // then the update count); load() throws kCheckpoint naming `where` when the layout differs.
  std::string layout() const;  // "fp8 delayed scaling: sites=S history=H margin=M"
  std::vector<char> save() const;
  void load(const std::string& layout, const std::vector<char>& bytes, const std::string& where);

 private:
  int sites_, history_len_, margin_;
  Exec exec_;
  Tensor history_, scale_, scale_inv_, amax_, counts_;
  int64_t updates_ = 0;
};

}  // namespace tt
