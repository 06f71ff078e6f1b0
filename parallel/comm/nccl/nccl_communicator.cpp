// NCCL backend: bootstrap, stream ordering, grouped and uneven collectives, host staging, and the
// watchdog (design and contracts in nccl_communicator.h).
//
// Threads: the issuing thread makes NcclWork objects, orders the communication stream after the
// compute stream, calls NCCL and records the Work's event. The watchdog thread only queries events,
// polls ncclCommGetAsyncError, compares deadlines and, on failure, calls ncclCommAbort and ends the
// job. Any thread may query or wait on a Work (cudaEventQuery is thread-safe).
#include "parallel/comm/nccl/nccl_communicator.h"

#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/logging.h"
#include "parallel/comm/collective_args.h"
#include "parallel/comm/nccl/nccl_check.h"
#include "parallel/comm/pending_note.h"

extern char** environ;

namespace tt::parallel {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueIdBytes), "NcclUniqueIdBytes must hold an ncclUniqueId");

void nccl_check_failed(const char* call, ncclResult_t result, const char* file, int line) {
  const char* last = ncclGetLastError(nullptr);
  std::string hint;
  switch (result) {
    case ncclUnhandledCudaError:
      hint = "a CUDA call inside NCCL failed: out of device memory, or a device fault earlier in this process";
      break;
    case ncclSystemError:
      hint =
          "a system call or socket failed: check that the nodes reach each other and NCCL_SOCKET_IFNAME / "
          "NCCL_IB_HCA; rerun with NCCL_DEBUG=INFO";
      break;
    case ncclRemoteError:
      hint = "a peer process died or the network failed; see the other ranks' output";
      break;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      hint = "a bug in how NCCL is called, or two ranks on one GPU (one rank per GPU); rerun with NCCL_DEBUG=WARN";
      break;
    default:
      hint = "rerun with NCCL_DEBUG=INFO for NCCL's own account";
      break;
  }
  throw Error(ErrorKind::kRuntime,
              str(call, " failed: ", ncclGetErrorString(result), last && *last ? str(" (", last, ")") : ""),
              str(file, ":", line), hint);
}

namespace {

// Sets the calling thread's current device for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&prev_) != cudaSuccess) {
      cudaGetLastError();
      prev_ = -1;
    }
    if (prev_ == device) {
      prev_ = -1;
      return;
    }
    TT_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() {
    if (prev_ >= 0) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

ncclDataType_t reduce_type(DType t) {
  switch (t) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF16:
      return ncclFloat16;
    case DType::kI32:
      return ncclInt32;
    case DType::kU32:
      return ncclUint32;
    default:
      break;
  }
  throw Error(ErrorKind::kInternal, str("no NCCL reduction type for ", dtype_name(t)), "nccl communicator");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
  }
  return ncclSum;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
}

constexpr const char* kNoPeerQuery =
    "peers could not be queried (NCCL has no channel to ask them where they are): the first error in the other "
    "ranks' output names the culprit";

}  // namespace

// ---- one collective ------------------------------------------------------------------------------
class NcclWork : public Work {
 public:
  ~NcclWork() override {
    if (event) cudaEventDestroy(event);
  }
  bool is_completed() override { return poll() == WorkStatus::kCompleted; }
  WorkStatus status() override { return poll(); }
  void wait(double timeout_s) override;
  double elapsed_s() override {
    poll();
    const long long end = complete_ns_.load();
    return double((end ? end : monotonic_ns()) - submit_ns) * 1e-9;
  }

  // Queries the event (once recorded) and moves the status on. Any thread.
  WorkStatus poll() {
    const WorkStatus s = status_.load();
    if (s == WorkStatus::kCompleted || s == WorkStatus::kFailed || !recorded.load(std::memory_order_acquire)) return s;
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaErrorNotReady) return s;
    if (e == cudaSuccess) {
      long long zero = 0;
      complete_ns_.compare_exchange_strong(zero, monotonic_ns());
      status_.store(WorkStatus::kCompleted);
      return WorkStatus::kCompleted;
    }
    cudaGetLastError();  // clears a non-sticky error; a sticky one stays, and the job ends anyway
    device_error.store(true);
    fail(str("CUDA error while collective ", desc, " was in flight: ", cudaGetErrorString(e)));
    return WorkStatus::kFailed;
  }
  void fail(const std::string& msg) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (status_.load() == WorkStatus::kCompleted || status_.load() == WorkStatus::kFailed) return;
      error_ = msg;
      status_.store(WorkStatus::kFailed);
    }
    long long zero = 0;
    complete_ns_.compare_exchange_strong(zero, monotonic_ns());
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

  std::string desc;  // "all_reduce #17 (step 42, 1.0 MiB f32)"
  CollectiveFingerprint fp;
  long long submit_ns = 0, deadline_ns = 0;
  double timeout_s = 0;
  NcclCommunicator* comm = nullptr;
  cudaEvent_t event = nullptr;
  std::atomic<bool> recorded{false};  // event recorded on the comm stream (false inside an open group)
  std::atomic<bool> device_error{false};
  std::thread::id issuer;

 private:
  std::mutex mutex_;
  std::string error_;
  std::atomic<WorkStatus> status_{WorkStatus::kPending};
  std::atomic<long long> complete_ns_{0};
};

