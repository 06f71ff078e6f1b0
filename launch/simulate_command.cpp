// `topotrain simulate (--model NAME | --config F) --preset NAME --gpus 1,2,4,... [--tokens-per-gpu N]
// [--out DIR]`:
// the scaling simulator (parallel/sim/scaling.h) as a table, DIR/scaling.csv and DIR/scaling.png
// (gnuplot; the PNG is skipped with a warning when gnuplot is missing, the CSV is always written).
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/model/weights.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/gnuplot.h"
#include "launch/train/auto_strategy.h"
#include "parallel/sim/scaling.h"
#include "parallel/topology/presets.h"
#include "parallel/topology/topology_io.h"

namespace tt {

namespace {

std::vector<int> parse_gpu_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 65536)
      throw Error(ErrorKind::kUsage, "bad GPU count '" + item + "'", "--gpus",
                  "a comma-separated list like 1,2,4,8,16");
    if (!out.empty() && v <= out.back())
      throw Error(ErrorKind::kUsage, "GPU counts must increase", "--gpus", "e.g. 1,2,4,8,16,32,64");
    out.push_back(int(v));
  }
  if (out.empty()) throw Error(ErrorKind::kUsage, "no GPU counts", "--gpus", "e.g. 1,2,4,8,16,32,64");
  return out;
}

}  // namespace

int simulate_main(const Args& args) {
  ArgParser p("topotrain simulate",
              "Predicted step time, tokens/s, exposed communication and scaling efficiency per strategy family "
              "as GPUs are added (weak scaling: fixed tokens per GPU).");
  p.option("--model", "NAME", "gpt2-124m, gpt2-350m, llama2-7b (llama-7b), llama3-8b or mistral-7b")
      .option("--config", "FILE", "the model of a run config instead (examples/llama-7b.pbtxt), at its seq_len")
      .option("--preset", "NAME", "topology preset (more GPUs than it has replicate its nodes)")
      .option("--topology", "FILE", "topology file instead of a preset")
      .option("--gpus", "LIST", "GPU counts", "1,2,4,8,16,32,64")
      .option("--tokens-per-gpu", "N", "tokens per GPU per optimizer step", "16384")
      .option("--mfu", "X", "model FLOP utilisation (default: the device table's calibrated figure, else 0.4)")
      .option("--memory-budget", "GB", "per-GPU memory budget (default 90% of the GPU's)")
      .option("--matmul-precision", "P", "default, fp8, int8, or auto (the planner picks per GPU count)", "default")
      .option("--out", "DIR", "write DIR/scaling.csv and DIR/scaling.png");
  if (!p.parse(args)) return 0;

  const bool has_preset = !p.get("--preset").empty(), has_file = !p.get("--topology").empty();
  if (has_preset == has_file)
    throw Error(ErrorKind::kUsage, has_preset ? "--preset and --topology both given" : "no topology given",
                "topotrain simulate", "pass --preset NAME (see `topotrain probe --list-presets`) or --topology FILE");
  const topology::Topology topo =
      has_preset ? topology::preset_topology(p.get("--preset")) : topology::load_topology(p.get("--topology"));
  const std::vector<int> gpus = parse_gpu_list(p.get("--gpus"));
  const int64_t tokens = p.get_int64_in("--tokens-per-gpu", 1, int64_t(1) << 40);
  if (p.get("--model").empty() == p.get("--config").empty())
    throw Error(ErrorKind::kUsage, p.get("--model").empty() ? "no model given" : "--model and --config both given",
                "topotrain simulate", "pass --model NAME or --config FILE");
  strategy::ModelSpec model;
  if (!p.get("--model").empty()) {
    model = strategy::preset_model_spec(p.get("--model"), tokens);
  } else {  // the description the trainer builds from this config
    const config::Config cfg = load_config(p.get("--config"), {});
    model = strategy::model_spec(run_model_desc(cfg), cfg.train().seq_len(), tokens);
    model.name = p.get("--config");
  }
  if (p.has("--mfu")) {
    model.mfu = p.get_double("--mfu");
    if (!(model.mfu > 0 && model.mfu <= 1)) throw Error(ErrorKind::kUsage, "--mfu must be in (0, 1]", "--mfu");
  }
  strategy::PlanOptions options;
  options.matmul_precisions = offered_matmul_precisions(p.get("--matmul-precision"), "--matmul-precision");
  if (p.has("--memory-budget")) {
    const double budget = p.get_double("--memory-budget");
    if (!(budget > 0)) throw Error(ErrorKind::kUsage, "--memory-budget must be > 0 (GB)", "--memory-budget");
    options.memory_budget_bytes = uint64_t(budget * 1e9);
  }

  const sim::ScalingResult result = sim::simulate_scaling(topo, model, gpus, options);
  std::fputs(sim::format_scaling_table(result).c_str(), stdout);

  if (p.has("--out")) {
    const std::string dir = p.get("--out");
    ensure_dir(dir);
    const std::string csv = dir + "/scaling.csv", dat = dir + "/scaling.dat", png = dir + "/scaling.png";
    atomic_write_string(csv, sim::scaling_csv(result));
    atomic_write_string(dat, sim::scaling_plot_data(result));
    std::printf("\nwrote %s\n", csv.c_str());
    if (!gnuplot_available()) {
      std::fprintf(stderr, "warning: gnuplot not found: %s not drawn (apt-get install gnuplot-nox)\n", png.c_str());
      return 0;
    }
    run_gnuplot(sim::scaling_gnuplot_script(result, dat, png), "topotrain simulate");
    std::printf("wrote %s\n", png.c_str());
  }
  return 0;
}

}  // namespace tt
