// The collective-communication interface every data-parallel component talks to (ddp::Reducer,
// ZeRO, the trainer), and the factory that picks a backend for this process.
//
// Design: every collective is asynchronous and returns a Work handle; backends run collectives on
// their own thread (MPI) or stream (NCCL) so communication overlaps compute. Failure is an error,
// never a hang: every Work has a deadline, and a backend that cannot finish a collective by then
// names the collective, its sequence number, the training step and the rank(s) that did not arrive.
//
// Contracts shared by all backends:
//  - Collectives are issued in the same order on every rank (a sequence number #1, #2, ... counts
//    them per communicator; `check_collectives` verifies the order at run time).
//  - Buffers are caller-owned host memory (CPU backends) and must stay valid and untouched until
//    wait() returns (or is_completed() is true). all_reduce and broadcast work in place.
//  - Issuing collectives is single-threaded: one thread calls the collective methods of a
//    communicator. Work handles may be queried and waited on from any thread.
//  - A Communicator must outlive the Work handles that are still waited on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace tt::parallel {

enum class ReduceOp { kSum, kAvg, kMax };  // kAvg: sum, then divide by size() (integers truncate)
enum class WorkStatus { kPending, kCompleted, kFailed, kTimedOut };

// New kinds go at the end: the MPI fingerprint exchange sends the enum's value.
enum class CollectiveKind { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kBarrier, kAllToAll };

const char* reduce_op_name(ReduceOp op);
const char* work_status_name(WorkStatus s);
const char* collective_name(CollectiveKind k);
// "1.0 MiB", "512 B": sizes in error messages and benchmark tables.
std::string format_size(double bytes);
// True for the dtypes reductions support: f32, bf16, f16 (accumulated in fp32), i32, u32.
bool reducible_dtype(DType dtype);

// What one rank called as its collective #seq; exchanged by `check_collectives` and printed on a
// mismatch. count is this rank's element count as passed (per-rank block for reduce_scatter /
// all_gather / all_to_all, the total of counts for the _v variants).
struct CollectiveFingerprint {
  CollectiveKind kind = CollectiveKind::kBarrier;
  int64_t count = 0;
  DType dtype = DType::kF32;
  int64_t seq = 0;
  int32_t op_or_root = 0;  // ReduceOp for reductions, root for broadcast, 0 otherwise

  bool operator==(const CollectiveFingerprint& o) const {
    return kind == o.kind && count == o.count && dtype == o.dtype && seq == o.seq && op_or_root == o.op_or_root;
  }
  // "all_reduce(1024 f32, sum) #5", "broadcast(16 i32, root 0) #3", "all_to_all(96 i8) #4", "barrier #2"
  std::string str() const;
};
// The first rank whose fingerprint differs from rank 0's, as
// "rank 0 called all_reduce(1024 f32, sum) #5 but rank 1 called all_gather(512 f32) #5";
// "" when all agree. Pure function, used by the MPI backend and unit-tested on data.
std::string describe_fingerprint_mismatch(const std::vector<CollectiveFingerprint>& by_rank);

// Handle of one asynchronous collective. Thread-safe to query and wait on.
class Work {
 public:
  virtual ~Work();
  virtual bool is_completed() = 0;  // true once the result is in the caller's buffers
  virtual WorkStatus status() = 0;
  // Blocks until done. Throws tt::Error(kRuntime) naming the collective, its sequence number, the
  // step and the rank(s) that did not arrive when timeout_s passes (timeout_s <= 0: the
  // communicator's default), or when the collective failed. After a timeout the collective is
  // still in flight: its buffers stay in use, and wait() may be called again.
  virtual void wait(double timeout_s = 0) = 0;
  // Seconds the collective was in flight: from issue to completion (to now while pending).
  virtual double elapsed_s() = 0;
};

// A Work that is already complete (shared; for a collective with nothing to wait for on this rank).
std::shared_ptr<Work> completed_work();

struct CommOptions {
  double timeout_s = 300;          // deadline of every collective; the watchdog aborts the job after it
  bool check_collectives = false;  // exchange (op, count, dtype, seq) before each collective
  std::string backend = "auto";    // auto | mpi | local
  // Test aid: each collective holds the (simulated) link for this long after the previous one
  // finished, as on a slow interconnect, so tests can measure how much communication backward hides.
  double inject_delay_s = 0;
  // Node layout: 0 = the launcher's (ranks sharing a host / shared-memory domain form a node); N > 0
  // = pretend that consecutive world ranks form nodes of N ranks (N must divide the world size), so
  // node(), local_rank(), the probe and hierarchical collectives can be exercised on one machine.
  int ranks_per_node = 0;
};

