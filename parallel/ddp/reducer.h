// GradReducer: averages gradients across data-parallel ranks while backward is still running.
//
// Design: the model reports finished gradient ranges (in decreasing offset order) through its
// grad-ready callback; as soon as a bucket is covered, its collective is issued on the communicator,
// whose own thread progresses it while backward computes the earlier layers. finish() waits for the
// rest, and the time it waits is the step's *exposed* communication.
//   zero_stage 0: all_reduce(avg) of each bucket in place — every rank holds all averaged gradients.
//                 With a compressed payload (bf16, int8): a compressed reduce-scatter + all-gather.
//                 The bucket is split into size() chunks (chunk_bounds); during backward this rank
//                 compresses each chunk (with error feedback when enabled) into a rank-major send
//                 buffer, each chunk padded to the bucket's largest compressed chunk, and issues an
//                 all_to_all: rank r receives every rank's compressed chunk r. finish_backward()
//                 then walks the buckets in order: waits for the bucket's all_to_all, decompresses
//                 the copies of the chunk this rank owns in rank order into their average,
//                 re-compresses it (with a second, "owner" error-feedback residual) and issues an
//                 in-place all_gather of the compressed reduced chunks; then waits for the gathers
//                 in order and decompresses every chunk into the gradient. Every rank decompresses
//                 the same bytes: bit-identical gradients on all ranks. Wire volume per rank is
//                 2(n-1)/n of the compressed bucket (plus chunk padding), as a ring's.
//                 The follow-up (reduce + all_gather) runs in finish_backward(), not as soon as an
//                 all_to_all completes during backward: collectives must be issued in the same order
//                 on every rank, and completion times differ by rank. Each all_gather still overlaps
//                 the reduction of the next bucket and its all_to_all's tail.
//                 With CollectiveShape::kHierarchical (parallel.collective "hierarchical"), every
//                 payload runs as HierarchicalAllReduce (hierarchical.h) on sub-communicators of
//                 each node and across nodes instead, its stages issued as soon as their
//                 predecessors completed (polled from the grad-ready callback).
//   zero_stage 1: reduce_scatter(avg) of each bucket into this rank's gradient shard; only the last
//                 micro-step of an accumulation communicates.
//   zero_stage 2: as 1, but every micro-step is reduced and accumulated into the shard, and the full
//                 gradient buffer is cleared for the next micro-step: reduced gradients live only
//                 sharded.
//   zero_stage 3: as 2, but each tensor range (pass ZeRO-3's parameter groups) is a bucket of its
//                 own, whatever the caps, and a unit of the shard layout: every group is cut across
//                 all ranks, so each reduce-scatter is balanced (sharding.h). The parameter shards
//                 are ShardedParams (sharded_params.h), cut the same way. With use_grad_windows()
//                 backward writes each group's gradients into a window instead of a whole gradient
//                 buffer (grad_windows.h), and the reducer reduce-scatters the group from there.
// Gradients are fp32 or bf16, on the CPU or on a CUDA device: every element-wise step runs through
// a GradCodec (grad_codec.h) on the gradients' device, and every buffer the collectives touch lives
// there too. With CUDA gradients the communicator must be NCCL's, with `cuda_stream` (the stream
// that writes the gradients) as its compute stream. Collectives carry the gradients' dtype;
// compressed payloads, error-feedback residuals and the owner's average are fp32 arithmetic.
// The reducer does not own the gradient buffer or the communicator; both outlive it (it owns ZeRO-3's
// gradient windows). Not thread-safe: one backward at a time, on one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/exec.h"
#include "core/model/param_source.h"
#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/buckets.h"
#include "parallel/ddp/compression.h"
#include "parallel/ddp/grad_codec.h"
#include "parallel/ddp/grad_windows.h"
#include "parallel/ddp/hierarchical.h"
#include "parallel/ddp/sharding.h"

namespace tt::parallel {

struct CommTimes {
  double comm_s = 0.0;           // time at least one collective was in flight
  double exposed_comm_s = 0.0;   // time finish() waited after compute was done, and backward_wait_s
  double backward_wait_s = 0.0;  // time backward waited for a gradient window (ZeRO-3; inside backward's time)
};

class GradReducer {
 public:
  // shape kHierarchical needs zero_stage 0 (kConfig otherwise) and is collective over comm (it
  // splits it); ranks_per_node as node_layout() (0: comm's own nodes). exec: the gradients' device
  // and the stream the codec enqueues on (the stream that writes the gradients); dtype: the
  // gradients' (both must match grads when it is defined; ZeRO-3 may pass an undefined grads).
  GradReducer(Communicator& comm, Tensor grads, const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges,
              int zero_stage, const BucketCaps& caps, GradCompression compression = GradCompression::kNone,
              bool error_feedback = true, CollectiveShape shape = CollectiveShape::kFlat, int ranks_per_node = 0,
              const Exec& exec = {}, DType dtype = DType::kF32);
  ~GradReducer();

