// Tests for data/prefetch.h: the prefetcher yields exactly the plain loader's batch sequence (any
// depth, shuffled, across epochs, any rank); state() is the caller's position, so save/resume is
// exact with read-ahead in flight; set_state() drains and restarts; worker errors surface in next();
// the destructor returns while the worker is blocked on a full ring. Shards come from write_shard.
#include "data/prefetch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "core/error.h"
#include "tests/test_util.h"

namespace tt::data {
namespace {

using tt::test::TempDir;

std::vector<std::string> make_shards(const TempDir& dir, const std::vector<int64_t>& sizes) {
  std::vector<std::string> paths;
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::vector<uint32_t> tokens(static_cast<size_t>(sizes[s]));
    for (int64_t i = 0; i < sizes[s]; ++i) tokens[i] = static_cast<uint32_t>(s * 100000 + i);
    paths.push_back(dir.file(tt::str("shard_", s, ".bin")));
    write_shard(paths.back(), tokens, TokenWidth::kUint32);
  }
  return paths;
}

struct Batch {
  std::vector<int32_t> in, tg;
  int64_t epoch, read_batch;
  bool operator==(const Batch& o) const {
    return in == o.in && tg == o.tg && epoch == o.epoch && read_batch == o.read_batch;
  }
};

template <typename Loader>
Batch read(Loader& l, int64_t bt) {
  Batch b;
  b.in.resize(bt);
  b.tg.resize(bt);
  BatchInfo info = l.next(b.in.data(), b.tg.data());
  b.epoch = info.epoch;
  b.read_batch = info.read_batch;
  return b;
}

TEST(PrefetchLoaderTest, SameSequenceAsPlainLoader) {
  TempDir dir;
  auto paths = make_shards(dir, {100, 47, 16, 200});
  const int64_t B = 3, T = 5;
  for (int depth : {1, 2, 4}) {
    for (int world : {1, 3}) {
      for (int r = 0; r < world; ++r) {
        DataLoader plain(paths, B, T, r, world, 11);
        PrefetchLoader pre(std::make_unique<DataLoader>(paths, B, T, r, world, 11), depth);
        EXPECT_EQ(pre.depth(), depth);
        EXPECT_EQ(pre.loader().batches_per_epoch(), plain.batches_per_epoch());
        for (int i = 0; i < 60; ++i) {  // 23 batches per epoch: several epochs
          ASSERT_EQ(read(pre, B * T), read(plain, B * T)) << "depth " << depth << " rank " << r << " step " << i;
          ASSERT_EQ(pre.state(), plain.state());
          EXPECT_GE(pre.last_wait_s(), 0.0);
        }
        EXPECT_GE(pre.total_wait_s(), pre.last_wait_s());
      }
    }
  }
}

TEST(PrefetchLoaderTest, StateIsTheCallersPositionAndResumeIsExact) {
  TempDir dir;
  auto paths = make_shards(dir, {100, 61});  // B*T = 8: 12 + 7 = 19 batches
  const int64_t B = 2, T = 4;
  for (int steps_before : {0, 1, 5, 19, 23}) {
    PrefetchLoader a(std::make_unique<DataLoader>(paths, B, T, 0, 1, 3), 2);
    for (int i = 0; i < steps_before; ++i) read(a, B * T);
    // Let the worker run ahead: state() must not move.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const LoaderState saved = a.state();
    EXPECT_EQ(saved.epoch * 19 + saved.batch, steps_before);
    std::vector<Batch> expect;
    for (int i = 0; i < 25; ++i) expect.push_back(read(a, B * T));

    // A fresh prefetcher restored from the state...
    PrefetchLoader b(std::make_unique<DataLoader>(paths, B, T, 0, 1, 3), 2);
    read(b, B * T);  // some read-ahead in flight at a different position
    b.set_state(saved);
    EXPECT_EQ(b.state(), saved);
    for (int i = 0; i < 25; ++i) ASSERT_EQ(read(b, B * T), expect[i]) << "steps_before " << steps_before << " i " << i;

    // ... and a plain loader restored from it see the same continuation.
    DataLoader c(paths, B, T, 0, 1, 3);
    c.set_state(saved);
    for (int i = 0; i < 25; ++i) ASSERT_EQ(read(c, B * T), expect[i]);

    // Seeking back on the same prefetcher drains the read-ahead.
    a.set_state(saved);
    for (int i = 0; i < 25; ++i) ASSERT_EQ(read(a, B * T), expect[i]);
    a.reset();
    EXPECT_EQ(a.state(), LoaderState{});
  }
}

TEST(PrefetchLoaderTest, InvalidStateKeepsThePosition) {
  TempDir dir;
  auto paths = make_shards(dir, {100});
  PrefetchLoader p(std::make_unique<DataLoader>(paths, 2, 4, 0, 1, 3));
  DataLoader plain(paths, 2, 4, 0, 1, 3);
  read(p, 8);
  read(plain, 8);
  try {
    p.set_state({0, 1000});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCheckpoint);
  }
  EXPECT_EQ(p.state(), plain.state());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(read(p, 8), read(plain, 8));
}

TEST(PrefetchLoaderTest, WorkerErrorsSurfaceInNextAndStay) {
  TempDir dir;
  // Batch 0 is fine, batch 1 holds an id that does not fit int32 (copy_tokens throws kData).
  std::vector<uint32_t> tokens(17);
  for (uint32_t i = 0; i < 17; ++i) tokens[i] = i;
  tokens[12] = 0x80000000u;
  write_shard(dir.file("bad.bin"), tokens, TokenWidth::kUint32);
  PrefetchLoader p(std::make_unique<DataLoader>(std::vector<std::string>{dir.file("bad.bin")}, 2, 4, 0, 1, 0,
                                                /*shuffle=*/false));
  std::vector<int32_t> in(8), tg(8);
  p.next(in.data(), tg.data());
  EXPECT_EQ(in[0], 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      p.next(in.data(), tg.data());
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kData);
    }
  }
  EXPECT_EQ(p.state(), (LoaderState{0, 1}));  // the failed batch was not consumed
  p.set_state({0, 0});                        // restarts the worker
  p.next(in.data(), tg.data());
  EXPECT_EQ(in[0], 0);
}

TEST(PrefetchLoaderTest, DestructorReturnsWhileWorkerIsBlocked) {
  TempDir dir;
  auto paths = make_shards(dir, {100});
  for (int depth : {1, 2}) {
    auto done = std::async(std::launch::async, [&] {
      PrefetchLoader p(std::make_unique<DataLoader>(paths, 2, 4, 0, 1), depth);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));  // ring full, worker waiting
    });
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "destructor hung";
    // Destroyed right after construction, and mid-stream.
    { PrefetchLoader p(std::make_unique<DataLoader>(paths, 2, 4, 0, 1), depth); }
    {
      PrefetchLoader p(std::make_unique<DataLoader>(paths, 2, 4, 0, 1), depth);
      read(p, 8);
    }
  }
}

TEST(PrefetchLoaderTest, ConfigErrors) {
  TempDir dir;
  auto paths = make_shards(dir, {100});
  EXPECT_THROW(PrefetchLoader(nullptr), Error);
  EXPECT_THROW(PrefetchLoader(std::make_unique<DataLoader>(paths, 2, 4, 0, 1), 0), Error);
}

}  // namespace
}  // namespace tt::data
