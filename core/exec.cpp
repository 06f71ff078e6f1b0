// Device-generic runtime services (see exec.h): plain host code on the CPU, the CUDA runtime API on
// CUDA (this file is C++; the runtime's C API needs no nvcc).
#include "core/exec.h"

#include <chrono>
#include <cstring>

#include "core/allocator.h"
#include "core/error.h"

#if TOPOTRAIN_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace tt {

namespace {
double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#if TOPOTRAIN_HAVE_CUDA
cudaStream_t stream_of(const Exec& e) { return static_cast<cudaStream_t>(e.stream); }
#else
[[noreturn]] void no_cuda() {
  throw Error(ErrorKind::kConfig, "this topotrain was built without CUDA", "train.device",
              "rebuild with the CUDA toolkit (-DTOPOTRAIN_CUDA=ON), or set train.device=cpu");
}
#endif
}  // namespace

DeviceStream::DeviceStream(Device device) {
  exec_.device = device;
  if (device.kind != DeviceKind::kCuda) return;
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaSetDevice(device.index));
  cudaStream_t s = nullptr;
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  exec_.stream = s;
#else
  no_cuda();
#endif
}

DeviceStream::~DeviceStream() {
#if TOPOTRAIN_HAVE_CUDA
  if (exec_.stream) {
    cudaSetDevice(exec_.device.index);
    cudaStreamSynchronize(stream_of(exec_));
    cudaStreamDestroy(stream_of(exec_));
  }
#endif
}

void set_current_device(Device device) {
  if (device.kind != DeviceKind::kCuda) return;
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaSetDevice(device.index));
#else
  no_cuda();
#endif
}

void synchronize(const Exec& e) {
  if (!e.is_cuda()) return;
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaStreamSynchronize(stream_of(e)));
#endif
}

void zero_async(const Exec& e, void* p, size_t bytes) {
  if (bytes == 0) return;
  if (!e.is_cuda()) {
    std::memset(p, 0, bytes);
    return;
  }
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_of(e)));
#else
  no_cuda();
#endif
}

void copy_async(const Exec& e, void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (!e.is_cuda()) {
    std::memmove(dst, src, bytes);
    return;
  }
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_of(e)));
#else
  no_cuda();
#endif
}

void copy_sync(const Exec& e, void* dst, const void* src, size_t bytes) {
  copy_async(e, dst, src, bytes);
  synchronize(e);
}

void copy_anywhere(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
#if TOPOTRAIN_HAVE_CUDA
  auto on_device = [](const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // no driver or device: host memory; clear the sticky error
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  };
  if (on_device(dst) || on_device(src)) {
    TT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
    return;
  }
#endif
  std::memmove(dst, src, bytes);
}

DeviceTimer::~DeviceTimer() {
#if TOPOTRAIN_HAVE_CUDA
  for (void* ev : events_) cudaEventDestroy(static_cast<cudaEvent_t>(ev));
#endif
}

void DeviceTimer::mark(size_t i) {
  if (!exec_.is_cuda()) {
    if (host_s_.size() <= i) host_s_.resize(i + 1, 0.0);
    host_s_[i] = host_seconds();
    return;
  }
#if TOPOTRAIN_HAVE_CUDA
  while (events_.size() <= i) {
    cudaEvent_t ev = nullptr;
    TT_CUDA_CHECK(cudaEventCreate(&ev));
    events_.push_back(ev);
  }
  TT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[i]), stream_of(exec_)));
#else
  no_cuda();
#endif
}

void DeviceTimer::wait(size_t i) {
  if (!exec_.is_cuda()) return;
#if TOPOTRAIN_HAVE_CUDA
  TT_ASSERT(i < events_.size(), "DeviceTimer point ", i, " was never marked");
  TT_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[i])));
#endif
}

double DeviceTimer::seconds(size_t a, size_t b) {
  if (!exec_.is_cuda()) {
    TT_ASSERT(a < host_s_.size() && b < host_s_.size(), "DeviceTimer points ", a, ", ", b, " were never marked");
    return host_s_[b] - host_s_[a];
  }
#if TOPOTRAIN_HAVE_CUDA
  wait(b);
  float ms = 0.0f;
  TT_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(events_.at(a)), static_cast<cudaEvent_t>(events_.at(b))));
  return double(ms) * 1e-3;
#else
  no_cuda();
#endif
}

HostStaging::HostStaging(const Exec& e, size_t bytes) : exec_(e), bytes_(bytes) {
  if (!e.is_cuda()) return;
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaMallocHost(&host_, bytes));
  cudaEvent_t ev = nullptr;
  TT_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  staged_ = ev;
#else
  no_cuda();
#endif
}

HostStaging::~HostStaging() {
#if TOPOTRAIN_HAVE_CUDA
  if (staged_) {
    cudaEventSynchronize(static_cast<cudaEvent_t>(staged_));
    cudaEventDestroy(static_cast<cudaEvent_t>(staged_));
  }
  if (host_) cudaFreeHost(host_);
#endif
}

void HostStaging::upload(void* device_dst, const void* host_src, size_t bytes) {
  TT_ASSERT(bytes <= bytes_, "HostStaging upload of ", bytes, " bytes into ", bytes_);
  if (!exec_.is_cuda()) {
    std::memcpy(device_dst, host_src, bytes);
    return;
  }
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(staged_)));  // the previous copy out of host_
  std::memcpy(host_, host_src, bytes);
  TT_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_, bytes, cudaMemcpyHostToDevice, stream_of(exec_)));
  TT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(staged_), stream_of(exec_)));
#endif
}

std::string device_name(Device device) {
  if (device.kind != DeviceKind::kCuda) return "cpu";
#if TOPOTRAIN_HAVE_CUDA
  cudaDeviceProp prop{};
  TT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device.index));
  return prop.name;
#else
  no_cuda();
#endif
}

int device_compute_capability(Device device) {
  if (device.kind != DeviceKind::kCuda) return 0;
#if TOPOTRAIN_HAVE_CUDA
  int major = 0, minor = 0;
  TT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index));
  TT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device.index));
  return 10 * major + minor;
#else
  no_cuda();
#endif
}

size_t device_bytes_in_use(Device device) {
  if (device.kind != DeviceKind::kCuda) return memory_stats(device).current_bytes;
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaSetDevice(device.index));
  size_t free = 0, total = 0;
  TT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return total - free;
#else
  no_cuda();
#endif
}

size_t device_bytes_free(Device device) {
  TT_ASSERT(device.kind == DeviceKind::kCuda, "device_bytes_free is for CUDA devices");
#if TOPOTRAIN_HAVE_CUDA
  TT_CUDA_CHECK(cudaSetDevice(device.index));
  size_t free = 0, total = 0;
  TT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
#else
  no_cuda();
#endif
}

}  // namespace tt
