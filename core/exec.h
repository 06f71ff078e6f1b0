// Where device-generic code runs: an Exec names a device and the stream its work is enqueued on, and
// the handful of runtime services every layer above needs on either device (copies, zeroing,
// synchronisation, event timing, pinned staging) sit behind it, so that the model, the optimizer and
// the training loop are written once for the CPU and for CUDA.
//
// Contracts: on the CPU every call runs to completion on the calling thread (the stream is null). On
// CUDA, calls are asynchronous on the Exec's stream unless their comment says they synchronise;
// pointers are host or device memory as the call says (copies take either, direction inferred).
// A build without CUDA throws kConfig for a CUDA Exec.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"

namespace tt {

struct Exec {
  Device device = Device::cpu();
  void* stream = nullptr;  // cudaStream_t on CUDA; null on the CPU
  bool is_cuda() const { return device.kind == DeviceKind::kCuda; }
};

// A stream owned for the life of the object: CUDA, a non-blocking stream on `device` (which becomes
// the calling thread's current device); CPU, nothing.
class DeviceStream {
 public:
  explicit DeviceStream(Device device);
  ~DeviceStream();
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  Exec exec() const { return exec_; }

 private:
  Exec exec_;
};

// Makes `device` the calling thread's current CUDA device (no-op for the CPU).
void set_current_device(Device device);
// Waits for everything enqueued on the Exec's stream.
void synchronize(const Exec& e);
// bytes of zeros at p (memory of e.device).
void zero_async(const Exec& e, void* p, size_t bytes);
// bytes from src to dst, either in host or in e.device's memory. A host source may be reused as soon
// as the call returns (pageable copies are staged by the runtime); a host destination is complete
// only after synchronize(e).
void copy_async(const Exec& e, void* dst, const void* src, size_t bytes);
// copy_async, then synchronize(e).
void copy_sync(const Exec& e, void* dst, const void* src, size_t bytes);
// A blocking copy between any two memories (host, or any CUDA device: the runtime tells which) for
// code that holds pointers without knowing their device (the single-rank communicator).
void copy_anywhere(void* dst, const void* src, size_t bytes);

// Timestamps of points in a stream's work: CUDA events on CUDA, the host clock on the CPU (where the
// work is done when mark() is called). mark(i) records point i; seconds(a, b) waits for b.
class DeviceTimer {
 public:
  explicit DeviceTimer(const Exec& e) : exec_(e) {}
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;
  void mark(size_t i);
  double seconds(size_t a, size_t b);
  // Waits until point i's work is done.
  void wait(size_t i);

 private:
  Exec exec_;
  std::vector<void*> events_;   // cudaEvent_t, grown on demand
  std::vector<double> host_s_;  // CPU: seconds on the steady clock
};

// Host memory the device can copy from asynchronously (pinned on CUDA): upload() copies the caller's
// bytes into it and enqueues the copy to the device, so the caller may reuse its own buffer at once
// and the host does not wait for earlier kernels (only for the previous upload out of the staging).
class HostStaging {
 public:
  HostStaging(const Exec& e, size_t bytes);
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  void upload(void* device_dst, const void* host_src, size_t bytes);

 private:
  Exec exec_;
  size_t bytes_ = 0;
  void* host_ = nullptr;    // pinned (CUDA) buffer
  void* staged_ = nullptr;  // cudaEvent_t marking the end of the last copy out of host_
};

// Name of a device for logs ("cpu", "NVIDIA H200"), and bytes in use on it (CUDA: cudaMemGetInfo,
// every process's allocations; CPU: the accounting allocator's current bytes).
std::string device_name(Device device);
// 10·major + minor of a CUDA device (90 for Hopper); 0 for the CPU.
int device_compute_capability(Device device);
size_t device_bytes_in_use(Device device);
// Bytes a CUDA device has free now (cudaMemGetInfo); for the host see core/host_memory.h.
size_t device_bytes_free(Device device);

}  // namespace tt
