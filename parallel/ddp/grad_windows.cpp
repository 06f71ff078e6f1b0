// ZeRO-3 gradient windows (see grad_windows.h).
#include "parallel/ddp/grad_windows.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace tt::parallel {

GradWindows::GradWindows(std::vector<std::pair<int64_t, int64_t>> groups, const std::vector<int>& resident, DType dtype,
                         const Exec& exec)
    : groups_(std::move(groups)), dtype_(dtype), exec_(exec), slots_(resident), zeroed_(groups_.size(), 0) {
  std::vector<int64_t> sizes;
  for (const auto& [begin, end] : groups_) sizes.push_back(end - begin);
  windows_ = slots_.allocate(sizes, "zero3.gradients", dtype, exec.device);
  reading_.resize(windows_.size());
  unsent_.resize(windows_.size(), 0);
}

GradWindows::~GradWindows() {
  for (auto& w : reading_)
    if (w) try {
        w->wait();
      } catch (...) {  // reported by whoever waits next; never throw here
      }
}

void* GradWindows::grads(int group) {
  TT_ASSERT(group >= 0 && size_t(group) < groups_.size(), "parameter group ", group);
  int slot = slots_.holding(group);
  if (slot < 0 || !zeroed_[size_t(group)]) {
    if (slot < 0) slot = slots_.slot_for(group, -1);
    TT_ASSERT(slot >= 0, "no gradient window for parameter group ", group);
    TT_ASSERT(!unsent_[size_t(slot)] || slots_.holding(group) == slot, "parameter group ", group,
              " would overwrite gradients not yet reduced");
    if (auto& r = reading_[size_t(slot)]) {  // the last reduce-scatter from this window
      const auto t0 = std::chrono::steady_clock::now();
      r->wait();
      r.reset();
      wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    slots_.fill(slot, group);
    const auto [begin, end] = groups_[size_t(group)];
    zero_async(exec_, windows_[size_t(slot)].raw(), size_t(end - begin) * dtype_size(dtype_));
    zeroed_[size_t(group)] = 1;
    unsent_[size_t(slot)] = 1;
  }
  slots_.touch(slot);
  return windows_[size_t(slot)].raw();
}

void GradWindows::begin_backward() { std::fill(zeroed_.begin(), zeroed_.end(), 0); }

void* GradWindows::window(int group) {
  const int slot = slots_.holding(group);
  TT_ASSERT(slot >= 0, "no gradient window holds parameter group ", group);
  return windows_[size_t(slot)].raw();
}

void GradWindows::reading(int group, std::shared_ptr<Work> work) {
  const int slot = slots_.holding(group);
  TT_ASSERT(slot >= 0, "no gradient window holds parameter group ", group);
  reading_[size_t(slot)] = std::move(work);
  unsent_[size_t(slot)] = 0;
}

double GradWindows::take_wait_s() {
  const double s = wait_s_;
  wait_s_ = 0;
  return s;
}

int64_t GradWindows::elements() const {
  int64_t n = 0;
  for (const Tensor& w : windows_) n += w.numel();
  return n;
}

}  // namespace tt::parallel
