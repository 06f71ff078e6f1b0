// Reading a run's metrics.jsonl (see run_metrics.h).
#include "launch/run_metrics.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/error.h"
#include "data/shard.h"
#include "data/synth.h"

namespace tt {

std::vector<MetricsRecord> read_run_metrics(const std::string& path) {
  std::ifstream f(path);
  if (!f)
    throw Error(ErrorKind::kData, "cannot open metrics file", path, "pass the run_dir of a `topotrain train` run");
  std::vector<MetricsRecord> records;
  std::string line;
  int line_no = 0;
  while (std::getline(f, line)) {
    ++line_no;
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number_integer())
      throw Error(ErrorKind::kData, "line is not a metrics record with a step", str(path, ":", line_no),
                  "the file was edited or cut short; remove the damaged line");
    MetricsRecord r;
    r.step = j["step"].get<int64_t>();
    for (const auto& [name, value] : j.items()) {
      if (name == "step") continue;
      if (value.is_number()) r.values[name] = value.get<double>();
      if (value.is_boolean()) r.values[name] = value.get<bool>() ? 1.0 : 0.0;
    }
    records.push_back(std::move(r));
  }
  if (records.empty()) throw Error(ErrorKind::kData, "no metrics records", path, "train for at least one step first");
  return records;
}

double synthetic_entropy_floor(const std::string& run_dir) {
  const std::string config_path = run_dir + "/config.pbtxt";
  if (!std::ifstream(config_path)) return NAN;
  try {
    const config::Config cfg = load_config(config_path);
    const std::string manifest = data::find_synth_manifest(data::resolve_shards(cfg.data().train()).front());
    if (manifest.empty()) return NAN;
    return data::read_synth_manifest(manifest).window_floor(cfg.train().seq_len());
  } catch (const Error&) {
    return NAN;  // data moved or deleted: no floor
  }
}

double median_of(const std::vector<MetricsRecord>& records, const std::string& field, size_t skip) {
  std::vector<double> v;
  for (size_t i = records.size() > skip ? skip : 0; i < records.size(); ++i)
    if (records[i].has(field) && std::isfinite(records[i].get(field))) v.push_back(records[i].get(field));
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace tt
