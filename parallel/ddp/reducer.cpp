// GradReducer (see reducer.h).
#include "parallel/ddp/reducer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"

namespace tt::parallel {

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

GradReducer::GradReducer(Communicator& comm, Tensor grads, const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges,
                         int zero_stage, const BucketCaps& caps, GradCompression compression, bool error_feedback)
    : comm_(comm), grads_(std::move(grads)), zero_stage_(zero_stage), compression_(compression) {
  TT_ASSERT(zero_stage >= 0 && zero_stage <= 2, "zero_stage ", zero_stage);
  buckets_ = assign_buckets(tensor_ranges, sizeof(float), caps);
  const int64_t n = grads_.numel();
  shard_ = zero_stage_ == 0 ? Shard{0, n} : shard_of(n, comm_.size(), comm_.rank());
  if (zero_stage_ > 0) {
    shard_grads_ = Tensor::zeros("zero.shard_gradients", {std::max<int64_t>(shard_.size(), 1)});
    if (zero_stage_ == 2) shard_recv_ = Tensor::zeros("zero.shard_receive", {std::max<int64_t>(shard_.size(), 1)});
  }
  if (compression_ != GradCompression::kNone) {
    if (zero_stage_ != 0)
      throw Error(ErrorKind::kConfig, "gradient compression works with the all-reduce (zero_stage 0) only",
                  "parallel.grad_compression", "set parallel.zero_stage=0 or parallel.grad_compression=\"none\"");
    if (error_feedback) residual_ = Tensor::zeros("compression.error_feedback", {n});
    size_t total = 0;
    for (const Bucket& b : buckets_) {
      send_offset_.push_back(total);
      total += compressed_bytes(b.size(), compression_);
    }
    send_.resize(total);
    recv_.resize(total * size_t(comm_.size()));
  }
}

const float* GradReducer::shard_grads() const {
  return zero_stage_ == 0 ? grads_.data<float>() : shard_grads_.data<float>();
}

void GradReducer::begin_backward(int micro, int accum_steps) {
  TT_ASSERT(pending_.empty(), "begin_backward() before the previous finish_backward()");
  TT_ASSERT(micro >= 0 && micro < accum_steps, "micro-step ", micro, " of ", accum_steps);
  communicate_ = zero_stage_ == 2 || micro == accum_steps - 1;
  first_micro_ = micro == 0;
  next_bucket_ = 0;
  ready_from_ = grads_.numel();
}

void GradReducer::on_grads_ready(int64_t begin, int64_t end) {
  TT_ASSERT(end == ready_from_, "gradient ranges must arrive in decreasing order: got [", begin, ", ", end,
            ") after ", ready_from_);
  ready_from_ = begin;
  if (!communicate_) return;
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= ready_from_) launch(next_bucket_++);
}

void GradReducer::launch(size_t i) {
  issued_at_.push_back(now_s());
  const Bucket& b = buckets_[i];
  float* g = grads_.data<float>();
  if (compression_ != GradCompression::kNone) {
    uint8_t* send = send_.data() + send_offset_[i];
    compress_with_feedback(g + b.begin, residual_.defined() ? residual_.data<float>() + b.begin : nullptr, b.size(),
                           compression_, send);
    const size_t bytes = compressed_bytes(b.size(), compression_);
    pending_.push_back(comm_.all_gather(send, recv_.data() + send_offset_[i] * size_t(comm_.size()), int64_t(bytes),
                                        DType::kI8));
    return;
  }
  if (zero_stage_ == 0) {
    pending_.push_back(comm_.all_reduce(g + b.begin, b.size(), DType::kF32, ReduceOp::kAvg));
    return;
  }
  const std::vector<int64_t> counts = split_by_shards(b.begin, b.end, grads_.numel(), comm_.size());
  const int64_t mine_begin = std::max(b.begin, shard_.begin) - shard_.begin;
  float* recv = (zero_stage_ == 2 ? shard_recv_ : shard_grads_).data<float>() + std::max<int64_t>(0, mine_begin);
  pending_.push_back(comm_.reduce_scatter_v(g + b.begin, recv, counts, DType::kF32, ReduceOp::kAvg));
}

void GradReducer::finish_backward() {
  const double t0 = now_s();
  if (communicate_) TT_ASSERT(next_bucket_ == buckets_.size(), "backward did not report every gradient range");
  // In-flight time is the union of the [issued, completed] intervals: queued collectives overlap.
  std::vector<std::pair<double, double>> spans;
  for (size_t i = 0; i < pending_.size(); ++i) {
    pending_[i]->wait();
    spans.push_back({issued_at_[i], issued_at_[i] + pending_[i]->elapsed_s()});
  }
  std::sort(spans.begin(), spans.end());
  double covered_until = -1e300;
  for (const auto& [b, e] : spans) {
    times_.comm_s += std::max(0.0, e - std::max(b, covered_until));
    covered_until = std::max(covered_until, e);
  }
  pending_.clear();
  issued_at_.clear();
  if (compression_ != GradCompression::kNone && communicate_) finish_compressed();
  times_.exposed_comm_s += now_s() - t0;
  if (zero_stage_ == 2 && communicate_) {
    float* acc = shard_grads_.data<float>();
    const float* in = shard_recv_.data<float>();
    const int64_t n = shard_.size();
    // The first micro-step overwrites the shard, later ones accumulate into it.
    if (first_micro_) std::memcpy(acc, in, size_t(n) * sizeof(float));
    else
      for (int64_t i = 0; i < n; ++i) acc[i] += in[i];
    grads_.fill_zero();  // reduced gradients now live only in the shard
  }
}

// Every rank decompresses all ranks' payloads and sums them in rank order: identical results.
void GradReducer::finish_compressed() {
  float* g = grads_.data<float>();
  const int world = comm_.size();
  const float inv = 1.0f / float(world);
  for (size_t i = 0; i < buckets_.size(); ++i) {
    const Bucket& b = buckets_[i];
    const size_t bytes = compressed_bytes(b.size(), compression_);
    std::memset(g + b.begin, 0, size_t(b.size()) * sizeof(float));
    const uint8_t* all = recv_.data() + send_offset_[i] * size_t(world);
    for (int r = 0; r < world; ++r) decompress_add(all + size_t(r) * bytes, b.size(), compression_, inv, g + b.begin);
  }
}

CommTimes GradReducer::take_times() {
  CommTimes t = times_;
  times_ = CommTimes{};
  return t;
}

}  // namespace tt::parallel
