// Reading what `topotrain report` shows from a run directory (see run_report.h).
#include "launch/report/run_report.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/trace_recorder.h"

namespace tt {

namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  const json j = json::parse(read_file_to_string(path, ErrorKind::kData), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw Error(ErrorKind::kData, "not valid JSON", path, "the file was cut short or edited; remove it or re-run");
  return j;
}

// The newest measured trace under <run_dir>/trace/ (not the .predicted.json twins), or "".
std::string newest_trace(const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string best;
  fs::file_time_type best_time;
  for (fs::directory_iterator it(run_dir + "/trace", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool json_file = name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
    if (!json_file || name.find(".predicted.") != std::string::npos) continue;
    const auto t = fs::last_write_time(it->path(), ec);
    if (!ec && (best.empty() || t > best_time)) {
      best = it->path().string();
      best_time = t;
    }
  }
  return best;
}

}  // namespace

std::vector<RankPhases> trace_rank_phases(const std::string& path, int* steps) {
  const json j = read_json(path);
  const json* events = j.is_object() && j.contains("traceEvents") ? &j["traceEvents"] : j.is_array() ? &j : nullptr;
  if (!events || !events->is_array())
    throw Error(ErrorKind::kData, "not a Chrome trace-event file (no traceEvents array)", path,
                "pass a trace written by train.trace_steps");
  struct Event {
    int rank, lane;
    double ts, dur;
    std::string name;
    bool step;
  };
  std::vector<Event> all;
  for (const json& e : *events) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("pid") || !e["pid"].is_number_integer() ||
        !e.contains("tid") || !e["tid"].is_number_integer() || !e.contains("ts") || !e["ts"].is_number() ||
        !e.contains("dur") || !e["dur"].is_number())
      continue;
    const int lane = e["tid"].get<int>();
    // The virtual lanes (collectives in flight, device phases) overlap the phases of the thread's lane.
    if (lane >= std::min(trace::kCollectiveLane, trace::kDeviceLane)) continue;
    all.push_back({e["pid"].get<int>(), lane, e["ts"].get<double>(), e["dur"].get<double>(), e.value("name", ""),
                   e.value("cat", "") == "step"});
  }
  auto inside = [](const Event& outer, const Event& inner) {
    return outer.rank == inner.rank && outer.lane == inner.lane && outer.ts <= inner.ts &&
           inner.ts + inner.dur <= outer.ts + outer.dur && &outer != &inner;
  };
  // A phase is a span directly inside a step span: inside one, and inside no other non-step span.
  std::map<int, RankPhases> by_rank;
  std::map<int, int> step_spans;
  for (const Event& e : all) {
    if (e.step) {
      ++step_spans[e.rank];
      continue;
    }
    bool in_step = false, nested = false;
    for (const Event& o : all) {
      if (!inside(o, e)) continue;
      (o.step ? in_step : nested) = true;
    }
    if (!in_step || nested) continue;
    RankPhases& rp = by_rank[e.rank];
    rp.rank = e.rank;
    rp.seconds[e.name] += e.dur * 1e-6;  // trace-event times are microseconds
  }
  if (steps) *steps = step_spans.empty() ? 0 : step_spans.begin()->second;
  std::vector<RankPhases> out;
  for (auto& [rank, rp] : by_rank) out.push_back(std::move(rp));
  return out;
}

RunReport read_run_report(const std::string& run_dir) {
  RunReport r;
  r.run_dir = run_dir;
  r.metrics = read_run_metrics(run_dir + "/metrics.jsonl");
  r.entropy_floor = synthetic_entropy_floor(run_dir);
  if (is_regular_file(run_dir + "/config.pbtxt")) r.config_text = read_file_to_string(run_dir + "/config.pbtxt");
  const std::string prediction = run_dir + "/prediction.json";
  if (is_regular_file(prediction)) {
    const json j = read_json(prediction);
    if (!j.is_object())
      throw Error(ErrorKind::kData, "not a JSON object", prediction, "remove it; the next run writes it again");
    for (const auto& [name, value] : j.items())
      if (value.is_number()) r.predicted[name] = value.get<double>();
    if (j.contains("inputs") && j["inputs"].is_object())
      for (const auto& [name, value] : j["inputs"].items())
        r.prediction_inputs[name] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  r.trace_path = newest_trace(run_dir);
  if (!r.trace_path.empty()) r.rank_phases = trace_rank_phases(r.trace_path, &r.traced_steps);
  return r;
}

}  // namespace tt