void NcclWork::wait(double timeout) {
  if (!recorded.load() && status_.load() == WorkStatus::kPending && std::this_thread::get_id() == issuer)
    throw Error(ErrorKind::kInternal, str("wait() on collective ", desc, " inside an open NCCL group"), comm->where(),
                "call group_end() (or leave the NcclGroup scope) before waiting");
  const bool explicit_timeout = timeout > 0;
  const double t = explicit_timeout ? timeout : timeout_s;
  // Without an explicit timeout the watchdog ends the job at the deadline; this wait only outlasts it.
  const double limit = explicit_timeout ? t : t + 30.0;
  const long long until = monotonic_ns() + (long long)(limit * 1e9);
  for (int polls = 0;; ++polls) {
    const WorkStatus s = poll();
    if (s == WorkStatus::kCompleted) return;
    if (s == WorkStatus::kFailed) throw Error(ErrorKind::kRuntime, error(), comm->where());
    if (monotonic_ns() > until) break;
    if (polls < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 2048 ? 20 : 500));
  }
  WorkStatus expected = WorkStatus::kPending;
  status_.compare_exchange_strong(expected, WorkStatus::kTimedOut);
  if (is_completed()) return;
  throw Error(ErrorKind::kRuntime,
              str("collective ", desc, " timed out after ", seconds(t), " s on ", comm->where(), "; ", kNoPeerQuery),
              str("rank ", comm->rank()),
              "a rank is behind (slow, stuck, or skipped a collective) or dead; rerun with "
              "parallel.check_collectives to have the MPI control path name a rank that skipped or reordered one. "
              "The collective is still in flight: keep its buffers alive");
}

