// What the cost model predicts for one optimizer step of this run, for comparing with what the
// run measures: the totals as <run_dir>/prediction.json (written at start-up by rank 0, traced or
// not) and the step as a timeline in the trace's format (<run_dir>/trace/steps_A-B.predicted.json)
// to open beside the measured one.
//
// Design: the inputs are the ones `strategy: auto` prices with, measured the same cheap way at
// start-up: a short all-reduce probe of the process group's link (parallel/topology/probe.h; two
// sizes, no codec timing; collective) and, on CPU ranks, an sgemm measurement for the compute speed
// (GPU ranks: the device table's peak at the default MFU). Totals and timeline are one evaluation:
// the planner's price of the run's own configuration (strategy::evaluate_candidate with its ZeRO
// stage, payload, collective, recompute, optimizer state and the GradReducer's own buckets), which
// also hands back the simulated step it priced (strategy::CandidateTimeline). The timeline names
// its spans as the measured trace does: forward and backward with their blocks (ZeRO 0-2: split by
// FLOPs as ModelSpec does; ZeRO-3: where the simulation placed each group's compute, waits
// included), every bucket's collective phases as GradReducer issues them ("bucket 3 all_reduce";
// compressed: "all_to_all" then "all_gather"; hierarchical: its node and cross-node stages, each
// phase its share of the bucket's simulated time by its cost), ZeRO-3's per-group parameter
// gathers on a lane of their own, the exposed wait, the optimizer and the ZeRO-1/2 all-gather.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/dtype.h"
#include "core/model/model_desc.h"
#include "core/trace_recorder.h"
#include "parallel/comm/communicator.h"

namespace tt {

struct StepPrediction {
  // Per optimizer step, seconds (the planner's candidate for this configuration).
  double forward_s = 0, backward_s = 0, optimizer_s = 0, param_gather_s = 0;
  double comm_s = 0, exposed_comm_s = 0, step_s = 0;
  int num_buckets = 0;
  // Inputs.
  int ranks = 1, accum_steps = 1;
  std::string device, link, compute_source, strategy;
  double busbw_gbps = 0, latency_us = 0, compute_tflops = 0, mfu = 0;
  int64_t tokens_per_rank = 0;
  // The step as trace spans, start_ns from the start of the step (lanes: kMainLane,
  // trace::kCollectiveLane, kGatherLane).
  std::vector<trace::Span> timeline;
  static constexpr int kMainLane = 1, kGatherLane = 3;
};

// Collective over comm (the link probe). grad_dtype: the trainer's gradient dtype (bucket sizes).
StepPrediction predict_step(const config::Config& cfg, const ModelDesc& desc, DType grad_dtype,
                            parallel::Communicator& comm);

// prediction.json's text (fields in docs/trace.md).
std::string prediction_json(const StepPrediction& p);
// One step as a Chrome trace (process "predicted"), collectives on the same lane as measured ones.
std::string predicted_trace_json(const StepPrediction& p);

// At start-up (collective): predicts the step and, on rank 0, writes prediction_path and, when
// predicted_trace_path is not empty, the predicted timeline there. A failure to predict is logged
// as a warning, never fatal to the run.
void write_step_prediction(const config::Config& cfg, const ModelDesc& desc, DType grad_dtype,
                           parallel::Communicator& comm, const std::string& prediction_path,
                           const std::string& predicted_trace_path);

}  // namespace tt
