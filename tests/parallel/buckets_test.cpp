// Bucket assignment and ZeRO shard arithmetic: pure functions, checked on data.
#include "parallel/ddp/buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/model/param_layout.h"
#include "parallel/ddp/sharding.h"

namespace tt::parallel {
namespace {

std::vector<std::pair<int64_t, int64_t>> ranges_of(const std::vector<int64_t>& sizes) {
  std::vector<std::pair<int64_t, int64_t>> r;
  int64_t at = 0;
  for (int64_t s : sizes) {
    r.push_back({at, at + s});
    at += s;
  }
  return r;
}

TEST(Buckets, ReverseOrderCapsAndSmallFirstBucket) {
  // 4-byte elements; caps: first 40 bytes (10 elements), then 100 bytes (25 elements).
  const auto buckets = assign_buckets(ranges_of({30, 5, 5, 20, 4, 4, 8}), 4, BucketCaps{100, 40});
  // From the end: 8 (+4 would be 12 > 10) | 4+4 (+20 = 28 > 25) | 20+5 (+5 = 30) | 5 (+30) | 30.
  const std::vector<std::pair<int64_t, int64_t>> expected = {{68, 76}, {60, 68}, {35, 60}, {30, 35}, {0, 30}};
  ASSERT_EQ(buckets.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(buckets[i].begin, expected[i].first) << i;
    EXPECT_EQ(buckets[i].end, expected[i].second) << i;
  }
}

TEST(Buckets, CoverBufferExactlyInDecreasingOrder) {
  const ModelDesc cfg = gpt2_desc(12, 12, 768, 50257, 1024);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const auto& p : model_layout(cfg).tensors) ranges.push_back({p.offset, p.offset + shape_numel(p.shape)});
  const auto buckets = assign_buckets(ranges, 4, BucketCaps{});
  EXPECT_EQ(buckets.front().end, model_num_params(cfg));
  EXPECT_EQ(buckets.back().begin, 0);
  for (size_t i = 1; i < buckets.size(); ++i) EXPECT_EQ(buckets[i].end, buckets[i - 1].begin);
  EXPECT_LE(buckets.front().size() * 4, int64_t(1) << 20);
  for (size_t i = 1; i + 1 < buckets.size(); ++i) EXPECT_LE(buckets[i].size() * 4, int64_t(25) << 20) << i;
  // wte (38.6M elements, 154 MB) is larger than the cap: it must be a bucket of its own.
  EXPECT_EQ(buckets.back().size(), int64_t(cfg.padded_vocab_size) * 768);
}

TEST(Buckets, TensorsAreNeverSplit) {
  const auto ranges = ranges_of({7, 100, 3, 3, 50, 1});
  for (size_t cap : {4u, 16u, 40u, 400u, 4000u}) {
    const auto buckets = assign_buckets(ranges, 4, BucketCaps{cap, cap / 2 + 1});
    for (const auto& b : buckets)
      for (const auto& r : ranges)
        EXPECT_TRUE(r.second <= b.begin || r.first >= b.end || (r.first >= b.begin && r.second <= b.end));
  }
}

TEST(Sharding, ShardsAreAlignedContiguousAndCoverEverything) {
  for (int64_t n : {0L, 1L, 15L, 16L, 17L, 1000L, 124475904L}) {
    for (int world : {1, 2, 3, 4, 7, 8}) {
      int64_t at = 0;
      for (int r = 0; r < world; ++r) {
        const Shard s = shard_of(n, world, r);
        EXPECT_EQ(s.begin, at) << n << " " << world << " " << r;
        if (s.end < n) EXPECT_EQ(s.end % 16, 0);
        at = s.end;
      }
      EXPECT_EQ(at, n);
      const auto sizes = shard_sizes(n, world);
      EXPECT_EQ(std::accumulate(sizes.begin(), sizes.end(), int64_t(0)), n);
    }
  }
}

TEST(Sharding, SplitByShardsCountsTheOverlaps) {
  // n = 100, 3 ranks: per = ceil(34/16)*16 = 48 -> [0,48) [48,96) [96,100)
  EXPECT_EQ(split_by_shards(40, 100, 100, 3), (std::vector<int64_t>{8, 48, 4}));
  EXPECT_EQ(split_by_shards(50, 60, 100, 3), (std::vector<int64_t>{0, 10, 0}));
  EXPECT_EQ(split_by_shards(0, 0, 100, 3), (std::vector<int64_t>{0, 0, 0}));
}

// ZeRO-3's layout: each unit cut across the ranks, every element held by exactly one rank, a rank's
// pieces back to back; a range inside a unit splits into contiguous rank-ordered parts.
TEST(Sharding, UnitsAreEachCutAcrossTheRanks) {
  const std::vector<std::pair<int64_t, int64_t>> units = {{0, 100}, {100, 101}, {101, 101}, {101, 1101}};
  for (int world : {1, 2, 3, 8}) {
    std::vector<int> holders(1101, 0);
    for (int r = 0; r < world; ++r) {
      const ShardLayout layout(units, world, r);
      ASSERT_EQ(layout.pieces().size(), units.size());
      int64_t local = 0;
      for (size_t u = 0; u < units.size(); ++u) {
        const auto& piece = layout.pieces()[u];
        const Shard s = shard_of(units[u].second - units[u].first, world, r);
        EXPECT_EQ(piece.begin, units[u].first + s.begin);
        EXPECT_EQ(piece.end, units[u].first + s.end);
        EXPECT_EQ(piece.local, local);
        local += piece.size();
        for (int64_t i = piece.begin; i < piece.end; ++i) ++holders[size_t(i)];
      }
      EXPECT_EQ(layout.size(), local);
    }
    EXPECT_EQ(std::count(holders.begin(), holders.end(), 1), 1101) << world << " ranks";
  }
  // 3 ranks over [101, 1101): per = ceil(334/16)*16 = 336 -> [101,437) [437,773) [773,1101)
  const ShardLayout rank1(units, 3, 1);
  EXPECT_EQ(rank1.split(400, 800), (std::vector<int64_t>{37, 336, 27}));
  EXPECT_EQ(rank1.local_of(400, 800), rank1.pieces()[3].local);  // rank 1's part starts at 437
  EXPECT_EQ(rank1.local_of(500, 800), rank1.pieces()[3].local + 63);
  EXPECT_EQ(rank1.local_of(100, 101), rank1.pieces()[1].local);  // holds none of [100, 101)
  EXPECT_EQ(rank1.split(100, 101), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_THROW(rank1.split(90, 110), Error);  // crosses units
  EXPECT_THROW(rank1.range(), Error);         // not one range
  EXPECT_EQ(ShardLayout(1101, 3, 1).range().begin, shard_of(1101, 3, 1).begin);
  EXPECT_EQ(ShardLayout(1101, 3, 1).split(90, 1000), split_by_shards(90, 1000, 1101, 3));
}

}  // namespace
}  // namespace tt::parallel
