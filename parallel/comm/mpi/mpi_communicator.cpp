// MPI backend: the progress thread, the watchdog, peer-position queries and the fingerprint check
// (design in mpi_communicator.h).
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

namespace {

using namespace mpi_types;

constexpr int kQueryTag = 101;
constexpr int kReplyTag = 102;
constexpr int kFingerprintWords = 5;

// ---- process-wide MPI lifetime -------------------------------------------------------------------
class MpiCommunicator;
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

// ---- one collective ------------------------------------------------------------------------------
enum class Stage { kQueued, kFingerprint, kPosted, kDone };

class MpiWork : public Work {
 public:
  bool is_completed() override { return status_.load() == WorkStatus::kCompleted; }
  WorkStatus status() override { return status_.load(); }
  void wait(double timeout_s) override;
  double elapsed_s() override {
    const long long end = complete_ns_.load();
    return double((end ? end : monotonic_ns()) - submit_ns) * 1e-9;
  }

  void complete() { finish(WorkStatus::kCompleted, ""); }
  void fail(const std::string& msg) { finish(WorkStatus::kFailed, msg); }

  // Described for messages: "all_reduce #17 (step 42, 1.0 MiB f32)".
  std::string desc;
  CollectiveFingerprint fp;
  long long submit_ns = 0, deadline_ns = 0;
  long long release_ns = 0;  // with CommOptions::inject_delay_s: when the delayed result is released
  double timeout_s = 0;
  MpiCommunicator* comm = nullptr;

  // Arguments.
  ReduceOp op = ReduceOp::kSum;
  DType dtype = DType::kF32;
  void* buf = nullptr;  // all_reduce / broadcast in place; recv for the others
  const void* send = nullptr;
  int64_t count = 0;  // all_reduce/broadcast: elements; reduce_scatter/all_gather/all_to_all: per-rank block
  std::vector<int> counts, displs;  // _v variants (and computed for the even ones when staging)
  bool vector_variant = false;
  // Makes this a _v collective over per-rank blocks of `blocks` elements (displacements = prefix sums).
  void set_vector_blocks(const std::vector<int64_t>& blocks) {
    vector_variant = true;
    for (int64_t c : blocks) {
      displs.push_back(counts.empty() ? 0 : displs.back() + counts.back());
      counts.push_back(int(c));
    }
  }

  // Progress-thread state.
  Stage stage = Stage::kQueued;
  MPI_Request req = MPI_REQUEST_NULL, fp_req = MPI_REQUEST_NULL;
  int64_t fp_send[kFingerprintWords] = {0};
  std::vector<int64_t> fp_recv;
  std::vector<float> stage_send, stage_recv;  // fp32 staging for bf16/f16 reductions

 private:
  void finish(WorkStatus s, const std::string& msg) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (done_) return;
      done_ = true;
      error_ = msg;
      complete_ns_.store(monotonic_ns());
      status_.store(s);
    }
    cv_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string error_;
  std::atomic<WorkStatus> status_{WorkStatus::kPending};
  std::atomic<long long> complete_ns_{0};
};

// A rank's reply to "which collective have you reached?".
struct PeerPosition {
  bool replied = false;
  int64_t issued = 0, completed = 0;
};

// A consumer of one round of peer queries (a Work::wait that timed out).
struct DiagnosisRequest {
  int64_t seq = 0;
  bool done = false;
  std::string result;
};

// ---- the communicator ----------------------------------------------------------------------------
class MpiCommunicator : public Communicator {
 public:
  // The world communicator (MPI_COMM_WORLD).
  MpiCommunicator(const CommOptions& opts, const RankInfo& env);
  // A communicator over `base` (from split(); adopted: freed at shutdown), whose member r is world
  // rank world_ranks[r], on the node the parent numbered parent_nodes[r].
  MpiCommunicator(const CommOptions& opts, MPI_Comm base, const std::vector<int>& parent_nodes,
                  std::vector<int> world_ranks, std::string label);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  int node() const override { return node_; }
  int num_nodes() const override { return num_nodes_; }
  std::string backend() const override { return "mpi"; }
  int world_rank() const { return world_rank_; }

