// Tests for data/loader.h: batch layout (B*T+1 contiguous tokens, targets shifted by one), the
// per-shard batch count, disjoint + complete coverage of each epoch over 1..4 ranks with shuffling,
// the seeded shard-then-batch permutation (per epoch, per seed), identical rank-independent state,
// exact continuation after set_state — also when N ranks save and M ranks resume — and the
// too-small-shard error. Shards are written with write_shard: no tokenizer needed.
#include "data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "tests/test_util.h"

namespace tt::data {
namespace {

using tt::test::TempDir;

// Shards whose token at position i of shard s is s * 100000 + i, so a batch's first input names its
// shard and offset.
std::vector<std::string> make_shards(const TempDir& dir, const std::vector<int64_t>& sizes,
                                     TokenWidth width = TokenWidth::kUint32) {
  std::vector<std::string> paths;
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::vector<uint32_t> tokens(static_cast<size_t>(sizes[s]));
    for (int64_t i = 0; i < sizes[s]; ++i)
      tokens[i] =
          width == TokenWidth::kUint32 ? static_cast<uint32_t>(s * 100000 + i) : static_cast<uint32_t>(s * 1000 + i);
    paths.push_back(dir.file(tt::str("shard_", s, ".bin")));
    write_shard(paths.back(), tokens, width);
  }
  return paths;
}

TEST(DataLoaderTest, BatchLayoutAndCount) {
  TempDir dir;
  const int64_t B = 2, T = 4;  // B*T = 8
  auto paths = make_shards(dir, {50, 37, 100});
  DataLoader loader(paths, B, T, 0, 1, /*seed=*/0, /*shuffle=*/false);
  // floor(49/8) + floor(36/8) + floor(99/8) = 6 + 4 + 12
  EXPECT_EQ(loader.batches_per_epoch(), 22);
  std::vector<int32_t> in(B * T), tg(B * T);
  for (int64_t g = 0; g < 22; ++g) {
    BatchInfo info = loader.next(in.data(), tg.data());
    EXPECT_EQ(info.epoch, 0);
    EXPECT_EQ(info.global_batch, g);
    const int shard = g < 6 ? 0 : g < 10 ? 1 : 2;
    const int64_t first = g < 6 ? 0 : g < 10 ? 6 : 10;
    EXPECT_EQ(info.shard, shard);
    EXPECT_EQ(info.token_offset, (g - first) * B * T);
    for (int64_t i = 0; i < B * T; ++i) {
      ASSERT_EQ(in[i], shard * 100000 + info.token_offset + i);
      ASSERT_EQ(tg[i], in[i] + 1);
    }
  }
  BatchInfo wrapped = loader.next(in.data(), tg.data());
  EXPECT_EQ(wrapped.epoch, 1);
  EXPECT_EQ(wrapped.global_batch, 0);
  EXPECT_EQ(in[0], 0);
}

TEST(DataLoaderTest, ExactlyOneBatchBoundary) {
  TempDir dir;
  auto ok = make_shards(dir, {4 * 8 + 1});
  EXPECT_EQ(DataLoader(ok, 4, 8, 0, 1).batches_per_epoch(), 1);
  TempDir dir2;
  auto small = make_shards(dir2, {4 * 8});
  try {
    DataLoader loader(small, 4, 8, 0, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_NE(msg.find(small[0]), std::string::npos) << msg;
    EXPECT_NE(msg.find("batch_size 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("seq_len 8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("lower batch_size or seq_len"), std::string::npos) << msg;
  }
}

TEST(DataLoaderTest, DisjointCompleteCoverageAcrossRanks) {
  TempDir dir;
  const int64_t B = 3, T = 5;
  auto paths = make_shards(dir, {100, 47, 16, 200});
  for (int world = 1; world <= 4; ++world) {
    std::vector<DataLoader> loaders;
    for (int r = 0; r < world; ++r) loaders.emplace_back(paths, B, T, r, world, 1234);
    const int64_t n = loaders[0].batches_per_epoch();
    ASSERT_EQ(n, 6 + 3 + 1 + 13);
    const int epochs = 3;
    std::map<int64_t, std::vector<int64_t>> seen;  // epoch -> global batches read
    std::vector<int32_t> in(B * T), tg(B * T);
    const int64_t rounds = (epochs * n + world - 1) / world;
    for (int64_t round = 0; round < rounds; ++round) {
      for (int r = 0; r < world; ++r) {
        BatchInfo info = loaders[r].next(in.data(), tg.data());
        // Rank r reads stream position round*world + r.
        EXPECT_EQ(info.epoch * n + info.global_batch, round * world + r);
        if (info.epoch == 0) {
          EXPECT_EQ(info.global_batch % world, r) << "world " << world;
        }
        EXPECT_EQ(info.read_batch, loaders[r].batch_order(info.epoch, info.global_batch));
        BatchInfo where = loaders[r].locate(info.read_batch);
        ASSERT_EQ(in[0], where.shard * 100000 + where.token_offset);
        seen[info.epoch].push_back(info.read_batch);
      }
      // Every rank agrees on the state after each round.
      for (int r = 1; r < world; ++r) EXPECT_EQ(loaders[r].state(), loaders[0].state());
    }
    for (int e = 0; e < epochs; ++e) {
      std::vector<int64_t> got = seen[e];
      std::set<int64_t> unique(got.begin(), got.end());
      EXPECT_EQ(got.size(), static_cast<size_t>(n)) << "world " << world << " epoch " << e;
      EXPECT_EQ(unique.size(), static_cast<size_t>(n)) << "world " << world << " epoch " << e;
      EXPECT_EQ(*unique.begin(), 0);
      EXPECT_EQ(*unique.rbegin(), n - 1);
    }
  }
}

TEST(DataLoaderTest, StateRestoreContinuesWithExactNextBatch) {
  TempDir dir;
  const int64_t B = 2, T = 3;
  auto paths = make_shards(dir, {40, 25}, TokenWidth::kUint16);
  for (int world : {1, 3}) {
    for (int steps_before : {0, 4, 5, 9}) {  // 9 batches per epoch: some saves straddle an epoch
      for (int r = 0; r < world; ++r) {
        DataLoader a(paths, B, T, r, world);
        ASSERT_EQ(a.batches_per_epoch(), 6 + 4);
        std::vector<int32_t> in(B * T), tg(B * T);
        for (int s = 0; s < steps_before; ++s) a.next(in.data(), tg.data());
        const LoaderState saved = a.state();
        EXPECT_EQ(saved.epoch * a.batches_per_epoch() + saved.batch, int64_t(steps_before) * world);
        std::vector<std::vector<int32_t>> expect_in, expect_tg;
        for (int s = 0; s < 7; ++s) {
          a.next(in.data(), tg.data());
          expect_in.push_back(in);
          expect_tg.push_back(tg);
        }
        DataLoader b(paths, B, T, r, world);
        b.set_state(saved);
        EXPECT_EQ(b.state(), saved);
        for (int s = 0; s < 7; ++s) {
          b.next(in.data(), tg.data());
          ASSERT_EQ(in, expect_in[s]) << "world " << world << " rank " << r << " step " << s;
          ASSERT_EQ(tg, expect_tg[s]);
        }
      }
    }
  }
}

TEST(DataLoaderTest, ResetAndInvalidState) {
  TempDir dir;
  auto paths = make_shards(dir, {30});
  DataLoader loader(paths, 1, 4, 0, 1, 99);
  std::vector<int32_t> in(4), tg(4), first(4);
  loader.next(first.data(), tg.data());
  loader.next(in.data(), tg.data());
  loader.reset();
  EXPECT_EQ(loader.state(), LoaderState{});
  loader.next(in.data(), tg.data());
  EXPECT_EQ(in, first);
  try {
    loader.set_state({0, loader.batches_per_epoch()});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCheckpoint);
  }
  EXPECT_THROW(loader.set_state({-1, 0}), Error);
}

// The (epoch, read_batch) sequence of `count` stream positions from `start`, read by one rank.
std::vector<int64_t> one_rank_stream(const std::vector<std::string>& paths, int64_t B, int64_t T, uint64_t seed,
                                     const LoaderState& start, int count) {
  DataLoader l(paths, B, T, 0, 1, seed);
  l.set_state(start);
  std::vector<int32_t> in(B * T), tg(B * T);
  std::vector<int64_t> out;
  for (int i = 0; i < count; ++i) {
    BatchInfo info = l.next(in.data(), tg.data());
    out.push_back(info.epoch * 1000000 + info.read_batch);
  }
  return out;
}

TEST(DataLoaderTest, BatchOrderIsASeededShardThenBatchPermutation) {
  TempDir dir;
  const int64_t B = 2, T = 4;
  auto paths = make_shards(dir, {50, 37, 100, 9, 81});  // 6 + 4 + 12 + 1 + 10 batches
  DataLoader a(paths, B, T, 0, 1, 7), b(paths, B, T, 0, 1, 7), c(paths, B, T, 0, 1, 8);
  DataLoader plain(paths, B, T, 0, 1, 7, /*shuffle=*/false);
  const int64_t n = a.batches_per_epoch();
  ASSERT_EQ(n, 33);
  std::set<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 6; ++epoch) {
    std::vector<int64_t> order, other_seed;
    for (int64_t g = 0; g < n; ++g) {
      order.push_back(a.batch_order(epoch, g));
      other_seed.push_back(c.batch_order(epoch, g));
      EXPECT_EQ(b.batch_order(epoch, g), order.back()) << "same seed, same order";
      EXPECT_EQ(plain.batch_order(epoch, g), g) << "shuffle off is the identity";
    }
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t g = 0; g < n; ++g) ASSERT_EQ(sorted[g], g) << "epoch " << epoch << " is a permutation";
    EXPECT_NE(order, other_seed) << "another seed, another order";
    // Shard-then-batch: the epoch visits each shard in one contiguous run of g.
    std::vector<int> shard_runs;
    for (int64_t g = 0; g < n; ++g) {
      const int shard = a.locate(order[g]).shard;
      if (shard_runs.empty() || shard_runs.back() != shard) shard_runs.push_back(shard);
    }
    EXPECT_EQ(shard_runs.size(), 5u) << "epoch " << epoch;
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), 6u) << "every epoch draws a new order";
  // Query order does not matter (the shuffle caches are pure functions of seed and epoch).
  DataLoader d(paths, B, T, 0, 1, 7);
  for (int64_t g = n - 1; g >= 0; --g) EXPECT_EQ(d.batch_order(3, g), a.batch_order(3, g));
  EXPECT_EQ(d.batch_order(0, 5), a.batch_order(0, 5));
}

