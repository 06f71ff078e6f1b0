// Hierarchical all-reduce of gradient buckets (ZeRO-0): intra-node reduce-scatter -> inter-node
// all-reduce of this rank's chunk -> intra-node all-gather, so only 1/(ranks per node) of every
// bucket crosses the network per rank (parallel.collective "hierarchical"; the planner's "hier").
//
// Design:
//  - Sub-communicators from Communicator::split (node_groups.h): one per stage, so a bucket's next
//    stage is issued as soon as its previous one completed, during backward (StagePipeline).
//  - Chunks: the bucket is cut into one chunk per local rank by chunk_bounds (block-aligned, the
//    same on every rank); local rank l owns chunk l on every node, and the inter-node communicator
//    of local rank l reduces exactly those chunks.
//  - fp32 (3 stages): reduce_scatter_v(avg) on the node into a chunk buffer; all_reduce(avg) of the
//    chunk across nodes; all_gather_v of the chunks on the node back into the bucket. The average is
//    (sum over the node / L) then (sum over nodes / N): equal to the flat average up to rounding.
//  - bf16 / int8 (4 stages), GradReducer's compressed reduce-scatter + all-gather applied at both
//    levels: every rank compresses its L chunks (error feedback on the gradient) and an all_to_all
//    on the node delivers chunk l to local rank l, which decompress-adds the L copies (scaled by
//    1/world); it cuts that partial sum into N sub-chunks, compresses them (error feedback: "node
//    owner" residual) and an all_to_all across nodes delivers sub-chunk n to node n's rank, which
//    decompress-adds the N copies into the global average of its sub-chunk and re-compresses it
//    (error feedback: "sub-chunk owner" residual); an all_gather across nodes and one on the node
//    then hand every rank all L x N compressed averages, which every rank decompresses identically:
//    bit-identical gradients on all ranks. Wire bytes per rank: 2(L-1)/L of the compressed bucket
//    on the node, 2(N-1)/N of 1/L of it across nodes (plus slot padding).
//  - Element-wise work runs through GradReducer's GradCodec, on the gradients' device and in their
//    dtype (fp32 or bf16); the uncompressed chunk buffer holds the gradients' dtype. With GPU
//    gradients (NCCL) only the first stage overlaps backward: the pipeline is not eager (see
//    stage_pipeline.h), so the later stages are issued in a fixed order when backward is done.
// Not thread-safe; driven by GradReducer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/node_groups.h"
#include "parallel/ddp/buckets.h"
#include "parallel/ddp/compression.h"
#include "parallel/ddp/grad_codec.h"
#include "parallel/ddp/stage_pipeline.h"

namespace tt::parallel {

enum class CollectiveShape { kFlat, kHierarchical };

// "flat" (or "") and "hierarchical"; throws kConfig naming parallel.collective otherwise.
CollectiveShape parse_collective_shape(const std::string& name);
const char* collective_shape_name(CollectiveShape s);

class HierarchicalAllReduce {
 public:
  // Collective over comm (node_layout + the splits). grads and buckets as GradReducer's; the codec
  // (its compression is the payload's) outlives this. ranks_per_node as node_layout(). With
  // error_feedback and a compressed payload, residual() is allocated (see there).
  HierarchicalAllReduce(Communicator& comm, Tensor grads, GradCodec& codec, const std::vector<Bucket>& buckets,
                        bool error_feedback, int ranks_per_node);
  ~HierarchicalAllReduce();

  void begin();                // before a backward whose gradients are reduced
  void launch(size_t bucket);  // the bucket's gradients are final: its first stage
  void poll();                 // issues later stages whose predecessors completed
  // Finishes every stage and writes the averaged gradients; appends every collective's span (stage by
  // stage, in bucket order: the same order on every rank).
  void finish(std::vector<StagePipeline::Span>& spans);
  // What stage `stage` runs, as a trace names it: "node reduce_scatter", "cross-node all_reduce",
  // "node all_gather" (fp32); "node all_to_all", "cross-node all_to_all", "cross-node all_gather",
  // "node all_gather" (compressed).
  const char* stage_name(int stage) const;

  const NodeLayout& layout() const { return layout_; }
  // Error-feedback state (empty without): [0, n) the gradient's residual, then per bucket the node
  // owner slot (the largest chunk) and the sub-chunk owner slot (the largest sub-chunk).
  Tensor& residual() { return residual_; }
  const Tensor& residual() const { return residual_; }

 private:
  struct Slots;  // per-bucket chunk geometry and buffer offsets
  std::shared_ptr<Work> issue_fp32(int stage, size_t bucket);
  std::shared_ptr<Work> issue_compressed(int stage, size_t bucket);
  void decompress_bucket(size_t bucket);
  char* grad_bytes(int64_t element) const { return static_cast<char*>(grads_.raw()) + element * esize_; }

  Tensor grads_;
  DType dtype_;
  size_t esize_;
  GradCodec& codec_;
  std::vector<Bucket> buckets_;
  GradCompression compression_;
  NodeLayout layout_;
  // Stage communicators: node (first stage), across nodes (one or two), node (last stage).
  std::unique_ptr<Communicator> intra_first_, inter_first_, inter_second_, intra_last_;
  std::vector<Slots> slots_;
  Tensor chunk_buf_;                                 // uncompressed: this rank's chunk of every bucket
  Tensor send1_, recv1_, send2_, recv2_, gathered_;  // compressed payloads (bytes)
  Tensor acc_;                                       // compressed, fp32: the chunk being reduced
  Tensor residual_;
  std::unique_ptr<StagePipeline> pipeline_;
};

}  // namespace tt::parallel