  TT_COMMUNICATOR_BACKEND_OVERRIDES
  TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE
  TT_COMMUNICATOR_SPLIT_OVERRIDE

  // Blocks up to the query window for one round of peer queries; "rank(s) 1 (rank 1 last issued #16)".
  std::string diagnose(int64_t seq);
  // Stops the threads once nothing is in flight (the watchdog still guards that wait). Idempotent.
  void shutdown();

 private:
  std::shared_ptr<MpiWork> make_work(CollectiveKind kind, int64_t count, DType dtype, int32_t op_or_root,
                                     int64_t bytes);
  std::shared_ptr<Work> submit(std::shared_ptr<MpiWork> w);
  // Duplicates the data, fingerprint and control communicators from base_comm_, opens the control
  // connections and starts the threads (collective over base_comm_).
  void start();
  int world_of(int r) const { return world_of_.empty() ? r : world_of_[size_t(r)]; }

  void progress_loop();
  bool advance_posting(MpiWork& w);  // true once w's data collective is posted
  void post_data(MpiWork& w);
  void finish_data(MpiWork& w);
  void service_control();
  void start_round();
  void finish_round();
  std::string describe_missing(int64_t seq) const;
  void check_deadline(const std::deque<std::shared_ptr<MpiWork>>& active);
  [[noreturn]] void die(const std::string& line);
  void watchdog_loop();

  CommOptions opts_;
  long long delayed_link_free_ns_ = 0;  // comm thread only (inject_delay_s)
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, node_ = 0, num_nodes_ = 1;
  int world_rank_ = 0;         // in messages: ranks are named by their world rank
  std::vector<int> world_of_;  // world rank of each member (empty for the world communicator)
  std::string label_;          // "" for the world, " [split color C]" for a split communicator
  // base_comm_: what split() splits (a duplicate of MPI_COMM_WORLD, or the split's own communicator).
  MPI_Comm base_comm_ = MPI_COMM_NULL, data_comm_ = MPI_COMM_NULL, fp_comm_ = MPI_COMM_NULL, ctl_comm_ = MPI_COMM_NULL;
  double query_window_s_ = 1.0;

  // Submission (application thread -> progress thread).
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<MpiWork>> queued_;
  std::vector<DiagnosisRequest*> diag_requests_;
  std::condition_variable diag_cv_;
  bool stop_ = false;
  bool stopped_ = false;
  std::string poisoned_;               // non-empty: every new Work fails with this
  std::atomic<int64_t> issued_{0};     // last sequence number handed out
  std::atomic<int64_t> completed_{0};  // highest sequence number completed

  // Progress-thread-only state: control channel.
  std::array<int64_t, 3> query_in_{};  // {round, 0, 0}
  MPI_Request query_req_ = MPI_REQUEST_NULL;
  std::vector<std::array<int64_t, 3>> reply_in_;
  std::vector<MPI_Request> reply_req_;
  std::list<std::pair<std::array<int64_t, 3>, MPI_Request>> sends_;  // replies/queries in flight
  int64_t round_ = 0;
  bool round_active_ = false, round_for_abort_ = false;
  long long round_deadline_ns_ = 0;
  std::vector<PeerPosition> peers_;
  std::shared_ptr<MpiWork> abort_work_;  // the work whose deadline passed, while its round runs

  // Watchdog.
  std::atomic<long long> oldest_deadline_ns_{0};
  std::mutex oldest_mutex_;
  std::string oldest_desc_;
  double oldest_timeout_s_ = 0;
  std::thread progress_, watchdog_;
};

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