class Communicator {
 public:
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank among the processes on this node
  virtual int local_size() const = 0;
  virtual int node() const = 0;  // 0 .. num_nodes()-1, ordered by the lowest world rank on each node
  virtual int num_nodes() const = 0;
  virtual std::string backend() const = 0;  // "mpi", "local"

  // All collectives are asynchronous and operate in place or on caller buffers that must stay valid
  // until wait() returns; issued in the same order on every rank. Element counts are per call on
  // this rank and must agree across ranks (except the per-rank entries of the _v variants).
  virtual std::shared_ptr<Work> all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op) = 0;
  // send has recv_count*size() elements; rank r receives block r. send and recv must not overlap.
  virtual std::shared_ptr<Work> reduce_scatter(const void* send, void* recv, int64_t recv_count, DType dtype,
                                               ReduceOp op) = 0;
  // recv has send_count*size() elements, rank r's block at r*send_count. send may be that block of
  // recv (in-place all-gather); otherwise they must not overlap.
  virtual std::shared_ptr<Work> all_gather(const void* send, void* recv, int64_t send_count, DType dtype) = 0;
  virtual std::shared_ptr<Work> broadcast(void* buf, int64_t count, DType dtype, int root) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;
  // Uneven variants for ZeRO shards whose sizes differ by rank: counts[r] elements for rank r
  // (counts.size() == size()); send/recv hold sum(counts) elements, rank r's block at
  // sum(counts[0..r)).
  virtual std::shared_ptr<Work> reduce_scatter_v(const void* send, void* recv, const std::vector<int64_t>& counts,
                                                 DType dtype, ReduceOp op) = 0;
  virtual std::shared_ptr<Work> all_gather_v(const void* send, void* recv, const std::vector<int64_t>& counts,
                                             DType dtype) = 0;
  // Personalised exchange: send holds size() blocks of count_per_rank elements, block r going to
  // rank r; recv receives size() blocks, rank r's block for this rank at r*count_per_rank. Any
  // dtype (data movement only, no arithmetic); send and recv must not overlap. Not pure: a backend
  // without it inherits a default that throws tt::Error(kRuntime, "all_to_all is not supported by
  // the <backend> backend"). Implemented by local and mpi (TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE).
  virtual std::shared_ptr<Work> all_to_all(const void* send, void* recv, int64_t count_per_rank, DType dtype);

  // Collective over this communicator (blocking; every rank calls it, in the same order relative to
  // the other collectives): ranks passing the same color (>= 0) form a new communicator, ranked by
  // (key, rank here), as MPI_Comm_split / ncclCommSplit. It has this communicator's options and its
  // own sequence of collectives, issued independently of this one's; node(), local_rank() and
  // num_nodes() describe its members' nodes as this communicator sees them. It must be destroyed
  // before this communicator. Not pure: a backend without it inherits a default that throws
  // tt::Error(kRuntime); local, mpi and nccl implement it (TT_COMMUNICATOR_SPLIT_OVERRIDE). The mpi
  // backend needs MPI_THREAD_MULTIPLE (each communicator has its own progress thread).
  virtual std::unique_ptr<Communicator> split(int color, int key);

  // A cheap blocking collective (all-reduce MAX of a flag) for the trainer to call once per step so
  // that every rank stops at the same step when any rank got SIGINT/SIGTERM. Counts as one
  // all_reduce in the sequence.
  bool any_rank_requests_stop(bool mine);

  // Ends the whole job now (MPI_Abort for MPI) after logging `reason`; for launch/ when an error on
  // one rank would otherwise leave the others waiting for their timeout.
  [[noreturn]] virtual void abort(int exit_code, const std::string& reason) = 0;

  // The training step named in error messages ("step 42"); thread-safe.
  void set_step(int64_t step);
  int64_t step() const;

 protected:
  Communicator();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Creates the communicator for this process: MPI when launched under mpirun/srun/torchrun-style
// environment with world size > 1 (and built with MPI), else local. opts.backend forces one
// ("mpi" also works for a single process). Throws tt::Error(kConfig) when the environment asks for
// several ranks but the build has no MPI, or when MPI disagrees with the environment.
std::unique_ptr<Communicator> create_communicator(const CommOptions& opts = {});

// Async-signal-safe: writes "[tt rank R] note: terminated while in collective all_reduce #17 (step 42,
// 1.0 MiB f32), pending for 1.2 s" to fd when this process has a collective in flight, nothing
// otherwise. For the trainer's SIGTERM handler: when a peer dies, mpirun SIGTERMs the survivors
// before their watchdog fires, and this line says where they were.
void write_pending_collective_note(int fd);

}  // namespace tt::parallel
