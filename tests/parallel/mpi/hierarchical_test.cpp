// Communicator::split and the hierarchical all-reduce under mpirun (test_mpi runs with 2, 3 and 4
// ranks): split communicators rank, size and reduce correctly and run alongside their parent;
// GradReducer with parallel.collective "hierarchical" on pretended nodes (4 ranks = 2 nodes x 2,
// and 1 x N / N x 1) averages fp32 gradients as the flat all-reduce does (1e-6 relative: only the
// summation order differs) and compressed ones bit-identically on every rank, close to the mean.
// The same reducer on bf16 gradients (the GPU trainer's) matches it on fp32 ones within bf16
// rounding, for every payload, shape and ZeRO stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/node_groups.h"
#include "parallel/ddp/reducer.h"
#include "tests/parallel/mpi/mpi_test_env.h"

namespace tt::parallel {
namespace {

using test::mpi_comm;

TEST(CommSplit, ByParityRanksSizesAndReductions) {
  Communicator& c = mpi_comm();
  const int color = c.rank() % 2;
  auto sub = c.split(color, /*key=*/-c.rank());  // reversed order within each color
  const int members = (c.size() + 1 - color) / 2;
  EXPECT_EQ(sub->size(), members);
  // Key -rank: the highest world rank of the color is rank 0.
  const int highest = (c.size() - 1) % 2 == color ? c.size() - 1 : c.size() - 2;
  EXPECT_EQ(sub->rank(), (highest - c.rank()) / 2);
  EXPECT_EQ(sub->backend(), c.backend());
  EXPECT_EQ(sub->num_nodes(), 1);  // one host (or the pretended layout of the world, not set here)
  EXPECT_EQ(sub->local_size(), sub->size());

  // Sum of the world ranks of my color, on the sub-communicator, while the parent runs its own.
  int32_t mine = c.rank(), world_sum = c.rank();
  auto on_sub = sub->all_reduce(&mine, 1, DType::kI32, ReduceOp::kSum);
  auto on_world = c.all_reduce(&world_sum, 1, DType::kI32, ReduceOp::kSum);
  on_sub->wait();
  on_world->wait();
  int32_t want = 0;
  for (int r = color; r < c.size(); r += 2) want += r;
  EXPECT_EQ(mine, want);
  EXPECT_EQ(world_sum, c.size() * (c.size() - 1) / 2);

  // A split of a split, and the collectives of both stay independent.
  auto single = sub->split(sub->rank(), 0);
  EXPECT_EQ(single->size(), 1);
  float v = 3.0f;
  single->all_reduce(&v, 1, DType::kF32, ReduceOp::kAvg)->wait();
  EXPECT_EQ(v, 3.0f);
  std::vector<int32_t> gathered(size_t(sub->size()), -1);
  gathered[size_t(sub->rank())] = c.rank();
  sub->all_gather(&gathered[size_t(sub->rank())], gathered.data(), 1, DType::kI32)->wait();
  for (int r = 0; r < sub->size(); ++r) EXPECT_EQ(gathered[size_t(r)] % 2, color);
}

TEST(CommSplit, NodeGroupsOfPretendedNodes) {
  Communicator& c = mpi_comm();
  for (int per_node : {1, c.size()}) {
    const NodeLayout l = node_layout(c, per_node);
    EXPECT_EQ(l.local_size, per_node);
    EXPECT_EQ(l.num_nodes, c.size() / per_node);
    auto intra = split_intra_node(c, l);
    auto inter = split_inter_node(c, l);
    EXPECT_EQ(intra->size(), l.local_size);
    EXPECT_EQ(intra->rank(), l.local_rank);
    EXPECT_EQ(inter->size(), l.num_nodes);
    EXPECT_EQ(inter->rank(), l.node);
  }
  if (c.size() % 2 == 0) {
    const NodeLayout l = node_layout(c, 2);
    EXPECT_EQ(l.str(), str(c.size() / 2, c.size() == 2 ? " node x 2 ranks" : " nodes x 2 ranks"));
  }
  // Not a divisor of the rank count: a config error on every rank.
  if (c.size() > 2) EXPECT_THROW(node_layout(c, c.size() - 1), Error);
  // The hosts' own layout (one machine): one node of every rank.
  const NodeLayout own = node_layout(c, 0);
  EXPECT_EQ(own.num_nodes, c.num_nodes());
  EXPECT_EQ(own.local_size, c.local_size());
}

// A model-like layout: tensors of uneven sizes, small buckets so there are many, including ones
// smaller than an int8 block per local rank (empty chunks).
const std::vector<std::pair<int64_t, int64_t>>& layout_ranges() {
  static const std::vector<std::pair<int64_t, int64_t>> ranges = [] {
    std::vector<std::pair<int64_t, int64_t>> r;
    int64_t at = 0;
    for (int64_t n : {1000, 4096, 513, 20000, 77, 3000, 9000, 31}) {
      r.push_back({at, at + n});
      at += n;
    }
    return r;
  }();
  return ranges;
}
int64_t layout_elems() { return layout_ranges().back().second; }

// Rank r's gradient at a step: positive values in [0.5, 1.5) (no cancellation: relative errors
// stay meaningful), different on every rank.
std::vector<float> rank_input(int r, int64_t n, int step) {
  std::vector<float> g(size_t(n), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const double x = std::sin(double(i) * 12.9898 + r * 78.233 + step * 3.7) * 43758.5453;
    g[size_t(i)] = float(0.5 + (x - std::floor(x)));
  }
  return g;
}

// Runs one reduction of this rank's input through reducer and returns the result.
std::vector<float> reduce(GradReducer& reducer, Tensor& grads, int rank, int step) {
  const int64_t n = grads.numel();
  const std::vector<float> mine = rank_input(rank, n, step);
  std::copy(mine.begin(), mine.end(), grads.data<float>());
  reducer.begin_backward(0, 1);
  const auto& ranges = layout_ranges();
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) reducer.on_grads_ready(it->first, it->second);
  reducer.finish_backward();
  return std::vector<float>(grads.data<float>(), grads.data<float>() + n);
}

// Number of ranks whose vector differs from rank 0's.
int ranks_differing(Communicator& c, const std::vector<float>& v) {
  const int64_t n = int64_t(v.size());
  std::vector<float> all(size_t(n) * size_t(c.size()));
  c.all_gather(v.data(), all.data(), n, DType::kF32)->wait();
  int differ = 0;
  for (int r = 1; r < c.size(); ++r)
    differ += std::memcmp(all.data(), all.data() + size_t(r) * size_t(n), size_t(n) * 4) != 0;
  return differ;
}

BucketCaps small_buckets() {
  BucketCaps caps;
  caps.cap_bytes = 16 << 10;
  caps.first_cap_bytes = 4 << 10;
  return caps;
}

std::vector<int> pretended_layouts(int world) {
  std::vector<int> out = {1, world};                  // N nodes x 1, 1 node x N
  if (world % 2 == 0 && world > 2) out.push_back(2);  // 4 ranks: 2 nodes x 2
  return out;
}

TEST(MpiHierarchical, Fp32MatchesTheFlatAllReduce) {
  Communicator& c = mpi_comm();
  const int64_t n = layout_elems();
  Tensor flat_grads = Tensor::zeros("test.flat", {n});
  GradReducer flat(c, flat_grads, layout_ranges(), 0, small_buckets());
  for (int per_node : pretended_layouts(c.size())) {
    Tensor grads = Tensor::zeros("test.hier", {n});
    GradReducer hier(c, grads, layout_ranges(), 0, small_buckets(), GradCompression::kNone, true,
                     CollectiveShape::kHierarchical, per_node);
    ASSERT_NE(hier.node_layout(), nullptr);
    EXPECT_EQ(hier.node_layout()->local_size, per_node);
    EXPECT_EQ(hier.shape(), CollectiveShape::kHierarchical);
    EXPECT_GT(hier.buckets().size(), 4u);
    for (int step = 0; step < 2; ++step) {
      const std::vector<float> want = reduce(flat, flat_grads, c.rank(), step);
      const std::vector<float> got = reduce(hier, grads, c.rank(), step);
      int64_t bad = 0, first = -1;
      for (int64_t i = 0; i < n; ++i)
        if (std::fabs(got[size_t(i)] - want[size_t(i)]) > 1e-6 * std::fabs(want[size_t(i)])) {
          if (first < 0) first = i;
          ++bad;
        }
      EXPECT_EQ(bad, 0) << per_node << " ranks per node, step " << step << ": first at " << first << " got "
                        << (first >= 0 ? got[size_t(first)] : 0) << " want " << (first >= 0 ? want[size_t(first)] : 0);
      EXPECT_EQ(ranks_differing(c, got), 0) << per_node << " ranks per node: ranks hold different gradients";
    }
    const CommTimes t = hier.take_times();
    if (c.size() > 1) EXPECT_GT(t.comm_s, 0);
  }
}

TEST(MpiHierarchical, CompressedIsIdenticalOnEveryRankAndCloseToTheMean) {
  Communicator& c = mpi_comm();
  const int64_t n = layout_elems();
  const int world = c.size();
  std::vector<double> mean(size_t(n), 0.0);
  for (int r = 0; r < world; ++r) {
    const std::vector<float> in = rank_input(r, n, 0);
    for (int64_t i = 0; i < n; ++i) mean[size_t(i)] += double(in[size_t(i)]) / world;
  }
  for (GradCompression comp : {GradCompression::kBf16, GradCompression::kInt8, GradCompression::kFp8})
    for (int per_node : pretended_layouts(world)) {
      Tensor grads = Tensor::zeros("test.hier", {n});
      GradReducer hier(c, grads, layout_ranges(), 0, small_buckets(), comp, /*error_feedback=*/true,
                       CollectiveShape::kHierarchical, per_node);
      ASSERT_TRUE(hier.residual().defined());
      EXPECT_GT(hier.residual().numel(), n);  // the gradient's residual plus the owner slots
      const std::string what = str(grad_compression_name(comp), ", ", per_node, " ranks per node");
      const std::vector<float> got = reduce(hier, grads, c.rank(), 0);
      EXPECT_EQ(ranks_differing(c, got), 0) << what << ": ranks hold different gradients";
      // Three quantisations (each rank's chunks, the node's share, the reduced sub-chunk), each
      // within half a step of values below 1.5 (bf16: 2^-8 relative; int8: half of absmax / 127;
      // fp8 E5M2: 2^-3 relative).
      const double tol = comp == GradCompression::kBf16 ? 3 * 1.5 / 256
                         : comp == GradCompression::kInt8 ? 3 * 1.5 / 127
                                                          : 3 * 1.5 / 8;
      double worst_single = 0;
      for (int64_t i = 0; i < n; ++i)
        worst_single = std::max(worst_single, std::fabs(got[size_t(i)] - mean[size_t(i)]));
      EXPECT_LE(worst_single, tol) << what;
      EXPECT_GT(worst_single, 0) << what << ": a compressed payload should not be exact";
      // Error feedback carries the residuals: over steps of the same input, the average result
      // approaches the mean.
      std::vector<double> sum(got.begin(), got.end());
      const int steps = 8;
      for (int s = 1; s < steps; ++s) {
        const std::vector<float> out = reduce(hier, grads, c.rank(), 0);
        for (int64_t i = 0; i < n; ++i) sum[size_t(i)] += out[size_t(i)];
      }
      double worst_avg = 0;
      for (int64_t i = 0; i < n; ++i)
        worst_avg = std::max(worst_avg, std::fabs(sum[size_t(i)] / steps - mean[size_t(i)]));
      EXPECT_LT(worst_avg, 0.5 * worst_single) << what << ": error feedback should shrink the mean error";
    }
}

TEST(MpiHierarchical, NeedsZeroStage0) {
  Communicator& c = mpi_comm();
  Tensor grads = Tensor::zeros("test.hier", {layout_elems()});
  EXPECT_THROW(GradReducer(c, grads, layout_ranges(), 1, small_buckets(), GradCompression::kNone, true,
                           CollectiveShape::kHierarchical, 1),
               Error);
}

// The reduced shard of this rank's (bf16-exact) input through a reducer on fp32 or bf16 gradients,
// as fp32.
std::vector<float> reduce_as(GradReducer& reducer, Tensor& grads, int rank) {
  const std::vector<float> in = rank_input(rank, grads.numel(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t h = f32_to_bf16(in[i]);
    if (grads.dtype() == DType::kBF16)
      grads.data<uint16_t>()[i] = h;
    else
      grads.data<float>()[i] = bf16_to_f32(h);
  }
  reducer.begin_backward(0, 1);
  const auto& ranges = layout_ranges();
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) reducer.on_grads_ready(it->first, it->second);
  reducer.finish_backward();
  const Tensor& shard = reducer.shard_grads();
  const int64_t n = reducer.shard().size();
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)] = shard.dtype() == DType::kBF16 ? bf16_to_f32(shard.data<uint16_t>()[i]) : shard.data<float>()[i];
  return out;
}