// ---- progress thread -----------------------------------------------------------------------------
void MpiCommunicator::post_data(MpiWork& w) {
  const CollectiveKind kind = w.fp.kind;
  const int n = size_;
  const size_t esize = dtype_size(w.dtype);
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      const int count = int(w.count);
      if (needs_staging(w.dtype)) {
        w.stage_send.resize(size_t(count));
        to_f32(w.buf, w.stage_send.data(), count, w.dtype);
        TT_MPI_CHECK(
            MPI_Iallreduce(MPI_IN_PLACE, w.stage_send.data(), count, MPI_FLOAT, mpi_op(w.op), data_comm_, &w.req));
      } else {
        TT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, w.buf, count, wire_type(w.dtype), mpi_op(w.op), data_comm_, &w.req));
      }
      break;
    }
    case CollectiveKind::kReduceScatter: {
      if (!w.vector_variant) {  // even blocks, expressed as the _v shape when staging
        if (!needs_staging(w.dtype)) {
          TT_MPI_CHECK(MPI_Ireduce_scatter_block(w.send, w.buf, int(w.count), wire_type(w.dtype), mpi_op(w.op),
                                                 data_comm_, &w.req));
          break;
        }
        w.counts.assign(n, int(w.count));
      }
      if (needs_staging(w.dtype)) {
        int64_t total = 0;
        for (int c : w.counts) total += c;
        w.stage_send.resize(size_t(total));
        w.stage_recv.resize(size_t(w.counts[rank_]));
        to_f32(w.send, w.stage_send.data(), total, w.dtype);
        TT_MPI_CHECK(MPI_Ireduce_scatter(w.stage_send.data(), w.stage_recv.data(), w.counts.data(), MPI_FLOAT,
                                         mpi_op(w.op), data_comm_, &w.req));
      } else {
        TT_MPI_CHECK(
            MPI_Ireduce_scatter(w.send, w.buf, w.counts.data(), wire_type(w.dtype), mpi_op(w.op), data_comm_, &w.req));
      }
      break;
    }
    case CollectiveKind::kAllGather: {
      const MPI_Datatype t = raw_type(w.dtype);
      if (!w.vector_variant) {
        const char* mine = static_cast<const char*>(w.buf) + size_t(rank_) * size_t(w.count) * esize;
        const void* send = w.send == mine ? MPI_IN_PLACE : w.send;
        TT_MPI_CHECK(MPI_Iallgather(send, int(w.count), t, w.buf, int(w.count), t, data_comm_, &w.req));
      } else {
        const char* mine = static_cast<const char*>(w.buf) + size_t(w.displs[rank_]) * esize;
        const void* send = w.send == mine ? MPI_IN_PLACE : w.send;
        TT_MPI_CHECK(
            MPI_Iallgatherv(send, w.counts[rank_], t, w.buf, w.counts.data(), w.displs.data(), t, data_comm_, &w.req));
      }
      break;
    }
    case CollectiveKind::kBroadcast:
      TT_MPI_CHECK(MPI_Ibcast(w.buf, int(w.count), raw_type(w.dtype), w.fp.op_or_root, data_comm_, &w.req));
      break;
    case CollectiveKind::kBarrier:
      TT_MPI_CHECK(MPI_Ibarrier(data_comm_, &w.req));
      break;
    case CollectiveKind::kAllToAll: {
      const MPI_Datatype t = raw_type(w.dtype);  // data movement: any dtype of 1, 2 or 4 bytes
      TT_MPI_CHECK(MPI_Ialltoall(w.send, int(w.count), t, w.buf, int(w.count), t, data_comm_, &w.req));
      break;
    }
  }
  w.stage = Stage::kPosted;
}

void MpiCommunicator::finish_data(MpiWork& w) {
  const bool reduction = w.fp.kind == CollectiveKind::kAllReduce || w.fp.kind == CollectiveKind::kReduceScatter;
  if (reduction) {
    const int64_t n =
        w.fp.kind == CollectiveKind::kAllReduce ? w.count : (w.vector_variant ? w.counts[rank_] : w.count);
    if (needs_staging(w.dtype)) {
      const float* src = w.fp.kind == CollectiveKind::kAllReduce ? w.stage_send.data() : w.stage_recv.data();
      from_f32(src, w.buf, n, w.dtype, w.op == ReduceOp::kAvg ? float(size_) : 1.0f);
    } else if (w.op == ReduceOp::kAvg) {
      divide_in_place(w.buf, n, w.dtype, size_);
    }
  }
  w.stage_send = {};
  w.stage_recv = {};
  w.stage = Stage::kDone;
}