TEST(DataLoaderTest, SeededPermutationIsStableAndUniformish) {
  EXPECT_TRUE(seeded_permutation(0, 1).empty());
  EXPECT_EQ(seeded_permutation(1, 1), std::vector<int64_t>{0});
  EXPECT_EQ(seeded_permutation(10, 5), seeded_permutation(10, 5));
  // Each of 3! = 6 orders of 3 elements appears, roughly equally, over many seeds.
  std::map<std::vector<int64_t>, int> counts;
  for (uint64_t seed = 0; seed < 6000; ++seed) ++counts[seeded_permutation(3, seed)];
  EXPECT_EQ(counts.size(), 6u);
  for (const auto& [perm, count] : counts) EXPECT_NEAR(count, 1000, 150);
}

TEST(DataLoaderTest, ResumeWithAnotherWorldSizeContinuesTheStream) {
  TempDir dir;
  const int64_t B = 2, T = 3;
  auto paths = make_shards(dir, {40, 25, 61});  // 6 + 4 + 10 = 20 batches per epoch
  const uint64_t seed = 42;
  for (int rounds_before : {0, 3, 7, 10, 13}) {  // some saves land mid-epoch, one on a boundary
    // 2 ranks read `rounds_before` rounds, then save.
    std::vector<DataLoader> two;
    for (int r = 0; r < 2; ++r) two.emplace_back(paths, B, T, r, 2, seed);
    std::vector<int32_t> in(B * T), tg(B * T);
    for (int k = 0; k < rounds_before; ++k)
      for (auto& l : two) l.next(in.data(), tg.data());
    const LoaderState saved = two[0].state();
    ASSERT_EQ(saved, two[1].state());
    const int64_t n = two[0].batches_per_epoch();
    ASSERT_EQ(saved.epoch * n + saved.batch, int64_t(rounds_before) * 2);

    // 3 ranks resume; round k, rank r reads the 1-rank stream's batch 3k + r after `saved`.
    const int resumed_rounds = 9;  // 27 batches: crosses an epoch boundary
    const std::vector<int64_t> expect = one_rank_stream(paths, B, T, seed, saved, 3 * resumed_rounds);
    std::vector<DataLoader> three;
    for (int r = 0; r < 3; ++r) {
      three.emplace_back(paths, B, T, r, 3, seed);
      three.back().set_state(saved);
    }
    std::vector<std::vector<int32_t>> plain_in(3 * resumed_rounds);
    {
      DataLoader one(paths, B, T, 0, 1, seed);
      one.set_state(saved);
      for (auto& v : plain_in) {
        v.resize(B * T);
        one.next(v.data(), tg.data());
      }
    }
    for (int k = 0; k < resumed_rounds; ++k) {
      for (int r = 0; r < 3; ++r) {
        BatchInfo info = three[r].next(in.data(), tg.data());
        ASSERT_EQ(info.epoch * 1000000 + info.read_batch, expect[3 * k + r])
            << "rounds_before " << rounds_before << " round " << k << " rank " << r;
        ASSERT_EQ(in, plain_in[3 * k + r]);
      }
      for (int r = 1; r < 3; ++r) EXPECT_EQ(three[r].state(), three[0].state());
    }
  }
}

