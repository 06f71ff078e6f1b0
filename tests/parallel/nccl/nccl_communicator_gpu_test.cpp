// The NCCL backend on real GPUs: every collective of the interface, every reducible dtype and raw
// dtypes, odd and empty sizes, host-buffer staging, compute-stream ordering, groups, Work timeouts
// and the watchdog's one-line death. A single rank on one GPU checks the plumbing (a collective over
// one rank is the identity, so results are bit-exact); with two or more GPUs, ranks run as threads
// in this process and the reductions are checked against values computed on the host.
//
// Every test skips itself when no CUDA device is visible (CI), except NoDeviceIsAConfigError, which
// runs only there.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/error.h"
#include "parallel/comm/local/local_communicator.h"
#include "parallel/comm/nccl/nccl_communicator.h"

namespace tt::parallel {
namespace {

int device_count() { return cuda_device_count(); }

#define SKIP_WITHOUT_GPU() \
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device visible"

// Device memory of `bytes` bytes on the current device.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_) TT_CUDA_CHECK(cudaMalloc(&p_, bytes_));
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  char* bytes_at(size_t offset) const { return static_cast<char*>(p_) + offset; }
  void upload(const std::vector<uint8_t>& host) const {
    if (bytes_) TT_CUDA_CHECK(cudaMemcpy(p_, host.data(), bytes_, cudaMemcpyHostToDevice));
  }
  std::vector<uint8_t> download() const {
    std::vector<uint8_t> h(bytes_);
    if (bytes_) TT_CUDA_CHECK(cudaMemcpy(h.data(), p_, bytes_, cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// n elements of dtype t with finite, distinct-ish values (element i, salted by `salt`).
std::vector<uint8_t> pattern(DType t, int64_t n, int salt = 0) {
  std::vector<uint8_t> out(size_t(n) * dtype_size(t));
  for (int64_t i = 0; i < n; ++i) {
    const float f = float((i * 37 + salt * 11) % 1000) * 0.25f - 100.0f;
    uint8_t* dst = out.data() + size_t(i) * dtype_size(t);
    switch (t) {
      case DType::kF32:
        std::memcpy(dst, &f, 4);
        break;
      case DType::kBF16: {
        const uint16_t v = f32_to_bf16(f);
        std::memcpy(dst, &v, 2);
        break;
      }
      case DType::kF16: {
        const uint16_t v = f32_to_f16(f);
        std::memcpy(dst, &v, 2);
        break;
      }
      case DType::kI32: {
        const int32_t v = int32_t(i * 7919 + salt) - 12345;
        std::memcpy(dst, &v, 4);
        break;
      }
      case DType::kU32: {
        const uint32_t v = uint32_t(i) * 2654435761u + uint32_t(salt);
        std::memcpy(dst, &v, 4);
        break;
      }
      default:
        for (size_t b = 0; b < dtype_size(t); ++b) dst[b] = uint8_t(i * 31 + b * 7 + salt);
        break;
    }
  }
  return out;
}

const DType kReducible[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kU32};
const DType kAll[] = {DType::kF32, DType::kBF16, DType::kF16,     DType::kI32,    DType::kU32,
                      DType::kI8,  DType::kU16,  DType::kFP8E4M3, DType::kFP8E5M2};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax};
const int64_t kCounts[] = {0, 1, 7, 1023, 100003};

// One single-rank communicator for the whole suite (ncclCommInitRank is not free).
class NcclSingleRank : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (device_count() == 0) return;
    CommOptions opts;
    opts.timeout_s = 60;
    comm_ = create_nccl_communicator(opts, std::make_unique<LocalCommunicator>(opts)).release();
  }
  static void TearDownTestSuite() {
    delete comm_;
    comm_ = nullptr;
  }
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_NE(comm_, nullptr);
    comm_->set_compute_stream(nullptr);
    TT_CUDA_CHECK(cudaSetDevice(comm_->device()));
  }
  NcclCommunicator& comm() { return *comm_; }
  static NcclCommunicator* comm_;
};
NcclCommunicator* NcclSingleRank::comm_ = nullptr;

TEST_F(NcclSingleRank, Identity) {
  EXPECT_EQ(comm().backend(), "nccl");
  EXPECT_EQ(comm().rank(), 0);
  EXPECT_EQ(comm().size(), 1);
  EXPECT_EQ(comm().local_rank(), 0);
  EXPECT_EQ(comm().num_nodes(), 1);
  EXPECT_EQ(comm().device(), 0);
  EXPECT_NE(comm().comm_stream(), nullptr);
  EXPECT_FALSE(nccl_version_string().empty());
}

TEST_F(NcclSingleRank, AllReduceEveryDtypeOpAndSize) {
  for (DType t : kReducible)
    for (ReduceOp op : kOps)
      for (int64_t n : kCounts) {
        SCOPED_TRACE(str(dtype_name(t), " ", reduce_op_name(op), " n=", n));
        const auto in = pattern(t, n);
        DeviceBuffer buf(in.size());
        buf.upload(in);
        auto w = comm().all_reduce(buf.get(), n, t, op);
        w->wait();
        EXPECT_TRUE(w->is_completed());
        EXPECT_EQ(w->status(), WorkStatus::kCompleted);
        EXPECT_GE(w->elapsed_s(), 0.0);
        EXPECT_EQ(buf.download(), in);  // one rank: sum, avg (x * 1/1) and max are the identity
      }
}

TEST_F(NcclSingleRank, ReduceScatterEveryDtype) {
  for (DType t : kReducible)
    for (int64_t n : kCounts) {
      SCOPED_TRACE(str(dtype_name(t), " n=", n));
      const auto in = pattern(t, n, 3);
      DeviceBuffer send(in.size()), recv(in.size());
      send.upload(in);
      comm().reduce_scatter(send.get(), recv.get(), n, t, ReduceOp::kSum)->wait();
      EXPECT_EQ(recv.download(), in);
    }
}

TEST_F(NcclSingleRank, AllGatherEveryDtypeOutOfPlaceAndInPlace) {
  for (DType t : kAll)
    for (int64_t n : kCounts) {
      SCOPED_TRACE(str(dtype_name(t), " n=", n));
      const auto in = pattern(t, n, 5);
      DeviceBuffer send(in.size()), recv(in.size());
      send.upload(in);
      comm().all_gather(send.get(), recv.get(), n, t)->wait();
      EXPECT_EQ(recv.download(), in);
      comm().all_gather(recv.get(), recv.get(), n, t)->wait();  // in place: send is rank 0's block
      EXPECT_EQ(recv.download(), in);
    }
}

TEST_F(NcclSingleRank, BroadcastEveryDtype) {
  for (DType t : kAll)
    for (int64_t n : kCounts) {
      SCOPED_TRACE(str(dtype_name(t), " n=", n));
      const auto in = pattern(t, n, 7);
      DeviceBuffer buf(in.size());
      buf.upload(in);
      comm().broadcast(buf.get(), n, t, 0)->wait();
      EXPECT_EQ(buf.download(), in);
    }
}

TEST_F(NcclSingleRank, BarrierCompletes) {
  for (int i = 0; i < 3; ++i) {
    auto w = comm().barrier();
    w->wait();
    EXPECT_EQ(w->status(), WorkStatus::kCompleted);
  }
}

TEST_F(NcclSingleRank, UnevenVariants) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kI32})
    for (int64_t n : kCounts) {
      SCOPED_TRACE(str(dtype_name(t), " n=", n));
      const auto in = pattern(t, n, 9);
      DeviceBuffer send(in.size()), recv(in.size());
      send.upload(in);
      comm().reduce_scatter_v(send.get(), recv.get(), {n}, t, ReduceOp::kAvg)->wait();
      EXPECT_EQ(recv.download(), in);
      DeviceBuffer gathered(in.size());
      comm().all_gather_v(send.get(), gathered.get(), {n}, t)->wait();
      EXPECT_EQ(gathered.download(), in);
    }
}

