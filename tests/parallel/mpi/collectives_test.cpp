// Correctness of every MPI collective against a reference computed locally from every rank's
// (deterministic) input: op x dtype (f32, bf16, f16, i32, u32) x sizes (0, 1, odd sizes not
// divisible by the rank count, 3M elements), uneven _v variants, in-place all-gather, overlap with
// compute, and that the progress thread completes a collective while the caller never enters MPI.
// Inputs are small integers, so sums are exact in every dtype and results compare bit for bit.
// Also all_to_all (every dtype, odd and zero block sizes), and GradReducer's compressed all-reduce
// (all_to_all + reduce + all_gather): bit-identical gradients on every rank, close to the fp32 mean.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/reducer.h"
#include "tests/parallel/mpi/mpi_test_env.h"

namespace tt::parallel {
namespace {

using test::mpi_comm;

// Element i of rank r's input: small integers in [-3, 7] (u32: [0, 10]).
double input(DType t, int r, int64_t i) {
  const double v = double((i * 7 + r * 3) % 11) - 3;
  return t == DType::kU32 ? v + 3 : v;
}

std::vector<uint8_t> encode(const std::vector<double>& v, DType t) {
  std::vector<uint8_t> out(v.size() * dtype_size(t));
  for (size_t i = 0; i < v.size(); ++i) {
    uint8_t* p = out.data() + i * dtype_size(t);
    switch (t) {
      case DType::kF32: {
        const float f = float(v[i]);
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::kBF16: {
        const uint16_t h = f32_to_bf16(float(v[i]));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::kF16: {
        const uint16_t h = f32_to_f16(float(v[i]));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::kI32: {
        const int32_t x = int32_t(v[i]);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::kU32: {
        const uint32_t x = uint32_t(v[i]);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::kI8: {
        const int8_t x = int8_t(v[i]);
        std::memcpy(p, &x, 1);
        break;
      }
      default:
        ADD_FAILURE() << "dtype";
    }
  }
  return out;
}

double decode(const uint8_t* base, int64_t i, DType t) {
  const uint8_t* p = base + size_t(i) * dtype_size(t);
  uint16_t h;
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kBF16:
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    case DType::kF16:
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    case DType::kI32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case DType::kU32: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case DType::kI8: {
      int8_t x;
      std::memcpy(&x, p, 1);
      return x;
    }
    default:
      return NAN;
  }
}

// The reduction of element index `i` over all ranks, rounded as the dtype stores it.
double reference(DType t, ReduceOp op, int n, int64_t i) {
  double sum = 0, mx = -1e30;
  for (int r = 0; r < n; ++r) {
    sum += input(t, r, i);
    mx = std::max(mx, input(t, r, i));
  }
  if (op == ReduceOp::kMax) return mx;
  if (op == ReduceOp::kSum) return sum;
  switch (t) {  // avg: sum, then divide as the dtype does
    case DType::kI32:
      return double(int32_t(sum) / n);
    case DType::kU32:
      return double(uint32_t(sum) / uint32_t(n));
    case DType::kF32:
      return double(float(sum) / float(n));
    case DType::kBF16:
      return bf16_to_f32(f32_to_bf16(float(sum) / float(n)));
    case DType::kF16:
      return f16_to_f32(f32_to_f16(float(sum) / float(n)));
    default:
      return NAN;
  }
}

// Compares n elements of `got` with expected(i); reports the count and the first mismatch.
template <typename F>
void expect_elements(const uint8_t* got, int64_t n, DType t, F expected, const std::string& what) {
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (decode(got, i, t) != expected(i) && !(std::isnan(decode(got, i, t)) && std::isnan(expected(i)))) {
      if (first < 0) first = i;
      ++bad;
    }
  EXPECT_EQ(bad, 0) << what << " on rank " << mpi_comm().rank() << ": first mismatch at " << first << ": got "
                    << (first >= 0 ? decode(got, first, t) : 0) << " want " << (first >= 0 ? expected(first) : 0);
}

std::vector<double> rank_input(DType t, int r, int64_t n, int64_t offset = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = input(t, r, offset + i);
  return v;
}

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kU32};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax};
const int64_t kSizes[] = {0, 1, 7, 1001};

std::string label(const char* coll, DType t, ReduceOp op, int64_t n) {
  return str(coll, " ", dtype_name(t), " ", reduce_op_name(op), " n=", n);
}

void check_all_reduce(DType t, ReduceOp op, int64_t n) {
  auto& c = mpi_comm();
  std::vector<uint8_t> buf = encode(rank_input(t, c.rank(), n), t);
  c.all_reduce(buf.data(), n, t, op)->wait();
  expect_elements(
      buf.data(), n, t, [&](int64_t i) { return reference(t, op, c.size(), i); }, label("all_reduce", t, op, n));
}

void check_reduce_scatter(DType t, ReduceOp op, int64_t block) {
  auto& c = mpi_comm();
  std::vector<uint8_t> send = encode(rank_input(t, c.rank(), block * c.size()), t);
  std::vector<uint8_t> recv(size_t(block) * dtype_size(t) + 1, 0xAB);
  c.reduce_scatter(send.data(), recv.data(), block, t, op)->wait();
  const int64_t base = block * c.rank();
  expect_elements(
      recv.data(), block, t, [&](int64_t i) { return reference(t, op, c.size(), base + i); },
      label("reduce_scatter", t, op, block));
  EXPECT_EQ(recv.back(), 0xAB) << "reduce_scatter wrote past its block";
}

std::vector<int64_t> uneven_counts(int n, int64_t base) {
  std::vector<int64_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = r == 0 ? 0 : base + 2 * r + 1;  // rank 0 owns nothing
  return counts;
}

void check_reduce_scatter_v(DType t, ReduceOp op, int64_t base) {
  auto& c = mpi_comm();
  const std::vector<int64_t> counts = uneven_counts(c.size(), base);
  int64_t total = 0, offset = 0;
  for (int r = 0; r < c.size(); ++r) {
    if (r == c.rank()) offset = total;
    total += counts[r];
  }
  std::vector<uint8_t> send = encode(rank_input(t, c.rank(), total), t);
  std::vector<uint8_t> recv(size_t(counts[c.rank()]) * dtype_size(t) + 1, 0xAB);
  c.reduce_scatter_v(send.data(), recv.data(), counts, t, op)->wait();
  expect_elements(
      recv.data(), counts[c.rank()], t, [&](int64_t i) { return reference(t, op, c.size(), offset + i); },
      label("reduce_scatter_v", t, op, total));
  EXPECT_EQ(recv.back(), 0xAB) << "reduce_scatter_v wrote past its block";
}

void check_all_gather(DType t, int64_t block, bool in_place) {
  auto& c = mpi_comm();
  const size_t es = dtype_size(t);
  std::vector<uint8_t> mine = encode(rank_input(t, c.rank(), block), t);
  std::vector<uint8_t> recv(size_t(block * c.size()) * es, 0);
  const void* send = mine.data();
  if (in_place) {
    std::memcpy(recv.data() + size_t(block * c.rank()) * es, mine.data(), mine.size());
    send = recv.data() + size_t(block * c.rank()) * es;
  }
  c.all_gather(send, recv.data(), block, t)->wait();
  expect_elements(
      recv.data(), block * c.size(), t, [&](int64_t i) { return input(t, int(i / block), i % block); },
      str("all_gather ", dtype_name(t), " block=", block, in_place ? " in place" : ""));
}

void check_all_gather_v(DType t, int64_t base) {
  auto& c = mpi_comm();
  const std::vector<int64_t> counts = uneven_counts(c.size(), base);
  std::vector<int64_t> owner, index;
  for (int r = 0; r < c.size(); ++r)
    for (int64_t i = 0; i < counts[r]; ++i) {
      owner.push_back(r);
      index.push_back(i);
    }
  std::vector<uint8_t> mine = encode(rank_input(t, c.rank(), counts[c.rank()]), t);
  std::vector<uint8_t> recv(owner.size() * dtype_size(t), 0);
  c.all_gather_v(mine.data(), recv.data(), counts, t)->wait();
  expect_elements(
      recv.data(), int64_t(owner.size()), t, [&](int64_t i) { return input(t, int(owner[i]), index[i]); },
      str("all_gather_v ", dtype_name(t), " total=", owner.size()));
}

// Rank r sends block d = input(t, r, d*block + i); it receives from rank s input(t, s, me*block + i).
void check_all_to_all(DType t, int64_t block) {
  auto& c = mpi_comm();
  const size_t es = dtype_size(t);
  const int64_t total = block * c.size();
  std::vector<uint8_t> send = encode(rank_input(t, c.rank(), total), t);
  std::vector<uint8_t> recv(size_t(total) * es + 1, 0xAB);
  c.all_to_all(send.data(), recv.data(), block, t)->wait();
  const int64_t me = c.rank();
  expect_elements(
      recv.data(), total, t, [&](int64_t i) { return input(t, int(i / block), me * block + i % block); },
      str("all_to_all ", dtype_name(t), " block=", block));
  EXPECT_EQ(recv.back(), 0xAB) << "all_to_all wrote past its blocks";
}

TEST(MpiComm, TopologyIsConsistent) {
  auto& c = mpi_comm();
  EXPECT_EQ(c.backend(), "mpi");
  EXPECT_GE(c.size(), 2);
  EXPECT_LT(c.rank(), c.size());
  EXPECT_LT(c.local_rank(), c.local_size());
  EXPECT_LT(c.node(), c.num_nodes());
  int32_t leaders = c.local_rank() == 0 ? 1 : 0;
  c.all_reduce(&leaders, 1, DType::kI32, ReduceOp::kSum)->wait();
  EXPECT_EQ(leaders, c.num_nodes()) << "one local rank 0 per node";
  if (c.num_nodes() == 1) {
    EXPECT_EQ(c.local_size(), c.size());
    EXPECT_EQ(c.local_rank(), c.rank());
  }
}

TEST(MpiComm, AllReduceEveryOpDTypeSize) {
  for (DType t : kDTypes)
    for (ReduceOp op : kOps)
      for (int64_t n : kSizes) check_all_reduce(t, op, n);
}

TEST(MpiComm, ReduceScatterEveryOpDTypeSize) {
  for (DType t : kDTypes)
    for (ReduceOp op : kOps)
      for (int64_t n : kSizes) check_reduce_scatter(t, op, n);
}

TEST(MpiComm, ReduceScatterUnevenCounts) {
  for (DType t : kDTypes)
    for (ReduceOp op : kOps)
      for (int64_t base : {0, 5, 333}) check_reduce_scatter_v(t, op, base);
}

TEST(MpiComm, AllGatherEveryDTypeSize) {
  for (DType t : kDTypes)
    for (int64_t n : kSizes) {
      check_all_gather(t, n, false);
      check_all_gather(t, n, true);
    }
}

TEST(MpiComm, AllGatherUnevenCounts) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kI32})
    for (int64_t base : {0, 5, 333}) check_all_gather_v(t, base);
}

TEST(MpiComm, AllToAllEveryDTypeSize) {
  for (DType t : {DType::kI8, DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kU32})
    for (int64_t n : kSizes) check_all_to_all(t, n);
  check_all_to_all(DType::kI8, 4099);
}

// Several all_to_alls in flight together with other collectives complete in order, correctly.
TEST(MpiComm, AllToAllQueuedWithOtherCollectives) {
  auto& c = mpi_comm();
  const DType t = DType::kI8;
  const int64_t block = 333;
  std::vector<std::vector<uint8_t>> sends, recvs;
  for (int k = 0; k < 3; ++k) {
    sends.push_back(encode(rank_input(t, c.rank(), block * c.size(), k), t));
    recvs.emplace_back(size_t(block * c.size()), 0);
  }
  std::vector<float> v(1001, 1.0f);
  std::vector<std::shared_ptr<Work>> works;
  works.push_back(c.all_to_all(sends[0].data(), recvs[0].data(), block, t));
  works.push_back(c.all_reduce(v.data(), 1001, DType::kF32, ReduceOp::kSum));
  works.push_back(c.all_to_all(sends[1].data(), recvs[1].data(), block, t));
  works.push_back(c.all_to_all(sends[2].data(), recvs[2].data(), block, t));
  for (auto& w : works) w->wait();
  EXPECT_EQ(v[1000], float(c.size()));
  const int64_t me = c.rank();
  for (int k = 0; k < 3; ++k)
    expect_elements(
        recvs[k].data(), block * c.size(), t,
        [&](int64_t i) { return input(t, int(i / block), k + me * block + i % block); }, str("queued all_to_all ", k));
}

TEST(MpiComm, BroadcastFromEveryRoot) {
  auto& c = mpi_comm();
  for (DType t : {DType::kF32, DType::kBF16, DType::kI32})
    for (int root = 0; root < c.size(); ++root)
      for (int64_t n : kSizes) {
        std::vector<double> v = rank_input(t, c.rank(), n);
        if (c.rank() != root)
          for (double& x : v) x += 1;
        std::vector<uint8_t> buf = encode(v, t);
        c.broadcast(buf.data(), n, t, root)->wait();
        expect_elements(
            buf.data(), n, t, [&](int64_t i) { return input(t, root, i); },
            str("broadcast ", dtype_name(t), " root ", root, " n=", n));
      }
}

TEST(MpiComm, LargeBuffers) {
  const int64_t n = 3 * 1024 * 1024 + 7;
  check_all_reduce(DType::kF32, ReduceOp::kSum, n);
  check_all_reduce(DType::kBF16, ReduceOp::kAvg, n);
  check_reduce_scatter(DType::kF32, ReduceOp::kAvg, n / mpi_comm().size());
  check_all_gather(DType::kF32, n / mpi_comm().size(), true);
}

TEST(MpiComm, BarrierAndStopVote) {
  auto& c = mpi_comm();
  c.barrier()->wait();
  EXPECT_FALSE(c.any_rank_requests_stop(false));
  EXPECT_TRUE(c.any_rank_requests_stop(c.rank() == c.size() - 1));
  EXPECT_TRUE(c.any_rank_requests_stop(true));
}

// Several collectives in flight at once while the caller computes; all results correct.
TEST(MpiComm, OverlapsWithCompute) {
  auto& c = mpi_comm();
  const DType t = DType::kF32;
  const int64_t n = 200003;
  std::vector<std::vector<uint8_t>> bufs;
  for (int k = 0; k < 4; ++k) bufs.push_back(encode(rank_input(t, c.rank(), n), t));
  std::vector<uint8_t> gathered(size_t(n) * 4 * c.size());
  std::vector<uint8_t> mine = encode(rank_input(t, c.rank(), n), t);
  std::vector<std::shared_ptr<Work>> works;
  for (int k = 0; k < 4; ++k) works.push_back(c.all_reduce(bufs[k].data(), n, t, kOps[k % 3]));
  works.push_back(c.all_gather(mine.data(), gathered.data(), n, t));
  volatile double acc = 0;  // compute while the collectives run
  for (int i = 0; i < 20000000; ++i) acc = acc + std::sqrt(double(i));
  for (auto& w : works) w->wait();
  for (auto& w : works) {
    EXPECT_TRUE(w->is_completed());
    EXPECT_EQ(w->status(), WorkStatus::kCompleted);
    EXPECT_GT(w->elapsed_s(), 0.0);
  }
  for (int k = 0; k < 4; ++k)
    expect_elements(
        bufs[k].data(), n, t, [&](int64_t i) { return reference(t, kOps[k % 3], c.size(), i); },
        str("overlapped all_reduce ", k));
  expect_elements(
      gathered.data(), n * c.size(), t, [&](int64_t i) { return input(t, int(i / n), i % n); },
      "overlapped all_gather");
}

// The progress thread completes a collective while the caller sleeps without entering MPI.
TEST(MpiComm, ProgressesWithoutCallerInMpi) {
  auto& c = mpi_comm();
  c.barrier()->wait();
  std::vector<float> buf(256 * 1024, 1.0f);
  auto w = c.all_reduce(buf.data(), int64_t(buf.size()), DType::kF32, ReduceOp::kSum);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int32_t done[1] = {w->is_completed() ? 1 : 0};
  w->wait();
  EXPECT_EQ(buf[12345], float(c.size()));
  std::vector<int32_t> all(c.size());
  c.all_gather(done, all.data(), 1, DType::kI32)->wait();
  for (int r = 0; r < c.size(); ++r) EXPECT_EQ(all[r], 1) << "rank " << r << " had not completed after 200 ms";
}

// An explicit wait timeout names the late ranks, and the collective can still be waited for.
TEST(MpiComm, WaitTimeoutNamesLateRanksAndRecovers) {
  auto& c = mpi_comm();
  c.barrier()->wait();
  c.set_step(7);
  int32_t x = 1;
  if (c.rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto w = c.all_reduce(&x, 1, DType::kI32, ReduceOp::kSum);
  if (c.rank() == 0) {
    std::string msg;
    try {
      w->wait(0.3);
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("collective all_reduce #"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(step 7, 4 B i32) timed out after 0.3 s waiting for rank(s) 1"), std::string::npos) << msg;
    if (c.size() > 2) EXPECT_NE(msg.find("rank(s) 1, 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 1 last issued #"), std::string::npos) << msg;
  }
  w->wait();
  EXPECT_EQ(x, c.size());
  EXPECT_EQ(w->status(), WorkStatus::kCompleted);
  c.set_step(-1);
}

// A second communicator with the fingerprint check on: matching collectives pass; then it shuts down.
TEST(MpiComm, CheckedCommunicatorRunsMatchingCollectives) {
  CommOptions opts;
  opts.backend = "mpi";
  opts.check_collectives = true;
  opts.timeout_s = 60;
  auto c = create_communicator(opts);
  std::vector<float> v(1001, float(c->rank()));
  c->all_reduce(v.data(), 1001, DType::kF32, ReduceOp::kMax)->wait();
  EXPECT_EQ(v[1000], float(c->size() - 1));
  std::vector<float> g(size_t(3 * c->size()));
  auto w1 = c->all_gather(v.data(), g.data(), 3, DType::kF32);
  auto w2 = c->barrier();
  std::vector<int32_t> a2a_send(size_t(2 * c->size()), c->rank()), a2a_recv(size_t(2 * c->size()), -1);
  auto w3 = c->all_to_all(a2a_send.data(), a2a_recv.data(), 2, DType::kI32);
  w2->wait();
  w1->wait();
  w3->wait();
  EXPECT_EQ(g[0], float(c->size() - 1));
  for (int r = 0; r < c->size(); ++r) EXPECT_EQ(a2a_recv[size_t(2 * r + 1)], r);
}

// ---- GradReducer's compressed all-reduce over the real ranks ------------------------------------

std::vector<float> rank_gradient(int rank, int64_t n, int step) {
  Rng rng(1000 + uint64_t(rank) * 17 + uint64_t(step));
  std::vector<float> g(static_cast<size_t>(n));
  for (auto& x : g) x = float(rng.normal() * 0.01 * (1 + rank));
  return g;
}

// Every rank reduces its own gradient; all ranks must end with bit-identical averages, close to the
// fp32 average of every rank's gradient: bf16 within 1e-2 of the largest contribution, int8 within
// two quantisation steps (of the largest rank's block scale) — one for each quantisation.
void check_compressed_reducer(GradCompression compression, bool feedback) {
  auto& c = mpi_comm();
  const int world = c.size();
  // A tiny tensor (fewer int8 blocks than ranks: empty chunks), an odd tail, several buckets.
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 1000}, {1000, 1701}, {1701, 5000}, {5000, 5100}};
  const int64_t n = 5100;
  BucketCaps caps;
  caps.cap_bytes = 4 * 2000;
  caps.first_cap_bytes = 4 * 300;
  Tensor grads = Tensor::zeros("grads", {n});
  GradReducer reducer(c, grads, ranges, 0, caps, compression, feedback);
  EXPECT_GE(reducer.buckets().size(), 3u);
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> mine = rank_gradient(c.rank(), n, step);
    std::copy(mine.begin(), mine.end(), grads.data<float>());
    reducer.begin_backward(0, 1);
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) reducer.on_grads_ready(it->first, it->second);
    reducer.finish_backward();
    const std::string what = str(grad_compression_name(compression), feedback ? " with feedback" : "", " step ", step,
                                 " on ", world, " ranks");

    // Bit-identical on every rank.
    std::vector<float> all(size_t(n * world));
    c.all_gather(grads.data<float>(), all.data(), n, DType::kF32)->wait();
    int64_t differ = 0;
    for (int r = 1; r < world; ++r)
      differ += std::memcmp(all.data(), all.data() + size_t(r) * size_t(n), size_t(n) * 4) != 0;
    EXPECT_EQ(differ, 0) << what << ": ranks hold different gradients";

    // Close to the fp32 average (residuals are zero at step 0; later steps carry feedback, so only
    // step 0 and runs without feedback are compared with the plain average).
    if (step > 0 && feedback) continue;
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < world; ++r) inputs.push_back(rank_gradient(r, n, step));
    int64_t bad = 0, first = -1;
    double first_got = 0, first_want = 0;
    const float* got = grads.data<float>();
    for (const Bucket& b : reducer.buckets())
      for (int64_t i = b.begin; i < b.end; ++i) {
        double mean = 0, largest = 0;
        for (int r = 0; r < world; ++r) {
          mean += inputs[size_t(r)][size_t(i)];
          largest = std::max(largest, double(std::fabs(inputs[size_t(r)][size_t(i)])));
        }
        mean /= world;
        double tol = 1e-2 * largest;
        if (block_scaled(compression)) {
          const int64_t lo = b.begin + (i - b.begin) / kInt8Block * kInt8Block, hi = std::min(b.end, lo + kInt8Block);
          double absmax = 0, mean_abs = 0;
          for (int r = 0; r < world; ++r) {
            mean_abs += std::fabs(inputs[size_t(r)][size_t(i)]) / world;
            for (int64_t j = lo; j < hi; ++j)
              absmax = std::max(absmax, double(std::fabs(inputs[size_t(r)][size_t(j)])));
          }
          // int8: half a step (absmax / 254) per quantisation, twice. fp8 (E5M2): 2^-3 of each
          // rank's value, then 2^-3 of the (perturbed) average, above the subnormal floor.
          tol = compression == GradCompression::kInt8
                    ? 2 * absmax / 127 * 1.0001
                    : 0.125 * mean_abs + 0.125 * (std::fabs(mean) + 0.125 * mean_abs) + 2 * absmax * std::ldexp(1.0, -16) / 57344;
        }
        if (std::fabs(got[i] - mean) > tol + 1e-12) {
          if (first < 0) {
            first = i;
            first_got = got[i];
            first_want = mean;
          }
          ++bad;
        }
      }
    EXPECT_EQ(bad, 0) << what << ": first at " << first << ": got " << first_got << " want " << first_want;
  }
}

TEST(MpiGradReducer, CompressedAllReduceIsIdenticalOnEveryRankAndCloseToFp32) {
  for (GradCompression comp : {GradCompression::kBf16, GradCompression::kInt8, GradCompression::kFp8})
    for (bool feedback : {false, true}) check_compressed_reducer(comp, feedback);
}

}  // namespace
}  // namespace tt::parallel
