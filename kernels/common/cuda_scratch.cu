// Registry of per-(device, stream, slot) scratch buffers; see cuda_scratch.cuh for the contract.
#include <map>
#include <mutex>
#include <tuple>

#include "core/cuda_check.h"
#include "kernels/common/cuda_scratch.cuh"

namespace tt::kernels::cuda {

namespace {

struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
};

using Key = std::tuple<int, cudaStream_t, int>;  // device, stream, slot

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<Key, Buffer>& registry() {
  static auto* r = new std::map<Key, Buffer>();  // leaked on purpose: no teardown after the context
  return *r;
}

}  // namespace

void* cuda_scratch(ScratchSlot slot, size_t bytes, cudaStream_t stream) {
  int device = 0;
  TT_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(registry_mutex());
  Buffer& b = registry()[Key{device, stream, static_cast<int>(slot)}];
  if (b.bytes < bytes || b.ptr == nullptr) {
    if (b.ptr != nullptr) TT_CUDA_CHECK(cudaFreeAsync(b.ptr, stream));
    b.ptr = nullptr;
    b.bytes = 0;
    // Grow geometrically (and to at least 64 KiB) so a sequence of slightly larger requests does
    // not reallocate every time.
    size_t want = bytes < (size_t{64} << 10) ? (size_t{64} << 10) : bytes;
    want += want / 4;
    TT_CUDA_CHECK(cudaMallocAsync(&b.ptr, want, stream));
    b.bytes = want;
  }
  return b.ptr;
}

void release_cuda_scratch(cudaStream_t stream) {
  int device = 0;
  TT_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& r = registry();
  for (auto it = r.begin(); it != r.end();) {
    if (std::get<0>(it->first) == device && std::get<1>(it->first) == stream) {
      if (it->second.ptr != nullptr) TT_CUDA_CHECK(cudaFreeAsync(it->second.ptr, stream));
      it = r.erase(it);
    } else {
      ++it;
    }
  }
}

void release_all_cuda_scratch() {
  int current = 0;
  TT_CUDA_CHECK(cudaGetDevice(&current));
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& r = registry();
  for (auto& [key, b] : r) {
    TT_CUDA_CHECK(cudaSetDevice(std::get<0>(key)));
    TT_CUDA_CHECK(cudaDeviceSynchronize());
    if (b.ptr != nullptr) TT_CUDA_CHECK(cudaFree(b.ptr));
  }
  r.clear();
  TT_CUDA_CHECK(cudaSetDevice(current));
}

}  // namespace tt::kernels::cuda
