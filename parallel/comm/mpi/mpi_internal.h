// Internal to the MPI backend: the MpiCommunicator class and its Work, shared by
// mpi_communicator.cpp (MPI lifetime, construction, split, submission) and mpi_progress.cpp (the
// progress thread, control channel and watchdog). Design in mpi_communicator.h.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parallel/comm/backend_overrides.h"
#include "parallel/comm/collective_args.h"
#include "parallel/comm/layout_accessors.h"
#include "parallel/comm/mpi/mpi_types.h"
#include "parallel/comm/pending_note.h"
#include "parallel/comm/rank_discovery.h"

namespace tt::parallel::mpi_detail {

using namespace mpi_types;

constexpr int kQueryTag = 101;
constexpr int kReplyTag = 102;
constexpr int kFingerprintWords = 5;

class MpiCommunicator;

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
  std::vector<MPI_Request> reqs;  // the posted data requests; complete when all are
  MPI_Request fp_req = MPI_REQUEST_NULL;
  MPI_Request* request() {  // the one request of a single-call collective
    reqs.assign(1, MPI_REQUEST_NULL);
    return &reqs[0];
  }
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

  TT_COMMUNICATOR_LAYOUT_ACCESSORS("mpi")
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

}  // namespace tt::parallel::mpi_detail
