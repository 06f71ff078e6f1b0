// Accounting allocator. Host memory is 64-byte aligned and zeroed; CUDA memory comes from
// core/cuda_runtime.cu. Accounting is per device, under one mutex (allocations are rare: the trainer
// allocates its buffers once).
#include "core/allocator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "core/error.h"

namespace tt {

#if TOPOTRAIN_HAVE_CUDA
void* cuda_device_malloc(int device, size_t bytes);
void cuda_device_free(int device, void* p);
#endif

namespace {
std::mutex g_mutex;
std::map<std::pair<int, int>, MemoryStats> g_stats;

MemoryStats& stats_for(Device d) { return g_stats[{int(d.kind), d.index}]; }
}  // namespace

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

void* tracked_alloc(const std::string& name, size_t bytes, Device device) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    MemoryStats& s = stats_for(device);
    if (s.budget_bytes && s.current_bytes + bytes > s.budget_bytes) {
      throw Error(ErrorKind::kMemory,
                  str("allocating '", name, "' (", format_bytes(double(bytes)), ") on ", device.str(),
                      " would exceed the memory budget of ", format_bytes(double(s.budget_bytes)), " (",
                      format_bytes(double(s.current_bytes)), " already in use in ", s.allocations, " allocations)"),
                  "train.memory_budget_bytes",
                  "lower train.batch_size or train.seq_len, use a smaller model, or raise the budget");
    }
    s.current_bytes += bytes;
    s.peak_bytes = std::max(s.peak_bytes, s.current_bytes);
    s.allocations += 1;
  }
  void* p = nullptr;
  try {
    if (device.kind == DeviceKind::kCpu) {
      size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
      p = std::aligned_alloc(64, rounded);
      if (!p)
        throw Error(ErrorKind::kMemory,
                    str("out of host memory allocating '", name, "' (", format_bytes(double(bytes)), ")"), "",
                    "lower train.batch_size or use a smaller model");
      std::memset(p, 0, bytes);
    } else {
#if TOPOTRAIN_HAVE_CUDA
      p = cuda_device_malloc(device.index, std::max<size_t>(bytes, 1));
#else
      throw Error(ErrorKind::kConfig, str("cannot allocate '", name, "' on ", device.str(), ": built without CUDA"), "",
                  "rebuild with -DTOPOTRAIN_CUDA=ON on a machine with the CUDA toolkit, or run on cpu");
#endif
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(g_mutex);
    MemoryStats& s = stats_for(device);
    s.current_bytes -= bytes;
    s.allocations -= 1;
    throw;
  }
  return p;
}

void tracked_free(void* p, size_t bytes, Device device) {
  if (!p) return;
  if (device.kind == DeviceKind::kCpu) {
    std::free(p);
  } else {
#if TOPOTRAIN_HAVE_CUDA
    cuda_device_free(device.index, p);
#endif
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  MemoryStats& s = stats_for(device);
  s.current_bytes -= bytes;
  s.allocations -= 1;
}

void set_memory_budget(Device device, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  stats_for(device).budget_bytes = bytes;
}

MemoryStats memory_stats(Device device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return stats_for(device);
}

void reset_peak_memory(Device device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  MemoryStats& s = stats_for(device);
  s.peak_bytes = s.current_bytes;
}

}  // namespace tt
