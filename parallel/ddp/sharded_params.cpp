// ZeRO-3 parameter groups gathered on demand (see sharded_params.h).
#include "parallel/ddp/sharded_params.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "parallel/ddp/shard_gather.h"

namespace tt::parallel {

ShardedParams::ShardedParams(Communicator& comm, std::vector<ParamGroup> groups, int64_t n,
                             const std::vector<int>& resident, bool prefetch)
    : comm_(comm),
      groups_(std::move(groups)),
      layout_(group_ranges(groups_), comm.size(), comm.rank()),
      prefetch_(prefetch) {
  TT_ASSERT(groups_.back().end == n, "groups must cover [0, ", n, ")");
  shard_ = Tensor::zeros("zero3.parameter_shard", {std::max<int64_t>(layout_.size(), 1)});
  if (comm_.size() == 1) return;  // acquire reads the shard, which is the whole buffer
  int64_t largest = 0;
  for (int g = 0; g < int(groups_.size()); ++g) {
    const bool is_resident = std::find(resident.begin(), resident.end(), g) != resident.end();
    if (!is_resident) largest = std::max(largest, groups_[size_t(g)].size());
  }
  windows_.resize(resident.size() + 2);
  for (size_t i = 0; i < resident.size(); ++i) {
    TT_ASSERT(resident[i] >= 0 && size_t(resident[i]) < groups_.size(), "resident group ", resident[i]);
    windows_[i].resident_group = resident[i];
    windows_[i].values = Tensor::zeros(str("zero3.resident_group", resident[i]), {groups_[size_t(resident[i])].size()});
  }
  for (size_t i = resident.size(); i < windows_.size(); ++i)
    windows_[i].values = Tensor::zeros(str("zero3.window", i - resident.size()), {std::max<int64_t>(largest, 1)});
}

ShardedParams::~ShardedParams() {
  for (auto& w : windows_)
    if (w.in_flight) try {
        w.in_flight->wait();
      } catch (...) {  // the error was (or will be) reported by whoever waits next; never throw here
      }
}

int64_t ShardedParams::window_elements() const {
  int64_t n = 0;
  for (const auto& w : windows_) n += w.values.numel();
  return n;
}

ShardedParams::Window* ShardedParams::holding(int group) {
  for (auto& w : windows_)
    if (w.group == group) return &w;
  return nullptr;
}

ShardedParams::Window& ShardedParams::window_for(int group, int keep) {
  Window* best = nullptr;
  for (auto& w : windows_) {
    if (w.resident_group == group) return w;
    if (w.resident_group < 0 && (keep < 0 || w.group != keep) && (!best || w.last_used < best->last_used)) best = &w;
  }
  TT_ASSERT(best, "no window for parameter group ", group);
  return *best;
}

void ShardedParams::start_gather(Window& w, int group) {
  wait(w);  // never overwrite a buffer a collective still writes
  const ParamGroup& g = groups_[size_t(group)];
  w.group = group;
  w.in_flight = all_gather_range(comm_, layout_, shard_.data<float>(), g.begin, g.end, w.values.data<float>());
}

void ShardedParams::wait(Window& w, std::chrono::steady_clock::time_point since) {
  if (!w.in_flight) return;
  w.in_flight->wait();  // on a timeout it stays in flight: the destructor still waits for it
  w.in_flight.reset();
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

const float* ShardedParams::acquire(int group, int next_group) {
  TT_ASSERT(group >= 0 && size_t(group) < groups_.size(), "parameter group ", group);
  if (comm_.size() == 1) return shard_.data<float>() + groups_[size_t(group)].begin;  // one piece per group, in order
  Window* current = holding(group);
  auto since = std::chrono::steady_clock::now();
  if (!current) {  // not prefetched: gather now, keeping a prefetched next_group
    current = &window_for(group, next_group);
    wait(*current);                            // a gather still filling that window
    since = std::chrono::steady_clock::now();  // from here on, issuing included, the step waits for group
    start_gather(*current, group);
  }
  wait(*current, since);
  current->last_used = ++tick_;
  if (prefetch_ && next_group >= 0 && next_group != group && !holding(next_group))
    start_gather(window_for(next_group, group), next_group);
  return current->values.data<float>();
}

void ShardedParams::invalidate() {
  for (auto& w : windows_) {
    wait(w);
    w.group = -1;
  }
}

double ShardedParams::take_wait_s() {
  const double s = wait_s_;
  wait_s_ = 0;
  return s;
}

}  // namespace tt::parallel
