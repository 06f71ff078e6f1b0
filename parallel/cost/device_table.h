// Per-device figures the cost model needs and the Topology does not carry: memory bandwidth (for
// memory-bound passes — quantize/dequantize, the optimizer) and peak dense bf16 FLOP/s (for compute
// time from MFU). Design: a tiny table keyed by a substring of the CUDA/NVML name, public figures
// only (DESIGN.md "Facts to build on"); an unknown GPU gets conservative defaults and known = false so
// callers can say so instead of silently using a wrong number.
#pragma once

#include <string>

namespace tt::cost {

struct DeviceFigures {
  std::string model;       // "H100", "4090", "cpu", "unknown GPU"
  double mem_bw_gbps = 0;  // device memory bandwidth, GB/s
  double peak_bf16_tflops = 0;
  bool known = false;
};

// Figures for a GPU name ("NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3"); "" or "cpu" gives
// the CPU row (~20 GB/s, 1 TFLOP/s). Matching is case-insensitive on the model token.
DeviceFigures device_figures(const std::string& gpu_name);

}  // namespace tt::cost