#ifdef TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE
TEST_F(NcclSingleRank, AllToAllEveryDtype) {
  for (DType t : kAll)
    for (int64_t n : kCounts) {
      SCOPED_TRACE(str(dtype_name(t), " n=", n));
      const auto in = pattern(t, n, 13);
      DeviceBuffer send(in.size()), recv(in.size());
      send.upload(in);
      comm().all_to_all(send.get(), recv.get(), n, t)->wait();
      EXPECT_EQ(recv.download(), in);
    }
}
#endif

TEST_F(NcclSingleRank, HostBuffersAreStagedForAllReduceAndBroadcast) {
  std::vector<float> v = {1.5f, -2.0f, 3.25f};
  comm().all_reduce(v.data(), 3, DType::kF32, ReduceOp::kSum)->wait();
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  int32_t x = 17;
  comm().broadcast(&x, 1, DType::kI32, 0)->wait();
  EXPECT_EQ(x, 17);
  EXPECT_TRUE(comm().any_rank_requests_stop(true));
  EXPECT_FALSE(comm().any_rank_requests_stop(false));
}

TEST_F(NcclSingleRank, HostBuffersAreRejectedElsewhere) {
  std::vector<float> a(4), b(4);
  try {
    comm().reduce_scatter(a.data(), b.data(), 4, DType::kF32, ReduceOp::kSum);
    FAIL() << "expected kInternal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  // The communicator is still usable: argument errors are caught before NCCL is called.
  comm().barrier()->wait();
}

TEST_F(NcclSingleRank, ArgumentChecksMatchOtherBackends) {
  DeviceBuffer buf(16);
  EXPECT_THROW(comm().all_reduce(buf.get(), 4, DType::kI8, ReduceOp::kSum), Error);
  EXPECT_THROW(comm().broadcast(buf.get(), 4, DType::kF32, 1), Error);
  EXPECT_THROW(comm().all_gather_v(buf.get(), buf.get(), {1, 2}, DType::kF32), Error);
  EXPECT_THROW(comm().all_reduce(buf.get(), -1, DType::kF32, ReduceOp::kSum), Error);
  comm().barrier()->wait();
}

// Blocks a stream (on the host side of the GPU queue) for `ms` milliseconds.
void gate_stream(cudaStream_t s, int ms) {
  auto* arg = new int(ms);
  TT_CUDA_CHECK(cudaLaunchHostFunc(
      s,
      [](void* p) {
        std::unique_ptr<int> ms(static_cast<int*>(p));
        std::this_thread::sleep_for(std::chrono::milliseconds(*ms));
      },
      arg));
}

TEST_F(NcclSingleRank, CollectivesFollowTheComputeStream) {
  cudaStream_t compute = nullptr;
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  comm().set_compute_stream(compute);
  const size_t bytes = 1 << 20;
  DeviceBuffer src(bytes), dst(bytes);
  TT_CUDA_CHECK(cudaMemset(src.get(), 0x11, bytes));
  TT_CUDA_CHECK(cudaMemset(dst.get(), 0x00, bytes));
  // "Compute": after 300 ms, write 0x5A. The all_gather must read the 0x5A, not the 0x11.
  gate_stream(compute, 300);
  TT_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5A, bytes, compute));
  auto w = comm().all_gather(src.get(), dst.get(), int64_t(bytes), DType::kI8);
  EXPECT_FALSE(w->is_completed());  // still behind the gate
  w->wait();
  EXPECT_EQ(dst.download(), std::vector<uint8_t>(bytes, 0x5A));
  comm().set_compute_stream(nullptr);
  TT_CUDA_CHECK(cudaStreamSynchronize(compute));
  TT_CUDA_CHECK(cudaStreamDestroy(compute));
}

