// The precision parity check (see precision_parity.h).
#include "launch/precision_parity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/error.h"

namespace tt {

namespace {

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Mean train loss per window, keyed by the window's last step.
std::map<int64_t, double> window_means(const std::vector<MetricsRecord>& records, int window) {
  std::map<int64_t, std::pair<double, int>> sums;
  for (const MetricsRecord& r : records)
    if (r.has("loss") && std::isfinite(r.get("loss"))) {
      const int64_t end = (r.step + window - 1) / window * window;
      sums[end].first += r.get("loss");
      ++sums[end].second;
    }
  std::map<int64_t, double> out;
  for (const auto& [end, s] : sums) out[end] = s.first / s.second;
  return out;
}

// The last record with a validation loss: (step, value), or step -1.
std::pair<int64_t, double> last_val(const std::vector<MetricsRecord>& records) {
  for (auto it = records.rbegin(); it != records.rend(); ++it)
    if (it->has("val_loss") && std::isfinite(it->get("val_loss"))) return {it->step, it->get("val_loss")};
  return {-1, NAN};
}

int64_t last_step(const std::vector<MetricsRecord>& records) {
  int64_t s = 0;
  for (const MetricsRecord& r : records) s = std::max(s, r.step);
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<std::string> fp8_trend_flags(const std::vector<MetricsRecord>& records, const ParityOptions& o) {
  std::vector<std::string> flags;
  const int64_t last = last_step(records), first = int64_t(std::floor(o.skip * double(last)));
  const double span = double(last - first);
  if (span < 8) return flags;
  auto quarter = [&](const std::string& field, bool first_quarter) {
    std::vector<double> v;
    for (const MetricsRecord& r : records) {
      if (r.step <= first || !r.has(field) || !std::isfinite(r.get(field))) continue;
      const double at = double(r.step - first) / span;
      if (first_quarter ? at <= 0.25 : at > 0.75) v.push_back(r.get(field));
    }
    return v;
  };
  for (const char* role : {"x", "w", "dy"}) {
    const std::string amax = str("fp8_amax_", role);
    const double a = median(quarter(amax, true)), b = median(quarter(amax, false));
    if (a > 0 && b > o.growth * a)
      flags.push_back(str(amax, " grew ", fixed(b / a, 1), "x (median of the last quarter vs the first)"));
    const std::string over = str("fp8_overflow_", role);
    double early = 0, late = 0;
    for (double v : quarter(over, true)) early += v;
    for (double v : quarter(over, false)) late += v;
    if (late > 0 && late > 2 * early)
      flags.push_back(
          str(over, ": ", fixed(late, 0), " saturated values in the last quarter, ", fixed(early, 0), " in the first"));
  }
  return flags;
}

std::vector<RunParity> compare_runs(const std::vector<RunCurve>& runs, const ParityOptions& o) {
  TT_ASSERT(!runs.empty() && o.window >= 1, "compare_runs needs a baseline and a window");
  const RunCurve& base = runs[0];
  const auto base_windows = window_means(base.records, o.window);
  if (base_windows.empty())
    throw Error(ErrorKind::kData, "the baseline run has no train loss", base.name + "/metrics.jsonl",
                "compare runs that have trained at least one step");
  const auto base_val = last_val(base.records);
  const int64_t skip_before = int64_t(std::floor(o.skip * double(last_step(base.records))));
  std::vector<RunParity> out;
  for (const RunCurve& run : runs) {
    RunParity p;
    p.name = run.name;
    p.flags = fp8_trend_flags(run.records, o);
    const auto windows = window_means(run.records, o.window);
    const auto val = last_val(run.records);
    if (windows.empty())
      throw Error(ErrorKind::kData, "the run has no train loss", run.name + "/metrics.jsonl",
                  "compare runs that have trained at least one step");
    double base_final;
    if (val.first >= 0 && val.first == base_val.first) {
      p.final_loss = val.second, base_final = base_val.second, p.final_is_val = true;
    } else {
      const int64_t end = std::min(windows.rbegin()->first, base_windows.rbegin()->first);
      if (!windows.count(end) || !base_windows.count(end))
        throw Error(ErrorKind::kData, str("the run's steps do not overlap the baseline's (", base.name, ")"),
                    run.name + "/metrics.jsonl", "compare runs of the same schedule");
      p.final_loss = windows.at(end), base_final = base_windows.at(end);
    }
    p.final_gap = (p.final_loss - base_final) / base_final;
    for (const auto& [end, mean] : windows) {
      if (end <= skip_before || !base_windows.count(end)) continue;
      const double gap = (mean - base_windows.at(end)) / base_windows.at(end);
      if (std::fabs(gap) > std::fabs(p.worst_window_gap)) p.worst_window_gap = gap, p.worst_window_end = end;
    }
    p.pass = std::fabs(p.final_gap) <= o.tolerance && std::fabs(p.worst_window_gap) <= o.window_tolerance;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tt