// ---- construction --------------------------------------------------------------------------------
NcclCommunicator::NcclCommunicator(const CommOptions& opts, Setup setup)
    : opts_(opts),
      rank_(setup.rank),
      size_(setup.size),
      local_rank_(setup.local_rank),
      local_size_(setup.local_size),
      node_(setup.node),
      num_nodes_(setup.num_nodes),
      bootstrap_(std::move(setup.bootstrap)) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    n = 0;
  }
  if (n == 0)
    throw Error(ErrorKind::kConfig, str("the nccl backend needs a CUDA device, but rank ", rank_, " sees none"),
                "nccl communicator", "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use the mpi backend");
  device_ = setup.device >= 0 ? setup.device : local_rank_ % n;
  if (device_ >= n)
    throw Error(ErrorKind::kConfig, str("rank ", rank_, " was given cuda:", device_, " but sees ", n, " device(s)"),
                "nccl communicator", "check CUDA_VISIBLE_DEVICES");
  // The constructing thread keeps this device as its current one: the caller allocates on it.
  TT_CUDA_CHECK(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  TT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  device_name_ = prop.name;
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device_) != cudaSuccess) cudaGetLastError();

  const bool split = setup.split_parent != nullptr;
  if (rank_ == 0 && !split) {
    log_info("nccl: NCCL ", nccl_version_string(), " | ", size_, " rank(s) on ", num_nodes_, " node(s) | timeout ",
             seconds(opts_.timeout_s), " s");
    std::vector<std::string> vars;
    for (char** e = environ; e && *e; ++e)
      if (std::strncmp(*e, "NCCL_", 5) == 0) vars.emplace_back(*e);
    std::sort(vars.begin(), vars.end());
    std::string joined;
    for (const std::string& v : vars) joined += (joined.empty() ? "" : " ") + v;
    log_info("nccl: environment (rank 0): ", vars.empty() ? std::string("no NCCL_* variables set") : joined);
  }
  if (!split)
    log_info("nccl: rank ", rank_, " (node ", node_, ", local rank ", local_rank_, ") -> cuda:", device_, " (",
             device_name_, ", PCI ", bus, ")");
  if (local_size_ > n)
    log_warn("nccl: ", local_size_, " ranks on this node but ", n,
             " visible device(s): unless each rank sees its own "
             "GPU through CUDA_VISIBLE_DEVICES, ranks share a GPU, which NCCL rejects");
  if (opts_.check_collectives && !bootstrap_ && size_ > 1)
    log_warn("nccl: check_collectives needs a bootstrap communicator; not checking");

  try {
    int lo = 0, hi = 0;
    TT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    TT_CUDA_CHECK(cudaStreamCreateWithPriority(&comm_stream_, cudaStreamNonBlocking, hi));
    TT_CUDA_CHECK(cudaEventCreateWithFlags(&ready_event_, cudaEventDisableTiming));
    TT_CUDA_CHECK(cudaMalloc(&barrier_buf_, sizeof(int32_t)));
    TT_CUDA_CHECK(cudaMemset(barrier_buf_, 0, sizeof(int32_t)));

    // The watchdog guards the join too: ncclCommInitRank blocks until every rank arrived.
    init_deadline_ns_.store(monotonic_ns() + (long long)(opts_.timeout_s * 1e9));
    watchdog_ = std::thread([this] { watchdog_loop(); });
    ncclUniqueId id;
    std::memcpy(&id, setup.unique_id.data(), sizeof(id));
    ncclComm_t c = nullptr;
    const ncclResult_t r = split ? ncclCommSplit(setup.split_parent, setup.split_color, setup.split_key, &c, nullptr)
                                 : ncclCommInitRank(&c, size_, id, rank_);
    init_deadline_ns_.store(0);
    TT_NCCL_CHECK(r);
    if (split && !bootstrap_) {  // in-process ranks: the split communicator knows its layout
      TT_NCCL_CHECK(ncclCommUserRank(c, &rank_));
      TT_NCCL_CHECK(ncclCommCount(c, &size_));
      local_rank_ = rank_;
      local_size_ = size_;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    comm_ = c;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    init_deadline_ns_.store(0);
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (barrier_buf_) cudaFree(barrier_buf_);
    if (ready_event_) cudaEventDestroy(ready_event_);
    if (comm_stream_) cudaStreamDestroy(comm_stream_);
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  try {
    shutdown();
  } catch (const std::exception& e) {
    log_error("nccl: shutdown failed: ", e.what());
  }
}

void NcclCommunicator::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (group_depth_ > 0) {
    log_warn("nccl: communicator shut down inside an open group; closing it");
    try {
      while (group_depth_ > 0) group_end();
    } catch (const std::exception& e) {
      log_error("nccl: closing the open group failed: ", e.what());
    }
  }
  std::vector<std::shared_ptr<NcclWork>> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.assign(in_flight_.begin(), in_flight_.end());
  }
  for (auto& w : pending) {  // the watchdog still ends the job if one never completes
    try {
      if (w->recorded.load()) w->wait(0);
    } catch (const std::exception&) {
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    in_flight_.clear();
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  DeviceGuard guard(device_);
  if (comm_) {
    ncclResult_t async_err = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async_err);
    if (async_err == ncclSuccess && poisoned_.empty()) {
      ncclCommFinalize(comm_);  // blocking communicator: returns once outstanding operations finished
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
    comm_ = nullptr;
  }
  if (barrier_buf_) cudaFree(barrier_buf_);
  if (ready_event_) cudaEventDestroy(ready_event_);
  if (comm_stream_) cudaStreamDestroy(comm_stream_);
  barrier_buf_ = nullptr;
  ready_event_ = nullptr;
  comm_stream_ = nullptr;
  bootstrap_.reset();
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  check_usable();
  if (color < 0)
    throw Error(ErrorKind::kInternal, str("split color ", color, " is negative"), "nccl communicator split",
                "this is a bug in the component splitting the communicator");
  TT_ASSERT(group_depth_ == 0, "split() inside an open NCCL group");
  Setup s;
  s.device = device_;
  s.split_parent = comm_;
  s.split_color = color;
  s.split_key = key;
  if (bootstrap_) {
    s.bootstrap = bootstrap_->split(color, key);
    s.rank = s.bootstrap->rank();
    s.size = s.bootstrap->size();
    s.local_rank = s.bootstrap->local_rank();
    s.local_size = s.bootstrap->local_size();
    s.node = s.bootstrap->node();
    s.num_nodes = s.bootstrap->num_nodes();
  } else {
    s.rank = rank_;  // replaced by the split communicator's own rank and size once it exists
    s.size = size_;
  }
  DeviceGuard guard(device_);
  auto child = std::make_unique<NcclCommunicator>(opts_, std::move(s));
  child->set_compute_stream(compute_stream_);
  return child;
}

std::string NcclCommunicator::where() const { return str("rank ", rank_, " (cuda:", device_, ")"); }

void NcclCommunicator::set_compute_stream(cudaStream_t stream) { compute_stream_ = stream; }

// ---- issuing -------------------------------------------------------------------------------------
std::shared_ptr<NcclWork> NcclCommunicator::make_work(CollectiveKind kind, int64_t count, DType dtype,
                                                      int32_t op_or_root, int64_t bytes) {
  check_usable();
  auto w = std::make_shared<NcclWork>();
  w->comm = this;
  w->fp = CollectiveFingerprint{kind, count, dtype, seq_ + 1, op_or_root};
  const int64_t s = step();
  std::string detail = s >= 0 ? str("step ", s) : "";
  if (kind != CollectiveKind::kBarrier)
    detail += str(detail.empty() ? "" : ", ", format_size(double(bytes)), " ", dtype_name(dtype));
  w->desc = str(collective_name(kind), " #", w->fp.seq, detail.empty() ? "" : " (" + detail + ")");
  w->timeout_s = opts_.timeout_s;
  w->issuer = std::this_thread::get_id();
  ++seq_;
  return w;
}

void NcclCommunicator::check_usable() {
  TT_ASSERT(!shut_down_, "collective issued on an NCCL communicator that was shut down");
  std::lock_guard<std::mutex> lock(mutex_);
  if (!poisoned_.empty())
    throw Error(ErrorKind::kRuntime, "the NCCL communicator failed earlier: " + poisoned_, where(),
                "the first error above is the cause");
}

void NcclCommunicator::check_fingerprint(const NcclWork& w) {
  if (!opts_.check_collectives || !bootstrap_ || size_ == 1) return;
  // Blocking exchange over the bootstrap (MPI) communicator; its own watchdog names a rank that
  // never arrives. 5 int64 words per rank, moved as 10 u32.
  const int64_t words[5] = {int64_t(w.fp.kind), w.fp.count, int64_t(w.fp.dtype), w.fp.seq, w.fp.op_or_root};
  std::vector<int64_t> all(size_t(5) * size_);
  bootstrap_->all_gather(words, all.data(), 10, DType::kU32)->wait();
  std::vector<CollectiveFingerprint> by_rank(size_);
  for (int r = 0; r < size_; ++r) {
    const int64_t* f = &all[size_t(r) * 5];
    by_rank[r] = CollectiveFingerprint{CollectiveKind(f[0]), f[1], DType(f[2]), f[3], int32_t(f[4])};
  }
  const std::string mismatch = describe_fingerprint_mismatch(by_rank);
  if (!mismatch.empty())
    throw Error(ErrorKind::kRuntime, "mismatched collectives: " + mismatch, where(),
                "every rank must issue the same collectives in the same order with the same sizes");
}

void NcclCommunicator::begin(NcclWork& w, const std::shared_ptr<NcclWork>& sp) {
  check_fingerprint(w);
  TT_CUDA_CHECK(cudaEventCreateWithFlags(&w.event, cudaEventDisableTiming));
  // Everything queued on the compute stream so far happens before this collective.
  TT_CUDA_CHECK(cudaEventRecord(ready_event_, compute_stream_));
  TT_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, ready_event_, 0));
  w.submit_ns = monotonic_ns();
  w.deadline_ns = w.submit_ns + (long long)(opts_.timeout_s * 1e9);
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_.push_back(sp);  // registered before NCCL is called: a call that blocks is guarded too
}

