// `topotrain plot --run DIR [--run DIR2 ...]`: one run's metrics.jsonl as <run_dir>/loss.png (train
// and validation loss per step, and the corpus' entropy floor when the run trained on the synthetic
// corpus), or several runs' curves in one picture (e.g. the same run in three matmul precisions).
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/loss_plot.h"

namespace tt {

int plot_main(const Args& args) {
  ArgParser p("topotrain plot", "Plot the loss curves of one or several runs (metrics.jsonl) to a PNG with gnuplot.");
  p.repeated("--run", "DIR", "run directory (logging.run_dir); repeat it to draw several runs together")
      .option("--out", "FILE", "output PNG (default <run>/loss.png; required with several runs)", "")
      .option("--smooth", "N", "draw train losses as the mean of N steps", "1");
  if (!p.parse(args)) return 0;
  const std::vector<std::string>& runs = p.get_all("--run");
  if (runs.empty()) throw Error(ErrorKind::kUsage, "--run is required", "topotrain plot", "e.g. --run runs/quickstart");
  std::string out = p.get("--out");
  if (out.empty()) {
    if (runs.size() > 1)
      throw Error(ErrorKind::kUsage, "several runs need --out", "topotrain plot", "e.g. --out precision.png");
    out = runs[0] + "/loss.png";
  }
  const int smooth = p.get_int("--smooth");
  if (smooth < 1) throw Error(ErrorKind::kUsage, "--smooth must be >= 1", "topotrain plot");
  std::printf("%s\n", draw_loss_curves(runs, out, smooth).c_str());
  return 0;
}

}  // namespace tt
