// GPU tests for state8.cu against the CPU reference (state8_cpu.cpp), bit for bit: block-wise 8-bit
// quantise / dequantise on runs that start mid-block and end in a tail, the 8-bit-state and
// bf16-state AdamW with fp32 and bf16 gradients over several steps (parameters, codes, absmax and
// bf16 moments identical), and the mixed variants (fp32 master identical to the CPU, bf16 copy equal
// to the host rounding of the master, nearest and stochastic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "kernels/adamw/adamw.h"
#include "kernels/adamw/state8.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

// (global_begin, n): one element, a partial first block and a tail, a large misaligned run, aligned.
const std::pair<int64_t, int64_t> kRuns[] = {{0, 1}, {100, 1000}, {300, 100003}, {0, 65536}};

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

DeviceBuffer<bf16> upload_bits(const std::vector<uint16_t>& bits) {
  DeviceBuffer<bf16> d(bits.size());
  if (!bits.empty()) TT_CUDA_CHECK(cudaMemcpy(d.get(), bits.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

std::vector<uint16_t> download_bits(const DeviceBuffer<bf16>& d) {
  const auto bytes = download_bytes(d);
  std::vector<uint16_t> bits(d.size());
  if (!bits.empty()) std::memcpy(bits.data(), bytes.data(), bytes.size());
  return bits;
}

// Values whose scale changes from block to block of the global grid (squares for the unsigned map).
std::vector<float> state_values(int64_t n, int64_t global_begin, bool is_signed, uint64_t seed) {
  auto x = random_floats(n, seed);
  const auto scales = random_floats(n / kState8Block + 2, seed + 1, -4.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float s = std::pow(10.0f, scales[(global_begin + i) / kState8Block - global_begin / kState8Block]);
    x[i] = is_signed ? x[i] * s : x[i] * x[i] * s;
  }
  if (n > 40) x[40] = 0.0f;
  return x;
}

TEST(State8Gpu, QuantizeDequantizeMatchCpu) {
  TT_REQUIRE_GPU();
  for (bool is_signed : {true, false}) {
    for (const auto& [begin, n] : kRuns) {
      const std::string what = str("signed=", is_signed, " run ", begin, "+", n);
      auto x = state_values(n, begin, is_signed, 3);
      if (n >= 1000) std::fill(x.begin() + 200, x.begin() + 600, 0.0f);  // an all-zero block
      const int64_t blocks = state8_blocks(begin, n);
      std::vector<uint8_t> codes(n);
      std::vector<float> absmax(blocks), y(n);
      quantize_state8_cpu(codes.data(), absmax.data(), x.data(), n, begin, is_signed);
      dequantize_state8_cpu(y.data(), codes.data(), absmax.data(), n, begin, is_signed);

      auto d_x = upload<float>(x);
      DeviceBuffer<uint8_t> d_codes(n);
      DeviceBuffer<float> d_absmax(blocks), d_y(n);
      d_codes.poison();
      d_absmax.poison();
      d_y.poison();
      quantize_state8_cuda(d_codes.get(), d_absmax.get(), d_x.get(), n, begin, is_signed);
      expect_bit_identical(download_bytes(d_codes), codes, what + " codes");
      expect_bit_identical(download_bytes(d_absmax), bytes_of(absmax), what + " absmax");
      auto d_codes_cpu = upload_raw<uint8_t>(codes);
      auto d_absmax_cpu = upload<float>(absmax);
      dequantize_state8_cuda(d_y.get(), d_codes_cpu.get(), d_absmax_cpu.get(), n, begin, is_signed);
      expect_bit_identical(download_bytes(d_y), bytes_of(y), what + " dequantised");
    }
  }
}

// Random 8-bit state: quantised random moments.
struct State8 {
  std::vector<uint8_t> m_codes, v_codes;
  std::vector<float> m_absmax, v_absmax;
  State8(int64_t n, int64_t begin) : m_codes(n), v_codes(n) {
    const int64_t blocks = state8_blocks(begin, n);
    m_absmax.resize(blocks);
    v_absmax.resize(blocks);
    const auto m = state_values(n, begin, true, 5), v = state_values(n, begin, false, 6);
    quantize_state8_cpu(m_codes.data(), m_absmax.data(), m.data(), n, begin, true);
    quantize_state8_cpu(v_codes.data(), v_absmax.data(), v.data(), n, begin, false);
  }
};

AdamWHyper hyper(int64_t step) { return AdamWHyper{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step}; }
constexpr int kSteps = 3;

// mixed: none (fp32 params), or the bf16 copy with nearest / stochastic rounding.
enum class Mixed { kNone, kNearest, kStochastic };

// The bf16 working copy of a mixed update: the fp32 master rounded as `rounding` says, element by element.
void expect_rounded_copy(const std::vector<uint16_t>& bits, const std::vector<float>& master, Mixed mixed,
                         const BF16Rounding& rounding, int64_t step, const std::string& at) {
  size_t wrong = 0;
  for (size_t i = 0; i < master.size(); ++i) {
    const uint16_t want = mixed == Mixed::kStochastic
                              ? f32_to_bf16_stochastic(master[i], adamw_rounding_bits(rounding.seed, step,
                                                                                      rounding.index_base + int64_t(i)))
                              : f32_to_bf16(master[i]);
    wrong += bits[i] != want;
  }
  EXPECT_EQ(wrong, 0u) << at << ": bf16 copy differs from the rounded master";
}

template <typename G>
void check_state8(int64_t begin, int64_t n, Mixed mixed) {
  const std::string what = str("state8 grad ", dtype_label<G>(), " run ", begin, "+", n, " mixed ", int(mixed));
  const BF16Rounding rounding{mixed == Mixed::kStochastic, 99, begin};
  const State8 s0(n, begin);
  auto param = random_floats(n, 1);
  State8 s = s0;
  auto d_p = upload<float>(param);
  auto d_mc = upload_raw<uint8_t>(s0.m_codes), d_vc = upload_raw<uint8_t>(s0.v_codes);
  auto d_ma = upload<float>(s0.m_absmax), d_va = upload<float>(s0.v_absmax);
  DeviceBuffer<bf16> d_pb(n);
  for (int64_t step = 1; step <= kSteps; ++step) {
    const auto grad = storage_round<G>(random_floats(n, 10 + step));
    adamw_update_state8_cpu(param.data(), s.m_codes.data(), s.m_absmax.data(), s.v_codes.data(), s.v_absmax.data(),
                            grad.data(), n, begin, hyper(step), 0.5f);
    auto d_g = upload<G>(grad);
    d_pb.poison();
    if (mixed == Mixed::kNone)
      adamw_update_state8_cuda(d_p.get(), d_mc.get(), d_ma.get(), d_vc.get(), d_va.get(), d_g.get(), n, begin,
                               hyper(step), 0.5f);
    else
      adamw_update_state8_mixed_cuda(d_p.get(), d_mc.get(), d_ma.get(), d_vc.get(), d_va.get(), d_pb.get(), d_g.get(),
                                     n, begin, hyper(step), 0.5f, rounding);
    const std::string at = what + str(" step ", step);
    expect_bit_identical(download_bytes(d_p), bytes_of(param), at + " param");
    expect_bit_identical(download_bytes(d_mc), s.m_codes, at + " m codes");
    expect_bit_identical(download_bytes(d_vc), s.v_codes, at + " v codes");
    expect_bit_identical(download_bytes(d_ma), bytes_of(s.m_absmax), at + " m absmax");
    expect_bit_identical(download_bytes(d_va), bytes_of(s.v_absmax), at + " v absmax");
    if (mixed != Mixed::kNone) expect_rounded_copy(download_bits(d_pb), param, mixed, rounding, step, at);
  }
  if (n >= 1000) EXPECT_NE(s.m_codes, s0.m_codes) << what << ": the state did not move";
}

TEST(State8Gpu, UpdateMatchesCpuF32Grad) {
  TT_REQUIRE_GPU();
  for (const auto& [begin, n] : kRuns) check_state8<float>(begin, n, Mixed::kNone);
}
TEST(State8Gpu, UpdateMatchesCpuBF16Grad) {
  TT_REQUIRE_GPU();
  for (const auto& [begin, n] : kRuns) check_state8<bf16>(begin, n, Mixed::kNone);
}
TEST(State8Gpu, MixedUpdateMatchesCpu) {
  TT_REQUIRE_GPU();
  for (Mixed mixed : {Mixed::kNearest, Mixed::kStochastic}) {
    check_state8<float>(300, 100003, mixed);
    check_state8<bf16>(100, 1000, mixed);
  }
}

template <typename G>
void check_bf16_state(int64_t n, Mixed mixed) {
  const std::string what = str("bf16 state grad ", dtype_label<G>(), " n=", n, " mixed ", int(mixed));
  const BF16Rounding rounding{mixed == Mixed::kStochastic, 7, 1000};
  auto param = random_floats(n, 1);
  auto m = to_bf16_bits(random_floats(n, 2, -0.1f, 0.1f)), v = to_bf16_bits(random_floats(n, 3, 0.0f, 0.01f));
  auto d_p = upload<float>(param);
  auto d_m = upload_bits(m), d_v = upload_bits(v);
  DeviceBuffer<bf16> d_pb(n);
  for (int64_t step = 1; step <= kSteps; ++step) {
    const auto grad = storage_round<G>(random_floats(n, 10 + step));
    adamw_update_bf16_state_cpu(param.data(), m.data(), v.data(), grad.data(), n, hyper(step), 0.5f);
    auto d_g = upload<G>(grad);
    d_pb.poison();
    if (mixed == Mixed::kNone)
      adamw_update_bf16_state_cuda(d_p.get(), d_m.get(), d_v.get(), d_g.get(), n, hyper(step), 0.5f);
    else
      adamw_update_bf16_state_mixed_cuda(d_p.get(), d_m.get(), d_v.get(), d_pb.get(), d_g.get(), n, hyper(step), 0.5f,
                                         rounding);
    const std::string at = what + str(" step ", step);
    expect_bit_identical(download_bytes(d_p), bytes_of(param), at + " param");
    expect_bit_identical(download_bytes(d_m), bytes_of(m), at + " m");
    expect_bit_identical(download_bytes(d_v), bytes_of(v), at + " v");
    if (mixed != Mixed::kNone) expect_rounded_copy(download_bits(d_pb), param, mixed, rounding, step, at);
  }
}

TEST(State8Gpu, BF16StateMatchesCpu) {
  TT_REQUIRE_GPU();
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{100003}}) {
    check_bf16_state<float>(n, Mixed::kNone);
    check_bf16_state<bf16>(n, Mixed::kNone);
  }
  for (Mixed mixed : {Mixed::kNearest, Mixed::kStochastic}) {
    check_bf16_state<float>(100003, mixed);
    check_bf16_state<bf16>(1000, mixed);
  }
}

}  // namespace
}  // namespace tt::test
