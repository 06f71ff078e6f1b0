// Peak dense bf16 tensor-core throughput by GPU model, and the MFU figure built on it.
//
// Design: a fixed table of public spec-sheet figures (dense, i.e. without 2:4 sparsity, bf16 inputs
// with fp32 accumulation), matched against the CUDA device name (cudaDeviceProp::name, e.g.
// "NVIDIA H100 80GB HBM3"). A GPU missing from the table, or one without bf16 tensor cores (V100,
// T4), has no peak, and MFU is then printed as "n/a": a user never sees a wrong percentage because
// their GPU was guessed to be another. Pure functions, unit-tested without a GPU.
#pragma once

#include <optional>
#include <string>

namespace tt {

// Peak dense bf16 TFLOP/s (fp32 accumulation) for a CUDA device name. Matching is case-insensitive
// on whole words: a table key ("A10", "RTX 4090", "H100 PCIe") matches when it occurs in the name
// bounded by non-alphanumeric characters or the ends, so "A10" does not match "A100" or "A10G".
// More specific keys are tried first ("H100 PCIe" before "H100"). nullopt when unknown.
std::optional<double> peak_bf16_tflops(const std::string& device_name);

// Model FLOP utilisation as "48.3%" (one decimal); "n/a" when the peak is unknown or not positive,
// or achieved is negative or not finite.
std::string format_mfu(double achieved_tflops, std::optional<double> peak_tflops);

}  // namespace tt