std::shared_ptr<Work> NcclCommunicator::finish(const std::shared_ptr<NcclWork>& w) {
  if (group_depth_ > 0) {
    group_works_.push_back(w);
    return w;
  }
  TT_CUDA_CHECK(cudaEventRecord(w->event, comm_stream_));
  w->recorded.store(true, std::memory_order_release);
  return w;
}

// Runs the NCCL call(s) of one collective between begin() and finish(); a failure poisons the
// communicator (NCCL state after a failed call is unknown) and fails the Work.
std::shared_ptr<Work> NcclCommunicator::run_collective(const std::shared_ptr<NcclWork>& w,
                                                       const std::function<void()>& launch) {
  try {
    begin(*w, w);
    launch();
    return finish(w);
  } catch (const Error& e) {
    poison(w, e.what());
    throw;
  }
}

bool NcclCommunicator::is_host_pointer(const void* p, const char* what, CollectiveKind kind) const {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return true;  // unregistered host memory on old drivers
  }
  if (a.type == cudaMemoryTypeManaged) return false;
  if (a.type == cudaMemoryTypeDevice) {
    if (a.device != device_)
      throw Error(
          ErrorKind::kInternal,
          str(collective_name(kind), ": ", what, " lives on cuda:", a.device, " but ", where(), " uses cuda:", device_),
          "nccl communicator", "allocate communication buffers on the communicator's device()");
    return false;
  }
  return true;  // cudaMemoryTypeHost (pinned) or cudaMemoryTypeUnregistered (pageable)
}

