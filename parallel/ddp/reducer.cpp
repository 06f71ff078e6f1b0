// GradReducer (see reducer.h).
#include "parallel/ddp/reducer.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/logging.h"
#include "core/trace_recorder.h"
#include "parallel/comm/trace/collective_span.h"

namespace tt::parallel {

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The part of the buffer this rank's optimizer updates: all of it (stage 0), shard_of's contiguous
// cut (stages 1, 2), or every bucket cut across the ranks (stage 3, one bucket per parameter group).
ShardLayout zero_layout(const std::vector<Bucket>& buckets, int64_t n, int zero_stage, Communicator& comm) {
  if (zero_stage == 0) return ShardLayout(n, 1, 0);
  if (zero_stage < 3) return ShardLayout(n, comm.size(), comm.rank());
  std::vector<std::pair<int64_t, int64_t>> units;
  for (auto b = buckets.rbegin(); b != buckets.rend(); ++b) units.push_back({b->begin, b->end});
  return ShardLayout(units, comm.size(), comm.rank());
}
}  // namespace

GradReducer::GradReducer(Communicator& comm, Tensor grads,
                         const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges, int zero_stage,
                         const BucketCaps& caps, GradCompression compression, bool error_feedback,
                         CollectiveShape shape, int ranks_per_node, const Exec& exec, DType dtype)
    : comm_(comm),
      grads_(std::move(grads)),
      dtype_(grads_.defined() ? grads_.dtype() : dtype),
      esize_(dtype_size(dtype_)),
      exec_(exec),
      codec_(GradCodec::create(dtype_, grads_.defined() ? grads_.device() : exec.device, compression, exec.stream)),
      zero_stage_(zero_stage),
      // ZeRO-3: one bucket per range (parameter group), each a unit of the shard layout.
      buckets_(assign_buckets(tensor_ranges, esize_, zero_stage == 3 ? BucketCaps{0, 0} : caps)),
      n_(tensor_ranges.empty() ? 0 : tensor_ranges.back().second),
      shard_layout_(zero_layout(buckets_, n_, zero_stage, comm)),
      compression_(compression) {
  TT_ASSERT(zero_stage >= 0 && zero_stage <= 3, "zero_stage ", zero_stage);
  TT_ASSERT(grads_.defined() ? grads_.numel() == n_ : zero_stage == 3, "gradient buffer of ", grads_.numel(),
            " elements for tensor ranges over ", n_, " (only ZeRO-3 may go without one)");
  const int64_t n = n_;
  if (shape == CollectiveShape::kHierarchical) {
    if (zero_stage_ != 0)
      throw Error(ErrorKind::kConfig, "the hierarchical collective works with the all-reduce (zero_stage 0) only",
                  "parallel.collective", "set parallel.zero_stage=0 or parallel.collective=\"flat\"");
    hier_ = std::make_unique<HierarchicalAllReduce>(comm_, grads_, *codec_, buckets_, error_feedback, ranks_per_node);
    if (comm_.rank() == 0)
      log_info("gradient all-reduce: hierarchical over ", hier_->layout().str(),
               " (intra-node reduce-scatter, inter-node all-reduce, intra-node all-gather)");
    return;
  }
  if (zero_stage_ > 0) {
    const int64_t len = std::max<int64_t>(shard_layout_.size(), 1);
    shard_grads_ = codec_->buffer("zero.shard_gradients", len, dtype_);
    if (zero_stage_ >= 2) shard_recv_ = codec_->buffer("zero.shard_receive", len, dtype_);
  }
  if (compression_ != GradCompression::kNone) {
    if (zero_stage_ != 0)
      throw Error(ErrorKind::kConfig, "gradient compression works with the all-reduce (zero_stage 0) only",
                  "parallel.grad_compression", "set parallel.zero_stage=0 or parallel.grad_compression=\"none\"");
    const int world = comm_.size();
    size_t total = 0;
    int64_t owner_total = 0, largest_chunk = 0;
    for (const Bucket& b : buckets_) {
      ChunkLayout l;
      l.bounds = chunk_bounds(b.size(), world);
      int64_t longest = 0;
      for (int r = 0; r < world; ++r) {
        const int64_t len = l.bounds[size_t(r) + 1] - l.bounds[size_t(r)];
        longest = std::max(longest, len);
        l.chunk_bytes = std::max(l.chunk_bytes, compressed_bytes(len, compression_));
      }
      l.chunk_bytes = (l.chunk_bytes + 3) / 4 * 4;  // keep every slot 4-byte aligned (fp32 scales, bf16)
      l.offset = total;
      l.owner_offset = owner_total;
      total += l.chunk_bytes * size_t(world);
      owner_total += longest;
      largest_chunk = std::max(largest_chunk, longest);
      layout_.push_back(std::move(l));
    }
    // Zeroed once: the padding of each slot is sent but never written, so it stays zero.
    send_ = codec_->buffer("compression.send", int64_t(std::max<size_t>(total, 1)), DType::kI8);
    recv_ = codec_->buffer("compression.receive", int64_t(std::max<size_t>(total, 1)), DType::kI8);
    owner_acc_ = codec_->buffer("compression.owner_average", std::max<int64_t>(largest_chunk, 1), DType::kF32);
    if (error_feedback) residual_ = codec_->buffer("compression.error_feedback", n + owner_total, DType::kF32);
  }
}

