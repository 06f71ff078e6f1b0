// A finished or running training's record, as `plot` and `report` read it: the numeric fields of
// every metrics.jsonl line by name, and the entropy floor when the run trained on the built-in
// synthetic corpus.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tt {

struct MetricsRecord {
  int64_t step = 0;
  std::map<std::string, double> values;  // every numeric (and boolean, as 0/1) field but "step"

  bool has(const std::string& field) const { return values.count(field) > 0; }
  double get(const std::string& field) const {  // NaN when absent
    const auto it = values.find(field);
    return it == values.end() ? NAN : it->second;
  }
};

// The records of `path` (a run's metrics.jsonl) in file order. Throws tt::Error(kData) naming the
// file (and line) when it is missing, empty, or a line is not a JSON object with a step.
std::vector<MetricsRecord> read_run_metrics(const std::string& path);

// The per-token entropy floor of the run's training data at its seq_len when that data is the
// built-in synthetic corpus (data/synth.h), read through <run_dir>/config.pbtxt; NaN otherwise or when
// the data has moved.
double synthetic_entropy_floor(const std::string& run_dir);

// The median of the values of `field` over `records` from index `skip` on (fewer records: from the
// first), ignoring records without it; NaN when none has it.
double median_of(const std::vector<MetricsRecord>& records, const std::string& field, size_t skip = 0);

}  // namespace tt
