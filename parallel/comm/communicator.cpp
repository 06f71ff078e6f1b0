// Backend-independent parts of the communication layer: names, fingerprints, the step counter,
// the stop vote, the pending-collective note for signal handlers, and create_communicator().
//
// Design: backend choice is a pure function of the launch environment (launch/rank_discovery) and
// CommOptions, so a single-process run never initialises MPI even in an MPI-enabled build.
#include "parallel/comm/communicator.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "parallel/comm/local/local_communicator.h"
#include "parallel/comm/pending_note.h"
#include "parallel/comm/rank_discovery.h"
#if TOPOTRAIN_HAVE_MPI
#include "parallel/comm/mpi/mpi_communicator.h"
#endif
#if TOPOTRAIN_HAVE_NCCL
#include "parallel/comm/nccl/nccl_communicator.h"
#endif

namespace tt::parallel {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

const char* work_status_name(WorkStatus s) {
  switch (s) {
    case WorkStatus::kPending:
      return "pending";
    case WorkStatus::kCompleted:
      return "completed";
    case WorkStatus::kFailed:
      return "failed";
    case WorkStatus::kTimedOut:
      return "timed out";
  }
  return "?";
}

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kBarrier:
      return "barrier";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
  }
  return "?";
}

std::string format_size(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

bool reducible_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16 || dtype == DType::kI32 ||
         dtype == DType::kU32;
}

std::string CollectiveFingerprint::str() const {
  std::string s = collective_name(kind);
  switch (kind) {
    case CollectiveKind::kBarrier:
      break;
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter:
      s += tt::str("(", count, " ", dtype_name(dtype), ", ", reduce_op_name(ReduceOp(op_or_root)), ")");
      break;
    case CollectiveKind::kBroadcast:
      s += tt::str("(", count, " ", dtype_name(dtype), ", root ", op_or_root, ")");
      break;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllToAll:
      s += tt::str("(", count, " ", dtype_name(dtype), ")");
      break;
  }
  return s + tt::str(" #", seq);
}

std::string describe_fingerprint_mismatch(const std::vector<CollectiveFingerprint>& by_rank) {
  for (size_t r = 1; r < by_rank.size(); ++r)
    if (!(by_rank[r] == by_rank[0]))
      return tt::str("rank 0 called ", by_rank[0].str(), " but rank ", r, " called ", by_rank[r].str());
  return "";
}

Work::~Work() = default;

namespace {
class CompletedWork : public Work {
 public:
  bool is_completed() override { return true; }
  WorkStatus status() override { return WorkStatus::kCompleted; }
  void wait(double) override {}
  double elapsed_s() override { return 0; }
};
}  // namespace

std::shared_ptr<Work> completed_work() {
  static const auto kDone = std::make_shared<CompletedWork>();
  return kDone;
}

struct Communicator::State {
  std::atomic<int64_t> step{-1};
};

Communicator::Communicator() : state_(std::make_unique<State>()) {}
Communicator::~Communicator() = default;

void Communicator::set_step(int64_t step) { state_->step.store(step); }
int64_t Communicator::step() const { return state_->step.load(); }

std::shared_ptr<Work> Communicator::all_to_all(const void*, void*, int64_t, DType) {
  throw Error(ErrorKind::kRuntime, str("all_to_all is not supported by the ", backend(), " backend"),
              str("communicator ", backend()),
              "use the mpi or local backend, or gradient compression \"none\" (the compressed all-reduce needs it)");
}

std::unique_ptr<Communicator> Communicator::split(int, int) {
  throw Error(ErrorKind::kRuntime, str("split is not supported by the ", backend(), " backend"),
              str("communicator ", backend()),
              "use the mpi, nccl or local backend, or parallel.collective \"flat\" (hierarchical collectives need it)");
}

bool Communicator::any_rank_requests_stop(bool mine) {
  int32_t flag = mine ? 1 : 0;
  all_reduce(&flag, 1, DType::kI32, ReduceOp::kMax)->wait();
  return flag != 0;
}