TEST(DataLoaderTest, ShuffledCoverageOverManyEpochsAndUnevenWorlds) {
  // World sizes that do not divide N: rounds straddle epochs and every epoch is still covered once.
  TempDir dir;
  auto paths = make_shards(dir, {17, 33, 9});  // B*T = 4: 4 + 8 + 2 = 14 batches
  for (int world : {1, 2, 3, 4}) {
    std::vector<DataLoader> ls;
    for (int r = 0; r < world; ++r) ls.emplace_back(paths, 2, 2, r, world, 5);
    const int64_t n = ls[0].batches_per_epoch();
    ASSERT_EQ(n, 14);
    std::map<int64_t, std::multiset<int64_t>> seen;
    std::vector<int32_t> in(4), tg(4);
    for (int64_t round = 0; round < 5 * n; ++round)
      for (int r = 0; r < world; ++r) {
        BatchInfo info = ls[r].next(in.data(), tg.data());
        seen[info.epoch].insert(info.read_batch);
      }
    const int64_t full_epochs = 5 * n * world / n;
    for (int64_t e = 0; e < full_epochs; ++e) {
      ASSERT_EQ(seen[e].size(), size_t(n)) << "world " << world << " epoch " << e;
      std::set<int64_t> unique(seen[e].begin(), seen[e].end());
      EXPECT_EQ(unique.size(), size_t(n)) << "world " << world << " epoch " << e;
    }
  }
}

TEST(DataLoaderTest, ConfigErrors) {
  TempDir dir;
  auto paths = make_shards(dir, {30});
  EXPECT_THROW(DataLoader(paths, 0, 4, 0, 1), Error);
  EXPECT_THROW(DataLoader(paths, 1, 0, 0, 1), Error);
  EXPECT_THROW(DataLoader(paths, 1, 4, 2, 2), Error);
  EXPECT_THROW(DataLoader(paths, 1, 4, -1, 2), Error);
  EXPECT_THROW(DataLoader({}, 1, 4, 0, 1), Error);
  try {
    DataLoader loader({dir.file("missing.bin")}, 1, 4, 0, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kData);
  }
}

}  // namespace
}  // namespace tt::data
