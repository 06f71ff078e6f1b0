// Thin wrappers over the CUDA runtime used by core/ (device count, device memory for the allocator).
// Compiled only when the build has CUDA; every call is checked with TT_CUDA_CHECK.
#include <cuda_runtime.h>

#include <string>

#include "core/cuda_check.h"

namespace tt {

int cuda_runtime_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver / no device: report zero devices, clear the sticky error
    return 0;
  }
  return n;
}

void* cuda_device_malloc(int device, size_t bytes) {
  void* p = nullptr;
  TT_CUDA_CHECK(cudaSetDevice(device));
  TT_CUDA_CHECK(cudaMalloc(&p, bytes));
  TT_CUDA_CHECK(cudaMemset(p, 0, bytes));  // the allocator's contract: zero-initialised memory
  // cudaMemset runs on the legacy default stream, which does not order work on the non-blocking
  // streams the model, the trainer and NCCL use: wait for it so the zeros land before any of them.
  TT_CUDA_CHECK(cudaStreamSynchronize(0));
  return p;
}

void cuda_device_free(int device, void* p) {
  TT_CUDA_CHECK(cudaSetDevice(device));
  TT_CUDA_CHECK(cudaFree(p));
}

}  // namespace tt

namespace tt {

std::string cuda_runtime_version_string() {
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  return "runtime " + std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10);
}

}  // namespace tt
