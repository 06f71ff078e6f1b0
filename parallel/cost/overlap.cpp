// Link simulation in issue order (see overlap.h).
#include "parallel/cost/overlap.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "parallel/ddp/window_slots.h"

namespace tt::cost {

Link::Link(int ports) : free_at_(size_t(std::max(ports, 1)), 0.0) {}

double Link::issue(const LinkJob& job) {
  TT_ASSERT(job.duration_s >= 0 && job.latency_s >= 0, "negative link job duration or latency");
  const bool every_port = job.port_load.empty();
  TT_ASSERT(every_port || job.port_load.size() == free_at_.size(), "a job loads ", job.port_load.size(),
            " ports of a link with ", free_at_.size());
  // Each port is its own queue: it takes its share as soon as it is free, and the job ends with its
  // slowest port (a bucket split between two owners does not wait for the busier direction).
  double start = -1, end = job.ready_s;
  for (size_t p = 0; p < free_at_.size(); ++p) {
    const double load = every_port ? 1.0 : job.port_load[p];
    if (load <= 0) continue;
    const double port_start = std::max(job.ready_s, free_at_[p]);
    free_at_[p] = port_start + load * job.duration_s;
    start = start < 0 ? port_start : std::min(start, port_start);
    end = std::max(end, free_at_[p]);
  }
  if (start < 0) start = job.ready_s;  // loads no port: only its latency
  end += job.latency_s;
  spans_.push_back({start, end});
  finish_s_ = std::max(finish_s_, end);
  return end;
}

double Link::busy_s() const {  // the union of the jobs' [start, end]: one may start before another ends
  std::vector<std::pair<double, double>> spans = spans_;
  std::sort(spans.begin(), spans.end());
  double busy = 0, covered_to = -1e300;
  for (const auto& [start, end] : spans) {
    busy += std::max(0.0, end - std::max(start, covered_to));
    covered_to = std::max(covered_to, end);
  }
  return busy;
}

std::vector<double> owner_port_load(const std::vector<int64_t>& counts) {
  const size_t n = counts.size();
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::vector<double> load(2 * n, 0.0);
  if (n < 2 || total <= 0) return load;
  const double balanced = double(n - 1) * double(total) / double(n);  // per port, the ring collective
  for (size_t p = 0; p < n; ++p) {
    // Chain to root r: r+1 → … → r. Rank p receives every owner's part but that of the chain it
    // starts (r = p-1), sends every part but its own.
    load[2 * p] = double(total - counts[(p + n - 1) % n]) / balanced;
    load[2 * p + 1] = double(total - counts[p]) / balanced;
  }
  return load;
}

LinkSchedule simulate_serial_link(const std::vector<LinkJob>& jobs, double compute_end_s, int ports) {
  LinkSchedule s;
  Link link(ports);
  for (const LinkJob& j : jobs) {
    s.end_s.push_back(link.issue(j));
    s.start_s.push_back(link.last_start_s());
  }
  s.busy_s = link.busy_s();
  s.finish_s = link.finish_s();
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

namespace {

// ShardedParams' windows (the same WindowSlots policy), in time: when each slot's gather ends.
class Windows {
 public:
  Windows(const std::vector<LinkJob>& gathers, const std::vector<int>& resident, Link& link)
      : gathers_(gathers), link_(link), slots_(resident), ready_s_(size_t(slots_.size()), 0.0) {}

  // When g's values are there, or < 0 when no window holds g.
  double held(int g) const {
    const int s = slots_.holding(g);
    return s < 0 ? -1 : ready_s_[size_t(s)];
  }
  void gather(int g, int keep, double now, int micro, std::vector<TimelineSpan>& spans) {
    TT_ASSERT(g >= 0 && size_t(g) < gathers_.size(), "no gather job for parameter group ", g);
    const int s = slots_.slot_for(g, keep);
    TT_ASSERT(s >= 0, "no window for parameter group ", g);
    LinkJob job = gathers_[size_t(g)];
    job.ready_s = now;
    slots_.fill(s, g);
    ready_s_[size_t(s)] = link_.issue(job);
    spans.push_back({g, micro, link_.last_start_s(), ready_s_[size_t(s)]});
  }
  void used(int g) { slots_.touch(slots_.holding(g)); }

 private:
  const std::vector<LinkJob>& gathers_;
  Link& link_;
  parallel::WindowSlots slots_;
  std::vector<double> ready_s_;  // per slot
};

}  // namespace

Zero3Timeline simulate_zero3_step(const std::vector<LinkJob>& gathers,
                                  const std::vector<std::pair<int, double>>& forward,
                                  const std::vector<std::pair<int, double>>& backward, const std::vector<int>& resident,
                                  const std::vector<LinkJob>& grads, int micro_steps, int ports, bool prefetch) {
  TT_ASSERT(micro_steps >= 1, "micro_steps ", micro_steps);
  Link link(ports);
  Windows windows(gathers, resident, link);  // kept across micro-steps: nothing changes the shards
  std::vector<std::pair<int, double>> acquires;
  for (int m = 0; m < micro_steps; ++m) {
    acquires.insert(acquires.end(), forward.begin(), forward.end());
    acquires.insert(acquires.end(), backward.begin(), backward.end());
  }
  double backward_total = 0;
  for (const auto& a : backward) backward_total += a.second;
  // Ready times and the running sum of compute are computed differently: compare with a tolerance.
  const double eps = 1e-9 * std::max(1.0, backward_total);
  TT_ASSERT(!backward.empty() || grads.empty(), "gradient jobs without a backward pass");
  Zero3Timeline tl;
  double t = 0, backward_compute = 0;  // the training thread's clock; this micro-step's backward so far
  double grads_end = 0;                // when this micro-step's gradient jobs end
  size_t next_grad = 0;
  const size_t pass = forward.size() + backward.size();
  for (size_t i = 0; i < acquires.size(); ++i) {
    const int g = acquires[i].first;
    const size_t in_pass = i % pass;
    const bool last = in_pass + 1 == pass;  // backward's last acquire names no next group (Model::backward)
    const int next = last ? -1 : acquires[i + 1].first;
    const int micro = int(i / pass);
    if (windows.held(g) < 0) windows.gather(g, next, t, micro, tl.gathers);
    t = std::max(t, windows.held(g));
    windows.used(g);
    if (prefetch && next >= 0 && next != g && windows.held(next) < 0) windows.gather(next, g, t, micro, tl.gathers);
    const double compute = acquires[i].second;
    TT_ASSERT(compute >= 0, "negative compute time for parameter group ", g);
    if (in_pass == forward.size()) backward_compute = 0, next_grad = 0;  // this micro-step's backward starts
    if (in_pass >= forward.size()) {  // the reducer issues each bucket once compute passes its ready time
      for (; next_grad < grads.size() && (last || grads[next_grad].ready_s <= backward_compute + compute + eps);
           ++next_grad) {  // the last group's compute takes all that is left
        LinkJob job = grads[next_grad];
        job.ready_s = t + std::min(compute, std::max(0.0, job.ready_s - backward_compute));
        const double end = link.issue(job);
        tl.grads.push_back({int(next_grad), micro, link.last_start_s(), end});
        grads_end = std::max(grads_end, end);
      }
      backward_compute += compute;
    }
    (in_pass < forward.size() ? tl.forward : tl.backward).push_back({g, micro, t, t + compute});
    t += compute;
    tl.compute_s += compute;
    if (last) t = std::max(t, grads_end);  // finish_backward: the micro-step's reductions end first
  }
  tl.wall_s = std::max(t, link.finish_s());
  tl.busy_s = link.busy_s();
  return tl;
}

}  // namespace tt::cost
