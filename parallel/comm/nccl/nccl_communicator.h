// The NCCL backend: collectives over GPU buffers, one process (rank) per GPU, on one or many nodes.
//
// Design decisions:
//  - Bootstrap over an existing Communicator. Rank 0 calls ncclGetUniqueId and broadcasts the 128
//    bytes over the "bootstrap" communicator: MPI under mpirun/srun, the local backend for a single
//    process. The bootstrap stays alive as the control path: it ends the job on failure
//    (MPI_Abort) and carries the check_collectives fingerprints.
//  - Device: local_rank % (visible device count). The constructing thread keeps it as its current
//    device (cudaSetDevice), so the caller allocates on it; collective calls from a thread whose
//    current device differs switch to it and restore the caller's device before returning.
//  - Streams: collectives run on a dedicated high-priority communication stream, ordered after the
//    caller's compute stream by an event (record on compute, cudaStreamWaitEvent on comm), so a
//    collective sees every kernel the caller queued on the compute stream before issuing it, and
//    compute continues while NCCL runs. The Work of a collective is a CUDA event recorded on the
//    communication stream right after it: is_completed() is cudaEventQuery, wait() polls it with the
//    deadline, and stream_wait() lets a compute stream depend on it without blocking the host.
//  - Grouping: bucket collectives issued back to back belong in one NCCL group
//    (group_start()/group_end() or the NcclGroup guard): NCCL then launches them as one operation
//    instead of one kernel per call. Inside an open group nothing is launched; the Works' events are
//    recorded at the outermost group_end(), and waiting on one before that is an error.
//  - all_to_all (when the interface has it) is one ncclSend + ncclRecv per peer in one group.
//  - Uneven (_v) collectives are NCCL groups of rooted collectives: all_gather_v is one ncclBroadcast
//    per rank (root r sends its block, everyone receives it in place), reduce_scatter_v one
//    ncclReduce per rank (root r receives the reduction of block r). Each block crosses the ring
//    once, so the wire bytes follow the true counts (padding every block to the largest would move
//    size() * max(counts) and need padded copies); NCCL runs the grouped operations concurrently.
//    The cost is size() rooted operations instead of one, which matters only for tiny blocks.
//  - Reductions use NCCL natively: f32, bf16, f16, i32, u32; kAvg is ncclAvg (floats: pre-multiplied
//    by 1/size; integers: sum then divide, truncating). Unlike the MPI backend, bf16/f16 are summed
//    in their own precision on each hop (NCCL's behaviour), not in fp32. Data movement (all_gather,
//    broadcast) works on raw bytes (ncclUint8), so every DType is accepted.
//  - Failure is an error, never a hang: a watchdog thread polls ncclCommGetAsyncError and the oldest
//    collective's deadline (CommOptions::timeout_s; ncclCommInitRank is guarded too). On an error or
//    a passed deadline it prints ONE line `[tt rank R] error: collective all_reduce #17 (step 42,
//    1.0 MiB f32) timed out after 300.0 s on rank R (cuda:D); ...`, calls ncclCommAbort (which
//    unblocks NCCL kernels and threads) and ends the job through the bootstrap (MPI_Abort): the same
//    contract as the MPI backend. Unlike the MPI backend it cannot name the ranks that are behind:
//    NCCL has no side channel to ask peers where they are, and the bootstrap's issuing thread is
//    this backend's issuing thread, so the line says so. With check_collectives the fingerprints
//    go over the MPI bootstrap before each collective, and a rank that skipped or reordered one is
//    then named by the MPI backend's own watchdog.
//  - NCCL_* environment variables are read by NCCL itself; rank 0 logs the ones set, once, together
//    with the NCCL version, and every rank logs the device it chose.
//
// Contracts (beyond communicator.h's):
//  - Buffers are device memory (cudaMalloc / cudaMallocManaged) of this rank's device, valid until
//    the Work completes. all_reduce and broadcast also accept host memory, staged through device
//    memory; then the issuing call blocks until the result is back (meant for small control values
//    such as any_rank_requests_stop()). Other collectives reject host pointers (kInternal).
//  - One issuing thread (as for every backend); set_compute_stream, group_start/group_end belong to
//    it. Work handles may be queried and waited on from any thread.
//  - The communicator must outlive its Works; destruction waits for collectives in flight (still
//    guarded by the watchdog), then finalizes NCCL, then drops the bootstrap.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parallel/comm/backend_overrides.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/layout_accessors.h"

