// CUDA half of the topology probe (see probe_cuda.h). Deliberately small: synchronous steps, one
// pair at a time, every call checked, every resource owned by a scope guard.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cuda_check.h"
#include "parallel/topology/probe_cuda.h"

namespace tt::topology {

namespace {

struct DeviceBuffer {
  int device;
  void* ptr = nullptr;
  DeviceBuffer(int dev, size_t bytes) : device(dev) {
    TT_CUDA_CHECK(cudaSetDevice(dev));
    TT_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  }
  ~DeviceBuffer() {
    cudaSetDevice(device);
    cudaFree(ptr);
  }
};

struct PinnedBuffer {
  void* ptr = nullptr;
  explicit PinnedBuffer(size_t bytes) { TT_CUDA_CHECK(cudaMallocHost(&ptr, bytes)); }
  ~PinnedBuffer() { cudaFreeHost(ptr); }
};

// A pattern no stale or zeroed buffer matches: a 32-bit mix of the word index and a seed.
std::vector<uint32_t> pattern(size_t bytes, uint32_t seed) {
  std::vector<uint32_t> p(bytes / 4);
  for (size_t i = 0; i < p.size(); ++i) {
    uint32_t x = uint32_t(i) * 0x9e3779b9u ^ seed;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    p[i] = x;
  }
  return p;
}

bool device_holds(const DeviceBuffer& buf, const std::vector<uint32_t>& expected) {
  std::vector<uint32_t> got(expected.size());
  TT_CUDA_CHECK(cudaSetDevice(buf.device));
  TT_CUDA_CHECK(cudaDeviceSynchronize());
  TT_CUDA_CHECK(cudaMemcpy(got.data(), buf.ptr, got.size() * 4, cudaMemcpyDeviceToHost));
  return std::memcmp(got.data(), expected.data(), got.size() * 4) == 0;
}

// GB/s of `iters` copies of `bytes` enqueued by copy(stream) on `device`, after one warm-up copy.
template <typename Copy>
double timed_gbps(int device, size_t bytes, int iters, Copy copy) {
  TT_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t s;
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  TT_CUDA_CHECK(cudaEventCreate(&start));
  TT_CUDA_CHECK(cudaEventCreate(&stop));
  copy(s);
  TT_CUDA_CHECK(cudaEventRecord(start, s));
  for (int i = 0; i < iters; ++i) copy(s);
  TT_CUDA_CHECK(cudaEventRecord(stop, s));
  TT_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  TT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(s);
  return ms > 0 ? double(bytes) * iters / (ms * 1e-3) / 1e9 : 0;
}

// Enables access from `from` to `to`'s memory; false (and the reason) when the driver refuses.
bool enable_peer(int from, int to, std::string* problem) {
  TT_CUDA_CHECK(cudaSetDevice(from));
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return true;
  }
  cudaGetLastError();
  *problem = str("cudaDeviceEnablePeerAccess(", from, " -> ", to, ") failed: ", cudaGetErrorString(e));
  return false;
}

void disable_peer(int from, int to) {
  cudaSetDevice(from);
  cudaDeviceDisablePeerAccess(to);
  cudaGetLastError();  // not enabled: nothing to undo
}

CudaPairReport check_pair(int a, int b, size_t bytes, int iters) {
  CudaPairReport r;
  r.a = a;
  r.b = b;
  int ab = 0, ba = 0;
  TT_CUDA_CHECK(cudaDeviceCanAccessPeer(&ab, a, b));
  TT_CUDA_CHECK(cudaDeviceCanAccessPeer(&ba, b, a));
  if (ab && ba)
    r.peer_access = enable_peer(a, b, &r.problem) && enable_peer(b, a, &r.problem);
  else
    r.problem = "cudaDeviceCanAccessPeer: no P2P between these GPUs";
  {
    DeviceBuffer da(a, bytes), db(b, bytes);
    const std::vector<uint32_t> pa = pattern(bytes, 0xa5a5a5a5u ^ uint32_t(a * 64 + b));
    const std::vector<uint32_t> pb = pattern(bytes, 0x5a5a5a5au ^ uint32_t(b * 64 + a));
    // a -> b: one checked copy, the timed copies, and the content again after them.
    TT_CUDA_CHECK(cudaMemcpy(da.ptr, pa.data(), bytes, cudaMemcpyHostToDevice));
    TT_CUDA_CHECK(cudaMemcpyPeer(db.ptr, b, da.ptr, a, bytes));
    bool ok = device_holds(db, pa);
    const double gbps_ab = timed_gbps(
        a, bytes, iters, [&](cudaStream_t s) { TT_CUDA_CHECK(cudaMemcpyPeerAsync(db.ptr, b, da.ptr, a, bytes, s)); });
    ok = device_holds(db, pa) && ok;
    // b -> a likewise.
    TT_CUDA_CHECK(cudaSetDevice(b));
    TT_CUDA_CHECK(cudaMemcpy(db.ptr, pb.data(), bytes, cudaMemcpyHostToDevice));
    TT_CUDA_CHECK(cudaMemcpyPeer(da.ptr, a, db.ptr, b, bytes));
    ok = device_holds(da, pb) && ok;
    const double gbps_ba = timed_gbps(
        b, bytes, iters, [&](cudaStream_t s) { TT_CUDA_CHECK(cudaMemcpyPeerAsync(da.ptr, a, db.ptr, b, bytes, s)); });
    ok = device_holds(da, pb) && ok;
    r.content_ok = ok;
    r.gbps = std::min(gbps_ab, gbps_ba);
    if (!ok) r.problem = r.peer_access ? "P2P copies arrived corrupted" : "copies via host arrived corrupted";
  }
  if (r.peer_access) {
    disable_peer(a, b);
    disable_peer(b, a);
  }
  return r;
}

}  // namespace

CudaReport probe_cuda(int64_t copy_bytes, int iters) {
  CudaReport report;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();  // clear the sticky error of a driver-less machine
    report.note =
        str("no usable CUDA device (cudaGetDeviceCount: ", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices", ")");
    return report;
  }
  int previous = 0;
  TT_CUDA_CHECK(cudaGetDevice(&previous));
  const size_t bytes = size_t(std::max<int64_t>(copy_bytes, 4096)) / 4 * 4;
  iters = std::max(iters, 1);
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop;
    TT_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    char bus[32] = {0};
    TT_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), d));
    CudaDeviceReport dev;
    dev.index = d;
    dev.name = prop.name;
    dev.pci_bus_id = bus;
    dev.compute_capability = prop.major * 10 + prop.minor;
    dev.memory_bytes = prop.totalGlobalMem;
    {
      PinnedBuffer host(bytes);
      DeviceBuffer buf(d, bytes);
      dev.host_to_device_gbps = timed_gbps(d, bytes, iters, [&](cudaStream_t s) {
        TT_CUDA_CHECK(cudaMemcpyAsync(buf.ptr, host.ptr, bytes, cudaMemcpyHostToDevice, s));
      });
      dev.device_to_host_gbps = timed_gbps(d, bytes, iters, [&](cudaStream_t s) {
        TT_CUDA_CHECK(cudaMemcpyAsync(host.ptr, buf.ptr, bytes, cudaMemcpyDeviceToHost, s));
      });
    }
    report.devices.push_back(dev);
  }
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) report.pairs.push_back(check_pair(a, b, bytes, iters));
  TT_CUDA_CHECK(cudaSetDevice(previous));
  return report;
}

}  // namespace tt::topology
