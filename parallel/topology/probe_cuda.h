// The CUDA runtime part of the probe: the GPUs this process sees, host<->device bandwidth with
// pinned memory, and for every GPU pair whether P2P works — checked by a real copy whose content is
// compared, because drivers have reported P2P on RTX 4090s that silently corrupted data — with the
// copy bandwidth of each pair.
//
// Design: plain structs in, plain structs out, so probe.cpp (C++) needs no CUDA headers. Built from
// probe_cuda.cu when the build has CUDA; otherwise probe.cpp supplies a version that finds no GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tt::topology {

struct CudaDeviceReport {
  int index = 0;
  std::string name;
  std::string pci_bus_id;  // as cudaDeviceGetPCIBusId writes it ("0000:1B:00.0")
  int compute_capability = 0;
  uint64_t memory_bytes = 0;
  double host_to_device_gbps = 0;  // pinned memory, copy_bytes per copy
  double device_to_host_gbps = 0;
};

struct CudaPairReport {
  int a = 0, b = 0;          // a < b
  bool peer_access = false;  // cudaDeviceCanAccessPeer both ways and peer access enabled
  bool content_ok = false;   // every a->b and b->a copy arrived intact
  double gbps = 0;           // min of the two directions' cudaMemcpyPeer bandwidth (via host without P2P)
  std::string problem;       // why peer access or the check failed ("" when fine)
};

struct CudaReport {
  std::vector<CudaDeviceReport> devices;
  std::vector<CudaPairReport> pairs;
  std::string note;  // e.g. "no CUDA device (...)"; "" when devices were probed
};

// Probes every visible device. No GPU (or no driver) is not an error: devices stays empty and note
// says why. A CUDA failure during the measurements throws tt::Error naming the call. Leaves peer
// access disabled and the calling thread's current device as it found them; allocates
// 2 * copy_bytes per device at a time.
CudaReport probe_cuda(int64_t copy_bytes, int iters);

}  // namespace tt::topology
