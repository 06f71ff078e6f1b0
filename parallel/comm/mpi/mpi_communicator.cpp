// MPI backend: MPI's process-wide lifetime, construction and split() of communicators, and the
// submission of collectives (design in mpi_communicator.h). The progress thread, the control
// channel (peer-position queries), the fingerprint check and the watchdog are in mpi_progress.cpp;
// the class itself is in mpi_internal.h.
//
// Threads: the application thread only builds MpiWork objects and queues them; the progress thread
// owns every MPI request and every MPI call between construction and shutdown; the watchdog thread
// only reads atomics and, as a last resort, calls MPI_Abort.
#include "parallel/comm/mpi/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "parallel/comm/backend_overrides.h"
#include "parallel/comm/collective_args.h"
#include "parallel/comm/mpi/mpi_check.h"
#include "parallel/comm/mpi/mpi_internal.h"
#include "parallel/comm/mpi/mpi_types.h"
#include "parallel/comm/pending_note.h"

namespace tt::parallel {

void mpi_check_failed(const char* call, int code, const char* file, int line) {
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(code, msg, &len);
  throw Error(ErrorKind::kRuntime, str(call, " failed: ", msg), str(file, ":", line),
              "an MPI failure usually means a peer process died or the network failed; see the other ranks' output");
}

namespace mpi_detail {

namespace {

// ---- process-wide MPI lifetime -------------------------------------------------------------------
std::mutex g_runtime_mutex;
std::set<MpiCommunicator*> g_live;
std::atomic<int> g_thread_level{-1};
bool g_we_initialized = false;

void finalize_at_exit();

void ensure_mpi_initialized() {
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    throw Error(ErrorKind::kRuntime, "MPI was already finalized in this process", "mpi communicator",
                "create the communicator once per process and keep it for the whole run");
  int provided = 0;
  if (!initialized) {
    // Open MPI's libnbc picks a binomial-tree MPI_Iallreduce for large buffers on few ranks, 3-10x
    // slower than its blocking counterpart at 1-8 MiB here; gradient buckets want the ring. A value
    // the user set (environment or mpirun --mca) wins.
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
    // With one TCP connection per pair of ranks, the two directions of a simultaneous exchange
    // (all_gather_v of ZeRO's parameter shards, MPI_Reduce_scatter) mostly take turns: a 16 MiB
    // gather between two hosts at 1 Gbit/s took 139 ms instead of the link's 70 ms. Two connections
    // per pair run both directions at line rate (bench comm through tc-shaped network namespaces:
    // all_gather_v 139 -> 72 ms; all_reduce and broadcast unchanged).
    setenv("OMPI_MCA_btl_tcp_links", "2", /*overwrite=*/0);
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      throw Error(ErrorKind::kRuntime, "MPI_Init_thread failed", "mpi communicator",
                  "check that the process was started by mpirun/srun of the MPI topotrain was built with");
    g_we_initialized = true;
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  g_thread_level = provided;
  if (provided < MPI_THREAD_SERIALIZED)
    throw Error(ErrorKind::kRuntime, str("MPI provides thread level ", provided, ", below MPI_THREAD_SERIALIZED"),
                "mpi communicator", "use an MPI library built with thread support (Open MPI 4 is)");
}

}  // namespace

void MpiWork::wait(double timeout) {
  const bool explicit_timeout = timeout > 0;
  const double t = explicit_timeout ? timeout : timeout_s;
  // Without an explicit timeout the progress thread aborts the job at the deadline; this wait only
  // outlasts it as a backstop.
  const double limit = explicit_timeout ? t : t + 30.0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(limit), [&] { return done_; })) {
      if (status_.load() == WorkStatus::kFailed)
        throw Error(ErrorKind::kRuntime, error_, str("rank ", comm->world_rank()));
      return;
    }
  }
  const std::string who = comm->diagnose(fp.seq);
  WorkStatus expected = WorkStatus::kPending;
  status_.compare_exchange_strong(expected, WorkStatus::kTimedOut);
  if (is_completed()) return;  // finished while we asked around
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f", t);
  throw Error(ErrorKind::kRuntime, str("collective ", desc, " timed out after ", secs, " s waiting for ", who),
              str("rank ", comm->world_rank()),
              "the named ranks are behind (slow, stuck, or skipped a collective) or dead; the collective is still "
              "in flight, keep its buffers alive");
}

