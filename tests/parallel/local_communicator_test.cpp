// The single-rank backend and the backend-independent pieces: create_communicator's choice without
// a launcher, identity collectives over one rank, argument checks, fingerprints and their mismatch
// message, size formatting.
#include "parallel/comm/local/local_communicator.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "parallel/comm/backend_overrides.h"
#include "parallel/comm/communicator.h"

namespace tt::parallel {
namespace {

TEST(LocalCommunicator, IsChosenWithoutLauncher) {
  // ctest does not run under mpirun; an mpirun-started test binary would see OMPI_* here.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("RANK")) GTEST_SKIP() << "running under a launcher";
  auto c = create_communicator();
  EXPECT_EQ(c->backend(), "local");
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->size(), 1);
  EXPECT_EQ(c->local_size(), 1);
  EXPECT_EQ(c->num_nodes(), 1);
}

TEST(LocalCommunicator, UnknownBackendIsAConfigError) {
  CommOptions o;
  o.backend = "nccl2";
  try {
    create_communicator(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("auto, mpi, local"), std::string::npos);
  }
}

TEST(LocalCommunicator, CollectivesOverOneRank) {
  LocalCommunicator c;
  std::vector<float> v = {1.5f, -2.0f, 3.0f};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
    auto w = c.all_reduce(v.data(), 3, DType::kF32, op);
    EXPECT_TRUE(w->is_completed());
    EXPECT_EQ(w->status(), WorkStatus::kCompleted);
    w->wait();
    EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f, 3.0f}));
  }
  std::vector<int32_t> send = {1, 2, 3, 4}, recv(4, 0);
  c.reduce_scatter(send.data(), recv.data(), 4, DType::kI32, ReduceOp::kSum)->wait();
  EXPECT_EQ(recv, send);
  std::fill(recv.begin(), recv.end(), 0);
  c.all_gather(send.data(), recv.data(), 4, DType::kI32)->wait();
  EXPECT_EQ(recv, send);
  c.all_gather(recv.data(), recv.data(), 4, DType::kI32)->wait();  // in place
  EXPECT_EQ(recv, send);
  std::fill(recv.begin(), recv.end(), 0);
  c.reduce_scatter_v(send.data(), recv.data(), {3}, DType::kI32, ReduceOp::kMax)->wait();
  EXPECT_EQ(recv, (std::vector<int32_t>{1, 2, 3, 0}));
  std::fill(recv.begin(), recv.end(), 0);
  c.all_gather_v(send.data(), recv.data(), {2}, DType::kI32)->wait();
  EXPECT_EQ(recv, (std::vector<int32_t>{1, 2, 0, 0}));
  c.broadcast(send.data(), 4, DType::kI32, 0)->wait();
  c.barrier()->wait();
  c.all_reduce(nullptr, 0, DType::kBF16, ReduceOp::kSum)->wait();
  EXPECT_FALSE(c.any_rank_requests_stop(false));
  EXPECT_TRUE(c.any_rank_requests_stop(true));
  EXPECT_EQ(c.collectives_issued(), 13);
}