bool MpiCommunicator::advance_posting(MpiWork& w) {
  if (w.stage == Stage::kPosted || w.stage == Stage::kDone) return true;
  if (!opts_.check_collectives) {
    post_data(w);
    return true;
  }
  if (w.stage == Stage::kQueued) {
    const int64_t words[kFingerprintWords] = {int64_t(w.fp.kind), w.fp.count, int64_t(w.fp.dtype), w.fp.seq,
                                              w.fp.op_or_root};
    std::copy(words, words + kFingerprintWords, w.fp_send);
    w.fp_recv.assign(size_t(kFingerprintWords) * size_, 0);
    TT_MPI_CHECK(MPI_Iallgather(w.fp_send, kFingerprintWords, MPI_INT64_T, w.fp_recv.data(), kFingerprintWords,
                                MPI_INT64_T, fp_comm_, &w.fp_req));
    w.stage = Stage::kFingerprint;
  }
  int flag = 0;
  TT_MPI_CHECK(MPI_Test(&w.fp_req, &flag, MPI_STATUS_IGNORE));
  if (!flag) return false;
  std::vector<CollectiveFingerprint> all(size_);
  for (int r = 0; r < size_; ++r) {
    const int64_t* f = &w.fp_recv[size_t(r) * kFingerprintWords];
    all[r] = CollectiveFingerprint{CollectiveKind(f[0]), f[1], DType(f[2]), f[3], int32_t(f[4])};
  }
  const std::string mismatch = describe_fingerprint_mismatch(all);
  if (!mismatch.empty())
    throw Error(ErrorKind::kRuntime, "mismatched collectives: " + mismatch, "",
                "every rank must issue the same collectives in the same order with the same sizes");
  post_data(w);
  return true;
}

void MpiCommunicator::start_round() {
  ++round_;
  round_active_ = true;
  round_deadline_ns_ = monotonic_ns() + (long long)(query_window_s_ * 1e9);
  for (int p = 0; p < size_; ++p) {
    peers_[p] = PeerPosition{};
    if (p == rank_) continue;
    // Errors here (a dead peer on some transports) leave that peer silent, which is the diagnosis.
    if (reply_req_[p] == MPI_REQUEST_NULL &&
        MPI_Irecv(reply_in_[p].data(), 3, MPI_INT64_T, p, kReplyTag, ctl_comm_, &reply_req_[p]) != MPI_SUCCESS)
      reply_req_[p] = MPI_REQUEST_NULL;
    sends_.emplace_back(std::array<int64_t, 3>{round_, 0, 0}, MPI_REQUEST_NULL);
    if (MPI_Isend(sends_.back().first.data(), 3, MPI_INT64_T, p, kQueryTag, ctl_comm_, &sends_.back().second) !=
        MPI_SUCCESS)
      sends_.pop_back();
  }
  peers_[rank_] = PeerPosition{true, issued_.load(), completed_.load()};
}

std::string MpiCommunicator::describe_missing(int64_t seq) const {
  std::string ranks, detail;
  for (int p = 0; p < size_; ++p) {
    const PeerPosition& pp = peers_[p];
    std::string why;
    const int who = world_of(p);
    if (!pp.replied)
      why = str("rank ", who, " not responding: exited, crashed or blocked");
    else if (pp.issued < seq)
      why = pp.issued == 0 ? str("rank ", who, " issued no collective yet")
                           : str("rank ", who, " last issued #", pp.issued);
    if (why.empty()) continue;
    ranks += str(ranks.empty() ? "" : ", ", who);
    detail += str(detail.empty() ? "" : "; ", why);
  }
  if (ranks.empty())
    return str("no rank: every rank issued #", seq,
               " (mismatched arguments or a stalled transport; rerun with check_collectives)");
  return str("rank(s) ", ranks, " (", detail, ")");
}

void MpiCommunicator::finish_round() {
  round_active_ = false;
  std::vector<DiagnosisRequest*> served;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    served.swap(diag_requests_);
    for (DiagnosisRequest* d : served) {
      d->result = describe_missing(d->seq);
      d->done = true;
    }
  }
  diag_cv_.notify_all();
  if (round_for_abort_ && abort_work_) {
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f", abort_work_->timeout_s);
    die(str("collective ", abort_work_->desc, " timed out after ", secs, " s waiting for ",
            describe_missing(abort_work_->fp.seq)));
  }
}