MpiCommunicator::MpiCommunicator(const CommOptions& opts, const RankInfo& env) : opts_(opts) {
  ensure_mpi_initialized();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  world_rank_ = rank_;
  if (env.world_size > 1 && env.world_size != size_)
    throw Error(ErrorKind::kConfig,
                str("the launcher (", env.source, ") says world size ", env.world_size, " but MPI_COMM_WORLD has ",
                    size_, " ranks"),
                str("rank ", rank_),
                "launch with the mpirun of the MPI topotrain was built with (torchrun-style launchers start "
                "independent processes that MPI cannot join)");
  TT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &base_comm_));
  TT_MPI_CHECK(MPI_Comm_set_errhandler(base_comm_, MPI_ERRORS_RETURN));
  if (opts_.ranks_per_node > 0) {
    // Pretended nodes of consecutive ranks (tests of hierarchical collectives on one machine).
    if (size_ % opts_.ranks_per_node != 0)
      throw Error(ErrorKind::kConfig,
                  str("parallel.ranks_per_node ", opts_.ranks_per_node, " does not divide the ", size_, " ranks"),
                  str("rank ", rank_), "use a divisor of the rank count, or 0 for the hosts' own layout");
    local_size_ = opts_.ranks_per_node;
    local_rank_ = rank_ % local_size_;
    node_ = rank_ / local_size_;
    num_nodes_ = size_ / local_size_;
  } else {
    // Nodes: ranks sharing memory; node ids ordered by each node's lowest world rank.
    MPI_Comm local = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
    TT_MPI_CHECK(MPI_Comm_split_type(base_comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    TT_MPI_CHECK(MPI_Comm_split(base_comm_, local_rank_ == 0 ? 0 : MPI_UNDEFINED, rank_, &leaders));
    int node_info[2] = {0, 1};
    if (leaders != MPI_COMM_NULL) {
      MPI_Comm_rank(leaders, &node_info[0]);
      MPI_Comm_size(leaders, &node_info[1]);
      MPI_Comm_free(&leaders);
    }
    TT_MPI_CHECK(MPI_Bcast(node_info, 2, MPI_INT, 0, local));
    MPI_Comm_free(&local);
    node_ = node_info[0];
    num_nodes_ = node_info[1];
  }
  start();
}

MpiCommunicator::MpiCommunicator(const CommOptions& opts, MPI_Comm base, const std::vector<int>& parent_nodes,
                                 std::vector<int> world_ranks, std::string label)
    : opts_(opts), world_of_(std::move(world_ranks)), label_(std::move(label)), base_comm_(base) {
  MPI_Comm_rank(base_comm_, &rank_);
  MPI_Comm_size(base_comm_, &size_);
  world_rank_ = world_of_[size_t(rank_)];
  // Nodes as the parent saw them, renumbered by each node's lowest member.
  std::vector<int> renumbered;  // parent node id of new node i
  local_rank_ = local_size_ = 0;
  for (int r = 0; r < size_; ++r) {
    const int pn = parent_nodes[size_t(r)];
    if (std::find(renumbered.begin(), renumbered.end(), pn) == renumbered.end()) renumbered.push_back(pn);
    if (pn != parent_nodes[size_t(rank_)]) continue;
    if (r < rank_) ++local_rank_;
    ++local_size_;
  }
  node_ = int(std::find(renumbered.begin(), renumbered.end(), parent_nodes[size_t(rank_)]) - renumbered.begin());
  num_nodes_ = int(renumbered.size());
  start();
}

void MpiCommunicator::start() {
  for (MPI_Comm* c : {&data_comm_, &fp_comm_, &ctl_comm_}) {
    TT_MPI_CHECK(MPI_Comm_dup(base_comm_, c));
    TT_MPI_CHECK(MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN));
  }
  // Open every pair's control-channel connection now (TCP connects lazily), so that a query sent
  // after a failure does not depend on a new connection.
  std::vector<int> warm(size_t(size_) * 2, rank_);
  TT_MPI_CHECK(MPI_Alltoall(warm.data(), 1, MPI_INT, warm.data() + size_, 1, MPI_INT, ctl_comm_));
  query_window_s_ = std::clamp(opts_.timeout_s * 0.25, 0.25, 2.0);
  peers_.assign(size_, PeerPosition{});
  reply_in_.assign(size_, {0, 0, 0});
  reply_req_.assign(size_, MPI_REQUEST_NULL);
  {
    std::lock_guard<std::mutex> lock(g_runtime_mutex);
    g_live.insert(this);
  }
  progress_ = std::thread([this] { progress_loop(); });
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  if (color < 0)
    throw Error(ErrorKind::kInternal, str("split color ", color, " is negative"), "mpi communicator split",
                "this is a bug in the component splitting the communicator");
  if (g_thread_level.load() != MPI_THREAD_MULTIPLE)
    throw Error(ErrorKind::kRuntime,
                "splitting the MPI communicator needs MPI_THREAD_MULTIPLE (each communicator runs its own "
                "progress thread), but MPI granted a lower thread level",
                str("rank ", world_rank_),
                "use an MPI library built with MPI_THREAD_MULTIPLE (Open MPI 4 is), or parallel.collective \"flat\"");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TT_ASSERT(!stop_, "split() on a communicator that is shutting down");
  }
  MPI_Comm sub = MPI_COMM_NULL;
  TT_MPI_CHECK(MPI_Comm_split(base_comm_, color, key, &sub));
  TT_MPI_CHECK(MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN));
  int sub_size = 0;
  MPI_Comm_size(sub, &sub_size);
  const int mine[2] = {node_, world_rank_};
  std::vector<int> all(size_t(sub_size) * 2, 0);
  TT_MPI_CHECK(MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, sub));
  std::vector<int> parent_nodes, world_ranks;
  for (int r = 0; r < sub_size; ++r) {
    parent_nodes.push_back(all[size_t(r) * 2]);
    world_ranks.push_back(all[size_t(r) * 2 + 1]);
  }
  return std::make_unique<MpiCommunicator>(opts_, sub, parent_nodes, std::move(world_ranks),
                                           str(label_, " [split color ", color, "]"));
}

