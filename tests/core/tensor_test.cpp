// Tensor views, allocator accounting and budget errors, dtype round trips.
#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/allocator.h"
#include "core/dtype.h"

namespace tt {
namespace {

TEST(Tensor, ZerosAndViewsShareStorage) {
  Tensor t = Tensor::zeros("buf", {4, 3});
  EXPECT_EQ(t.numel(), 12);
  EXPECT_EQ(t.nbytes(), 48u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
  Tensor v = t.slice_view("row2", 6, {3});
  v.data<float>()[1] = 5.0f;
  EXPECT_EQ(t.data<float>()[7], 5.0f);
  EXPECT_EQ(v.name(), "row2");
  EXPECT_EQ(shape_str(t.shape()), "[4, 3]");
  EXPECT_THROW(t.slice_view("too far", 10, {3}), Error);
}

TEST(Allocator, TracksCurrentAndPeakPerDevice) {
  const Device cpu = Device::cpu();
  const size_t before = memory_stats(cpu).current_bytes;
  reset_peak_memory(cpu);
  {
    Tensor a = Tensor::zeros("a", {1024});
    Tensor b = Tensor::zeros("b", {2048});
    EXPECT_EQ(memory_stats(cpu).current_bytes, before + 3 * 4096);
    Tensor view = b.slice_view("view", 0, {10});  // views allocate nothing
    EXPECT_EQ(memory_stats(cpu).current_bytes, before + 3 * 4096);
  }
  EXPECT_EQ(memory_stats(cpu).current_bytes, before);
  EXPECT_EQ(memory_stats(cpu).peak_bytes, before + 3 * 4096);
}

TEST(Allocator, BudgetErrorNamesTensorSizeAndBudget) {
  const Device cpu = Device::cpu();
  set_memory_budget(cpu, memory_stats(cpu).current_bytes + 1000000);
  Tensor ok = Tensor::zeros("small", {1000});
  try {
    Tensor big = Tensor::zeros("activations.fch", {1000000});
    FAIL() << "expected a memory error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMemory);
    const std::string m = e.what();
    EXPECT_NE(m.find("activations.fch"), std::string::npos) << m;
    EXPECT_NE(m.find("3.81 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("memory_budget_bytes"), std::string::npos) << m;
  }
  set_memory_budget(cpu, 0);
  Tensor now_fine = Tensor::zeros("activations.fch", {1000000});
}

TEST(Device, ParseAndPrint) {
  EXPECT_EQ(Device::parse("cpu").str(), "cpu");
  EXPECT_EQ(Device::parse("cuda:3").str(), "cuda:3");
  EXPECT_THROW(Device::parse("gpu0"), Error);
  EXPECT_THROW(Device::parse("cuda:x"), Error);
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(3.140625f)), 3.140625f);
  // 1 + 2^-8 is exactly halfway between 1 and 1+2^-7 -> ties to even (1.0).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16AndFp8RoundTripsAndSaturation) {
  EXPECT_EQ(f16_to_f32(f32_to_f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(65520.0f))));
  EXPECT_EQ(f16_to_f32(f32_to_f16(5.960464477539063e-08f)), 5.960464477539063e-08f);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(448.0f)), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1000.0f)), 448.0f);  // saturates
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(-0.3f)), -0.3125f);
  EXPECT_EQ(f32_to_fp8_e4m3(1.0f), 0x38);
  EXPECT_EQ(fp8_e5m2_to_f32(f32_to_fp8_e5m2(57344.0f)), 57344.0f);
  EXPECT_EQ(f32_to_fp8_e5m2(1.0f), 0x3c);
  // Every fp8 code decodes and re-encodes to itself (except NaNs).
  for (int c = 0; c < 256; ++c) {
    float a = fp8_e4m3_to_f32(uint8_t(c));
    if (!std::isnan(a)) EXPECT_EQ(f32_to_fp8_e4m3(a), uint8_t(c) == 0x80 ? 0x80 : uint8_t(c)) << c;
    float b = fp8_e5m2_to_f32(uint8_t(c));
    if (std::isfinite(b)) EXPECT_EQ(f32_to_fp8_e5m2(b), uint8_t(c)) << c;
  }
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_from_name("fp8e4m3"), DType::kFP8E4M3);
  EXPECT_THROW(dtype_from_name("f64"), Error);
}

}  // namespace
}  // namespace tt