TEST(MpiGradReducer, Bf16GradientsReduceAsFp32OnesWithinBf16Rounding) {
  Communicator& c = mpi_comm();
  const int64_t n = layout_elems();
  struct Setting {
    const char* name;
    int zero_stage;
    GradCompression compression;
    CollectiveShape shape;
    int per_node;
  };
  std::vector<Setting> settings = {{"flat", 0, GradCompression::kNone, CollectiveShape::kFlat, 0},
                                   {"flat int8", 0, GradCompression::kInt8, CollectiveShape::kFlat, 0},
                                   {"flat bf16", 0, GradCompression::kBf16, CollectiveShape::kFlat, 0},
                                   {"zero 1", 1, GradCompression::kNone, CollectiveShape::kFlat, 0},
                                   {"zero 2", 2, GradCompression::kNone, CollectiveShape::kFlat, 0}};
  for (int per_node : pretended_layouts(c.size())) {
    settings.push_back({"hierarchical", 0, GradCompression::kNone, CollectiveShape::kHierarchical, per_node});
    settings.push_back({"hierarchical int8", 0, GradCompression::kInt8, CollectiveShape::kHierarchical, per_node});
  }
  for (const Setting& s : settings) {
    const std::string what = str(s.name, s.per_node ? str(", ", s.per_node, " ranks per node") : std::string());
    Tensor f32 = Tensor::zeros("test.fp32", {n});
    Tensor b16 = Tensor::zeros("test.bf16", {n}, DType::kBF16);
    // Caps are bytes: halved for bf16, the buckets (and so the int8 blocks) hold the same elements.
    BucketCaps half = small_buckets();
    half.cap_bytes /= 2;
    half.first_cap_bytes /= 2;
    GradReducer on_f32(c, f32, layout_ranges(), s.zero_stage, small_buckets(), s.compression, true, s.shape,
                       s.per_node);
    GradReducer on_b16(c, b16, layout_ranges(), s.zero_stage, half, s.compression, true, s.shape, s.per_node);
    ASSERT_EQ(on_b16.buckets().size(), on_f32.buckets().size()) << what;
    for (size_t i = 0; i < on_f32.buckets().size(); ++i)
      ASSERT_EQ(on_b16.buckets()[i].begin, on_f32.buckets()[i].begin) << what << ": bucket " << i;
    const std::vector<float> want = reduce_as(on_f32, f32, c.rank()), got = reduce_as(on_b16, b16, c.rank());
    ASSERT_EQ(got.size(), want.size()) << what;
    // Inputs lie in [0.5, 1.5): at most two bf16 roundings (2^-8 relative each) of averages below 1.5.
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - want[i]) <= 2 * 1.5 / 256)) {
        if (first < 0) first = int64_t(i);
        ++bad;
      }
    EXPECT_EQ(bad, 0) << what << ": first at " << first << " got " << (first >= 0 ? got[size_t(first)] : 0) << " want "
                      << (first >= 0 ? want[size_t(first)] : 0);
    if (s.zero_stage == 0) EXPECT_EQ(ranks_differing(c, got), 0) << what << ": ranks hold different gradients";
  }
}

}  // namespace
}  // namespace tt::parallel
