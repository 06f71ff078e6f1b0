// The scaling simulator: predicted step time, tokens/s, exposed communication and scaling
// efficiency of a model on 1 … N GPUs of a topology, per strategy family, from the planner's cost
// model — the "what would 64 of these do" table and plot, without the hardware.
//
// Design: weak scaling (fixed tokens per GPU). A GPU count beyond the topology replicates its
// nodes (cost::cluster_of), joined by its network or, for a single-node topology, an assumed
// 100 Gb/s one (a note says so). Each family is the planner's best *fitting* candidate of that kind,
// so the rows compare what a user could actually run: flat fp32 (ring/tree, fp32), flat bf16,
// hierarchical (fp32; none on one node), int8+ef (any shape), and the planner's pick. Efficiency is
// tokens/s over (GPUs × single-GPU tokens/s), the single GPU running without communication and
// with the whole optimizer pass (ZeRO's sharded optimizer pass can lift efficiency above 100%).
// On one GPU every flat family is the same run; hierarchical starts with the second node.
#pragma once

#include <string>
#include <vector>

#include "parallel/strategy/planner.h"
#include "parallel/topology/topology.pb.h"

namespace tt::sim {

struct ScalingRow {
  int gpus = 0;
  std::string family;      // one of scaling_families()
  bool available = false;  // false: no fitting candidate of this family at this size
  std::string plan;        // Candidate::label(), or why there is none ("n/a (one node)", "none fits in memory")
  double step_s = 0, tokens_per_s = 0, comm_s = 0, exposed_s = 0;
  double exposed_fraction = 0;  // exposed_s / step_s
  double efficiency = 0;        // tokens_per_s / ideal_tokens_per_s
  double ideal_tokens_per_s = 0;
};

struct ScalingResult {
  std::string topology, model;
  int64_t tokens_per_gpu = 0;
  double single_gpu_tokens_per_s = 0;
  std::vector<ScalingRow> rows;  // gpus ascending, families in scaling_families() order
  std::vector<std::string> notes;
};

// "flat fp32", "flat bf16", "hierarchical", "int8+ef", "pick".
const std::vector<std::string>& scaling_families();

// model.tokens_per_rank is the tokens per GPU per step. gpus: counts >= 1. options.ranks is ignored.
ScalingResult simulate_scaling(const topology::Topology& topo, const strategy::ModelSpec& model,
                               const std::vector<int>& gpus, const strategy::PlanOptions& options);

// gpus,strategy,available,plan,step_s,tokens_per_s,comm_s,exposed_s,exposed_fraction,efficiency,
// ideal_tokens_per_s — one line per row, with a header.
std::string scaling_csv(const ScalingResult& r);
// Whitespace-separated table for gnuplot: gpus, ideal, then tokens/s per family (NaN when unavailable).
std::string scaling_plot_data(const ScalingResult& r);
// A gnuplot script drawing tokens/s (log y) vs GPUs (log2 x), one line per family plus ideal scaling.
std::string scaling_gnuplot_script(const ScalingResult& r, const std::string& data_path, const std::string& png_path);
// Human-readable table.
std::string format_scaling_table(const ScalingResult& r);

}  // namespace tt::sim