#define TT_NCCL_REQUIRE_DEVICE(ptr, kind)                                                                     \
  do {                                                                                                        \
    if (is_host_pointer(ptr, #ptr, kind))                                                                     \
      throw Error(ErrorKind::kInternal, str(collective_name(kind), ": ", #ptr, " is host memory"),            \
                  "nccl communicator",                                                                        \
                  "the nccl backend needs device buffers (only all_reduce and broadcast stage host memory)"); \
  } while (0)

std::shared_ptr<NcclWork> NcclCommunicator::make_block_work(CollectiveKind kind, const void* send, const void* recv,
                                                            int64_t count, DType dtype) {
  check_count(kind, count);
  if (count > 0) {
    TT_NCCL_REQUIRE_DEVICE(send, kind);
    TT_NCCL_REQUIRE_DEVICE(recv, kind);
  }
  return make_work(kind, count, dtype, 0, count * int64_t(dtype_size(dtype)) * size_);
}

std::shared_ptr<Work> NcclCommunicator::all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op) {
  check_count(CollectiveKind::kAllReduce, count);
  check_reduction(CollectiveKind::kAllReduce, dtype, op);
  DeviceGuard guard(device_);
  const size_t bytes = size_t(count) * dtype_size(dtype);
  const bool host = count > 0 && is_host_pointer(buf, "buf", CollectiveKind::kAllReduce);
  if (host && group_depth_ > 0)
    throw Error(ErrorKind::kInternal, "all_reduce of host memory inside an NCCL group", where(),
                "issue host-buffer collectives outside groups");
  auto w = make_work(CollectiveKind::kAllReduce, count, dtype, int32_t(op), int64_t(bytes));
  return run_collective(w, [&] {
    if (count == 0) return;
    if (!host) {
      TT_NCCL_CHECK(ncclAllReduce(buf, buf, size_t(count), reduce_type(dtype), nccl_op(op), comm_, comm_stream_));
      return;
    }
    // Host memory: stage through stream-ordered device memory. The copy back to pageable memory
    // returns only once it is done, so the issuing call blocks (still under the watchdog).
    void* d = nullptr;
    TT_CUDA_CHECK(cudaMallocAsync(&d, bytes, comm_stream_));
    TT_CUDA_CHECK(cudaMemcpyAsync(d, buf, bytes, cudaMemcpyHostToDevice, comm_stream_));
    TT_NCCL_CHECK(ncclAllReduce(d, d, size_t(count), reduce_type(dtype), nccl_op(op), comm_, comm_stream_));
    TT_CUDA_CHECK(cudaMemcpyAsync(buf, d, bytes, cudaMemcpyDeviceToHost, comm_stream_));
    TT_CUDA_CHECK(cudaFreeAsync(d, comm_stream_));
  });
}

std::shared_ptr<Work> NcclCommunicator::reduce_scatter(const void* send, void* recv, int64_t recv_count, DType dtype,
                                                       ReduceOp op) {
  check_count(CollectiveKind::kReduceScatter, recv_count);
  check_reduction(CollectiveKind::kReduceScatter, dtype, op);
  DeviceGuard guard(device_);
  if (recv_count > 0) {
    TT_NCCL_REQUIRE_DEVICE(send, CollectiveKind::kReduceScatter);
    TT_NCCL_REQUIRE_DEVICE(recv, CollectiveKind::kReduceScatter);
  }
  auto w = make_work(CollectiveKind::kReduceScatter, recv_count, dtype, int32_t(op),
                     recv_count * size_ * int64_t(dtype_size(dtype)));
  return run_collective(w, [&] {
    if (recv_count == 0) return;
    TT_NCCL_CHECK(
        ncclReduceScatter(send, recv, size_t(recv_count), reduce_type(dtype), nccl_op(op), comm_, comm_stream_));
  });
}

std::shared_ptr<Work> NcclCommunicator::all_gather(const void* send, void* recv, int64_t send_count, DType dtype) {
  DeviceGuard guard(device_);
  auto w = make_block_work(CollectiveKind::kAllGather, send, recv, send_count, dtype);
  const size_t block = size_t(send_count) * dtype_size(dtype);
  return run_collective(w, [&] {
    if (send_count == 0) return;
    // Raw bytes; in place when send is this rank's block of recv (NCCL's in-place convention too).
    TT_NCCL_CHECK(ncclAllGather(send, recv, block, ncclUint8, comm_, comm_stream_));
  });
}

std::shared_ptr<Work> NcclCommunicator::broadcast(void* buf, int64_t count, DType dtype, int root) {
  check_count(CollectiveKind::kBroadcast, count);
  check_root(root, size_);
  DeviceGuard guard(device_);
  const size_t bytes = size_t(count) * dtype_size(dtype);
  const bool host = count > 0 && is_host_pointer(buf, "buf", CollectiveKind::kBroadcast);
  if (host && group_depth_ > 0)
    throw Error(ErrorKind::kInternal, "broadcast of host memory inside an NCCL group", where(),
                "issue host-buffer collectives outside groups");
  auto w = make_work(CollectiveKind::kBroadcast, count, dtype, root, int64_t(bytes));
  return run_collective(w, [&] {
    if (count == 0) return;
    if (!host) {
      TT_NCCL_CHECK(ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, comm_stream_));
      return;
    }
    void* d = nullptr;
    TT_CUDA_CHECK(cudaMallocAsync(&d, bytes, comm_stream_));
    if (rank_ == root) TT_CUDA_CHECK(cudaMemcpyAsync(d, buf, bytes, cudaMemcpyHostToDevice, comm_stream_));
    TT_NCCL_CHECK(ncclBroadcast(d, d, bytes, ncclUint8, root, comm_, comm_stream_));
    TT_CUDA_CHECK(cudaMemcpyAsync(buf, d, bytes, cudaMemcpyDeviceToHost, comm_stream_));
    TT_CUDA_CHECK(cudaFreeAsync(d, comm_stream_));
  });
}

std::shared_ptr<Work> NcclCommunicator::barrier() {
  DeviceGuard guard(device_);
  auto w = make_work(CollectiveKind::kBarrier, 0, DType::kF32, 0, 0);
  return run_collective(
      w, [&] { TT_NCCL_CHECK(ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclInt32, ncclSum, comm_, comm_stream_)); });
}

