// Hierarchical all-reduce of gradient buckets (see hierarchical.h).
#include "parallel/ddp/hierarchical.h"

#include <algorithm>

#include "core/error.h"

namespace tt::parallel {

CollectiveShape parse_collective_shape(const std::string& name) {
  if (name.empty() || name == "flat") return CollectiveShape::kFlat;
  if (name == "hierarchical") return CollectiveShape::kHierarchical;
  throw Error(ErrorKind::kConfig, str("parallel.collective \"", name, "\" is not supported"), "parallel.collective",
              "use \"flat\" or \"hierarchical\"");
}

const char* collective_shape_name(CollectiveShape s) {
  return s == CollectiveShape::kHierarchical ? "hierarchical" : "flat";
}

struct HierarchicalAllReduce::Slots {
  std::vector<int64_t> bounds;             // L + 1 chunk offsets into the bucket
  std::vector<std::vector<int64_t>> sub;   // per chunk: N + 1 sub-chunk offsets into the chunk
  std::vector<int64_t> counts;             // chunk lengths (uncompressed reduce_scatter_v / all_gather_v)
  size_t chunk_off = 0;                    // uncompressed: elements into chunk_buf_
  size_t c1 = 0, c2 = 0;                   // compressed bytes per chunk slot / sub-chunk slot
  size_t off1 = 0, off2 = 0, offg = 0;     // into send1_/recv1_, send2_/recv2_, gathered_
  int64_t owner1_off = 0, owner2_off = 0;  // into residual_ (after the gradient's n elements)

