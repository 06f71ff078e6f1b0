// PrefetchLoader: a DataLoader read ahead by one background thread, so the training step does not
// wait for page faults and int32 conversion of the next batch.
// Design: the worker owns the wrapped loader while it runs and fills a ring of `depth` batch
// buffers; the caller copies out of the ring. Everything the caller observes — the batch sequence,
// state() — is exactly what the plain loader would give: state() is the position of the next batch
// the CALLER gets, not the worker's read-ahead position, so a checkpoint taken between steps resumes
// on the very next batch. set_state()/reset() stop the worker, drop the read-ahead and restart it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/loader.h"

namespace tt::data {

class PrefetchLoader {
 public:
  // Takes ownership of `loader` and starts the worker, which reads up to `depth` (>= 1) batches
  // ahead from the loader's current state. Throws tt::Error(kConfig) for depth < 1 or a null loader.
  explicit PrefetchLoader(std::unique_ptr<DataLoader> loader, int depth = 2);
  // Stops the worker (waking it if it waits for a free buffer) and joins it; never throws.
  ~PrefetchLoader();
  PrefetchLoader(const PrefetchLoader&) = delete;
  PrefetchLoader& operator=(const PrefetchLoader&) = delete;

  // The next batch, as DataLoader::next would return it: copies B*T inputs and targets and returns
  // where they came from. Blocks until the worker has it; last_wait_s() is the time spent in this
  // call (waiting plus copying), i.e. the training loop's data stall. An error the worker hit while
  // reading this batch (tt::Error(kData), ...) is rethrown here, and again on every later call until
  // set_state()/reset().
  BatchInfo next(int32_t* inputs, int32_t* targets);
  double last_wait_s() const { return last_wait_s_; }
  double total_wait_s() const { return total_wait_s_; }

  // Position of the next batch the caller will get (identical on all ranks, as DataLoader::state).
  LoaderState state() const { return state_; }
  // Drains the read-ahead, moves the loader to `state` and restarts the worker. Throws
  // tt::Error(kCheckpoint) like DataLoader::set_state; the prefetcher then keeps its old position.
  void set_state(const LoaderState& state);
  void reset() { set_state(LoaderState{}); }

  // The wrapped loader, for its immutable properties (batches_per_epoch, batch_size, shard list…).
  // Do not call next/set_state/batch_order on it: the worker uses it concurrently.
  const DataLoader& loader() const { return *loader_; }
  int depth() const { return static_cast<int>(slots_.size()); }

  // Ownership and the calling thread: every public method must be called from one thread (the
  // owner); the worker thread is internal.

 private:
  struct Slot {
    std::vector<int32_t> inputs, targets;
    BatchInfo info;
    LoaderState after;  // loader state once this batch was read
    std::exception_ptr error;
  };
  void start_worker();
  void stop_worker() noexcept;
  void worker_loop();

  std::unique_ptr<DataLoader> loader_;
  std::vector<Slot> slots_;
  LoaderState state_;  // caller's position (owner thread only)
  double last_wait_s_ = 0.0, total_wait_s_ = 0.0;

  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  size_t head_ = 0;   // next slot the caller consumes
  size_t count_ = 0;  // filled slots, from head_ on
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace tt::data
