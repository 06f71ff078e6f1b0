// A device a tensor lives on: the host CPU or one CUDA GPU ("cpu", "cuda:0").
#pragma once

#include <string>

namespace tt {

enum class DeviceKind { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::kCpu, 0}; }
  static Device cuda(int i) { return {DeviceKind::kCuda, i}; }
  static Device parse(const std::string& s);  // "cpu", "cuda", "cuda:N"; throws kConfig otherwise
  std::string str() const;
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

// Number of CUDA devices visible (0 in a build without CUDA or on a machine without GPUs).
int cuda_device_count();

}  // namespace tt
