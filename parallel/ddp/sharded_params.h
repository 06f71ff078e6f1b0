// ZeRO-3 parameters: each rank keeps only its shard of the flat parameter buffer, and the model's
// forward and backward gather one parameter group (embeddings, one block, the final group:
// ModelLayout::groups) at a time. Every group is cut across all ranks (ShardLayout with the groups as
// units, the cut of the gradient reducer's ZeRO-3 shard), so each gather is a balanced all-gather.
//
// Design: two windows the size of the largest group take turns (WindowSlots, which the cost model's
// ZeRO-3 simulation shares): acquire(g, next) returns the window holding g — gathering it first
// unless a window already does — and starts the all-gather of `next` into the other one, so the
// next group arrives while this one computes. Resident groups (tied embeddings, used at both
// ends of forward and first in backward, ModelLayout::reused_groups) get a window of their own and are gathered once
// per parameter update. Buffers are of the model's working dtype on its device (host memory with the MPI backend, GPU
// memory with NCCL's); acquire() waits on the host for a gather it needs, so work the caller enqueues afterwards sees
// the values. The gathers are issued from the training thread at the same points of forward and backward on every rank,
// so they interleave with the gradient reducer's collectives in one order everywhere. With one rank the shard is the
// whole buffer and acquire returns pointers into it.
//
// Memory per rank: shard (about n/ranks) + the resident groups + 2 x the largest other group, instead of n.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/exec.h"
#include "core/model/param_layout.h"
#include "core/model/param_source.h"
#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/sharding.h"
#include "parallel/ddp/window_slots.h"

namespace tt::parallel {

class ShardedParams : public ParamSource {
 public:
  // groups: covering [0, n) in order (ModelLayout::groups); resident: indices of groups kept gathered
  // until the next invalidate(); prefetch=false gathers every group only when acquired (for
  // comparison). The shard (of dtype, on exec.device) starts zeroed.
  ShardedParams(Communicator& comm, std::vector<ParamGroup> groups, int64_t n, const std::vector<int>& resident = {},
                bool prefetch = true, DType dtype = DType::kF32, const Exec& exec = {});
  ~ShardedParams() override;

  const void* acquire(int group, int next_group) override;

  // This rank's parameters: layout().pieces() back to back. Call invalidate() before writing them
  // (the optimizer step, loading a checkpoint): it waits for gathers still reading them and drops
  // the windows gathered from the old values.
  void* shard_data() { return shard_.raw(); }
  DType dtype() const { return dtype_; }
  const ShardLayout& layout() const { return layout_; }
  // Elements held in gather windows (0 with one rank).
  int64_t window_elements() const;
  // Forgets the windows (waiting for a prefetch still in flight): the shards changed.
  void invalidate();
  // Seconds acquire() spent waiting for gathers since the last call (exposed communication): for a
  // group gathered on demand, from its issue on.
  double take_wait_s();

 private:
  struct Window {  // one per WindowSlots slot
    Tensor values;
    std::shared_ptr<Work> in_flight;  // the gather filling it, until waited on
  };
  void start_gather(int slot, int group);
  // Waits for the slot's gather; the seconds since `since` (default: now) count as waiting.
  void wait(int slot, std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now());

  Communicator& comm_;
  std::vector<ParamGroup> groups_;
  ShardLayout layout_;
  DType dtype_;
  Exec exec_;
  Tensor shard_;
  bool prefetch_;
  WindowSlots slots_;            // which group each window holds
  std::vector<Window> windows_;  // parallel to slots_ (none with one rank)
  double wait_s_ = 0;
};

}  // namespace tt::parallel
