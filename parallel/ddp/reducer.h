// GradReducer: averages gradients across data-parallel ranks while backward is still running.
//
// Design: the model reports finished gradient ranges (in decreasing offset order) through its
// grad-ready callback; as soon as a bucket is covered, its collective is issued on the communicator,
// whose own thread progresses it while backward computes the earlier layers. finish() waits for the
// rest, and the time it waits is the step's *exposed* communication.
//   zero_stage 0: all_reduce(avg) of each bucket in place — every rank holds all averaged gradients.
//                 With a compressed payload (bf16, int8) the bucket is compressed (with error
//                 feedback when enabled), all-gathered, and decompressed and summed in rank order.
//   zero_stage 1: reduce_scatter(avg) of each bucket into this rank's gradient shard; only the last
//                 micro-step of an accumulation communicates.
//   zero_stage 2: as 1, but every micro-step is reduced and accumulated into the shard, and the full
//                 gradient buffer is cleared for the next micro-step: reduced gradients live only
//                 sharded.
// The reducer does not own the gradient buffer or the communicator; both outlive it. Not
// thread-safe: one backward at a time, on one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/buckets.h"
#include "parallel/ddp/compression.h"
#include "parallel/ddp/sharding.h"

namespace tt::parallel {

struct CommTimes {
  double comm_s = 0.0;          // time at least one collective was in flight
  double exposed_comm_s = 0.0;  // time finish() waited after compute was done
};

class GradReducer {
 public:
  GradReducer(Communicator& comm, Tensor grads, const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges,
              int zero_stage, const BucketCaps& caps, GradCompression compression = GradCompression::kNone,
              bool error_feedback = true);

  // Before each micro-step's backward: micro-step `micro` of `accum_steps` in this optimizer step.
  void begin_backward(int micro, int accum_steps);
  // The model's grad-ready callback.
  void on_grads_ready(int64_t begin, int64_t end);
  // After backward: waits for outstanding collectives and accumulates the times of this step.
  void finish_backward();
  // Times since the last take_times() call (one optimizer step).
  CommTimes take_times();

  // The range of the flat buffer this rank's optimizer updates, and its reduced gradients.
  Shard shard() const { return shard_; }
  const float* shard_grads() const;
  int zero_stage() const { return zero_stage_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  GradCompression compression() const { return compression_; }
  // Error-feedback residual of this rank (empty tensor without feedback); checkpointed state.
  Tensor& residual() { return residual_; }

 private:
  void launch(size_t bucket_index);
  void finish_compressed();

  Communicator& comm_;
  Tensor grads_;
  int zero_stage_;
  std::vector<Bucket> buckets_;
  Shard shard_;
  Tensor shard_grads_, shard_recv_;  // stage 1/2 only
  GradCompression compression_;
  Tensor residual_;                     // error feedback, full buffer
  std::vector<uint8_t> send_, recv_;    // compressed payloads: this rank's, and all ranks'
  std::vector<size_t> send_offset_;     // per bucket, into send_ (recv_ offsets are size() times larger)
  bool communicate_ = true, first_micro_ = true;
  size_t next_bucket_ = 0;
  int64_t ready_from_ = 0;
  std::vector<std::shared_ptr<Work>> pending_;
  std::vector<double> issued_at_;  // seconds, parallel to pending_
  CommTimes times_;
};

}  // namespace tt::parallel