std::shared_ptr<Work> NcclCommunicator::reduce_scatter_v(const void* send, void* recv,
                                                         const std::vector<int64_t>& counts, DType dtype, ReduceOp op) {
  const int64_t total = check_counts(CollectiveKind::kReduceScatter, counts, size_);
  check_reduction(CollectiveKind::kReduceScatter, dtype, op);
  DeviceGuard guard(device_);
  if (total > 0) TT_NCCL_REQUIRE_DEVICE(send, CollectiveKind::kReduceScatter);
  if (counts[rank_] > 0) TT_NCCL_REQUIRE_DEVICE(recv, CollectiveKind::kReduceScatter);
  const size_t esize = dtype_size(dtype);
  auto w = make_work(CollectiveKind::kReduceScatter, total, dtype, int32_t(op), total * int64_t(esize));
  return run_collective(w, [&] {
    // One ncclReduce per rank r (root r gets block r), grouped into one launch. recvbuff is read
    // only on the root; the others pass a valid pointer that NCCL does not touch.
    group_start();
    int64_t displ = 0;
    for (int r = 0; r < size_; ++r) {
      const char* block = static_cast<const char*>(send) + size_t(displ) * esize;
      void* out = r == rank_ ? recv : (recv ? recv : const_cast<char*>(block));
      if (counts[r] > 0)
        TT_NCCL_CHECK(
            ncclReduce(block, out, size_t(counts[r]), reduce_type(dtype), nccl_op(op), r, comm_, comm_stream_));
      displ += counts[r];
    }
    group_end();
  });
}

std::shared_ptr<Work> NcclCommunicator::all_gather_v(const void* send, void* recv, const std::vector<int64_t>& counts,
                                                     DType dtype) {
  const int64_t total = check_counts(CollectiveKind::kAllGather, counts, size_);
  DeviceGuard guard(device_);
  if (total > 0) TT_NCCL_REQUIRE_DEVICE(recv, CollectiveKind::kAllGather);
  if (counts[rank_] > 0) TT_NCCL_REQUIRE_DEVICE(send, CollectiveKind::kAllGather);
  const size_t esize = dtype_size(dtype);
  auto w = make_work(CollectiveKind::kAllGather, total, dtype, 0, total * int64_t(esize));
  return run_collective(w, [&] {
    // One ncclBroadcast per rank r (root r sends its block into everyone's recv), grouped. The
    // root's send may be its own block of recv (in place). sendbuff is read only on the root.
    group_start();
    int64_t displ = 0;
    for (int r = 0; r < size_; ++r) {
      char* block = static_cast<char*>(recv) + size_t(displ) * esize;
      const void* in = r == rank_ ? send : block;
      if (counts[r] > 0)
        TT_NCCL_CHECK(ncclBroadcast(in, block, size_t(counts[r]) * esize, ncclUint8, r, comm_, comm_stream_));
      displ += counts[r];
    }
    group_end();
  });
}

