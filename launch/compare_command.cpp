// `topotrain compare --runs BASE RUN ...`: the precision parity job. Runs that differ only in their
// numerics against the first one (launch/precision_parity.h): final and worst-window loss gaps with
// a pass/fail tolerance, fp8 trend flags, and optionally their loss curves in one PNG. Exit 0 when
// every run passes, 6 when one does not (so a script or CI job can gate on it).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/loss_plot.h"
#include "launch/precision_parity.h"

namespace tt {

namespace {
// The values after --runs up to the next option (ArgParser takes one value per option).
std::vector<std::string> take_runs(Args& args) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--runs") continue;
    size_t j = i + 1;
    while (j < args.size() && args[j].rfind("--", 0) != 0) runs.push_back(args[j++]);
    args.erase(args.begin() + long(i), args.begin() + long(j));
    break;
  }
  return runs;
}
}  // namespace

int compare_main(const Args& raw) {
  Args args = raw;
  std::vector<std::string> runs = take_runs(args);
  ArgParser p("topotrain compare",
              "Compare runs that differ only in precision with the first (--runs BASE RUN ...): final and "
              "worst-window loss gaps against a tolerance, fp8 absmax and saturation trends. Exit 0: all within "
              "tolerance; 6: not.");
  p.repeated("--run", "DIR", "a run directory (as well as, or instead of, --runs BASE RUN ...)")
      .option("--tolerance", "F", "final loss gap allowed, relative", "0.015")
      .option("--window-tolerance", "F", "worst window's mean train loss gap allowed, relative", "0.05")
      .option("--window", "N", "steps per window", "50")
      .option("--skip", "F", "fraction of the steps left out of the window scan and the trends", "0.1")
      .option("--plot", "FILE", "also draw every run's loss curves into this PNG");
  if (!p.parse(args)) return 0;
  for (const std::string& r : p.get_all("--run")) runs.push_back(r);
  if (runs.size() < 2)
    throw Error(ErrorKind::kUsage, "compare needs a baseline and at least one other run", "topotrain compare",
                "e.g. --runs runs/default runs/fp8 runs/int8");
  ParityOptions o;
  o.tolerance = std::stod(p.get("--tolerance"));
  o.window_tolerance = std::stod(p.get("--window-tolerance"));
  o.window = p.get_int("--window");
  o.skip = std::stod(p.get("--skip"));
  if (!(o.tolerance >= 0) || !(o.window_tolerance >= 0) || o.window < 1 || !(o.skip >= 0 && o.skip < 1))
    throw Error(ErrorKind::kUsage, "--tolerance and --window-tolerance must be >= 0, --window >= 1, --skip in [0, 1)",
                "topotrain compare");

  std::vector<RunCurve> curves;
  for (const std::string& r : runs) curves.push_back({r, read_run_metrics(r + "/metrics.jsonl")});
  const std::vector<RunParity> results = compare_runs(curves, o);

  size_t width = 8;
  for (const std::string& r : runs) width = std::max(width, r.size());
  std::printf("precision parity against %s (final loss within %.2f%%, worst %d-step window within %.2f%%)\n",
              runs[0].c_str(), 100 * o.tolerance, o.window, 100 * o.window_tolerance);
  std::printf("%-*s  %5s %10s  %9s  %16s  %6s\n", int(width), "run", "final", "loss", "gap", "worst window", "");
  bool all_pass = true;
  for (size_t i = 0; i < results.size(); ++i) {
    const RunParity& r = results[i];
    char gap[32] = "baseline", worst[48] = "";
    if (i > 0) {
      std::snprintf(gap, sizeof gap, "%+.2f%%", 100 * r.final_gap);
      std::snprintf(worst, sizeof worst, "%+.2f%% @%lld", 100 * r.worst_window_gap, (long long)r.worst_window_end);
    }
    std::printf("%-*s  %5s %10.4f  %9s  %16s  %6s\n", int(width), r.name.c_str(), r.final_is_val ? "val" : "train",
                r.final_loss, gap, worst,
                i == 0   ? ""
                : r.pass ? "pass"
                         : "FAIL");
    for (const std::string& f : r.flags) std::printf("%-*s  trend: %s\n", int(width), "", f.c_str());
    all_pass = all_pass && r.pass;
  }
  if (!p.get("--plot").empty()) std::printf("%s\n", draw_loss_curves(runs, p.get("--plot"), o.window).c_str());
  std::printf("%s\n", all_pass ? "parity: pass" : "parity: FAIL");
  return all_pass ? 0 : 6;
}

}  // namespace tt
