// Tests for data/loader.h: batch layout (B*T+1 contiguous tokens, targets shifted by one), the
// per-shard batch count, disjoint + complete coverage of each epoch over 1..4 ranks, identical
// rank-independent state, exact continuation after set_state, and the too-small-shard error.
#include "data/loader.h"

#include <gtest/gtest.h>

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
      tokens[i] = width == TokenWidth::kUint32 ? static_cast<uint32_t>(s * 100000 + i) : static_cast<uint32_t>(s * 1000 + i);
    paths.push_back(dir.file(tt::str("shard_", s, ".bin")));
    write_shard(paths.back(), tokens, width);
  }
  return paths;
}

TEST(DataLoaderTest, BatchLayoutAndCount) {
  TempDir dir;
  const int64_t B = 2, T = 4;  // B*T = 8
  auto paths = make_shards(dir, {50, 37, 100});
  DataLoader loader(paths, B, T, 0, 1);
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
        BatchInfo where = loaders[r].locate(info.global_batch);
        ASSERT_EQ(in[0], where.shard * 100000 + where.token_offset);
        seen[info.epoch].push_back(info.global_batch);
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
  DataLoader loader(paths, 1, 4, 0, 1);
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
