// The pictures of `topotrain report` (see report_charts.h).
#include "launch/report/report_charts.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "core/fs.h"
#include "launch/gnuplot.h"

namespace tt {

namespace {

constexpr const char* kTerminal = "set terminal svg size 880,340 dynamic font 'sans,11' background '#ffffff'\n";
constexpr const char* kStyle =
    "set grid lc rgb '#dddddd'\nset border lc rgb '#555555'\nset key top right\nset datafile missing 'NaN'\n"
    "set xlabel 'step'\n";

std::string num(double v) { return std::isfinite(v) ? str(v) : std::string("NaN"); }

bool any_has(const RunReport& r, const std::string& field) {
  for (const MetricsRecord& m : r.metrics)
    if (m.has(field)) return true;
  return false;
}

// One row per metrics record: step, then `columns` (NaN where absent).
std::string table(const RunReport& r, const std::vector<std::function<double(const MetricsRecord&)>>& columns) {
  std::string t;
  for (const MetricsRecord& m : r.metrics) {
    t += str(m.step);
    for (const auto& c : columns) t += " " + num(c(m));
    t += "\n";
  }
  return t;
}

std::function<double(const MetricsRecord&)> field(const std::string& name, double scale = 1.0) {
  return [name, scale](const MetricsRecord& m) { return m.get(name) * scale; };
}

// A scratch directory for the data tables and SVGs, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/topotrain-report-XXXXXX";
    if (!mkdtemp(tmpl)) throw Error(ErrorKind::kRuntime, "cannot create a temporary directory", "/tmp");
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Drawer {
 public:
  Drawer() = default;
  // Writes `data` as <id>.dat, runs `plot` (a script body using DATA for the table's path) into
  // <id>.svg and keeps the chart.
  void draw(const std::string& id, const std::string& caption, const std::string& data, const std::string& plot) {
    const std::string dat = dir_.path() + "/" + id + ".dat", svg = dir_.path() + "/" + id + ".svg";
    atomic_write_string(dat, data);
    std::string body = plot;
    for (size_t at = body.find("DATA"); at != std::string::npos; at = body.find("DATA", at))
      body.replace(at, 4, "'" + dat + "'");
    run_gnuplot(str(kTerminal, "set output '", svg, "'\n", kStyle, body), "topotrain report");
    charts_.push_back({id, caption, read_file_to_string(svg)});
  }
  std::vector<Chart> take() { return std::move(charts_); }

 private:
  ScratchDir dir_;
  std::vector<Chart> charts_;
};

}  // namespace

std::vector<Chart> draw_report_charts(const RunReport& r) {
  Drawer d;
  // Loss: train per step, validation where measured, the entropy floor when known.
  std::string loss = "set ylabel 'loss (nats/token)'\n";
  if (std::isfinite(r.entropy_floor))
    loss += str("set arrow from graph 0, first ", r.entropy_floor, " to graph 1, first ", r.entropy_floor,
                " nohead dt 2 lc rgb '#888888'\nset label sprintf('entropy floor %.4f', ", r.entropy_floor,
                ") at graph 0.02, first ", r.entropy_floor, " offset 0,0.7 tc rgb '#666666'\n");
  loss += "plot DATA using 1:2 with lines lw 1.5 lc rgb '#1f77b4' title 'train'";
  if (any_has(r, "val_loss"))
    loss += ", DATA using 1:3 with linespoints pt 7 ps 0.7 lw 2 lc rgb '#d62728' title 'validation'";
  d.draw("loss", "Training loss per step and validation loss where it was measured.",
         table(r, {field("loss"), field("val_loss")}), loss + "\n");

  // Throughput, and model FLOP utilisation on a second axis when the run logged it (GPU runs).
  std::string tput = "set ylabel 'tokens/s'\nset yrange [0:*]\n";
  std::string tput_plot = "plot DATA using 1:2 with lines lw 1.5 lc rgb '#2ca02c' title 'tokens/s'";
  if (any_has(r, "mfu")) {
    tput += "set y2label 'MFU (%)'\nset y2tics\nset y2range [0:*]\n";
    tput_plot += ", DATA using 1:3 axes x1y2 with lines lw 1.5 lc rgb '#9467bd' title 'MFU'";
  }
  d.draw("throughput",
         "Tokens per second over all ranks at each step" +
             std::string(any_has(r, "mfu") ? ", and model FLOP utilisation." : "."),
         table(r, {field("tokens_per_s"), field("mfu", 100.0)}), tput + tput_plot + "\n");

  if (any_has(r, "peak_memory_bytes"))
    d.draw("memory", "Peak memory allocated on rank 0's device so far (the allocator's high-water mark).",
           table(r, {field("peak_memory_bytes", 1.0 / (1 << 20))}),
           "set ylabel 'MiB'\nset yrange [0:*]\nplot DATA using 1:2 with lines lw 2 lc rgb '#8c564b' title "
           "'peak memory'\n");

  // Step phases stacked: each band is one phase, the top line the measured step time.
  const std::vector<std::pair<std::string, std::string>> phases = {{"data_s", "data wait"},
                                                                   {"forward_s", "forward"},
                                                                   {"backward_s", "backward"},
                                                                   {"optimizer_s", "optimizer"},
                                                                   {"exposed_comm_s", "exposed comm"}};
  std::vector<std::function<double(const MetricsRecord&)>> stacked;
  for (size_t i = 0; i < phases.size(); ++i)
    stacked.push_back([&phases, i](const MetricsRecord& m) {
      double sum = 0;
      for (size_t k = 0; k <= i; ++k) sum += std::isfinite(m.get(phases[k].first)) ? m.get(phases[k].first) : 0.0;
      return sum * 1e3;
    });
  stacked.push_back(field("step_s", 1e3));
  const char* colors[] = {"#c7c7c7", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"};
  std::string bands =
      "set ylabel 'ms'\nset yrange [0:*]\nset style fill solid 0.85 noborder\nset key outside right top\nplot ";
  for (size_t i = phases.size(); i-- > 0;)
    bands +=
        str("DATA using 1:", i + 2, " with filledcurves x1 lc rgb '", colors[i], "' title '", phases[i].second, "', ");
  bands += str("DATA using 1:", phases.size() + 2, " with lines lw 1 lc rgb '#000000' title 'step (wall clock)'\n");
  d.draw("phases", "Where each step's time went on rank 0, stacked; the black line is the step's wall-clock time.",
         table(r, stacked), bands);

  // Predicted against measured step and communication time.
  if (r.predicted.count("step_s")) {
    std::string pm = "set ylabel 'ms'\nset yrange [0:*]\n";
    pm += str("set arrow from graph 0, first ", r.predicted.at("step_s") * 1e3, " to graph 1, first ",
              r.predicted.at("step_s") * 1e3, " nohead dt 2 lw 2 lc rgb '#1f77b4'\n");
    if (r.predicted.count("comm_s"))
      pm += str("set arrow from graph 0, first ", r.predicted.at("comm_s") * 1e3, " to graph 1, first ",
                r.predicted.at("comm_s") * 1e3, " nohead dt 2 lw 2 lc rgb '#d62728'\n");
    pm +=
        "plot DATA using 1:2 with lines lw 1.5 lc rgb '#1f77b4' title 'step (measured)', "
        "DATA using 1:3 with lines lw 1.5 lc rgb '#d62728' title 'comm (measured)', "
        "keyentry with lines dt 2 lw 2 lc rgb '#555555' title 'predicted (dashed)'\n";
    d.draw("prediction", "Measured step and communication time per step; dashed: the planner's prediction.",
           table(r, {field("step_s", 1e3), field("comm_s", 1e3)}), pm);
  }

  // Per-rank phases from the trace, one stacked bar per rank.
  if (!r.rank_phases.empty()) {
    std::vector<std::string> names;
    for (const RankPhases& rp : r.rank_phases)
      for (const auto& [name, s] : rp.seconds)
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    std::string data = "rank";
    for (const std::string& n : names) data += " \"" + n + "\"";
    data += "\n";
    for (const RankPhases& rp : r.rank_phases) {
      data += str(rp.rank);
      for (const std::string& n : names)
        data += " " + num((rp.seconds.count(n) ? rp.seconds.at(n) : 0.0) * 1e3 / std::max(1, r.traced_steps));
      data += "\n";
    }
    std::string bars =
        "set ylabel 'ms per step'\nset xlabel 'rank'\nset style data histograms\nset style histogram rowstacked\n"
        "set style fill solid 0.85 border -1\nset boxwidth 0.6\nset key outside right\nset yrange [0:*]\nplot ";
    for (size_t i = 0; i < names.size(); ++i)
      bars += str(i ? ", " : "", "DATA using ", i + 2, i == 0 ? ":xtic(1)" : "", " title columnheader");
    d.draw("ranks", str("Time per phase on each rank, averaged over the ", r.traced_steps, " traced steps."), data,
           bars + "\n");
  }
  return d.take();
}

}  // namespace tt
