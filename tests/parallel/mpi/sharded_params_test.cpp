// ZeRO-3 parameter groups under mpirun (2, 3 and 4 ranks): every acquired group holds exactly the
// values the ranks' shards hold, whether it was resident, prefetched, gathered on demand or announced
// wrongly; every group is cut across the ranks, and groups too small for every rank to hold a part
// work too; invalidate() makes updated shards visible; the shards rebuild the whole buffer on rank 0.
#include "parallel/ddp/sharded_params.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "parallel/ddp/shard_gather.h"
#include "tests/parallel/mpi/mpi_test_env.h"

namespace tt::parallel {
namespace {

using test::mpi_comm;

float value_at(int64_t i, int version) { return float(i) * 0.5f + float(version) * 1000.0f; }

// Groups of very different sizes: one larger than any shard, several smaller than one, one of 1.
std::vector<ParamGroup> uneven_groups() {
  return {{0, 700}, {700, 713}, {713, 714}, {714, 1000}, {1000, 1031}, {1031, 1500}};
}

// Fills a local buffer laid out as `layout` with value_at(flat index, version).
void fill_local(const ShardLayout& layout, float* local, int version) {
  for (const auto& piece : layout.pieces())
    for (int64_t i = piece.begin; i < piece.end; ++i) local[piece.local + i - piece.begin] = value_at(i, version);
}
void fill_shard(ShardedParams& p, int version) { fill_local(p.layout(), static_cast<float*>(p.shard_data()), version); }

// The whole buffer onto rank 0 (full ignored elsewhere) through the chunk sink.
void gather_whole(Communicator& c, const ShardLayout& layout, const float* mine, float* full,
                  int64_t chunk = int64_t(1) << 22) {
  int64_t at = 0;
  gather_to_rank0(
      c, layout, mine, DType::kF32, Exec{},
      [&](const void* part, int64_t count) {
        std::copy_n(static_cast<const float*>(part), count, full + at);
        at += count;
      },
      chunk);
}

// Number of elements of `group` that differ from value_at(·, version) (0 when acquire is right).
int64_t mismatches(ShardedParams& p, const std::vector<ParamGroup>& groups, int group, int next, int version) {
  const float* v = static_cast<const float*>(p.acquire(group, next));
  int64_t bad = 0;
  for (int64_t i = groups[size_t(group)].begin; i < groups[size_t(group)].end; ++i)
    bad += v[i - groups[size_t(group)].begin] != value_at(i, version);
  return bad;
}

TEST(ShardedParams, AcquireReturnsEveryGroupAsTheShardsHoldIt) {
  Communicator& c = mpi_comm();
  const auto groups = uneven_groups();
  ShardedParams p(c, groups, 1500, /*resident=*/{0});
  EXPECT_EQ(p.window_elements(), c.size() == 1 ? 0 : 700 + 2 * 469);  // group 0, twice the largest other
  // Every group is cut across the ranks: rank r holds shard_of's part r of each.
  ASSERT_EQ(p.layout().pieces().size(), groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    EXPECT_EQ(p.layout().pieces()[g].size(), shard_of(groups[g].size(), c.size(), c.rank()).size()) << "group " << g;
  fill_shard(p, 0);
  // The model's order (forward with prefetch hints, then backward), then hints that are wrong.
  const std::vector<std::pair<int, int>> calls = {{0, 1},  {1, 2}, {2, 3}, {3, 4}, {4, 5},  {5, 0},
                                                  {0, 5},  {0, 5}, {5, 4}, {4, 3}, {3, 2},  {2, 1},
                                                  {1, -1}, {3, 0}, {1, 1}, {5, 2}, {4, -1}, {4, 4}};
  for (auto [g, next] : calls) EXPECT_EQ(mismatches(p, groups, g, next, 0), 0) << "group " << g << " next " << next;

  // An optimizer step changes the shards; after invalidate() every group shows the new values.
  fill_shard(p, 1);
  p.invalidate();
  for (auto [g, next] : calls) EXPECT_EQ(mismatches(p, groups, g, next, 1), 0) << "after update, group " << g;
  EXPECT_GE(p.take_wait_s(), 0.0);
  EXPECT_EQ(p.take_wait_s(), 0.0);

  std::vector<float> full(1500, -1.0f);
  gather_whole(mpi_comm(), p.layout(), static_cast<const float*>(p.shard_data()), full.data());
  int64_t bad = 0;
  for (int64_t i = 0; i < 1500 && mpi_comm().rank() == 0; ++i) bad += full[size_t(i)] != value_at(i, 1);
  EXPECT_EQ(bad, 0);
}

// Checkpoints gather the whole buffer onto rank 0 only, a chunk at a time (chunks smaller than a
// shard, and one that ends mid-shard), from a contiguous shard (ZeRO-1/2) and from groups cut across
// the ranks (ZeRO-3); ranges can be gathered onto every rank (any range of a contiguous shard, one
// inside a unit otherwise).
TEST(ShardGather, WholeBufferOnRankZeroInChunksAndRangesEverywhere) {
  Communicator& c = mpi_comm();
  const int64_t n = 1500;
  for (const ShardLayout& layout :
       {ShardLayout(n, c.size(), c.rank()), ShardLayout(group_ranges(uneven_groups()), c.size(), c.rank())}) {
    SCOPED_TRACE(layout.contiguous() ? "contiguous shard" : "groups cut across the ranks");
    std::vector<float> shard(size_t(std::max<int64_t>(layout.size(), 1)));
    fill_local(layout, shard.data(), 2);
    for (int64_t chunk : {int64_t(97), int64_t(1000), int64_t(1) << 22}) {
      std::vector<float> full(c.rank() == 0 ? size_t(n) : 0, -1.0f);
      gather_whole(c, layout, shard.data(), full.data(), chunk);
      int64_t bad = 0;
      for (int64_t i = 0; i < int64_t(full.size()); ++i) bad += full[size_t(i)] != value_at(i, 2);
      EXPECT_EQ(bad, 0) << "chunk " << chunk;
    }
    std::vector<std::pair<int64_t, int64_t>> ranges = {{713, 714}, {800, 800}, {1031, 1500}, {720, 990}};
    if (layout.contiguous()) ranges.insert(ranges.end(), {{0, n}, {690, 1210}});
    for (auto [begin, end] : ranges) {
      std::vector<float> out(size_t(std::max<int64_t>(end - begin, 1)), -1.0f);
      all_gather_range(c, layout, shard.data(), DType::kF32, begin, end, out.data())->wait();
      int64_t bad = 0;
      for (int64_t i = begin; i < end; ++i) bad += out[size_t(i - begin)] != value_at(i, 2);
      EXPECT_EQ(bad, 0) << "[" << begin << ", " << end << ")";
    }
  }
}

}  // namespace
}  // namespace tt::parallel
