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

struct PeakEntry {
  const char* key;  // whole-word, case-insensitive
  double tflops;
};

// Most specific first: the first key found in the name wins.
constexpr PeakEntry kPeakBf16[] = {
    // Hopper
    {"GH200", 989},
    {"H200 NVL", 835},
    {"H200", 989},
    {"H100 NVL", 835},
    {"H100 PCIe", 756},
    {"H100", 989},  // SXM5: "NVIDIA H100 80GB HBM3"
    {"H800 PCIe", 756},
    {"H800", 989},
    // Ada
    {"L40S", 362},
    {"L40", 181},
    {"L4", 121},
    {"RTX 6000 Ada", 364},
    {"RTX 4090", 165},
    // Ampere
    {"A100", 312},
    {"A800", 312},
    {"A30", 165},
    {"A40", 150},
    {"A10", 125},
    {"RTX A6000", 155},
    {"RTX 3090 Ti", 80},
    {"RTX 3090", 71},
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

std::optional<double> peak_bf16_tflops(const std::string& device_name) {
  for (const PeakEntry& e : kPeakBf16)
    if (contains_word(device_name, e.key)) return e.tflops;
  return std::nullopt;
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