MpiCommunicator::~MpiCommunicator() {
  shutdown();
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  g_live.erase(this);
}

void MpiCommunicator::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (progress_.joinable()) progress_.join();
  oldest_deadline_ns_.store(0);
  if (watchdog_.joinable()) watchdog_.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    for (MPI_Comm* c : {&data_comm_, &fp_comm_, &ctl_comm_, &base_comm_})
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

// ---- submission (application thread) -------------------------------------------------------------
std::shared_ptr<MpiWork> MpiCommunicator::make_work(CollectiveKind kind, int64_t count, DType dtype, int32_t op_or_root,
                                                    int64_t bytes) {
  auto w = std::make_shared<MpiWork>();
  w->comm = this;
  w->dtype = dtype;
  w->count = count;
  w->fp = CollectiveFingerprint{kind, count, dtype, issued_.load() + 1, op_or_root};
  const int64_t s = step();
  std::string detail = s >= 0 ? str("step ", s) : "";
  if (kind != CollectiveKind::kBarrier)
    detail += str(detail.empty() ? "" : ", ", format_size(double(bytes)), " ", dtype_name(dtype));
  w->desc = str(collective_name(kind), " #", w->fp.seq, label_, detail.empty() ? "" : " (" + detail + ")");
  w->timeout_s = opts_.timeout_s;
  return w;
}

std::shared_ptr<Work> MpiCommunicator::submit(std::shared_ptr<MpiWork> w) {
  w->submit_ns = monotonic_ns();
  w->deadline_ns = w->submit_ns + (long long)(opts_.timeout_s * 1e9);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TT_ASSERT(!stop_, "collective issued on a communicator that is shutting down");
    issued_.store(w->fp.seq);
    if (!poisoned_.empty()) {
      w->fail(poisoned_);
      w->stage = Stage::kDone;
      return w;
    }
    queued_.push_back(w);
  }
  cv_.notify_all();
  return w;
}

std::shared_ptr<Work> MpiCommunicator::all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op) {
  check_count(CollectiveKind::kAllReduce, count);
  check_reduction(CollectiveKind::kAllReduce, dtype, op);
  to_int(count, "all_reduce");
  auto w = make_work(CollectiveKind::kAllReduce, count, dtype, int32_t(op), count * int64_t(dtype_size(dtype)));
  w->op = op;
  w->buf = buf;
  return submit(w);
}