  int64_t chunk_len(int l) const { return bounds[size_t(l) + 1] - bounds[size_t(l)]; }
  int64_t sub_lo(int l, int n) const { return sub[size_t(l)][size_t(n)]; }
  int64_t sub_len(int l, int n) const { return sub[size_t(l)][size_t(n) + 1] - sub[size_t(l)][size_t(n)]; }
};

namespace {
size_t align4(size_t b) { return (b + 3) / 4 * 4; }  // fp32 scales and bf16 stay aligned in every slot
}  // namespace

HierarchicalAllReduce::HierarchicalAllReduce(Communicator& comm, Tensor grads, GradCodec& codec,
                                             const std::vector<Bucket>& buckets, bool error_feedback,
                                             int ranks_per_node)
    : grads_(std::move(grads)),
      dtype_(grads_.dtype()),
      esize_(dtype_size(dtype_)),
      codec_(codec),
      buckets_(buckets),
      compression_(codec.compression()) {
  layout_ = node_layout(comm, ranks_per_node);
  const bool compressed = compression_ != GradCompression::kNone;
  // One communicator per stage (see stage_pipeline.h), split in the same order on every rank.
  intra_first_ = split_intra_node(comm, layout_);
  inter_first_ = split_inter_node(comm, layout_);
  if (compressed) inter_second_ = split_inter_node(comm, layout_);
  intra_last_ = split_intra_node(comm, layout_);

  const int L = layout_.local_size, N = layout_.num_nodes, me = layout_.local_rank;
  size_t chunk_total = 0, total1 = 0, total2 = 0, total_g = 0;
  int64_t owner_total = 0, largest_chunk = 0;
  for (const Bucket& b : buckets_) {
    Slots s;
    s.bounds = chunk_bounds(b.size(), L);
    for (int l = 0; l < L; ++l) {
      s.counts.push_back(s.chunk_len(l));
      s.sub.push_back(chunk_bounds(s.chunk_len(l), N));
      s.c1 = std::max(s.c1, compressed_bytes(s.chunk_len(l), compression_));
      for (int n = 0; n < N; ++n) s.c2 = std::max(s.c2, compressed_bytes(s.sub_len(l, n), compression_));
    }
    s.chunk_off = chunk_total;
    chunk_total += size_t(s.chunk_len(me));
    if (compressed) {
      s.c1 = align4(s.c1);
      s.c2 = align4(s.c2);
      s.off1 = total1;
      s.off2 = total2;
      s.offg = total_g;
      total1 += s.c1 * size_t(L);
      total2 += s.c2 * size_t(N);
      total_g += s.c2 * size_t(N) * size_t(L);
      // Chunk 0 and its sub-chunk 0 are the largest (chunk_bounds gives earlier parts the remainder).
      s.owner1_off = owner_total;
      owner_total += s.chunk_len(0);
      s.owner2_off = owner_total;
      owner_total += s.sub_len(0, 0);
      largest_chunk = std::max(largest_chunk, s.chunk_len(0));
    }
    slots_.push_back(std::move(s));
  }
  if (compressed) {
    // Zeroed once: slot padding is sent but never written.
    auto bytes = [&](const char* name, size_t size) {
      return codec_.buffer(name, int64_t(std::max<size_t>(size, 1)), DType::kI8);
    };
    send1_ = bytes("hierarchical.node_send", total1);
    recv1_ = bytes("hierarchical.node_receive", total1);
    send2_ = bytes("hierarchical.cross_node_send", total2);
    recv2_ = bytes("hierarchical.cross_node_receive", total2);
    gathered_ = bytes("hierarchical.gathered", total_g);
    acc_ = codec_.buffer("hierarchical.chunk_average", std::max<int64_t>(largest_chunk, 1), DType::kF32);
    if (error_feedback)
      residual_ = codec_.buffer("compression.error_feedback", grads_.numel() + owner_total, DType::kF32);
  } else {
    chunk_buf_ = codec_.buffer("hierarchical.chunks", int64_t(std::max<size_t>(chunk_total, 1)), dtype_);
  }
  const int stages = compressed ? 4 : 3;
  // Device gradients go over NCCL: its stages must be issued in one fixed order (StagePipeline).
  const bool eager = codec_.device().kind == DeviceKind::kCpu;
  pipeline_ = std::make_unique<StagePipeline>(
      stages,
      [this, compressed](int stage, size_t bucket) {
        return compressed ? issue_compressed(stage, bucket) : issue_fp32(stage, bucket);
      },
      eager);
}

HierarchicalAllReduce::~HierarchicalAllReduce() = default;

void HierarchicalAllReduce::begin() { pipeline_->begin(buckets_.size()); }

void HierarchicalAllReduce::launch(size_t bucket) { pipeline_->start(bucket); }

void HierarchicalAllReduce::poll() { pipeline_->advance(); }

const char* HierarchicalAllReduce::stage_name(int stage) const {
  static const char* const kFp32[] = {"node reduce_scatter", "cross-node all_reduce", "node all_gather"};
  static const char* const kCompressed[] = {"node all_to_all", "cross-node all_to_all", "cross-node all_gather",
                                            "node all_gather"};
  const bool compressed = compression_ != GradCompression::kNone;
  TT_ASSERT(stage >= 0 && stage < (compressed ? 4 : 3), "hierarchical stage ", stage);
  return compressed ? kCompressed[stage] : kFp32[stage];
}

void HierarchicalAllReduce::finish(std::vector<StagePipeline::Span>& spans) {
  pipeline_->finish(spans);
  if (compression_ != GradCompression::kNone)
    for (size_t i = 0; i < buckets_.size(); ++i) decompress_bucket(i);
}

std::shared_ptr<Work> HierarchicalAllReduce::issue_fp32(int stage, size_t i) {
  const Bucket& b = buckets_[i];
  const Slots& s = slots_[i];
  char* g = grad_bytes(b.begin);
  char* chunk = static_cast<char*>(chunk_buf_.raw()) + s.chunk_off * esize_;
  switch (stage) {
    case 0:  // the node's average of every chunk, chunk l to local rank l
      return intra_first_->reduce_scatter_v(g, chunk, s.counts, dtype_, ReduceOp::kAvg);
    case 1:  // the average of my chunk over the nodes
      return inter_first_->all_reduce(chunk, s.chunk_len(layout_.local_rank), dtype_, ReduceOp::kAvg);
    default:  // every chunk back into the bucket
      return intra_last_->all_gather_v(chunk, g, s.counts, dtype_);
  }
}

std::shared_ptr<Work> HierarchicalAllReduce::issue_compressed(int stage, size_t i) {
  const Bucket& b = buckets_[i];
  const Slots& s = slots_[i];
  const int L = layout_.local_size, N = layout_.num_nodes, l = layout_.local_rank, node = layout_.node;
  const int64_t n_grads = grads_.numel();
  float* res = residual_.defined() ? residual_.data<float>() : nullptr;
  switch (stage) {
    case 0: {  // compress every chunk; chunk l goes to local rank l
      uint8_t* send = send1_.data<uint8_t>() + s.off1;
      for (int r = 0; r < L; ++r) {
        const int64_t lo = s.bounds[size_t(r)], len = s.chunk_len(r);
        if (len > 0)
          codec_.compress(grad_bytes(b.begin + lo), dtype_, res ? res + b.begin + lo : nullptr, len,
                          send + size_t(r) * s.c1);
      }
      return intra_first_->all_to_all(send, recv1_.data<uint8_t>() + s.off1, int64_t(s.c1), DType::kI8);
    }
    case 1: {  // the node's share of the average of my chunk, cut into one sub-chunk per node
      const int64_t len = s.chunk_len(l);
      uint8_t* send = send2_.data<uint8_t>() + s.off2;
      if (len > 0) {
        float* acc = acc_.data<float>();
        codec_.zero(acc, size_t(len) * sizeof(float));
        const float inv_world = 1.0f / float(L * N);
        for (int r = 0; r < L; ++r)
          codec_.decompress_add(recv1_.data<uint8_t>() + s.off1 + size_t(r) * s.c1, len, inv_world, acc);
        float* owner = res ? res + n_grads + s.owner1_off : nullptr;
        for (int n = 0; n < N; ++n) {
          const int64_t lo = s.sub_lo(l, n), sl = s.sub_len(l, n);
          if (sl > 0) codec_.compress(acc + lo, DType::kF32, owner ? owner + lo : nullptr, sl, send + size_t(n) * s.c2);
        }
      }
      return inter_first_->all_to_all(send, recv2_.data<uint8_t>() + s.off2, int64_t(s.c2), DType::kI8);
    }
    case 2: {  // the average of my sub-chunk, re-compressed into my slot and gathered across nodes
      const int64_t sl = s.sub_len(l, node);
      uint8_t* slots = send2_.data<uint8_t>() + s.off2;
      uint8_t* mine = slots + size_t(node) * s.c2;
      if (sl > 0) {
        float* acc = acc_.data<float>();
        codec_.zero(acc, size_t(sl) * sizeof(float));
        for (int n = 0; n < N; ++n)
          codec_.decompress_add(recv2_.data<uint8_t>() + s.off2 + size_t(n) * s.c2, sl, 1.0f, acc);
        codec_.compress(acc, DType::kF32, res ? res + n_grads + s.owner2_off : nullptr, sl, mine);
      }
      return inter_second_->all_gather(mine, slots, int64_t(s.c2), DType::kI8);
    }
    default:  // every node-rank's gathered sub-chunks to the whole node
      return intra_last_->all_gather(send2_.data<uint8_t>() + s.off2, gathered_.data<uint8_t>() + s.offg,
                                     int64_t(s.c2) * N, DType::kI8);
  }
}

// Every rank decompresses the same gathered bytes: identical gradients everywhere.
void HierarchicalAllReduce::decompress_bucket(size_t i) {
  const Bucket& b = buckets_[i];
  const Slots& s = slots_[i];
  const int L = layout_.local_size, N = layout_.num_nodes;
  for (int l = 0; l < L; ++l)
    for (int n = 0; n < N; ++n) {
      const int64_t sl = s.sub_len(l, n);
      if (sl > 0)
        codec_.decompress(gathered_.data<uint8_t>() + s.offg + (size_t(l) * size_t(N) + size_t(n)) * s.c2, sl,
                          grad_bytes(b.begin + s.bounds[size_t(l)] + s.sub_lo(l, n)), dtype_);
    }
}

}  // namespace tt::parallel