TEST(LocalCommunicator, BadArgumentsAreInternalErrors) {
  LocalCommunicator c;
  std::vector<int32_t> v(4);
  auto kind = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kUsage;
  };
  EXPECT_EQ(kind([&] { c.all_reduce(v.data(), -1, DType::kI32, ReduceOp::kSum); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([&] { c.all_reduce(v.data(), 4, DType::kFP8E4M3, ReduceOp::kSum); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([&] { c.broadcast(v.data(), 4, DType::kI32, 1); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([&] { c.all_gather_v(v.data(), v.data(), {1, 2}, DType::kI32); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([&] { c.reduce_scatter_v(v.data(), v.data(), {-1}, DType::kI32, ReduceOp::kSum); }),
            ErrorKind::kInternal);
}

TEST(CommFingerprint, MismatchNamesBothRanksAndCalls) {
  const CollectiveFingerprint ar{CollectiveKind::kAllReduce, 1024, DType::kF32, 5, int32_t(ReduceOp::kSum)};
  const CollectiveFingerprint ag{CollectiveKind::kAllGather, 512, DType::kF32, 5, 0};
  EXPECT_EQ(ar.str(), "all_reduce(1024 f32, sum) #5");
  EXPECT_EQ(describe_fingerprint_mismatch({ar, ar, ar}), "");
  EXPECT_EQ(describe_fingerprint_mismatch({ar, ar, ag}),
            "rank 0 called all_reduce(1024 f32, sum) #5 but rank 2 called all_gather(512 f32) #5");
  const CollectiveFingerprint bc{CollectiveKind::kBroadcast, 16, DType::kBF16, 3, 1};
  EXPECT_EQ(bc.str(), "broadcast(16 bf16, root 1) #3");
  const CollectiveFingerprint b{CollectiveKind::kBarrier, 0, DType::kF32, 2, 0};
  EXPECT_EQ(b.str(), "barrier #2");
  CollectiveFingerprint shifted = ar;
  shifted.seq = 6;
  EXPECT_NE(describe_fingerprint_mismatch({ar, shifted}), "");
}

TEST(CommNames, SizesAndNames) {
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_size(1024 * 1024), "1.0 MiB");
  EXPECT_EQ(format_size(1536), "1.5 KiB");
  EXPECT_STREQ(collective_name(CollectiveKind::kReduceScatter), "reduce_scatter");
  EXPECT_STREQ(reduce_op_name(ReduceOp::kAvg), "avg");
  EXPECT_STREQ(work_status_name(WorkStatus::kTimedOut), "timed out");
  EXPECT_TRUE(reducible_dtype(DType::kBF16));
  EXPECT_FALSE(reducible_dtype(DType::kU16));
}

TEST(LocalCommunicator, AllToAllOverOneRankCopiesItsOwnBlock) {
  LocalCommunicator c;
  std::vector<int8_t> send = {1, -2, 3, 4, 5}, recv(6, 0);
  auto w = c.all_to_all(send.data(), recv.data(), 5, DType::kI8);
  EXPECT_TRUE(w->is_completed());
  w->wait();
  EXPECT_EQ(recv, (std::vector<int8_t>{1, -2, 3, 4, 5, 0})) << "exactly count_per_rank elements";
  std::vector<uint16_t> h = {7, 8, 9}, hr(3, 0);
  c.all_to_all(h.data(), hr.data(), 3, DType::kBF16)->wait();
  EXPECT_EQ(hr, h);
  std::vector<float> f = {1.5f}, fr = {0.0f};
  c.all_to_all(f.data(), fr.data(), 1, DType::kF32)->wait();
  EXPECT_EQ(fr[0], 1.5f);
  c.all_to_all(nullptr, nullptr, 0, DType::kI32)->wait();  // zero count
  EXPECT_EQ(c.collectives_issued(), 4);
  try {
    c.all_to_all(f.data(), fr.data(), -1, DType::kF32);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("all_to_all"), std::string::npos) << e.what();
  }
}

// A backend that does not implement all_to_all (as a new backend starts out) inherits a default
// that fails with a runtime error naming the collective and the backend.
class NoAllToAllCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  int node() const override { return 0; }
  int num_nodes() const override { return 1; }
  std::string backend() const override { return "stub"; }
  TT_COMMUNICATOR_BACKEND_OVERRIDES
};
std::shared_ptr<Work> NoAllToAllCommunicator::all_reduce(void*, int64_t, DType, ReduceOp) { return nullptr; }
std::shared_ptr<Work> NoAllToAllCommunicator::reduce_scatter(const void*, void*, int64_t, DType, ReduceOp) {
  return nullptr;
}
std::shared_ptr<Work> NoAllToAllCommunicator::all_gather(const void*, void*, int64_t, DType) { return nullptr; }
std::shared_ptr<Work> NoAllToAllCommunicator::broadcast(void*, int64_t, DType, int) { return nullptr; }
std::shared_ptr<Work> NoAllToAllCommunicator::barrier() { return nullptr; }
std::shared_ptr<Work> NoAllToAllCommunicator::reduce_scatter_v(const void*, void*, const std::vector<int64_t>&, DType,
                                                               ReduceOp) {
  return nullptr;
}
std::shared_ptr<Work> NoAllToAllCommunicator::all_gather_v(const void*, void*, const std::vector<int64_t>&, DType) {
  return nullptr;
}
void NoAllToAllCommunicator::abort(int, const std::string&) { std::abort(); }

TEST(CommDefaults, AllToAllIsUnsupportedUnlessTheBackendImplementsIt) {
  NoAllToAllCommunicator c;
  int32_t x = 0;
  try {
    c.all_to_all(&x, &x, 1, DType::kI32);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("all_to_all is not supported by the stub backend"), std::string::npos)
        << e.what();
  }
}

TEST(CommDefaults, SplitIsUnsupportedUnlessTheBackendImplementsIt) {
  NoAllToAllCommunicator c;
  try {
    c.split(0, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("split is not supported by the stub backend"), std::string::npos) << e.what();
  }
}

TEST(LocalCommunicator, SplitGivesAnotherSingleRankCommunicator) {
  LocalCommunicator c;
  auto sub = c.split(3, 7);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(sub->rank(), 0);
  EXPECT_EQ(sub->num_nodes(), 1);
  EXPECT_EQ(sub->backend(), "local");
  float v = 2.5f;
  sub->all_reduce(&v, 1, DType::kF32, ReduceOp::kAvg)->wait();
  EXPECT_EQ(v, 2.5f);
  EXPECT_EQ(c.collectives_issued(), 0) << "the split's collectives are its own";
  EXPECT_THROW(c.split(-1, 0), Error);
}

TEST(CommFingerprint, AllToAll) {
  const CollectiveFingerprint a2a{CollectiveKind::kAllToAll, 96, DType::kI8, 4, 0};
  EXPECT_EQ(a2a.str(), "all_to_all(96 i8) #4");
  EXPECT_STREQ(collective_name(CollectiveKind::kAllToAll), "all_to_all");
  const CollectiveFingerprint ag{CollectiveKind::kAllGather, 96, DType::kI8, 4, 0};
  EXPECT_EQ(describe_fingerprint_mismatch({a2a, ag}),
            "rank 0 called all_to_all(96 i8) #4 but rank 1 called all_gather(96 i8) #4");
}

}  // namespace
}  // namespace tt::parallel
