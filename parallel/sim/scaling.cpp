// The scaling simulator (see scaling.h).
#include "parallel/sim/scaling.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/format.h"
#include "parallel/cost/collective_cost.h"

namespace tt::sim {

using cost::Algorithm;
using cost::Payload;
using strategy::Candidate;

const std::vector<std::string>& scaling_families() {
  static const std::vector<std::string> kFamilies = {"flat fp32", "flat bf16", "hierarchical", "int8+ef", "pick"};
  return kFamilies;
}

namespace {

bool in_family(const std::string& family, const Candidate& c) {
  const bool flat = c.shape != Algorithm::kHierarchical;
  if (family == "flat fp32") return flat && c.payload == Payload::kFp32;
  if (family == "flat bf16") return flat && c.payload == Payload::kBf16;
  if (family == "hierarchical") return !flat && c.payload == Payload::kFp32;
  if (family == "int8+ef") return c.payload == Payload::kInt8;
  return false;
}

std::string csv_field(const std::string& s) { return s.find(',') == std::string::npos ? s : "\"" + s + "\""; }

std::string g(double v) {
  if (!std::isfinite(v)) return "NaN";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

ScalingResult simulate_scaling(const topology::Topology& topo, const strategy::ModelSpec& model,
                               const std::vector<int>& gpus, const strategy::PlanOptions& options) {
  ScalingResult r;
  r.topology = topo.name();
  r.model = model.name;
  r.tokens_per_gpu = model.tokens_per_rank;

  strategy::PlanOptions opts = options;
  // Single-GPU baseline: no communication; memory ignored (the ideal line is about compute).
  const cost::Cluster one = cost::cluster_of(topo, 1);
  opts.memory_budget_bytes = 0;
  const auto base = strategy::evaluate_candidate(one, model, strategy::compute_times(model, one), 25, Payload::kFp32,
                                                 Algorithm::kRing, 0, 0);
  r.single_gpu_tokens_per_s = double(model.tokens_per_rank) / base.step_s;

  bool extrapolated = false;
  for (int n : gpus) {
    if (n < 1) throw Error(ErrorKind::kUsage, str("GPU count ", n, " must be >= 1"), "--gpus");
    opts = options;
    opts.ranks = n;
    const strategy::StrategyPlan plan = strategy::plan_strategy(topo, model, opts);
    extrapolated = extrapolated || plan.cluster.inter_extrapolated;
    const double ideal = n * r.single_gpu_tokens_per_s;
    for (const std::string& family : scaling_families()) {
      ScalingRow row;
      row.gpus = n;
      row.family = family;
      row.ideal_tokens_per_s = ideal;
      const Candidate* best = nullptr;
      if (family == "pick" || (n == 1 && family != "hierarchical")) {
        best = plan.picked();  // one GPU: no communication, so every flat family is the same run
      } else {
        for (const Candidate& c : plan.candidates)  // sorted by step time, fitting first
          if (c.eligible && in_family(family, c)) {
            best = &c;
            break;
          }
      }
      if (best) {
        row.available = true;
        row.plan = best->label();
        row.step_s = best->step_s;
        row.tokens_per_s = double(n) * double(model.tokens_per_rank) / best->step_s;
        row.comm_s = best->comm_s;
        row.exposed_s = best->exposed_s;
        row.exposed_fraction = best->exposed_s / best->step_s;
        row.efficiency = row.tokens_per_s / ideal;
      } else {
        row.plan = family == "hierarchical" && plan.cluster.nodes <= 1 ? "n/a (one node)" : "none fits in memory";
        row.step_s = row.tokens_per_s = row.comm_s = row.exposed_s = row.exposed_fraction = row.efficiency = NAN;
      }
      r.rows.push_back(row);
    }
  }
  if (extrapolated)
    r.notes.push_back(str("'", topo.name(), "' has one node: more GPUs are nodes of it joined by an assumed ",
                          cost::kDefaultInterNodeLineGbps * 8, " Gb/s network (busbw ", cost::kDefaultInterNodeGbps,
                          " GB/s, ", cost::kDefaultInterNodeLatencyUs, " us)"));
  return r;
}

std::string scaling_csv(const ScalingResult& r) {
  std::string out =
      "gpus,strategy,available,plan,step_s,tokens_per_s,comm_s,exposed_s,exposed_fraction,efficiency,ideal_tokens_per_"
      "s\n";
  for (const ScalingRow& row : r.rows)
    out += str(row.gpus, ",", csv_field(row.family), ",", row.available ? 1 : 0, ",", csv_field(row.plan), ",",
               g(row.step_s), ",", g(row.tokens_per_s), ",", g(row.comm_s), ",", g(row.exposed_s), ",",
               g(row.exposed_fraction), ",", g(row.efficiency), ",", g(row.ideal_tokens_per_s), "\n");
  return out;
}

std::string scaling_plot_data(const ScalingResult& r) {
  std::string out = "# gpus ideal";
  for (const auto& f : scaling_families()) out += " '" + f + "'";
  out += "\n";
  const size_t k = scaling_families().size();
  for (size_t i = 0; i + k <= r.rows.size(); i += k) {
    out += str(r.rows[i].gpus, " ", g(r.rows[i].ideal_tokens_per_s));
    for (size_t j = 0; j < k; ++j) out += " " + g(r.rows[i + j].tokens_per_s);
    out += "\n";
  }
  return out;
}

std::string scaling_gnuplot_script(const ScalingResult& r, const std::string& data_path, const std::string& png_path) {
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#111111"};
  std::string s = str("set terminal pngcairo size 960,600 font ',11'\nset output '", png_path, "'\n",
                      "set title 'topotrain simulate: ", r.model, " on ", r.topology, " (", r.tokens_per_gpu,
                      " tokens/GPU/step)'\n",
                      "set xlabel 'GPUs'\nset ylabel 'tokens/s (log scale)'\nset logscale x 2\nset logscale y 10\nset "
                      "grid\nset key top left\n",
                      "set datafile missing 'NaN'\nset format y '%.1s%c'\n", "plot '", data_path,
                      "' using 1:2 with lines dt 2 lw 1.5 lc rgb '#888888' title 'ideal linear'");
  const auto& fams = scaling_families();
  for (size_t j = 0; j < fams.size(); ++j) {
    bool any = false;  // a family with no point (hierarchical on one node) gets no line (gnuplot would warn)
    for (size_t i = j; i < r.rows.size(); i += fams.size()) any = any || r.rows[i].available;
    if (!any) continue;
    s += str(", '", data_path, "' using 1:", j + 3, " with linespoints pt 7 ps 0.9 lw ",
             fams[j] == "pick" ? "3 dt 3" : "2", " lc rgb '", kColors[j % 5], "' title '", fams[j], "'");
  }
  return s + "\n";
}

std::string format_scaling_table(const ScalingResult& r) {
  std::string out = str("model ", r.model, " on ", r.topology, ", ", r.tokens_per_gpu,
                        " tokens/GPU/step; 1 GPU: ", format_count(r.single_gpu_tokens_per_s), " tokens/s\n\n");
  char line[256];
  std::snprintf(line, sizeof line, "%5s  %-13s %-38s %10s %10s %8s %6s\n", "gpus", "strategy", "plan", "step",
                "tokens/s", "exposed", "eff");
  out += line;
  int last = -1;
  for (const ScalingRow& row : r.rows) {
    if (last != -1 && row.gpus != last) out += "\n";
    last = row.gpus;
    if (!row.available) {
      std::snprintf(line, sizeof line, "%5d  %-13s %-38s %10s %10s %8s %6s\n", row.gpus, row.family.c_str(),
                    row.plan.c_str(), "-", "-", "-", "-");
    } else {
      std::snprintf(line, sizeof line, "%5d  %-13s %-38s %10s %10s %7.1f%% %5.1f%%\n", row.gpus, row.family.c_str(),
                    row.plan.c_str(), strategy::format_seconds(row.step_s).c_str(),
                    format_count(row.tokens_per_s).c_str(), 100 * row.exposed_fraction, 100 * row.efficiency);
    }
    out += line;
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace tt::sim
