// ZeRO-3 parameter groups gathered on demand (see sharded_params.h).
#include "parallel/ddp/sharded_params.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/trace_recorder.h"
#include "parallel/ddp/shard_gather.h"

namespace tt::parallel {

ShardedParams::ShardedParams(Communicator& comm, std::vector<ParamGroup> groups, int64_t n,
                             const std::vector<int>& resident, bool prefetch, DType dtype, const Exec& exec)
    : comm_(comm),
      groups_(std::move(groups)),
      layout_(group_ranges(groups_), comm.size(), comm.rank()),
      dtype_(dtype),
      exec_(exec),
      prefetch_(prefetch),
      slots_(resident) {
  TT_ASSERT(groups_.back().end == n, "groups must cover [0, ", n, ")");
  shard_ = Tensor::zeros("zero3.parameter_shard", {std::max<int64_t>(layout_.size(), 1)}, dtype, exec.device);
  if (comm_.size() == 1) return;  // acquire reads the shard, which is the whole buffer
  std::vector<int64_t> sizes;
  for (const ParamGroup& g : groups_) sizes.push_back(g.size());
  for (Tensor& values : slots_.allocate(sizes, "zero3", dtype, exec.device))
    windows_.push_back({std::move(values), nullptr});
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

void ShardedParams::start_gather(int slot, int group) {
  wait(slot);  // never overwrite a buffer a collective still writes
  const ParamGroup& g = groups_[size_t(group)];
  slots_.fill(slot, -1);  // until the gather is issued: should issuing throw, the window holds no group
  // The shard's latest values (an update enqueued on the compute stream) must be in place: the
  // communicator orders its collectives after that stream.
  windows_[size_t(slot)].in_flight =
      all_gather_range(comm_, layout_, shard_.raw(), dtype_, g.begin, g.end, windows_[size_t(slot)].values.raw());
  slots_.fill(slot, group);
}

void ShardedParams::wait(int slot, std::chrono::steady_clock::time_point since) {
  Window& w = windows_[size_t(slot)];
  if (!w.in_flight) return;
  trace::ScopedSpan span("ZeRO-3 parameter gather wait", "comm");
  w.in_flight->wait();  // on a timeout it stays in flight: the destructor still waits for it
  w.in_flight.reset();
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

const void* ShardedParams::acquire(int group, int next_group) {
  TT_ASSERT(group >= 0 && size_t(group) < groups_.size(), "parameter group ", group);
  if (comm_.size() == 1)  // one piece per group, in order
    return static_cast<char*>(shard_.raw()) + groups_[size_t(group)].begin * int64_t(dtype_size(dtype_));
  int slot = slots_.holding(group);
  auto since = std::chrono::steady_clock::now();
  if (slot < 0) {  // not prefetched: gather now, keeping a prefetched next_group
    slot = slots_.slot_for(group, next_group);
    TT_ASSERT(slot >= 0, "no window for parameter group ", group);
    wait(slot);                                // a gather still filling that window
    since = std::chrono::steady_clock::now();  // from here on, issuing included, the step waits for group
    start_gather(slot, group);
  }
  wait(slot, since);
  slots_.touch(slot);
  if (prefetch_ && next_group >= 0 && next_group != group && slots_.holding(next_group) < 0) {
    const int next_slot = slots_.slot_for(next_group, group);
    TT_ASSERT(next_slot >= 0, "no window for parameter group ", next_group);
    start_gather(next_slot, next_group);
  }
  return windows_[size_t(slot)].values.raw();
}

void ShardedParams::invalidate() {
  for (int s = 0; s < int(windows_.size()); ++s) wait(s);
  slots_.clear();
}

double ShardedParams::take_wait_s() {
  const double s = wait_s_;
  wait_s_ = 0;
  return s;
}

}  // namespace tt::parallel