TEST_F(NcclSingleRank, StreamWaitOrdersAConsumerStream) {
  cudaStream_t consumer = nullptr;
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  const auto in = pattern(DType::kF32, 4099, 1);
  DeviceBuffer buf(in.size()), copy(in.size());
  buf.upload(in);
  gate_stream(comm().compute_stream(), 200);  // the collective starts late ...
  auto w = comm().all_reduce(buf.get(), 4099, DType::kF32, ReduceOp::kSum);
  comm().stream_wait(*w, consumer);  // ... and the consumer's copy still comes after it
  TT_CUDA_CHECK(cudaMemcpyAsync(copy.get(), buf.get(), in.size(), cudaMemcpyDeviceToDevice, consumer));
  TT_CUDA_CHECK(cudaStreamSynchronize(consumer));
  EXPECT_TRUE(w->is_completed());
  EXPECT_EQ(copy.download(), in);
  TT_CUDA_CHECK(cudaStreamDestroy(consumer));
}

TEST_F(NcclSingleRank, GroupedBucketsLaunchAtGroupEnd) {
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<std::vector<uint8_t>> ins;
  std::vector<std::shared_ptr<Work>> works;
  {
    NcclGroup group(comm());
    for (int b = 0; b < 5; ++b) {
      ins.push_back(pattern(DType::kBF16, 1000 + 17 * b, b));
      bufs.push_back(std::make_unique<DeviceBuffer>(ins.back().size()));
      bufs.back()->upload(ins.back());
      works.push_back(comm().all_reduce(bufs.back()->get(), 1000 + 17 * b, DType::kBF16, ReduceOp::kAvg));
    }
    EXPECT_FALSE(works[0]->is_completed());  // nothing launched inside the group
    EXPECT_THROW(works[0]->wait(), Error);   // waiting inside the group would deadlock
  }
  for (size_t b = 0; b < works.size(); ++b) {
    works[b]->wait();
    EXPECT_EQ(bufs[b]->download(), ins[b]) << "bucket " << b;
  }
}

