// Overlap of communication with compute, as a link simulation in issue order: buckets become ready
// while backward runs (GradReducer issues each one as soon as it is complete), their collectives run
// one after another on the link (one communicator), and whatever is still running when backward ends
// is the step's *exposed* communication — what GradReducer::finish_backward waits for. ZeRO-3 adds
// the parameter gathers that forward and backward wait for (simulate_zero3_step). Pure
// functions on times.
//
// Design: the link is a set of ports, an inbound and an outbound one per rank (port 2r: rank r
// receives, 2r + 1: it sends). A balanced collective (a ring all-reduce, a reduce-scatter whose
// chunks are equal, ZeRO-3's per-group gathers) holds every port for its transfer time. ZeRO-1/2's
// per-owner collectives on contiguous shards (a bucket that lies in one rank's shard is a reduce to
// that rank) load ports unevenly (owner_port_load): at 2 ranks one direction only,
// so two of them with different owners run side by side. Every port serves the jobs that load it in
// issue order, exactly as the reducer issues on one communicator, and a job ends with its slowest
// port; no other bandwidth sharing between concurrent collectives. Backward's progress through the
// gradient buffer is given per tensor as the fraction of backward time elapsed when that tensor's
// gradient is final (ModelSpec builds it from per-layer FLOPs); a bucket is ready when its last
// tensor is.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "parallel/ddp/buckets.h"

namespace tt::cost {

struct LinkJob {
  double ready_s = 0;             // when it can start (seconds from the start of backward)
  double duration_s = 0;          // time it holds the link: bytes on the wire, codec work
  double latency_s = 0;           // time it waits without holding the link (α terms): the next job's
                                  // transfer proceeds meanwhile, as concurrent nonblocking collectives do
  std::vector<double> port_load;  // per port, its time as a multiple of duration_s (0: unused);
                                  // empty: a balanced collective, every port for duration_s
};

// The link in issue order: issue() a job, get when it ends. Ports: Link(ports) from
// owner_port_load's 2 × ranks (a job's port_load must have that size or be empty); Link(0) is one
// shared link.
class Link {
 public:
  explicit Link(int ports = 0);
  // Each port the job loads serves it from max(ready, when the port is free); returns its end.
  double issue(const LinkJob& job);
  double last_start_s() const { return spans_.empty() ? 0.0 : spans_.back().first; }  // of the last job issued
  double busy_s() const;                         // time at least one job was in flight
  double finish_s() const { return finish_s_; }  // when the last job ended (0 with none)

 private:
  std::vector<double> free_at_;                   // per port (one entry for Link(0))
  std::vector<std::pair<double, double>> spans_;  // every job's [start, end]
  double finish_s_ = 0;
};

// port_load of ZeRO-1/2's reduce-scatter of a range of the flat buffer whose elements fall into the
// ranks' contiguous shards as counts[r] (split_by_shards): one reduce per owner, each pipelined along
// a chain of the ranks in ring order (NCCL's ncclReduce; at 2 ranks any algorithm is this one). Every
// port carries each owner's part except the chain end it is, relative to the ring collective's
// (N-1)/N of the range: equal counts give 1 everywhere; a range inside one rank's shard gives N/(N-1)
// on the ports its chain uses, so at 2 ranks one direction carries it all at twice the balanced time
// and the other is free.
std::vector<double> owner_port_load(const std::vector<int64_t>& counts);

struct LinkSchedule {
  std::vector<double> start_s;  // per job, when its first port began serving it
  std::vector<double> end_s;    // per job, when it finished
  double busy_s = 0;          // time at least one job was in flight (union of [start, end])
  double finish_s = 0;        // when the last job finished (0 with no jobs)
  double exposed_s = 0;       // max(0, finish_s - compute_end_s)
};

// Runs jobs in order on a Link(ports): port p serves a job from max(ready, p free) for
// port_load[p] × duration_s, and the job ends latency_s after its last port. compute_end_s is when
// backward ends. (Measured in docs/ground_truth.md: at 1 ms one-way delay, 13 buckets of 1 MB
// exposed no more than at 0 ms, so α does not add up serially.)
LinkSchedule simulate_serial_link(const std::vector<LinkJob>& jobs, double compute_end_s, int ports = 0);

// When each bucket is ready, in seconds from the start of a backward of backward_s seconds:
// backward_s × the largest ready fraction among the tensors inside the bucket. tensor_ranges and
// ready_fraction are parallel (buffer order); buckets from assign_buckets on the same ranges.
std::vector<double> bucket_ready_times(const std::vector<parallel::Bucket>& buckets,
                                       const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges,
                                       const std::vector<double>& ready_fraction, double backward_s);

// One ZeRO-3 optimizer step of micro_steps micro-steps in program order, as ShardedParams runs it.
// forward/backward: the parameter groups in the order the model acquires them, each with the
// compute seconds that follow the acquire. acquire(g) gathers g unless held, waits for it, then
// starts gathering the next group (prefetch) into the least recently used of two turn-taking
// windows; `resident` groups keep a window of their own once gathered. Windows stay valid across
// micro-steps (only the optimizer step changes the shards). gathers[g]: group g's gather job
// (ready_s ignored). grads: the gradient reducer's jobs of one micro-step, ready_s in backward
// *compute* seconds (as bucket_ready_times gives them), issued when each micro-step's backward,
// delayed by the waits, reaches that point.
// The timeline itself, seconds from the start of the step: each acquire's compute (index: the
// group), each gather (index: the group) and each gradient job (index: its position in grads).
struct TimelineSpan {
  int index = 0;
  int micro = 0;  // micro-step
  double start_s = 0, end_s = 0;
};
struct Zero3Timeline {
  double compute_s = 0;  // forward + backward compute
  double wall_s = 0;     // until the last compute and every collective have ended
  double busy_s = 0;     // link busy time (union)
  double exposed_s() const { return wall_s - compute_s; }
  std::vector<TimelineSpan> forward, backward, gathers, grads;
};
Zero3Timeline simulate_zero3_step(const std::vector<LinkJob>& gathers,
                                  const std::vector<std::pair<int, double>>& forward,
                                  const std::vector<std::pair<int, double>>& backward, const std::vector<int>& resident,
                                  const std::vector<LinkJob>& grads, int micro_steps = 1, int ports = 0,
                                  bool prefetch = true);

}  // namespace tt::cost
