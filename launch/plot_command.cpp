// `topotrain plot --run DIR`: turns <run_dir>/metrics.jsonl into <run_dir>/loss.png (train and
// validation loss per step, and the corpus' entropy floor when the run trained on the synthetic
// corpus) through gnuplot, so a loss curve is one command away.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/fs.h"
#include "data/shard.h"
#include "data/synth.h"
#include "launch/args.h"
#include "launch/commands.h"

namespace tt {

namespace {
struct Point {
  double step, loss, val_loss;
};

std::vector<Point> read_metrics(const std::string& path) {
  std::ifstream f(path);
  if (!f)
    throw Error(ErrorKind::kData, "cannot open metrics file", path, "pass the run_dir of a `topotrain train` run");
  std::vector<Point> points;
  std::string line;
  int line_no = 0;
  while (std::getline(f, line)) {
    ++line_no;
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("step") || !j.contains("loss"))
      throw Error(ErrorKind::kData, "line is not a metrics record with step and loss", str(path, ":", line_no),
                  "the file was edited or cut short; remove the damaged line");
    const double val = j.contains("val_loss") && j["val_loss"].is_number() ? j["val_loss"].get<double>() : NAN;
    points.push_back({j["step"].get<double>(), j["loss"].is_number() ? j["loss"].get<double>() : NAN, val});
  }
  if (points.empty()) throw Error(ErrorKind::kData, "no metrics records", path, "train for at least one step first");
  return points;
}

// The entropy floor when the run's training data is the built-in synthetic corpus, else NaN.
double synthetic_floor(const std::string& run_dir) {
  const std::string config_path = run_dir + "/config.pbtxt";
  if (!std::ifstream(config_path)) return NAN;
  try {
    const config::Config cfg = load_config(config_path);
    const std::string manifest = data::find_synth_manifest(data::resolve_shards(cfg.data().train()).front());
    if (manifest.empty()) return NAN;
    return data::read_synth_manifest(manifest).window_floor(cfg.train().seq_len());
  } catch (const Error&) {
    return NAN;  // data moved or deleted: plot without the floor
  }
}
}  // namespace

int plot_main(const Args& args) {
  ArgParser p("topotrain plot", "Plot the loss curves of a run (metrics.jsonl) to a PNG with gnuplot.");
  p.option("--run", "DIR", "run directory (logging.run_dir)", "", true)
      .option("--out", "FILE", "output PNG", "<run>/loss.png");
  if (!p.parse(args)) return 0;
  const std::string run = p.get("--run");
  const std::string out = p.get("--out") == "<run>/loss.png" ? run + "/loss.png" : p.get("--out");
  const std::vector<Point> points = read_metrics(run + "/metrics.jsonl");
  const double floor = synthetic_floor(run);

  const std::string data_path = run + "/loss.dat";
  std::string table = "# step train_loss val_loss\n";
  for (const Point& pt : points)
    table += str(pt.step, " ", pt.loss, " ", std::isnan(pt.val_loss) ? std::string("NaN") : str(pt.val_loss), "\n");
  atomic_write_string(data_path, table);

  std::string script = str("set terminal pngcairo size 900,540 font ',11'\nset output '", out, "'\n",
                           "set title 'topotrain: ", run, "'\nset xlabel 'step'\nset ylabel 'loss (nats/token)'\n",
                           "set grid\nset key top right\nset datafile missing 'NaN'\n");
  if (!std::isnan(floor))
    script += str("set arrow from graph 0, first ", floor, " to graph 1, first ", floor,
                  " nohead dt 2 lc rgb '#888888'\n", "set label sprintf('entropy floor %.4f', ", floor,
                  ") at graph 0.02, first ", floor, " offset 0,0.7 tc rgb '#666666'\n");
  script += str("plot '", data_path, "' using 1:2 with lines lw 1.5 lc rgb '#1f77b4' title 'train', '", data_path,
                "' using 1:3 with linespoints pt 7 ps 0.8 lw 2 lc rgb '#d62728' title 'validation'\n");
  FILE* gp = popen("gnuplot 2>&1", "w");
  if (!gp)
    throw Error(ErrorKind::kRuntime, "cannot start gnuplot", "topotrain plot",
                "install it: apt-get install gnuplot-nox");
  std::fputs(script.c_str(), gp);
  const int status = pclose(gp);
  if (status != 0)
    throw Error(ErrorKind::kRuntime, str("gnuplot failed (status ", status, ")"), "topotrain plot",
                "install it with apt-get install gnuplot-nox (launch/install_deps.sh does)");
  std::printf("wrote %s (%zu steps%s)\n", out.c_str(), points.size(),
              std::isnan(floor) ? "" : str(", entropy floor ", floor).c_str());
  return 0;
}

}  // namespace tt
