// GPU peak-throughput table and MFU formatting (see device_info.h).
//
// Figures are NVIDIA's published dense bf16 tensor rates with fp32 accumulation. GeForce cards run
// fp32-accumulate at half their fp16-accumulate rate (RTX 4090: 330 -> 165), which is what a
// trainer with fp32 accumulation gets, so the halved figure is the one listed.
#include "core/device_info.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace tt {

namespace {

// Bandwidth, bf16 / fp8 / int8 peaks: NVIDIA datasheets and architecture whitepapers (Hopper,
// Ada, GA102, A100); the 4090 / A100 / H100 / H200 rows are those of DESIGN.md's figures table.
// Training efficiency, where a published measurement exists:
//  * A100: llm.c trains GPT-2 124M at ~218K tokens/s per A100 (0.86 GFLOP/token at T=1024) =
//    0.60 of 312 TFLOP/s in model FLOPs; the planner's other costs (optimizer pass) are priced on
//    top, so its compute term is calibrated to give ~218K end to end (`simulate --model gpt2-124m`).
//  * H100 / H200 / GH200: llm.c's GPT-2 1.5B reproduction on 8xH100 "hovers around ~50% MFU"
//    (Karpathy, llm.c discussion #677 announcement); H200 has the H100's tensor cores.
//  * Everything else: estimates, said so in efficiency_source (no published training figure found):
//    0.50 for Ada/Ampere workstation and consumer parts (GeForce fp32-accumulate rates are the halved
//    ones listed, which is what a trainer with fp32 accumulation gets).
constexpr const char* kLlmcA100 = "llm.c GPT-2 124M, ~218K tokens/s on one A100";
constexpr const char* kLlmcH100 = "llm.c GPT-2 1.5B on 8xH100, ~50% MFU";
constexpr const char* kEstimate = "estimate: no published training measurement found";

// Most specific first: the first key found in the name wins.
constexpr DeviceSpec kDevices[] = {
    // Hopper
    {"GH200", 4000, 989, 1979, 1979, 0.50, kLlmcH100},
    {"H200 NVL", 4800, 835, 1671, 1671, 0.50, kLlmcH100},
    {"H200", 4800, 989, 1979, 1979, 0.50, kLlmcH100},
    {"H100 NVL", 3900, 835, 1671, 1671, 0.50, kLlmcH100},
    {"H100 PCIe", 2000, 756, 1513, 1513, 0.50, kLlmcH100},
    {"H100", 3350, 989, 1979, 1979, 0.50, kLlmcH100},  // SXM5: "NVIDIA H100 80GB HBM3"
    {"H800 PCIe", 2000, 756, 1513, 1513, 0.50, kLlmcH100},
    {"H800", 3350, 989, 1979, 1979, 0.50, kLlmcH100},
    // Ada
    {"L40S", 864, 362, 733, 733, 0.50, kEstimate},
    {"L40", 864, 181, 362, 362, 0.50, kEstimate},
    {"L4", 300, 121, 242, 242, 0.50, kEstimate},
    {"RTX 6000 Ada", 960, 364, 728, 728, 0.50, kEstimate},
    {"RTX 4090", 1008, 165, 330, 661, 0.50, kEstimate},
    // Ampere: int8 tensor cores, no fp8
    {"A100", 2039, 312, 0, 624, 0.62, kLlmcA100},
    {"A800", 2039, 312, 0, 624, 0.62, kLlmcA100},
    {"A30", 933, 165, 0, 330, 0.50, kEstimate},
    {"A40", 696, 150, 0, 299, 0.50, kEstimate},
    {"A10", 600, 125, 0, 250, 0.50, kEstimate},
    {"RTX A6000", 768, 155, 0, 310, 0.50, kEstimate},
    {"RTX 3090 Ti", 1008, 80, 0, 320, 0.50, kEstimate},
    {"RTX 3090", 936, 71, 0, 284, 0.50, kEstimate},
};

char lower(char c) { return char(std::tolower(static_cast<unsigned char>(c))); }
bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// True when key occurs in name (case-insensitive) with no letter or digit right before or after it.
bool contains_word(const std::string& name, const std::string& key) {
  if (key.empty() || key.size() > name.size()) return false;
  for (size_t at = 0; at + key.size() <= name.size(); ++at) {
    bool eq = true;
    for (size_t i = 0; i < key.size() && eq; ++i) eq = lower(name[at + i]) == lower(key[i]);
    if (!eq) continue;
    const bool left_ok = at == 0 || !alnum(name[at - 1]);
    const bool right_ok = at + key.size() == name.size() || !alnum(name[at + key.size()]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

}  // namespace

const DeviceSpec* find_device(const std::string& device_name) {
  for (const DeviceSpec& d : kDevices)
    if (contains_word(device_name, d.key)) return &d;
  return nullptr;
}

std::optional<double> peak_bf16_tflops(const std::string& device_name) {
  const DeviceSpec* d = find_device(device_name);
  return d ? std::optional<double>(d->peak_bf16_tflops) : std::nullopt;
}

std::string format_mfu(double achieved_tflops, std::optional<double> peak_tflops) {
  if (!peak_tflops || !(*peak_tflops > 0) || !std::isfinite(*peak_tflops) || !std::isfinite(achieved_tflops) ||
      achieved_tflops < 0)
    return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * achieved_tflops / *peak_tflops);
  return buf;
}

}  // namespace tt