std::unique_ptr<Communicator> create_communicator(const CommOptions& opts) {
  const RankInfo env = discover_rank_from_env();
  std::string backend = opts.backend;
  if (backend == "auto") backend = env.world_size > 1 ? "mpi" : "local";
  if (backend == "local") {
    if (env.world_size > 1)
      throw Error(ErrorKind::kConfig,
                  str("the local backend runs a single rank, but the environment (", env.source, ") says world size ",
                      env.world_size),
                  "comm backend", "use backend \"auto\" or \"mpi\" under a multi-process launcher");
    return std::make_unique<LocalCommunicator>(opts);
  }
  if (backend == "mpi") {
#if TOPOTRAIN_HAVE_MPI
    return create_mpi_communicator(opts, env);
#else
    throw Error(ErrorKind::kConfig,
                env.world_size > 1
                    ? str("launched as rank ", env.rank, " of ", env.world_size, " (", env.source,
                          ") but this topotrain was built without MPI")
                    : std::string("the mpi backend was requested but this topotrain was built without MPI"),
                "comm backend", "rebuild with -DTOPOTRAIN_MPI=ON (see `topotrain --version`), or run one process");
#endif
  }
  if (backend == "nccl") {
    // GPU buffers; never chosen by "auto" (the trainer's gradients live in host memory). NCCL needs a
    // bootstrap to share rank 0's unique id: MPI for several processes, the local backend for one.
#if TOPOTRAIN_HAVE_NCCL
    CommOptions boot = opts;
    boot.check_collectives = false;  // the NCCL backend fingerprints its own collectives over it
    boot.inject_delay_s = 0;
    std::unique_ptr<Communicator> bootstrap;
    if (env.world_size > 1) {
#if TOPOTRAIN_HAVE_MPI
      boot.backend = "mpi";
      bootstrap = create_mpi_communicator(boot, env);
#else
      throw Error(ErrorKind::kConfig,
                  str("launched as rank ", env.rank, " of ", env.world_size, " (", env.source,
                      ") with the nccl backend, which bootstraps over MPI, but this topotrain was built without MPI"),
                  "comm backend", "rebuild with -DTOPOTRAIN_MPI=ON (see `topotrain --version`), or run one process");
#endif
    } else {
      boot.backend = "local";
      bootstrap = std::make_unique<LocalCommunicator>(boot);
    }
    return create_nccl_communicator(opts, std::move(bootstrap));
#else
    throw Error(ErrorKind::kConfig, "the nccl backend was requested but this topotrain was built without NCCL",
                "comm backend",
                "rebuild with CUDA and NCCL found (see `topotrain --version`), or use backend auto, mpi or local");
#endif
  }
  throw Error(ErrorKind::kConfig, "unknown communicator backend '" + opts.backend + "'", "comm backend",
              "use one of: auto, mpi, local, nccl");
}

// ---- pending-collective note ------------------------------------------------------------------
namespace {
struct NoteSlot {
  char line[192];
  long long start_ns;
};
NoteSlot g_slots[2];
std::atomic<int> g_active{-1};  // -1: nothing pending, else index of the published slot
int g_rank = 0;
std::mutex g_writer_mutex;      // writers only (communication threads); the reader is lock-free
const void* g_owner = nullptr;  // communicator that published the current note

size_t append(char* buf, size_t pos, size_t cap, const char* s) {
  while (*s && pos + 1 < cap) buf[pos++] = *s++;
  return pos;
}
size_t append_uint(char* buf, size_t pos, size_t cap, unsigned long long v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = char('0' + v % 10);
    v /= 10;
  } while (v);
  while (n && pos + 1 < cap) buf[pos++] = tmp[--n];
  return pos;
}
}  // namespace

long long monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void set_pending_collective(int rank, const std::string& description, long long start_ns, const void* owner) {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  g_owner = owner;
  const int cur = g_active.load(std::memory_order_acquire);
  const int idx = cur == 0 ? 1 : 0;
  std::snprintf(g_slots[idx].line, sizeof(g_slots[idx].line), "%s", description.c_str());
  g_slots[idx].start_ns = start_ns;
  g_rank = rank;
  g_active.store(idx, std::memory_order_release);
}

void clear_pending_collective(const void* owner) {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  if (owner && owner != g_owner) return;  // another communicator's note stays
  g_active.store(-1, std::memory_order_release);
}

void write_pending_collective_note(int fd) {
  const int idx = g_active.load(std::memory_order_acquire);
  if (idx < 0) return;
  char buf[320];
  size_t p = 0;
  p = append(buf, p, sizeof(buf), "[tt rank ");
  p = append_uint(buf, p, sizeof(buf), (unsigned long long)g_rank);
  p = append(buf, p, sizeof(buf), "] note: terminated while in collective ");
  p = append(buf, p, sizeof(buf), g_slots[idx].line);
  const long long ms = (monotonic_ns() - g_slots[idx].start_ns) / 1000000;
  p = append(buf, p, sizeof(buf), ", pending for ");
  p = append_uint(buf, p, sizeof(buf), (unsigned long long)(ms > 0 ? ms / 1000 : 0));
  p = append(buf, p, sizeof(buf), ".");
  p = append_uint(buf, p, sizeof(buf), (unsigned long long)(ms > 0 ? (ms % 1000) / 100 : 0));
  p = append(buf, p, sizeof(buf), " s\n");
  ssize_t ignored = ::write(fd, buf, p);
  (void)ignored;
}

}  // namespace tt::parallel
