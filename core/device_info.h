// The GPU table: per CUDA device model, its memory bandwidth, its peak dense tensor-core rate in
// each matmul precision, and the fraction of the bf16 peak a well-tuned trainer achieves on it;
// and the MFU figure built on the peak.
//
// Design: one fixed table of public figures (dense, i.e. without 2:4 sparsity; bf16 and fp8 with
// fp32 accumulation, int8 with int32), matched against the CUDA device name (cudaDeviceProp::name,
// e.g. "NVIDIA H100 80GB HBM3"). The planner prices compute from it, MFU divides by it, the
// topology presets and the probe record its bf16 peak. A GPU missing from the table, or one without
// bf16 tensor cores (V100, T4), has no entry: MFU is then "n/a" and the planner uses conservative
// defaults and says so, rather than a guessed GPU's figures. Pure functions, tested without a GPU.
#pragma once

#include <optional>
#include <string>

namespace tt {

struct DeviceSpec {
  const char* key;                // matched as a whole word, case-insensitively ("RTX 4090", "H100 PCIe")
  double mem_bw_gbps;             // device memory, GB/s
  double peak_bf16_tflops;        // dense, fp32 accumulation
  double peak_fp8_tflops;         // dense E4M3/E5M2, fp32 accumulation; 0: no fp8 tensor cores
  double peak_int8_tops;          // dense int8, int32 accumulation
  double training_efficiency;     // achieved fraction of peak_bf16 in LLM training (model FLOPs)
  const char* efficiency_source;  // the measurement it is calibrated on, or "estimate: ..."
};

// The entry for a CUDA device name: a key matches when it occurs in the name bounded by
// non-alphanumeric characters or the ends (so "A10" matches neither "A100" nor "A10G"); more
// specific keys are tried first ("H100 PCIe" before "H100"). nullptr when unknown.
const DeviceSpec* find_device(const std::string& device_name);

// find_device's bf16 peak; nullopt when unknown.
std::optional<double> peak_bf16_tflops(const std::string& device_name);

// Model FLOP utilisation as "48.3%" (one decimal); "n/a" when the peak is unknown or not positive,
// or achieved is negative or not finite.
std::string format_mfu(double achieved_tflops, std::optional<double> peak_tflops);

}  // namespace tt