void MpiCommunicator::service_control() {
  int flag = 0;
  MPI_Status st;
  // Queries from peers: answer with our position.
  if (query_req_ == MPI_REQUEST_NULL)
    TT_MPI_CHECK(MPI_Irecv(query_in_.data(), 3, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, ctl_comm_, &query_req_));
  for (;;) {
    TT_MPI_CHECK(MPI_Test(&query_req_, &flag, &st));
    if (!flag) break;
    sends_.emplace_back(std::array<int64_t, 3>{query_in_[0], issued_.load(), completed_.load()}, MPI_REQUEST_NULL);
    TT_MPI_CHECK(MPI_Isend(sends_.back().first.data(), 3, MPI_INT64_T, st.MPI_SOURCE, kReplyTag, ctl_comm_,
                           &sends_.back().second));
    TT_MPI_CHECK(MPI_Irecv(query_in_.data(), 3, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, ctl_comm_, &query_req_));
  }
  for (auto it = sends_.begin(); it != sends_.end();) {
    flag = 0;
    if (MPI_Test(&it->second, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) flag = 1;  // a dead peer: drop it
    it = flag ? sends_.erase(it) : std::next(it);
  }
  // Replies to our queries.
  for (int p = 0; p < size_; ++p) {
    if (reply_req_[p] == MPI_REQUEST_NULL) continue;
    flag = 0;
    if (MPI_Test(&reply_req_[p], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      reply_req_[p] = MPI_REQUEST_NULL;
      continue;
    }
    if (!flag) continue;
    if (round_active_ && reply_in_[p][0] == round_) peers_[p] = PeerPosition{true, reply_in_[p][1], reply_in_[p][2]};
    if (MPI_Irecv(reply_in_[p].data(), 3, MPI_INT64_T, p, kReplyTag, ctl_comm_, &reply_req_[p]) != MPI_SUCCESS)
      reply_req_[p] = MPI_REQUEST_NULL;
  }
  // Rounds: start one for waiting consumers, finish when all answered or the window closed.
  bool wanted = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wanted = !diag_requests_.empty();
  }
  if (!round_active_ && (wanted || round_for_abort_)) start_round();
  if (round_active_) {
    bool all = true;
    for (const PeerPosition& pp : peers_) all = all && pp.replied;
    if (all || monotonic_ns() > round_deadline_ns_) finish_round();
  }
}

void MpiCommunicator::check_deadline(const std::deque<std::shared_ptr<MpiWork>>& active) {
  if (active.empty() || round_for_abort_) return;
  const auto& oldest = active.front();
  if (monotonic_ns() < oldest->deadline_ns) return;
  round_for_abort_ = true;  // the next service_control() starts (or reuses) a round, then dies
  abort_work_ = oldest;
}

void MpiCommunicator::progress_loop() {
  std::deque<std::shared_ptr<MpiWork>> active;  // submission order
  int64_t published_seq = -1;
  int idle_polls = 0;
  for (;;) {
    bool progressed = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (active.empty() && queued_.empty() && diag_requests_.empty() && !round_active_) {
        if (stop_) break;
        cv_.wait_for(lock, std::chrono::milliseconds(5));
      }
      while (!queued_.empty()) {
        active.push_back(std::move(queued_.front()));
        queued_.pop_front();
        progressed = true;
      }
    }
    try {
      for (auto& w : active) {
        if (w->stage == Stage::kPosted) continue;
        if (!advance_posting(*w)) break;
        progressed = true;
      }
      for (auto it = active.begin(); it != active.end();) {
        MpiWork& w = **it;
        int flag = 0;
        if (w.stage == Stage::kPosted) TT_MPI_CHECK(MPI_Test(&w.req, &flag, MPI_STATUS_IGNORE));
        if (flag && opts_.inject_delay_s > 0) {
          w.stage = Stage::kDone;  // the request is freed; hold the result back for the simulated link
          w.release_ns = std::max(monotonic_ns(), delayed_link_free_ns_) + (long long)(opts_.inject_delay_s * 1e9);
          delayed_link_free_ns_ = w.release_ns;
        }
        if (w.stage == Stage::kDone && w.release_ns) flag = monotonic_ns() >= w.release_ns;
        if (!flag) {
          ++it;
          continue;
        }
        finish_data(w);
        int64_t c = completed_.load();
        while (c < w.fp.seq && !completed_.compare_exchange_weak(c, w.fp.seq)) {
        }
        w.complete();
        it = active.erase(it);
        progressed = true;
      }
      check_deadline(active);
      service_control();
    } catch (const Error& e) {
      // A failed MPI call or a fingerprint mismatch: this communicator cannot continue.
      std::lock_guard<std::mutex> lock(mutex_);
      poisoned_ = e.what();
      for (auto& w : active) w->fail(str("collective ", w->desc, " failed: ", poisoned_));
      for (auto& w : queued_) w->fail(str("collective ", w->desc, " failed: ", poisoned_));
      active.clear();
      queued_.clear();
    }
    // Publish the oldest pending collective for the watchdog and for signal handlers.
    const int64_t front_seq = active.empty() ? 0 : active.front()->fp.seq;
    if (front_seq != published_seq) {
      published_seq = front_seq;
      if (active.empty()) {
        oldest_deadline_ns_.store(0);
        clear_pending_collective(this);
      } else {
        const MpiWork& w = *active.front();
        {
          std::lock_guard<std::mutex> lock(oldest_mutex_);
          oldest_desc_ = w.desc;
          oldest_timeout_s_ = w.timeout_s;
        }
        oldest_deadline_ns_.store(w.deadline_ns);
        set_pending_collective(world_rank_, w.desc, w.submit_ns, this);
      }
    }
    if (progressed) {
      idle_polls = 0;
    } else if (!active.empty() || round_active_) {
      // Poll MPI hard while a collective runs, backing off so that oversubscribed ranks still compute.
      if (++idle_polls < 256)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(idle_polls < 4096 ? 20 : 200));
    }
  }
  // Shutdown: withdraw the control-channel receives; sends in flight are released to MPI.
  for (MPI_Request* r : {&query_req_}) {
    if (*r != MPI_REQUEST_NULL) {
      MPI_Cancel(r);
      MPI_Wait(r, MPI_STATUS_IGNORE);
    }
  }
  for (MPI_Request& r : reply_req_)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  for (auto& s : sends_)
    if (s.second != MPI_REQUEST_NULL) MPI_Request_free(&s.second);
  clear_pending_collective(this);
}

