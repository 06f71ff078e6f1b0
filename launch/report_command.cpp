// `topotrain report RUN_DIR`: one self-contained HTML page about a run (launch/report/): loss curves,
// throughput, memory, step phases, the planner's prediction against what was measured, per-rank
// phases when the run was traced, and the config. Written to <run_dir>/report.html (atomically).
#include <cstdio>
#include <ctime>
#include <string>

#include "core/error.h"
#include "core/fs.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/report/report_charts.h"
#include "launch/report/report_page.h"
#include "launch/report/run_report.h"

namespace tt {

int report_main(const Args& args) {
  ArgParser p("topotrain report",
              "Write one self-contained HTML page about a run: loss, throughput, memory, step phases, "
              "predicted vs measured time, per-rank phases (when traced) and the config.");
  p.positional("RUN_DIR", "run directory (logging.run_dir of a `topotrain train` run)")
      .option("--out", "FILE", "output HTML", "<run>/report.html");
  if (!p.parse(args)) return 0;
  const std::string run = p.positionals().at(0);
  if (!is_directory(run))
    throw Error(ErrorKind::kUsage, "not a directory", run, "pass the logging.run_dir of a `topotrain train` run");
  const std::string out = p.get("--out") == "<run>/report.html" ? run + "/report.html" : p.get("--out");
  const RunReport report = read_run_report(run);
  const std::vector<Chart> charts = draw_report_charts(report);
  char when[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  const std::string page = report_html(report, charts, when);
  atomic_write_string(out, page);
  std::printf("wrote %s (%zu steps, %zu charts%s%s, %.0f KB)\n", out.c_str(), report.metrics.size(), charts.size(),
              report.predicted.empty() ? "" : ", prediction", report.rank_phases.empty() ? "" : ", per-rank trace",
              double(page.size()) / 1024.0);
  return 0;
}

}  // namespace tt
