// Overlap of gradient communication with backward compute, as a serial-link simulation: buckets
// become ready while backward runs (GradReducer issues each one as soon as it is complete), their
// collectives run one after another on one link (one communicator stream), and whatever is still
// running when backward ends is the step's *exposed* communication — what GradReducer::finish_backward
// waits for. Pure functions on times.
//
// Design: backward's progress through the gradient buffer is given per tensor as the fraction of
// backward time elapsed when that tensor's gradient is final (ModelSpec builds it from per-layer
// FLOPs); a bucket is ready when its last tensor is. The link is FIFO in issue order, exactly as the
// reducer issues on one communicator; no bandwidth sharing between concurrent collectives.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "parallel/ddp/buckets.h"

namespace tt::cost {

struct LinkJob {
  double ready_s = 0;     // when it can start (seconds from the start of backward)
  double duration_s = 0;  // time it holds the link: bytes on the wire, codec work
  double latency_s = 0;   // time it waits without holding the link (α terms): the next job's
                          // transfer proceeds meanwhile, as concurrent nonblocking collectives do
};

struct LinkSchedule {
  std::vector<double> end_s;  // per job, when it finished
  double busy_s = 0;          // time at least one job was in flight (union of [start, end])
  double finish_s = 0;        // when the last job finished (0 with no jobs)
  double exposed_s = 0;       // max(0, finish_s - compute_end_s)
};

// Runs jobs in order on one link that is free from link_free_at_s on: start = max(ready, the
// previous job's release of the link, link_free_at_s); a job releases the link after duration_s and
// ends latency_s later. compute_end_s is when backward ends. (Measured in docs/ground_truth.md: at
// 1 ms one-way delay, 13 buckets of 1 MB exposed no more than at 0 ms, so α does not add up serially.)
LinkSchedule simulate_serial_link(const std::vector<LinkJob>& jobs, double compute_end_s, double link_free_at_s = 0);

// When each bucket is ready, in seconds from the start of a backward of backward_s seconds:
// backward_s × the largest ready fraction among the tensors inside the bucket. tensor_ranges and
// ready_fraction are parallel (buffer order); buckets from assign_buckets on the same ranges.
std::vector<double> bucket_ready_times(const std::vector<parallel::Bucket>& buckets,
                                       const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges,
                                       const std::vector<double>& ready_fraction, double backward_s);

}  // namespace tt::cost