TEST_F(NcclSingleRank, WaitTimesOutThenCompletes) {
  comm().set_step(42);
  gate_stream(comm().compute_stream(), 1500);
  DeviceBuffer buf(64);
  auto w = comm().all_reduce(buf.get(), 16, DType::kF32, ReduceOp::kSum);
  try {
    w->wait(0.1);
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("all_reduce #"), std::string::npos) << m;
    EXPECT_NE(m.find("step 42"), std::string::npos) << m;
    EXPECT_NE(m.find("timed out after 0.1 s on rank 0 (cuda:0)"), std::string::npos) << m;
    EXPECT_NE(m.find("peers could not be queried"), std::string::npos) << m;
  }
  EXPECT_EQ(w->status(), WorkStatus::kTimedOut);
  w->wait();  // still in flight; completes once the gate opens
  EXPECT_EQ(w->status(), WorkStatus::kCompleted);
  EXPECT_GE(w->elapsed_s(), 1.0);
  comm().set_step(-1);
}

TEST(NcclWatchdog, TimeoutEndsTheProcessWithOneLine) {
  SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CommOptions opts;
        opts.timeout_s = 0.5;
        auto comm = create_nccl_communicator(opts, std::make_unique<LocalCommunicator>(opts));
        comm->set_step(7);
        gate_stream(comm->compute_stream(), 5000);  // the collective cannot start before the deadline
        DeviceBuffer buf(16);
        auto w = comm->all_reduce(buf.get(), 4, DType::kF32, ReduceOp::kSum);
        std::this_thread::sleep_for(std::chrono::seconds(30));
        std::exit(0);
      },
      ::testing::ExitedWithCode(1),
      "collective all_reduce #1 \\(step 7, 16 B f32\\) timed out after 0.5 s on rank 0 \\(cuda:0\\); peers could "
      "not be queried");
}

TEST(NcclFactory, CreateCommunicatorSelectsNccl) {
  SKIP_WITHOUT_GPU();
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("RANK")) GTEST_SKIP() << "running under a launcher";
  CommOptions opts;
  opts.backend = "nccl";
  auto comm = create_communicator(opts);
  EXPECT_EQ(comm->backend(), "nccl");
  EXPECT_EQ(comm->size(), 1);
  comm->barrier()->wait();
}

TEST(NcclFactory, NoDeviceIsAConfigError) {
  if (device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("RANK")) GTEST_SKIP() << "running under a launcher";
  CommOptions opts;
  opts.backend = "nccl";
  try {
    create_communicator(opts);
    FAIL() << "expected kConfig";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("needs a CUDA device"), std::string::npos) << e.what();
  }
}

