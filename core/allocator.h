// Device memory with accounting: every allocation is named, counted in current and peak bytes per
// device, and checked against an optional budget (train.memory_budget_bytes) so a run can rehearse a
// smaller card. Going over the budget raises ErrorKind::kMemory naming the tensor, its size, the
// budget and what is already in use. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device.h"

namespace tt {

struct MemoryStats {
  size_t current_bytes = 0;
  size_t peak_bytes = 0;
  size_t budget_bytes = 0;  // 0 = unlimited
  size_t allocations = 0;   // live allocations
};

// Returns zero-initialised memory (64-byte aligned on the host). Never returns null.
void* tracked_alloc(const std::string& name, size_t bytes, Device device);
void tracked_free(void* p, size_t bytes, Device device);

void set_memory_budget(Device device, size_t bytes);
MemoryStats memory_stats(Device device);
void reset_peak_memory(Device device);

// "1.50 GiB", "12.0 MiB", "512 B"
std::string format_bytes(double bytes);

}  // namespace tt