std::shared_ptr<Work> MpiCommunicator::reduce_scatter(const void* send, void* recv, int64_t recv_count, DType dtype,
                                                      ReduceOp op) {
  check_count(CollectiveKind::kReduceScatter, recv_count);
  check_reduction(CollectiveKind::kReduceScatter, dtype, op);
  to_int(recv_count, "reduce_scatter");
  auto w = make_work(CollectiveKind::kReduceScatter, recv_count, dtype, int32_t(op),
                     recv_count * size_ * int64_t(dtype_size(dtype)));
  w->op = op;
  w->send = send;
  w->buf = recv;
  return submit(w);
}

std::shared_ptr<Work> MpiCommunicator::all_gather(const void* send, void* recv, int64_t send_count, DType dtype) {
  check_count(CollectiveKind::kAllGather, send_count);
  to_int(send_count * size_, "all_gather");
  auto w = make_work(CollectiveKind::kAllGather, send_count, dtype, 0, send_count * size_ * int64_t(dtype_size(dtype)));
  w->send = send;
  w->buf = recv;
  return submit(w);
}

std::shared_ptr<Work> MpiCommunicator::broadcast(void* buf, int64_t count, DType dtype, int root) {
  check_count(CollectiveKind::kBroadcast, count);
  check_root(root, size_);
  to_int(count, "broadcast");
  auto w = make_work(CollectiveKind::kBroadcast, count, dtype, root, count * int64_t(dtype_size(dtype)));
  w->buf = buf;
  return submit(w);
}

std::shared_ptr<Work> MpiCommunicator::barrier() {
  return submit(make_work(CollectiveKind::kBarrier, 0, DType::kF32, 0, 0));
}

std::shared_ptr<Work> MpiCommunicator::reduce_scatter_v(const void* send, void* recv,
                                                        const std::vector<int64_t>& counts, DType dtype, ReduceOp op) {
  const int64_t total = check_counts(CollectiveKind::kReduceScatter, counts, size_);
  check_reduction(CollectiveKind::kReduceScatter, dtype, op);
  to_int(total, "reduce_scatter_v");
  auto w = make_work(CollectiveKind::kReduceScatter, total, dtype, int32_t(op), total * int64_t(dtype_size(dtype)));
  w->op = op;
  w->send = send;
  w->buf = recv;
  w->set_vector_blocks(counts);
  return submit(w);
}

std::shared_ptr<Work> MpiCommunicator::all_gather_v(const void* send, void* recv, const std::vector<int64_t>& counts,
                                                    DType dtype) {
  const int64_t total = check_counts(CollectiveKind::kAllGather, counts, size_);
  to_int(total, "all_gather_v");
  auto w = make_work(CollectiveKind::kAllGather, total, dtype, 0, total * int64_t(dtype_size(dtype)));
  w->send = send;
  w->buf = recv;
  w->set_vector_blocks(counts);
  return submit(w);
}

std::shared_ptr<Work> MpiCommunicator::all_to_all(const void* send, void* recv, int64_t count_per_rank, DType dtype) {
  check_count(CollectiveKind::kAllToAll, count_per_rank);
  to_int(count_per_rank * size_, "all_to_all");
  auto w = make_work(CollectiveKind::kAllToAll, count_per_rank, dtype, 0,
                     count_per_rank * size_ * int64_t(dtype_size(dtype)));
  w->send = send;
  w->buf = recv;
  return submit(w);
}

void MpiCommunicator::abort(int exit_code, const std::string& reason) {
  std::fflush(stdout);
  std::fprintf(stderr, "[tt rank %d] error: %s\n", world_rank_, reason.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void MpiCommunicator::die(const std::string& line) { MpiCommunicator::abort(1, line); }

namespace {

void finalize_at_exit() {
  std::vector<MpiCommunicator*> live;
  {
    std::lock_guard<std::mutex> lock(g_runtime_mutex);
    live.assign(g_live.begin(), g_live.end());
  }
  for (MpiCommunicator* c : live) c->shutdown();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_we_initialized && !finalized) MPI_Finalize();
}

}  // namespace
}  // namespace mpi_detail

std::unique_ptr<Communicator> create_mpi_communicator(const CommOptions& opts, const RankInfo& env) {
  return std::make_unique<mpi_detail::MpiCommunicator>(opts, env);
}

int mpi_thread_level() { return mpi_detail::g_thread_level.load(); }

}  // namespace tt::parallel
