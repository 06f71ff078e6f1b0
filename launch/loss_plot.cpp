// Loss curves of runs through gnuplot (see loss_plot.h).
#include "launch/loss_plot.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/fs.h"
#include "launch/gnuplot.h"
#include "launch/run_metrics.h"

namespace tt {

namespace {
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};
constexpr size_t kColorCount = sizeof kColors / sizeof kColors[0];

std::string run_label(const std::string& dir) {
  std::string name = std::filesystem::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = std::filesystem::path(dir).lexically_normal().parent_path().filename().string();
  for (char& c : name)
    if (c == '_') c = '-';  // gnuplot's enhanced text would subscript after '_'
  return name.empty() ? dir : name;
}
}  // namespace

std::string draw_loss_curves(const std::vector<std::string>& runs, const std::string& out, int smooth) {
  TT_ASSERT(!runs.empty() && smooth >= 1, "draw_loss_curves needs runs");
  const bool one = runs.size() == 1;
  const double floor = synthetic_entropy_floor(runs[0]);
  std::string plots, summary = str("wrote ", out, " (");
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::vector<MetricsRecord> records = read_run_metrics(runs[i] + "/metrics.jsonl");
    std::string table = "# step train_loss val_loss\n";
    double sum = 0;
    int n = 0;
    for (size_t k = 0; k < records.size(); ++k) {
      const MetricsRecord& r = records[k];
      const double loss = r.get("loss");
      if (std::isfinite(loss)) sum += loss, ++n;
      const bool emit = n >= smooth || k + 1 == records.size() || r.has("val_loss");
      if (!emit) continue;
      table += str(r.step, " ", n > 0 ? str(sum / n) : std::string("NaN"), " ",
                   r.has("val_loss") ? str(r.get("val_loss")) : std::string("NaN"), "\n");
      sum = 0, n = 0;
    }
    const std::string data = runs[i] + "/loss.dat";
    atomic_write_string(data, table);
    const std::string label = run_label(runs[i]);
    const char* color = kColors[i % kColorCount];
    if (!plots.empty()) plots += ", ";
    plots +=
        str("'", data, "' using 1:2 with lines lw 1.5 lc rgb '", color, "' title '", one ? "train" : label + " train",
            "', '", data, "' using 1:3 with linespoints pt 7 ps 0.8 lw 2 lc rgb '", one ? "#d62728" : color,
            "' title '", one ? "validation" : label + " validation", "'");
    summary += str(one ? "" : (i ? ", " : "") + label + ": ", records.size(), " steps");
  }
  std::string script = str("set terminal pngcairo size 900,540 font ',11'\nset output '", out, "'\n",
                           "set title 'topotrain: ", one ? runs[0] : str(runs.size(), " runs"),
                           "' noenhanced\nset xlabel 'step'\nset ylabel 'loss (nats/token)'\n",
                           "set grid\nset key top right\nset datafile missing 'NaN'\n");
  if (!std::isnan(floor))
    script += str("set arrow from graph 0, first ", floor, " to graph 1, first ", floor,
                  " nohead dt 2 lc rgb '#888888'\n", "set label sprintf('entropy floor %.4f', ", floor,
                  ") at graph 0.02, first ", floor, " offset 0,0.7 tc rgb '#666666'\n");
  script += "plot " + plots + "\n";
  run_gnuplot(script, "topotrain plot");
  return summary + (std::isnan(floor) ? "" : str(", entropy floor ", floor)) + ")";
}

}  // namespace tt
