// The device table (see device_table.h). Order matters: "H100" must not match inside "H200".
#include "parallel/cost/device_table.h"

#include <algorithm>
#include <cctype>

namespace tt::cost {

namespace {
struct Row {
  const char* token;
  double mem_bw_gbps, peak_bf16_tflops;
};
constexpr Row kRows[] = {
    {"4090", 1008, 165}, {"3090", 936, 71}, {"a100", 2039, 312}, {"h100", 3350, 989}, {"h200", 4800, 989},
};
constexpr double kCpuMemBwGbps = 20, kCpuTflops = 1.0;
constexpr double kUnknownGpuMemBwGbps = 1000, kUnknownGpuTflops = 100;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}
}  // namespace

DeviceFigures device_figures(const std::string& gpu_name) {
  const std::string name = lower(gpu_name);
  if (name.empty() || name == "cpu") return {"cpu", kCpuMemBwGbps, kCpuTflops, true};
  for (const Row& r : kRows)
    if (name.find(r.token) != std::string::npos) {
      std::string model = r.token;
      std::transform(model.begin(), model.end(), model.begin(), [](unsigned char c) { return char(std::toupper(c)); });
      return {model, r.mem_bw_gbps, r.peak_bf16_tflops, true};
    }
  return {"unknown GPU", kUnknownGpuMemBwGbps, kUnknownGpuTflops, false};
}

}  // namespace tt::cost