  // Before each micro-step's backward: micro-step `micro` of `accum_steps` in this optimizer step.
  void begin_backward(int micro, int accum_steps);
  // Whether this micro-step's backward communicates (set by begin_backward).
  bool communicates() const { return communicate_; }
  // The model's grad-ready callback.
  void on_grads_ready(int64_t begin, int64_t end);
  // ZeRO-3: the model's GradSink (Model::set_grad_sink), gradient windows the reducer reads each
  // group from, numbered as the tensor ranges (which must then be the model's parameter groups);
  // the gradient buffer may be undefined. resident: groups backward writes at both ends (tied
  // embeddings). Call once, before the first backward.
  GradSink* use_grad_windows(const std::vector<int>& resident);
  // After backward: waits for outstanding collectives and accumulates the times of this step. On a
  // GPU the last decompressions / accumulations are enqueued on the stream, not finished.
  void finish_backward();
  // Times since the last take_times() call (one optimizer step).
  CommTimes take_times();

  // The part of the flat buffer this rank's optimizer updates (the whole buffer at zero_stage 0),
  // and its reduced gradients, layout.pieces() back to back (the gradients' dtype and device).
  const ShardLayout& shard_layout() const { return shard_layout_; }
  Shard shard() const { return shard_layout_.range(); }  // zero_stage 0-2: one contiguous range
  const Tensor& shard_grads() const { return zero_stage_ == 0 ? grads_ : shard_grads_; }
  int zero_stage() const { return zero_stage_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  GradCompression compression() const { return compression_; }
  CollectiveShape shape() const { return hier_ ? CollectiveShape::kHierarchical : CollectiveShape::kFlat; }
  // The node layout the hierarchical all-reduce runs on (nullptr when flat).
  const NodeLayout* node_layout() const { return hier_ ? &hier_->layout() : nullptr; }
  // Error-feedback state of this rank (empty tensor without feedback); checkpointed state, the same
  // length on every rank. [0, n): the residual of this rank's compressed gradient (n = gradient
  // elements); [n, numel()): the "owner" residual of re-compressing the reduced chunks this rank
  // owns, per bucket a slot as long as the bucket's largest chunk (layout depends on size()); with
  // the hierarchical shape, HierarchicalAllReduce::residual()'s layout. fp32, on the gradients'
  // device.
  Tensor& residual() { return hier_ ? hier_->residual() : residual_; }
  const Tensor& residual() const { return hier_ ? hier_->residual() : residual_; }

 private:
  void launch(size_t bucket_index);
  void launch_compressed(size_t bucket_index);
  // Waits for the all_to_alls, reduces owned chunks, all-gathers them and decompresses; appends the
  // [issued, completed] span of every collective to spans.
  void finish_compressed(std::vector<std::pair<double, double>>& spans);
  // Records bucket i's collective (in flight over [first, second]) in the trace (tracing on only).
  void trace_bucket(size_t i, const char* algorithm, std::pair<double, double> in_flight) const;

  // Compressed path: per bucket, its chunks and where its payloads live.
  struct ChunkLayout {
    std::vector<int64_t> bounds;  // size() + 1 offsets into the bucket (chunk_bounds)
    size_t chunk_bytes = 0;       // compressed bytes per chunk slot, padded to the largest chunk
    size_t offset = 0;            // into send_ and recv_; the bucket's slots span size() * chunk_bytes
    int64_t owner_offset = 0;     // into the owner residual
  };

  char* grad_bytes(int64_t element) const { return static_cast<char*>(grads_.raw()) + element * esize_; }

  Communicator& comm_;
  Tensor grads_;  // undefined with gradient windows
  DType dtype_;   // of the gradients
  size_t esize_;  // bytes per gradient element
  Exec exec_;     // the gradients' device and stream
  std::unique_ptr<GradCodec> codec_;
  int zero_stage_;
  std::vector<Bucket> buckets_;
  int64_t n_;  // gradient elements
  ShardLayout shard_layout_;
  Tensor shard_grads_, shard_recv_;  // stages 1-3; shard_recv_ 2-3 only
  GradCompression compression_;
  Tensor residual_;                  // error feedback: full buffer, then the owner slots
  std::vector<ChunkLayout> layout_;  // per bucket
  // Compressed payloads (bytes), rank-major slots of chunk_bytes. send_: this rank's chunk r in slot
  // r, then (the all_gather's destination) rank r's reduced chunk r; recv_: rank r's copy of my chunk.
  Tensor send_, recv_;
  Tensor owner_acc_;  // fp32: the average of my chunk (largest chunk of any bucket)
  bool communicate_ = true, first_micro_ = true;
  size_t next_bucket_ = 0;
  int64_t ready_from_ = 0;
  std::vector<std::shared_ptr<Work>> pending_;
  std::vector<double> issued_at_;  // seconds, parallel to pending_
  CommTimes times_;
  std::unique_ptr<HierarchicalAllReduce> hier_;  // collective shape "hierarchical"
  std::unique_ptr<GradWindows> windows_;         // ZeRO-3 gradient windows (use_grad_windows)
};

}  // namespace tt::parallel