#ifdef TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE
std::shared_ptr<Work> NcclCommunicator::all_to_all(const void* send, void* recv, int64_t count_per_rank, DType dtype) {
  DeviceGuard guard(device_);
  auto w = make_block_work(CollectiveKind::kAllToAll, send, recv, count_per_rank, dtype);
  const size_t block = size_t(count_per_rank) * dtype_size(dtype);
  return run_collective(w, [&] {
    if (count_per_rank == 0) return;
    group_start();
    for (int r = 0; r < size_; ++r) {
      TT_NCCL_CHECK(
          ncclSend(static_cast<const char*>(send) + size_t(r) * block, block, ncclUint8, r, comm_, comm_stream_));
      TT_NCCL_CHECK(ncclRecv(static_cast<char*>(recv) + size_t(r) * block, block, ncclUint8, r, comm_, comm_stream_));
    }
    group_end();
  });
}
#endif

void NcclCommunicator::poison(const std::shared_ptr<NcclWork>& w, const std::string& msg) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (poisoned_.empty()) poisoned_ = msg;
  w->fail(str("collective ", w->desc, " failed: ", msg));
  in_flight_.erase(std::remove(in_flight_.begin(), in_flight_.end(), w), in_flight_.end());
  group_works_.erase(std::remove(group_works_.begin(), group_works_.end(), w), group_works_.end());
}

// ---- groups and stream dependencies --------------------------------------------------------------
void NcclCommunicator::group_start() {
  DeviceGuard guard(device_);
  TT_NCCL_CHECK(ncclGroupStart());
  ++group_depth_;
}

void NcclCommunicator::group_end() {
  TT_ASSERT(group_depth_ > 0, "group_end() without group_start()");
  DeviceGuard guard(device_);
  --group_depth_;
  std::vector<std::shared_ptr<NcclWork>> works;
  if (group_depth_ == 0) works.swap(group_works_);
  try {
    TT_NCCL_CHECK(ncclGroupEnd());  // the outermost one launches the group's operations
    for (auto& w : works) {
      TT_CUDA_CHECK(cudaEventRecord(w->event, comm_stream_));
      w->recorded.store(true, std::memory_order_release);
    }
  } catch (const Error& e) {
    for (auto& w : works) poison(w, e.what());
    throw;
  }
}

void NcclCommunicator::stream_wait(Work& work, cudaStream_t stream) {
  auto* w = dynamic_cast<NcclWork*>(&work);
  if (!w || w->comm != this)
    throw Error(ErrorKind::kInternal, "stream_wait() on a Work of another communicator", where());
  if (!w->recorded.load())
    throw Error(ErrorKind::kInternal, str("stream_wait() on collective ", w->desc, " inside an open NCCL group"),
                where(), "call group_end() first");
  DeviceGuard guard(device_);
  TT_CUDA_CHECK(cudaStreamWaitEvent(stream, w->event, 0));
}

// ---- failure -------------------------------------------------------------------------------------
void NcclCommunicator::abort_nccl_bounded() {
  ncclComm* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    c = comm_;
  }
  if (!c) return;
  // ncclCommAbort stops NCCL's kernels and proxy threads; give it a bounded time, then end anyway.
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread t([c, done] {
    ncclCommAbort(c);
    done->store(true);
  });
  for (int i = 0; i < 1000 && !done->load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (done->load())
    t.join();
  else
    t.detach();
}

void NcclCommunicator::abort(int exit_code, const std::string& reason) {
  if (dying_.exchange(true))
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // another thread is ending the job
  std::fflush(stdout);
  abort_nccl_bounded();
  if (bootstrap_) bootstrap_->abort(exit_code, reason);  // MPI: one line, then MPI_Abort of the whole job
  std::fprintf(stderr, "[tt rank %d] error: %s\n", rank_, reason.c_str());
  std::fflush(stderr);
  std::_Exit(exit_code);
}

void NcclCommunicator::die(const std::string& line) { NcclCommunicator::abort(1, line); }

