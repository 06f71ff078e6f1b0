// PrefetchLoader: a bounded single-producer/single-consumer ring of batch buffers (see prefetch.h).
// Decision: restart-on-seek. set_state() joins the worker and starts a fresh one rather than
// signalling a running worker to rewind, so no read can ever race a state change.
#include "data/prefetch.h"

#include <chrono>
#include <cstring>

#include "core/error.h"

namespace tt::data {

PrefetchLoader::PrefetchLoader(std::unique_ptr<DataLoader> loader, int depth) : loader_(std::move(loader)) {
  if (!loader_) throw Error(ErrorKind::kConfig, "no data loader to prefetch from", "prefetch loader");
  if (depth < 1) throw Error(ErrorKind::kConfig, str("prefetch depth ", depth, " must be >= 1"), "prefetch loader");
  slots_.resize(static_cast<size_t>(depth));
  const size_t bt = static_cast<size_t>(loader_->tokens_per_batch());
  for (Slot& s : slots_) {
    s.inputs.resize(bt);
    s.targets.resize(bt);
  }
  state_ = loader_->state();
  start_worker();
}

PrefetchLoader::~PrefetchLoader() { stop_worker(); }

void PrefetchLoader::start_worker() {
  head_ = 0;
  count_ = 0;
  stop_ = false;
  worker_ = std::thread([this] { worker_loop(); });
}

void PrefetchLoader::stop_worker() noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  not_full_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void PrefetchLoader::worker_loop() {
  for (;;) {
    size_t idx;
    {
      std::unique_lock<std::mutex> lock(mu_);
      not_full_.wait(lock, [&] { return stop_ || count_ < slots_.size(); });
      if (stop_) return;
      idx = (head_ + count_) % slots_.size();
    }
    // The slot at idx is outside [head_, head_ + count_): the caller never touches it now.
    Slot& slot = slots_[idx];
    bool failed = false;
    try {
      slot.error = nullptr;
      slot.info = loader_->next(slot.inputs.data(), slot.targets.data());
      slot.after = loader_->state();
    } catch (...) {
      slot.error = std::current_exception();
      failed = true;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++count_;
    }
    not_empty_.notify_one();
    if (failed) return;  // the error stays at the ring's tail until set_state()
  }
}

BatchInfo PrefetchLoader::next(int32_t* inputs, int32_t* targets) {
  const auto t0 = std::chrono::steady_clock::now();
  size_t idx;
  {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return count_ > 0; });
    idx = head_;
  }
  Slot& slot = slots_[idx];
  if (slot.error) std::rethrow_exception(slot.error);  // not consumed: sticky
  const size_t bytes = slot.inputs.size() * sizeof(int32_t);
  std::memcpy(inputs, slot.inputs.data(), bytes);
  std::memcpy(targets, slot.targets.data(), bytes);
  const BatchInfo info = slot.info;
  state_ = slot.after;
  {
    std::lock_guard<std::mutex> lock(mu_);
    head_ = (head_ + 1) % slots_.size();
    --count_;
  }
  not_full_.notify_one();
  last_wait_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  total_wait_s_ += last_wait_s_;
  return info;
}

void PrefetchLoader::set_state(const LoaderState& state) {
  stop_worker();
  try {
    loader_->set_state(state);
    state_ = state;
  } catch (...) {
    loader_->set_state(state_);  // the caller's position always fits
    start_worker();
    throw;
  }
  start_worker();
}

}  // namespace tt::data