struct ncclComm;  // nccl.h: typedef struct ncclComm* ncclComm_t

namespace tt::parallel {

class NcclWork;
using NcclUniqueIdBytes = std::array<char, 128>;  // == sizeof(ncclUniqueId), checked in the .cpp

class NcclCommunicator : public Communicator {
 public:
  // Everything one rank needs to join; filled by the create_* functions below.
  struct Setup {
    int rank = 0, size = 1, local_rank = 0, local_size = 1, node = 0, num_nodes = 1;
    int device = -1;                          // CUDA device; -1: local_rank % visible device count
    NcclUniqueIdBytes unique_id{};            // identical on every rank
    std::unique_ptr<Communicator> bootstrap;  // control path (abort, fingerprints); may be null
    // split(): join by ncclCommSplit(split_parent, split_color, split_key) instead of the unique id;
    // without a bootstrap, rank and size come from the new NCCL communicator.
    ncclComm* split_parent = nullptr;
    int split_color = 0, split_key = 0;
  };

  // Joins the NCCL communicator (blocks until every rank has joined, or the watchdog ends the job
  // after opts.timeout_s). Throws kConfig when no CUDA device is visible, kRuntime on NCCL errors.
  NcclCommunicator(const CommOptions& opts, Setup setup);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  TT_COMMUNICATOR_LAYOUT_ACCESSORS("nccl")

  TT_COMMUNICATOR_BACKEND_OVERRIDES
#ifdef TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE
  // all_to_all: one ncclSend + ncclRecv per peer, grouped (NCCL's own recipe).
  TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE
#endif
  // split: ncclCommSplit on this communicator's device, with the bootstrap split the same way (its
  // control path and node layout); the new communicator has its own communication stream and starts
  // with this one's compute stream.
  TT_COMMUNICATOR_SPLIT_OVERRIDE

  // The stream whose queued work every later collective waits for (default: the legacy default
  // stream, 0). Issuing thread only; takes effect for the next collective.
  void set_compute_stream(cudaStream_t stream);
  cudaStream_t compute_stream() const { return compute_stream_; }
  // The communication stream the collectives run on (owned by this communicator).
  cudaStream_t comm_stream() const { return comm_stream_; }
  int device() const { return device_; }

  // NCCL group around collectives issued back to back (bucket all-reduces): nothing launches until
  // the outermost group_end(). Nestable. Issuing thread only.
  void group_start();
  void group_end();

  // Makes `stream` wait (on the GPU, not the host) for collective `work` of this communicator.
  // Throws kInternal for a Work of another communicator or one whose group is still open.
  void stream_wait(Work& work, cudaStream_t stream);

  // Waits for collectives in flight, stops the watchdog, finalizes NCCL. Idempotent; the destructor
  // calls it. No collective may be issued afterwards.
  void shutdown();

 private:
  friend class NcclWork;

