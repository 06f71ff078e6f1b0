// ZeRO-3 gradients without a whole gradient buffer: backward accumulates each parameter group's
// gradients in a window, GradReducer reduce-scatters the group from it as soon as backward reports
// the group ready, and the window is reused once that reduce-scatter has read it.
//
// Design: the windows follow ShardedParams' policy (WindowSlots): resident groups (tied embeddings,
// written at both ends of backward) get their own, the others take turns in two the size of the
// largest group, so one window receives a group's gradients while the other's reduce-scatter runs.
// A window is zeroed (on the Exec's stream) when a backward first asks for its group, after the
// host has waited for the reduce-scatter that last read it. Memory: resident groups + 2 x the
// largest other group, instead of the whole buffer. The gradients' dtype, on their device.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "core/exec.h"
#include "core/model/param_source.h"
#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/window_slots.h"

namespace tt::parallel {

class GradWindows : public GradSink {
 public:
  // groups: [begin, end) in buffer order, covering the buffer; resident: indices into groups.
  GradWindows(std::vector<std::pair<int64_t, int64_t>> groups, const std::vector<int>& resident,
              DType dtype = DType::kF32, const Exec& exec = {});
  ~GradWindows() override;

  // The window for group's gradients: the one holding it, or (waiting for the reduce-scatter still
  // reading it) the least recently used one, zeroed.
  void* grads(int group) override;
  // A new backward: every group's window is zeroed again when first asked for.
  void begin_backward();
  // The window holding group (the reducer's send buffer); `reading` must complete before the
  // window is reused.
  void* window(int group);
  void reading(int group, std::shared_ptr<Work> work);
  // Seconds grads() waited for reduce-scatters since the last call.
  double take_wait_s();
  int64_t elements() const;  // held in windows

 private:
  std::vector<std::pair<int64_t, int64_t>> groups_;
  DType dtype_;
  Exec exec_;
  WindowSlots slots_;
  std::vector<Tensor> windows_;                 // parallel to slots_
  std::vector<std::shared_ptr<Work>> reading_;  // per slot: the reduce-scatter reading it
  std::vector<char> unsent_;                    // per slot: holds gradients no reduce-scatter read yet
  std::vector<char> zeroed_;                    // per group: asked for in this backward
  double wait_s_ = 0;
};

}  // namespace tt::parallel
