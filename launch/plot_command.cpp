// `topotrain plot --run DIR`: turns <run_dir>/metrics.jsonl into <run_dir>/loss.png (train and
// validation loss per step, and the corpus' entropy floor when the run trained on the synthetic
// corpus) through gnuplot, so a loss curve is one command away.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/gnuplot.h"
#include "launch/run_metrics.h"

namespace tt {

int plot_main(const Args& args) {
  ArgParser p("topotrain plot", "Plot the loss curves of a run (metrics.jsonl) to a PNG with gnuplot.");
  p.option("--run", "DIR", "run directory (logging.run_dir)", "", true)
      .option("--out", "FILE", "output PNG", "<run>/loss.png");
  if (!p.parse(args)) return 0;
  const std::string run = p.get("--run");
  const std::string out = p.get("--out") == "<run>/loss.png" ? run + "/loss.png" : p.get("--out");
  const std::vector<MetricsRecord> records = read_run_metrics(run + "/metrics.jsonl");
  const double floor = synthetic_entropy_floor(run);

  const std::string data_path = run + "/loss.dat";
  std::string table = "# step train_loss val_loss\n";
  for (const MetricsRecord& r : records)
    table +=
        str(r.step, " ", r.get("loss"), " ", r.has("val_loss") ? str(r.get("val_loss")) : std::string("NaN"), "\n");
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
  run_gnuplot(script, "topotrain plot");
  std::printf("wrote %s (%zu steps%s)\n", out.c_str(), records.size(),
              std::isnan(floor) ? "" : str(", entropy floor ", floor).c_str());
  return 0;
}

}  // namespace tt