GradReducer::~GradReducer() = default;

void GradReducer::begin_backward(int micro, int accum_steps) {
  TT_ASSERT(pending_.empty(), "begin_backward() before the previous finish_backward()");
  TT_ASSERT(grads_.defined() || windows_, "a reducer without a gradient buffer needs use_grad_windows()");
  TT_ASSERT(micro >= 0 && micro < accum_steps, "micro-step ", micro, " of ", accum_steps);
  communicate_ = zero_stage_ >= 2 || micro == accum_steps - 1;
  first_micro_ = micro == 0;
  next_bucket_ = 0;
  ready_from_ = n_;
  if (hier_ && communicate_) hier_->begin();
  if (windows_) windows_->begin_backward();
}

void GradReducer::on_grads_ready(int64_t begin, int64_t end) {
  TT_ASSERT(end == ready_from_, "gradient ranges must arrive in decreasing order: got [", begin, ", ", end, ") after ",
            ready_from_);
  ready_from_ = begin;
  if (!communicate_) return;
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= ready_from_) launch(next_bucket_++);
  if (hier_) hier_->poll();
}

void GradReducer::launch(size_t i) {
  if (hier_) {
    hier_->launch(i);
    return;
  }
  issued_at_.push_back(now_s());
  const Bucket& b = buckets_[i];
  if (compression_ != GradCompression::kNone) {
    launch_compressed(i);
    return;
  }
  if (zero_stage_ == 0) {
    pending_.push_back(comm_.all_reduce(grad_bytes(b.begin), b.size(), dtype_, ReduceOp::kAvg));
    return;
  }
  char* recv = static_cast<char*>((zero_stage_ >= 2 ? shard_recv_ : shard_grads_).raw()) +
               shard_layout_.local_of(b.begin, b.end) * esize_;
  const int group = int(buckets_.size() - 1 - i);  // ZeRO-3: bucket i is group G-1-i
  const void* send = windows_ ? static_cast<const void*>(windows_->window(group)) : grad_bytes(b.begin);
  pending_.push_back(comm_.reduce_scatter_v(send, recv, shard_layout_.split(b.begin, b.end), dtype_, ReduceOp::kAvg));
  if (windows_) windows_->reading(group, pending_.back());
}

// Compresses chunk r of the bucket into send slot r and sends it to rank r.
void GradReducer::launch_compressed(size_t i) {
  const Bucket& b = buckets_[i];
  const ChunkLayout& l = layout_[i];
  float* residual = residual_.defined() ? residual_.data<float>() + b.begin : nullptr;
  uint8_t* send = send_.data<uint8_t>() + l.offset;
  for (int r = 0; r < comm_.size(); ++r) {
    const int64_t lo = l.bounds[size_t(r)], len = l.bounds[size_t(r) + 1] - lo;
    if (len > 0)
      codec_->compress(grad_bytes(b.begin + lo), dtype_, residual ? residual + lo : nullptr, len,
                       send + size_t(r) * l.chunk_bytes);
  }
  pending_.push_back(comm_.all_to_all(send, recv_.data<uint8_t>() + l.offset, int64_t(l.chunk_bytes), DType::kI8));
}

void GradReducer::finish_backward() {
  const double t0 = now_s();
  if (communicate_) TT_ASSERT(next_bucket_ == buckets_.size(), "backward did not report every gradient range");
  // In-flight time is the union of the [issued, completed] intervals: queued collectives overlap.
  std::vector<std::pair<double, double>> spans;
  if (hier_ && communicate_) {
    std::vector<StagePipeline::Span> stages;
    hier_->finish(stages);
    for (const StagePipeline::Span& st : stages) {
      spans.push_back({st.issued_s, st.end_s});
      if (trace::enabled()) trace_bucket(st.bucket, hier_->stage_name(st.stage), spans.back());
    }
  } else if (compression_ != GradCompression::kNone && communicate_) {
    finish_compressed(spans);
  } else {
    for (size_t i = 0; i < pending_.size(); ++i) {
      pending_[i]->wait();
      spans.push_back({issued_at_[i], issued_at_[i] + pending_[i]->elapsed_s()});
      if (trace::enabled()) trace_bucket(i, zero_stage_ == 0 ? "all_reduce" : "reduce_scatter", spans.back());
    }
  }
  std::sort(spans.begin(), spans.end());
  double covered_until = -1e300;
  for (const auto& [b, e] : spans) {
    times_.comm_s += std::max(0.0, e - std::max(b, covered_until));
    covered_until = std::max(covered_until, e);
  }
  pending_.clear();
  issued_at_.clear();
  times_.exposed_comm_s += now_s() - t0;
  if (windows_) {  // backward waited for reduce-scatters to free gradient windows
    const double waited = windows_->take_wait_s();
    times_.exposed_comm_s += waited;
    times_.backward_wait_s += waited;
  }
  if (zero_stage_ >= 2 && communicate_) {
    const int64_t n = shard_layout_.size();
    // The first micro-step overwrites the shard, later ones accumulate into it.
    if (first_micro_)
      codec_->copy(shard_grads_.raw(), shard_recv_.raw(), size_t(n) * esize_);
    else
      codec_->accumulate(shard_grads_.raw(), shard_recv_.raw(), n, dtype_);
    if (grads_.defined()) codec_->zero(grads_.raw(), grads_.nbytes());  // reduced gradients now live only in the shard
  }
}