// ---- several ranks as threads, one GPU each (machines with >= 2 GPUs) ---------------------------
template <typename T>
std::vector<T> download_as(const DeviceBuffer& b, size_t n) {
  const auto raw = b.download();
  std::vector<T> v(n);
  if (n) std::memcpy(v.data(), raw.data(), n * sizeof(T));
  return v;
}
template <typename T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> raw(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());
  return raw;
}

TEST(NcclMultiGpu, CollectivesAcrossRanks) {
  const int n = std::min(device_count(), 4);
  if (n < 2) GTEST_SKIP() << "needs 2 or more GPUs (found " << n << ")";
  const NcclUniqueIdBytes id = new_nccl_unique_id();
  std::vector<std::string> errors(static_cast<size_t>(n));
  auto rank_main = [&](int r) {
    try {
      TT_CUDA_CHECK(cudaSetDevice(r));
      CommOptions opts;
      opts.timeout_s = 60;
      auto comm = create_nccl_communicator_in_process(opts, r, n, id, r);
      auto expect = [&](bool ok, const std::string& what) {
        if (!ok && errors[size_t(r)].empty()) errors[size_t(r)] = what;
      };
      const int64_t m = 1001;  // odd
      // all_reduce f32 sum / avg / max and i32 sum: element i on rank r is (r + 1) * (i % 13).
      for (ReduceOp op : kOps) {
        std::vector<float> h(m);
        for (int64_t i = 0; i < m; ++i) h[size_t(i)] = float((r + 1) * (i % 13));
        DeviceBuffer b(h.size() * 4);
        b.upload(as_bytes(h));
        comm->all_reduce(b.get(), m, DType::kF32, op)->wait();
        const auto got = download_as<float>(b, size_t(m));
        for (int64_t i = 0; i < m; ++i) {
          const float sum = float(n * (n + 1) / 2 * (i % 13));
          const float want = op == ReduceOp::kSum ? sum : op == ReduceOp::kAvg ? sum / float(n) : float(n * (i % 13));
          expect(std::fabs(got[size_t(i)] - want) <= 1e-5f * std::max(1.0f, std::fabs(want)),
                 str("all_reduce f32 ", reduce_op_name(op), " [", i, "] = ", got[size_t(i)], ", want ", want));
        }
      }
      {  // bf16 sum of small integers is exact
        std::vector<uint16_t> h(m);
        for (int64_t i = 0; i < m; ++i) h[size_t(i)] = f32_to_bf16(float((r + 1) * (i % 5)));
        DeviceBuffer b(h.size() * 2);
        b.upload(as_bytes(h));
        comm->all_reduce(b.get(), m, DType::kBF16, ReduceOp::kSum)->wait();
        const auto got = download_as<uint16_t>(b, size_t(m));
        for (int64_t i = 0; i < m; ++i)
          expect(bf16_to_f32(got[size_t(i)]) == float(n * (n + 1) / 2 * (i % 5)), str("all_reduce bf16 [", i, "]"));
      }
      {  // reduce_scatter i32 sum: block b of rank r's send is r*1000 + b*10 + j
        const int64_t blk = 7;
        std::vector<int32_t> h(static_cast<size_t>(blk * n));
        for (int b = 0; b < n; ++b)
          for (int64_t j = 0; j < blk; ++j) h[size_t(b * blk + j)] = int32_t(r * 1000 + b * 10 + j);
        DeviceBuffer send(h.size() * 4), recv(size_t(blk) * 4);
        send.upload(as_bytes(h));
        comm->reduce_scatter(send.get(), recv.get(), blk, DType::kI32, ReduceOp::kSum)->wait();
        const auto got = download_as<int32_t>(recv, size_t(blk));
        for (int64_t j = 0; j < blk; ++j)
          expect(got[size_t(j)] == int32_t(1000 * n * (n - 1) / 2 + n * (r * 10 + j)), str("reduce_scatter [", j, "]"));
      }
      {  // all_gather in place and broadcast from the last rank
        const int64_t blk = 5;
        DeviceBuffer recv(size_t(blk * n) * 4);
        std::vector<int32_t> mine(static_cast<size_t>(blk), 100 + r);
        TT_CUDA_CHECK(
            cudaMemcpy(recv.bytes_at(size_t(r * blk) * 4), mine.data(), size_t(blk) * 4, cudaMemcpyHostToDevice));
        comm->all_gather(recv.bytes_at(size_t(r * blk) * 4), recv.get(), blk, DType::kI32)->wait();
        const auto got = download_as<int32_t>(recv, size_t(blk * n));
        for (int64_t i = 0; i < blk * n; ++i)
          expect(got[size_t(i)] == int32_t(100 + i / blk), str("all_gather [", i, "]"));
        std::vector<int32_t> v(3, r);
        DeviceBuffer bb(12);
        bb.upload(as_bytes(v));
        comm->broadcast(bb.get(), 3, DType::kI32, n - 1)->wait();
        for (int32_t x : download_as<int32_t>(bb, 3)) expect(x == n - 1, "broadcast");
      }
      {  // uneven: rank r owns r*3 + (r == 1 ? 0 : 2) elements (rank 1 owns none)
        std::vector<int64_t> counts(static_cast<size_t>(n));
        for (int q = 0; q < n; ++q) counts[size_t(q)] = q == 1 ? 0 : q * 3 + 2;
        const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t(0));
        int64_t displ = 0;
        for (int q = 0; q < r; ++q) displ += counts[size_t(q)];
        std::vector<float> h(static_cast<size_t>(total));
        for (int64_t i = 0; i < total; ++i) h[size_t(i)] = float(r + i);
        DeviceBuffer send(size_t(total) * 4), recv(size_t(std::max<int64_t>(counts[size_t(r)], 1)) * 4);
        send.upload(as_bytes(h));
        comm->reduce_scatter_v(send.get(), recv.get(), counts, DType::kF32, ReduceOp::kSum)->wait();
        const auto got = download_as<float>(recv, size_t(counts[size_t(r)]));
        for (int64_t j = 0; j < counts[size_t(r)]; ++j)
          expect(got[size_t(j)] == float(n * (n - 1) / 2 + n * (displ + j)), str("reduce_scatter_v [", j, "]"));
        DeviceBuffer gathered(size_t(total) * 4);
        std::vector<float> mine(static_cast<size_t>(counts[size_t(r)]), static_cast<float>(r));
        DeviceBuffer mine_d(std::max<size_t>(mine.size() * 4, 4));
        if (!mine.empty())
          TT_CUDA_CHECK(cudaMemcpy(mine_d.get(), mine.data(), mine.size() * 4, cudaMemcpyHostToDevice));
        comm->all_gather_v(mine_d.get(), gathered.get(), counts, DType::kF32)->wait();
        const auto all = download_as<float>(gathered, size_t(total));
        int64_t at = 0;
        for (int q = 0; q < n; ++q)
          for (int64_t j = 0; j < counts[size_t(q)]; ++j, ++at)
            expect(all[size_t(at)] == float(q), str("all_gather_v [", at, "]"));
      }
#ifdef TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE
      {  // all_to_all: block q of rank r's send is r*100 + q; rank r receives q*100 + r from rank q
        const int64_t blk = 3;
        std::vector<int32_t> h(static_cast<size_t>(blk * n));
        for (int q = 0; q < n; ++q)
          for (int64_t j = 0; j < blk; ++j) h[size_t(q * blk + j)] = r * 100 + q;
        DeviceBuffer send(h.size() * 4), recv(h.size() * 4);
        send.upload(as_bytes(h));
        comm->all_to_all(send.get(), recv.get(), blk, DType::kI32)->wait();
        const auto got = download_as<int32_t>(recv, h.size());
        for (int q = 0; q < n; ++q)
          for (int64_t j = 0; j < blk; ++j)
            expect(got[size_t(q * blk + j)] == q * 100 + r, str("all_to_all from rank ", q));
      }
#endif
      comm->barrier()->wait();
    } catch (const std::exception& e) {
      errors[size_t(r)] = e.what();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
}

}  // namespace
}  // namespace tt::parallel
