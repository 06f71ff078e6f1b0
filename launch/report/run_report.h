// What `topotrain report` shows of a run, read from its run directory: metrics.jsonl (loss, val loss,
// throughput, memory, step phases), config.pbtxt, prediction.json (the planner's step and comm time,
// when the run wrote one) and the newest Chrome trace under trace/ (per-rank step phases, when the
// run traced steps). Only metrics.jsonl is required; each other part is shown when present.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launch/run_metrics.h"

namespace tt {

// Time per phase on one rank over the traced steps (seconds, summed over the steps).
struct RankPhases {
  int rank = 0;
  std::map<std::string, double> seconds;  // phase name -> seconds
};

struct RunReport {
  std::string run_dir;
  std::vector<MetricsRecord> metrics;
  double entropy_floor = NAN;                            // NaN: unknown
  std::string config_text;                               // empty: no config.pbtxt
  std::map<std::string, double> predicted;               // numeric fields of prediction.json (step_s, comm_s, ...)
  std::map<std::string, std::string> prediction_inputs;  // its "inputs": what the prediction assumed
  std::string trace_path;                                // empty: no trace
  int traced_steps = 0;
  std::vector<RankPhases> rank_phases;  // from the trace, by rank
};

// Reads the run directory. Throws tt::Error(kData) naming the file when metrics.jsonl is missing or
// damaged, or when prediction.json or the trace exists but cannot be read.
RunReport read_run_report(const std::string& run_dir);

// Per-rank phase totals of a Chrome trace-event file written by train.trace_steps: the complete
// ("X") spans directly inside a step span (category "step") on the same thread, summed by name per
// process (rank) — data wait, forward, backward, gradient wait, optimizer, ... but not the blocks
// inside forward, nor the collectives in flight on their own lanes — and the number of step spans
// of the first rank. Throws tt::Error(kData) naming the file when it is not such a trace.
std::vector<RankPhases> trace_rank_phases(const std::string& trace_path, int* steps);

}  // namespace tt
