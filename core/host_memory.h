// How much host memory this process can still take before the kernel's OOM killer (or its
// container's limit) ends it: what a run's memory plan is checked against before anything is
// allocated, since under overcommit an allocation "succeeds" and the process dies on first touch.
#pragma once

#include <cstdint>
#include <string>

namespace tt {

struct HostMemory {
  uint64_t available_bytes = 0;  // min(MemAvailable, the cgroup's limit - its usage)
  std::string limited_by;        // "MemAvailable" or the cgroup limit file that was smaller
};

// Reads /proc/meminfo and the process's cgroup (v2 memory.max / memory.current, or v1
// memory.limit_in_bytes / memory.usage_in_bytes); reclaimable page cache counts as available.
HostMemory host_memory_available();

}  // namespace tt