// pending_[i] is bucket i's all_to_all (launched in bucket order). Per bucket, in order: average the
// copies of my chunk in rank order, re-compress it into my send slot, all-gather the slots in
// place. Then every rank decompresses the same gathered bytes: identical results on every rank.
void GradReducer::finish_compressed(std::vector<std::pair<double, double>>& spans) {
  TT_ASSERT(pending_.size() == buckets_.size(), "compressed all-reduce: ", pending_.size(), " all_to_alls for ",
            buckets_.size(), " buckets");
  const int world = comm_.size(), me = comm_.rank();
  const float inv = 1.0f / float(world);
  std::vector<std::shared_ptr<Work>> gathers;
  std::vector<double> gathered_at;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    pending_[i]->wait();
    spans.push_back({issued_at_[i], issued_at_[i] + pending_[i]->elapsed_s()});
    if (trace::enabled()) trace_bucket(i, "all_to_all", spans.back());
    const ChunkLayout& l = layout_[i];
    const int64_t len = l.bounds[size_t(me) + 1] - l.bounds[size_t(me)];
    uint8_t* slots = send_.data<uint8_t>() + l.offset;
    uint8_t* mine = slots + size_t(me) * l.chunk_bytes;
    if (len > 0) {
      float* acc = owner_acc_.data<float>();
      codec_->zero(acc, size_t(len) * sizeof(float));
      const uint8_t* copies = recv_.data<uint8_t>() + l.offset;
      for (int r = 0; r < world; ++r) codec_->decompress_add(copies + size_t(r) * l.chunk_bytes, len, inv, acc);
      float* owner_residual = residual_.defined() ? residual_.data<float>() + n_ + l.owner_offset : nullptr;
      codec_->compress(acc, DType::kF32, owner_residual, len, mine);
    }
    gathered_at.push_back(now_s());
    gathers.push_back(comm_.all_gather(mine, slots, int64_t(l.chunk_bytes), DType::kI8));
  }
  for (size_t i = 0; i < buckets_.size(); ++i) {
    gathers[i]->wait();
    spans.push_back({gathered_at[i], gathered_at[i] + gathers[i]->elapsed_s()});
    if (trace::enabled()) trace_bucket(i, "all_gather", spans.back());
    const Bucket& b = buckets_[i];
    const ChunkLayout& l = layout_[i];
    for (int r = 0; r < world; ++r) {
      const int64_t lo = l.bounds[size_t(r)], len = l.bounds[size_t(r) + 1] - lo;
      if (len > 0)
        codec_->decompress(send_.data<uint8_t>() + l.offset + size_t(r) * l.chunk_bytes, len, grad_bytes(b.begin + lo),
                           dtype_);
    }
  }
}

void GradReducer::trace_bucket(size_t i, const char* algorithm, std::pair<double, double> in_flight) const {
  CollectiveSpan c;
  c.name = "bucket " + std::to_string(i) + " " + algorithm;
  c.algorithm = algorithm;
  c.payload = grad_compression_name(compression_);
  if (c.payload == "none") c.payload = dtype_name(dtype_);
  c.bytes = buckets_[i].size() * int64_t(esize_);
  c.bucket = int(i);
  c.issued_s = in_flight.first;
  c.end_s = in_flight.second;
  record_collective(c);
}

GradSink* GradReducer::use_grad_windows(const std::vector<int>& resident) {
  TT_ASSERT(zero_stage_ == 3, "gradient windows are for ZeRO-3");
  TT_ASSERT(!windows_, "use_grad_windows() called twice");
  windows_ = std::make_unique<GradWindows>(shard_layout_.units(), resident, dtype_, exec_);
  return windows_.get();
}

CommTimes GradReducer::take_times() {
  CommTimes t = times_;
  times_ = CommTimes{};
  return t;
}

}  // namespace tt::parallel