  std::shared_ptr<NcclWork> make_work(CollectiveKind kind, int64_t count, DType dtype, int32_t op_or_root,
                                      int64_t bytes);
  // Checks fingerprints, orders the comm stream after the compute stream, registers w with the
  // watchdog. Called before the NCCL call(s) of a collective.
  void begin(NcclWork& w, const std::shared_ptr<NcclWork>& sp);
  // Records w's event (or defers it to the outermost group_end()).
  std::shared_ptr<Work> finish(const std::shared_ptr<NcclWork>& w);
  void check_fingerprint(const NcclWork& w);
  // After a failed NCCL/CUDA call: fails w, forgets it, and makes every later collective throw.
  void poison(const std::shared_ptr<NcclWork>& w, const std::string& msg);
  void check_usable();
  // begin(), launch (the NCCL calls), finish(); a failure poisons the communicator and fails w.
  std::shared_ptr<Work> run_collective(const std::shared_ptr<NcclWork>& w, const std::function<void()>& launch);
  // check_count, device send/recv, and the Work of a collective on `count`-element blocks per rank.
  std::shared_ptr<NcclWork> make_block_work(CollectiveKind kind, const void* send, const void* recv, int64_t count,
                                            DType dtype);
  bool is_host_pointer(const void* p, const char* what, CollectiveKind kind) const;

  void watchdog_loop();
  [[noreturn]] void die(const std::string& line);
  void abort_nccl_bounded();
  std::string where() const;  // "rank 3 (cuda:3)"

  CommOptions opts_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, node_ = 0, num_nodes_ = 1;
  int device_ = 0;
  std::string device_name_;
  std::unique_ptr<Communicator> bootstrap_;
  ncclComm* comm_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;
  cudaStream_t compute_stream_ = nullptr;
  cudaEvent_t ready_event_ = nullptr;  // recorded on the compute stream before each collective
  int32_t* barrier_buf_ = nullptr;     // one device int for barrier()

  // Issuing thread only.
  int64_t seq_ = 0;
  int group_depth_ = 0;
  std::vector<std::shared_ptr<NcclWork>> group_works_;  // events to record at the outermost group_end
  bool shut_down_ = false;

  // Shared with the watchdog.
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<NcclWork>> in_flight_;  // issue order == completion order (one stream)
  bool stop_ = false;
  std::string poisoned_;  // non-empty after a failed NCCL call: every later collective throws this
  std::atomic<long long> init_deadline_ns_{0};  // while ncclCommInitRank runs
  std::atomic<bool> dying_{false};
  std::thread watchdog_;
};

// RAII NCCL group: `{ NcclGroup g(comm); for (auto& b : ready) comm.all_reduce(...); }`. Leaving the
// scope normally ends the group and throws if that fails; leaving it by an exception ends the group
// quietly (the communicator is poisoned on failure, so the original exception is the one to see).
class NcclGroup {
 public:
  explicit NcclGroup(NcclCommunicator& comm) : comm_(comm), uncaught_(std::uncaught_exceptions()) {
    comm_.group_start();
  }
  ~NcclGroup() noexcept(false) {
    if (std::uncaught_exceptions() == uncaught_) {
      comm_.group_end();
      return;
    }
    try {
      comm_.group_end();
    } catch (...) {
    }
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

 private:
  NcclCommunicator& comm_;
  int uncaught_;
};

// The NCCL communicator of this process, bootstrapped over `bootstrap` (an MPI communicator for
// several processes, a local one for a single process): rank, size, node layout come from it and
// rank 0's unique id is broadcast over it. Collective over all bootstrap ranks.
std::unique_ptr<NcclCommunicator> create_nccl_communicator(const CommOptions& opts,
                                                           std::unique_ptr<Communicator> bootstrap);

// Several ranks inside one process, one thread and one GPU each (tests on multi-GPU machines):
// every thread calls this with the same unique_id and size, its own rank and device; the calls
// block until all ranks joined. No bootstrap: abort() prints and exits this process only, and
// check_collectives is not available.
NcclUniqueIdBytes new_nccl_unique_id();
std::unique_ptr<NcclCommunicator> create_nccl_communicator_in_process(const CommOptions& opts, int rank, int size,
                                                                      const NcclUniqueIdBytes& unique_id, int device);

// "2.28.9" for the NCCL library loaded at run time.
std::string nccl_version_string();

}  // namespace tt::parallel
