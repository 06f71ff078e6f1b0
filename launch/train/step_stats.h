// What one optimizer step did and how long its phases took; filled by the training loop
// (launch/train/trainer.cpp), printed by `train` (progress line, metrics.jsonl) and `bench step`
// (phase table).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tt {

struct StepStats {
  float loss = 0.0f;
  float lr = 0.0f;
  double grad_norm = 0.0;
  bool skipped = false;  // the gradient norm was not finite: no update
  // data_s: time the step waited for its batches (the prefetcher's stall, not the read itself).
  // On the GPU forward/backward/optimizer are device times between CUDA events; total_s is always
  // host wall-clock time.
  double data_s = 0.0, forward_s = 0.0, backward_s = 0.0, optimizer_s = 0.0, total_s = 0.0;
  // comm_s: time collectives were in flight; exposed_comm_s: time the step waited for them after
  // its compute was done (gradient reduction after backward, and the ZeRO parameter all-gather).
  double comm_s = 0.0, exposed_comm_s = 0.0;
  double param_gather_s = 0.0;  // of those, the ZeRO parameter all-gather after the optimizer (0 at stage 0)
  // fp8 runs: the step's scaling statistics as metrics.jsonl fields (fp8_overflow_x, fp8_amax_dy,
  // fp8_scale_block0_qkv_w, ...), over every rank.
  std::vector<std::pair<std::string, double>> precision;
};

}  // namespace tt
