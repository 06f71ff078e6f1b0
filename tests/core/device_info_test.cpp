// The GPU peak table and MFU formatting: real CUDA device names map to their spec-sheet peak, and
// anything unknown (or without bf16 tensor cores) yields "n/a" rather than a guessed percentage.
#include "core/device_info.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tt {
namespace {

double peak(const std::string& name) { return peak_bf16_tflops(name).value_or(-1); }

TEST(DeviceInfo, KnownCudaDeviceNames) {
  EXPECT_EQ(peak("NVIDIA GeForce RTX 4090"), 165);
  EXPECT_EQ(peak("NVIDIA GeForce RTX 3090"), 71);
  EXPECT_EQ(peak("NVIDIA GeForce RTX 3090 Ti"), 80);
  EXPECT_EQ(peak("NVIDIA A100-SXM4-80GB"), 312);
  EXPECT_EQ(peak("NVIDIA A100-PCIE-40GB"), 312);
  EXPECT_EQ(peak("NVIDIA H100 80GB HBM3"), 989);
  EXPECT_EQ(peak("NVIDIA H100 PCIe"), 756);
  EXPECT_EQ(peak("NVIDIA H100 NVL"), 835);
  EXPECT_EQ(peak("NVIDIA H200"), 989);
  EXPECT_EQ(peak("NVIDIA H200 NVL"), 835);
  EXPECT_EQ(peak("NVIDIA GH200 480GB"), 989);
  EXPECT_EQ(peak("NVIDIA L40S"), 362);
  EXPECT_EQ(peak("NVIDIA L40"), 181);
  EXPECT_EQ(peak("NVIDIA L4"), 121);
  EXPECT_EQ(peak("NVIDIA A10"), 125);
  EXPECT_EQ(peak("NVIDIA RTX A6000"), 155);
  EXPECT_EQ(peak("NVIDIA RTX 6000 Ada Generation"), 364);
}

TEST(DeviceInfo, PeaksPerPrecisionBandwidthAndCalibration) {
  // The GPUs the planner is asked about: fp8 on Ada and Hopper only, int8 from Ampere on.
  struct Want {
    const char* name;
    double bw, bf16, fp8, int8;
  };
  for (const Want& w : {Want{"NVIDIA GeForce RTX 4090", 1008, 165, 330, 661},
                        Want{"NVIDIA GeForce RTX 3090", 936, 71, 0, 284},
                        Want{"NVIDIA A100-SXM4-80GB", 2039, 312, 0, 624},
                        Want{"NVIDIA H100 80GB HBM3", 3350, 989, 1979, 1979},
                        Want{"NVIDIA H200", 4800, 989, 1979, 1979}}) {
    const DeviceSpec* d = find_device(w.name);
    ASSERT_NE(d, nullptr) << w.name;
    EXPECT_EQ(d->mem_bw_gbps, w.bw) << w.name;
    EXPECT_EQ(d->peak_bf16_tflops, w.bf16) << w.name;
    EXPECT_EQ(d->peak_fp8_tflops, w.fp8) << w.name;
    EXPECT_EQ(d->peak_int8_tops, w.int8) << w.name;
    EXPECT_GT(d->training_efficiency, 0.3) << w.name;
    EXPECT_LT(d->training_efficiency, 0.8) << w.name;
    EXPECT_GT(std::string(d->efficiency_source).size(), 8u) << w.name;
  }
  EXPECT_NE(std::string(find_device("NVIDIA A100-SXM4-80GB")->efficiency_source).find("llm.c"), std::string::npos);
  EXPECT_NE(std::string(find_device("NVIDIA GeForce RTX 4090")->efficiency_source).find("estimate"), std::string::npos);
  EXPECT_EQ(find_device("Some Future GPU"), nullptr);
}

TEST(DeviceInfo, MatchingIsCaseInsensitive) {
  EXPECT_EQ(peak("nvidia geforce rtx 4090"), 165);
  EXPECT_EQ(peak("NVIDIA H100 PCIE"), 756);
}

TEST(DeviceInfo, WholeWordsOnly) {
  // "A10" must not claim the A100 or the (different) A10G; "L4" must not claim the L40.
  EXPECT_EQ(peak("NVIDIA A100 80GB PCIe"), 312);
  EXPECT_FALSE(peak_bf16_tflops("NVIDIA A10G").has_value());
  EXPECT_EQ(peak("NVIDIA L40"), 181);
  EXPECT_FALSE(peak_bf16_tflops("NVIDIA GeForce RTX 40900").has_value());
}

TEST(DeviceInfo, UnknownOrNoBf16GivesNothing) {
  for (const char* name : {"", "cpu", "Tesla V100-SXM2-32GB", "Tesla T4", "NVIDIA GeForce GTX 1080 Ti",
                           "Quadro RTX 6000", "AMD Instinct MI300X", "NVIDIA Future GPU 9000"})
    EXPECT_FALSE(peak_bf16_tflops(name).has_value()) << name;
}

TEST(DeviceInfo, FormatMfu) {
  EXPECT_EQ(format_mfu(477.7, 989.0), "48.3%");
  EXPECT_EQ(format_mfu(0, 165.0), "0.0%");
  EXPECT_EQ(format_mfu(82.5, peak_bf16_tflops("NVIDIA GeForce RTX 4090")), "50.0%");
}

TEST(DeviceInfo, FormatMfuNeverGuesses) {
  EXPECT_EQ(format_mfu(100, std::nullopt), "n/a");
  EXPECT_EQ(format_mfu(100, peak_bf16_tflops("NVIDIA Future GPU 9000")), "n/a");
  EXPECT_EQ(format_mfu(100, 0.0), "n/a");
  EXPECT_EQ(format_mfu(100, -5.0), "n/a");
  EXPECT_EQ(format_mfu(-1, 989.0), "n/a");
  EXPECT_EQ(format_mfu(std::numeric_limits<double>::quiet_NaN(), 989.0), "n/a");
  EXPECT_EQ(format_mfu(std::numeric_limits<double>::infinity(), 989.0), "n/a");
}

}  // namespace
}  // namespace tt
