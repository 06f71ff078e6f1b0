// StagePipeline: runs gradient buckets through a fixed chain of collectives ("stages"), each stage
// on its own communicator, issuing a bucket's next collective as soon as its previous one completed.
//
// Design: every rank must issue the collectives of a communicator in the same order, but completion
// times differ by rank, so a single communicator could not take "the next stage of whichever bucket
// finished first". With one communicator per stage the rule reduces to: per stage, buckets are
// issued in bucket order. advance() (polled from backward's grad-ready callback) issues whatever
// that rule and the completed predecessors allow; finish() issues the rest, waiting in bucket
// order. The host work between stages (reading the previous stage's result, e.g. decompressing and
// re-compressing) runs inside the issue callback, on the issuing thread.
// Eager (the default) suits MPI, whose non-blocking collectives on different communicators progress
// independently. NCCL needs more: operations on different communicators must be issued in the same
// order on every rank, or their kernels, each blocked waiting for peers, can deadlock. So a
// non-eager pipeline issues only stage 0 during backward (start), advance() issues nothing, and
// finish() issues every later stage in one fixed order (bucket by bucket, stage by stage). Not
// thread-safe; the communicators and buffers belong to the caller.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "parallel/comm/communicator.h"

namespace tt::parallel {

class StagePipeline {
 public:
  // issue(stage, bucket): called once per (stage, bucket), after stage - 1 of that bucket completed
  // (stage 0: from start()), and per stage in increasing bucket order; returns the stage's Work.
  using Issue = std::function<std::shared_ptr<Work>(int stage, size_t bucket)>;

  StagePipeline(int stages, Issue issue, bool eager = true);

  // Starts a round of `buckets` buckets; the previous round must have finished.
  void begin(size_t buckets);
  // Stage 0 of the next bucket (buckets are started in order 0, 1, ...).
  void start(size_t bucket);
  // Issues every later stage whose predecessor has completed; true when it issued anything.
  bool advance();
  // One collective of the round: stage `stage` of bucket `bucket`, in flight over [issued_s, end_s]
  // (steady clock seconds, end = issue + the Work's elapsed time).
  struct Span {
    int stage = 0;
    size_t bucket = 0;
    double issued_s = 0, end_s = 0;
  };
  // Issues what is left (waiting for predecessors in bucket order) and waits for every stage of every
  // started bucket; appends each collective's span to spans, stage by stage, in bucket order (the
  // same order on every rank). Rethrows a collective's failure or timeout.
  void finish(std::vector<Span>& spans);

  int stages() const { return stages_; }

 private:
  void issue(int stage, size_t bucket);

  int stages_;
  Issue issue_;
  bool eager_;
  size_t buckets_ = 0;
  std::vector<std::vector<std::shared_ptr<Work>>> work_;  // [stage][bucket]
  std::vector<std::vector<double>> issued_at_;            // seconds, [stage][bucket]
  std::vector<size_t> next_;                              // per stage: the next bucket to issue
};

}  // namespace tt::parallel