void NcclCommunicator::watchdog_loop() {
  if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();
  const auto period = std::chrono::milliseconds(opts_.timeout_s < 2 ? 2 : 10);
  int64_t published_seq = -1;
  for (;;) {
    std::shared_ptr<NcclWork> front, broken;
    ncclComm* comm = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait_for(lock, period, [&] { return stop_; });
      // One stream: collectives complete in issue order, so retiring stops at the first pending one.
      while (!in_flight_.empty()) {
        const WorkStatus s = in_flight_.front()->poll();
        if (s != WorkStatus::kCompleted && s != WorkStatus::kFailed) break;
        if (s == WorkStatus::kFailed && in_flight_.front()->device_error.load()) broken = in_flight_.front();
        in_flight_.pop_front();
      }
      if (stop_ && in_flight_.empty() && init_deadline_ns_.load() == 0) break;
      if (!in_flight_.empty()) front = in_flight_.front();
      comm = comm_;
    }
    if (broken) die(str(broken->error(), " on ", where()));
    if (comm) {
      ncclResult_t async_err = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &async_err) == ncclSuccess && async_err != ncclSuccess &&
          async_err != ncclInProgress) {
        const char* last = ncclGetLastError(comm);
        die(str("NCCL error ", front ? str("during collective ", front->desc) : std::string("between collectives"),
                " on ", where(), ": ", ncclGetErrorString(async_err), last && *last ? str(" (", last, ")") : "",
                async_err == ncclRemoteError ? "; a peer process died or the network failed" : ""));
      }
    }
    const long long now = monotonic_ns();
    const long long init_deadline = init_deadline_ns_.load();
    if (init_deadline && now > init_deadline)
      die(str("ncclCommInitRank did not complete within ", seconds(opts_.timeout_s), " s on ", where(),
              ": a rank did not join (not started, crashed, or cannot reach rank 0's bootstrap address; "
              "NCCL_SOCKET_IFNAME selects the interface)"));
    if (front && now > front->deadline_ns)
      die(str(
          "collective ", front->desc, " timed out after ", seconds(front->timeout_s), " s on ", where(),
          front->recorded.load() ? "" : " (not launched yet: blocked inside an NCCL call, or its group is still open)",
          "; ", kNoPeerQuery));
    const int64_t seq = front ? front->fp.seq : 0;
    if (seq != published_seq) {
      published_seq = seq;
      if (front)
        set_pending_collective(rank_, front->desc, front->submit_ns, this);
      else
        clear_pending_collective(this);
    }
  }
  clear_pending_collective(this);
}

// ---- factories -----------------------------------------------------------------------------------
NcclUniqueIdBytes new_nccl_unique_id() {
  ncclUniqueId id;
  TT_NCCL_CHECK(ncclGetUniqueId(&id));
  NcclUniqueIdBytes bytes{};
  std::memcpy(bytes.data(), &id, sizeof(id));
  return bytes;
}

std::unique_ptr<NcclCommunicator> create_nccl_communicator(const CommOptions& opts,
                                                           std::unique_ptr<Communicator> bootstrap) {
  TT_ASSERT(bootstrap != nullptr, "create_nccl_communicator needs a bootstrap communicator");
  NcclCommunicator::Setup s;
  s.rank = bootstrap->rank();
  s.size = bootstrap->size();
  s.local_rank = bootstrap->local_rank();
  s.local_size = bootstrap->local_size();
  s.node = bootstrap->node();
  s.num_nodes = bootstrap->num_nodes();
  // Agree first that every rank has a GPU, so that a rank without one fails every rank at once
  // (instead of the others waiting in ncclCommInitRank for the timeout).
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    n = 0;
  }
  std::vector<int32_t> counts(size_t(s.size), 0);
  counts[size_t(s.rank)] = n;
  bootstrap->all_gather(&counts[size_t(s.rank)], counts.data(), 1, DType::kI32)->wait();
  std::string without;
  for (int r = 0; r < s.size; ++r)
    if (counts[size_t(r)] == 0) without += str(without.empty() ? "" : ", ", r);
  if (!without.empty())
    throw Error(ErrorKind::kConfig,
                str("the nccl backend needs a CUDA device on every rank; rank(s) ", without, " see none"),
                str("rank ", s.rank), "check nvidia-smi and CUDA_VISIBLE_DEVICES on those ranks' nodes");
  if (s.rank == 0) s.unique_id = new_nccl_unique_id();
  bootstrap->broadcast(s.unique_id.data(), int64_t(s.unique_id.size()), DType::kI8, 0)->wait();
  s.bootstrap = std::move(bootstrap);
  return std::make_unique<NcclCommunicator>(opts, std::move(s));
}

std::unique_ptr<NcclCommunicator> create_nccl_communicator_in_process(const CommOptions& opts, int rank, int size,
                                                                      const NcclUniqueIdBytes& unique_id, int device) {
  NcclCommunicator::Setup s;
  s.rank = rank;
  s.size = size;
  s.local_rank = rank;
  s.local_size = size;
  s.device = device;
  s.unique_id = unique_id;
  return std::make_unique<NcclCommunicator>(opts, std::move(s));
}

std::string nccl_version_string() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X,Y,Z) is X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before.
  if (v >= 10000) return str(v / 10000, ".", (v % 10000) / 100, ".", v % 100);
  return str(v / 1000, ".", (v % 1000) / 100, ".", v % 100);
}

}  // namespace tt::parallel
