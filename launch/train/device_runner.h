// What the training loop needs from its device beyond the model: the run's stream, phase timing,
// the device's name and memory figures, and the communicator hooked to the stream. The loop itself
// (launch/train/trainer.cpp) is written once; everything device-specific below it goes through the
// Exec this runner holds (kernels/ops, the optimizer, the gradient reducer's codec).
//
// Design: on the CPU the runner is nearly empty (no stream, the host clock). On CUDA it owns a
// non-blocking stream on the rank's device (the NCCL communicator's device when the job has one)
// and makes it the NCCL communicator's compute stream, so every collective is ordered after the
// kernels queued before it; the hook is removed before the stream dies.
#pragma once

#include <memory>
#include <string>

#include "core/exec.h"
#include "launch/train/train_device.h"
#include "parallel/comm/communicator.h"

namespace tt {

class DeviceRunner {
 public:
  // Throws kConfig when CUDA is asked for in a build without it, or a multi-rank CUDA job does not
  // use the NCCL communicator.
  DeviceRunner(const TrainDevice& device, parallel::Communicator& comm);
  ~DeviceRunner();
  DeviceRunner(const DeviceRunner&) = delete;
  DeviceRunner& operator=(const DeviceRunner&) = delete;

  const Exec& exec() const { return exec_; }
  DType dtype() const { return device_.dtype; }
  const TrainDevice& device() const { return device_; }
  bool is_cuda() const { return exec_.is_cuda(); }
  DeviceTimer& timer() { return *timer_; }
  // "cpu", or the GPU's name ("NVIDIA H200").
  const std::string& name() const { return name_; }
  // Bytes in use on the device now (CUDA: every process's, cudaMemGetInfo; CPU: this process's
  // tracked allocations).
  size_t bytes_in_use() const;

 private:
  TrainDevice device_;
  parallel::Communicator& comm_;
  std::unique_ptr<DeviceStream> stream_;
  Exec exec_;
  std::unique_ptr<DeviceTimer> timer_;
  std::string name_;
  bool hooked_ = false;
};

}  // namespace tt