std::string MpiCommunicator::diagnose(int64_t seq) {
  DiagnosisRequest req;
  req.seq = seq;
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopped_) return "unknown rank(s) (communicator shut down)";
  diag_requests_.push_back(&req);
  cv_.notify_all();
  const bool ok =
      diag_cv_.wait_for(lock, std::chrono::duration<double>(query_window_s_ + 2.0), [&] { return req.done; });
  if (!ok) {
    diag_requests_.erase(std::remove(diag_requests_.begin(), diag_requests_.end(), &req), diag_requests_.end());
    return "unknown rank(s) (the communication thread did not answer)";
  }
  return req.result;
}

// ---- watchdog ------------------------------------------------------------------------------------
void MpiCommunicator::watchdog_loop() {
  // Backstop only: the progress thread names the missing ranks and aborts at the deadline. If it has
  // not done so well after the deadline, it is stuck inside an MPI call; abort from here.
  const double grace_s = query_window_s_ + 5.0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop_ && oldest_deadline_ns_.load() == 0; }))
        return;
    }
    const long long deadline = oldest_deadline_ns_.load();
    if (deadline == 0 || monotonic_ns() < deadline + (long long)(grace_s * 1e9)) continue;
    std::string desc;
    double t = 0;
    {
      std::lock_guard<std::mutex> lock(oldest_mutex_);
      desc = oldest_desc_;
      t = oldest_timeout_s_;
    }
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f", t);
    die(str("collective ", desc, " timed out after ", secs,
            " s waiting for unknown rank(s) (the communication thread is blocked inside MPI)"));
  }
}

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

std::unique_ptr<Communicator> create_mpi_communicator(const CommOptions& opts, const RankInfo& env) {
  return std::make_unique<MpiCommunicator>(opts, env);
}

int mpi_thread_level() { return g_thread_level.load(); }

}  // namespace tt::parallel
