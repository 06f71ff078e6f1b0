// Serial-link overlap simulation (see overlap.h).
#include "parallel/cost/overlap.h"

#include <algorithm>

#include "core/error.h"

namespace tt::cost {

LinkSchedule simulate_serial_link(const std::vector<LinkJob>& jobs, double compute_end_s, double link_free_at_s) {
  LinkSchedule s;
  double free_at = link_free_at_s, covered_to = 0;  // covered_to: end of the in-flight union so far
  for (const LinkJob& j : jobs) {
    TT_ASSERT(j.duration_s >= 0 && j.latency_s >= 0, "negative link job duration or latency");
    const double start = std::max(j.ready_s, free_at);
    free_at = start + j.duration_s;
    const double end = free_at + j.latency_s;
    s.end_s.push_back(end);
    s.busy_s += std::max(0.0, end - std::max(start, covered_to));  // starts never decrease
    covered_to = std::max(covered_to, end);
    s.finish_s = std::max(s.finish_s, end);
  }
  s.exposed_s = std::max(0.0, s.finish_s - compute_end_s);
  return s;
}

std::vector<double> bucket_ready_times(const std::vector<parallel::Bucket>& buckets,
                                       const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges,
                                       const std::vector<double>& ready_fraction, double backward_s) {
  TT_ASSERT(tensor_ranges.size() == ready_fraction.size(), "ready_fraction must parallel tensor_ranges");
  std::vector<double> ready;
  ready.reserve(buckets.size());
  for (const auto& b : buckets) {
    // Tensors are sorted by offset: binary-search the first one ending after b.begin.
    auto it = std::upper_bound(tensor_ranges.begin(), tensor_ranges.end(), b.begin,
                               [](int64_t v, const std::pair<int64_t, int64_t>& r) { return v < r.second; });
    double f = 0;
    for (; it != tensor_ranges.end() && it->first < b.end; ++it)
      f = std::max(f, ready_fraction[size_t(it - tensor_ranges.begin())]);
    ready.push_back(f * backward_s);
  }
  return ready;
}

}  // namespace tt::cost
