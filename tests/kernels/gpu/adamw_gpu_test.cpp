// GPU tests for adamw.cu: fp32 and bf16 gradients against the CPU reference, the mixed-precision
// variant writing a bf16 copy with round-to-nearest and with seeded stochastic rounding (checked
// bit for bit against the shared host functions, per step deterministic, unbiased on average).
#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.h"
#include "kernels/adamw/adamw.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

const int64_t kSizes[] = {1, 1000, 100003};
const AdamWHyper kHyper{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 7};

template <typename G>
void check_update(int64_t n) {
  const std::string what = str("adamw grad ", dtype_label<G>(), " n=", n);
  const auto param0 = random_floats(n, 1), m0 = random_floats(n, 2, -0.1f, 0.1f), v0 = random_floats(n, 3, 0.f, 0.01f);
  const auto grad = storage_round<G>(random_floats(n, 4));
  auto param = param0, m = m0, v = v0;
  adamw_update_cpu(param.data(), m.data(), v.data(), grad.data(), n, kHyper, 0.5f);
  auto d_p = upload<float>(param0), d_m = upload<float>(m0), d_v = upload<float>(v0);
  auto d_g = upload<G>(grad);
  adamw_update_cuda(d_p.get(), d_m.get(), d_v.get(), d_g.get(), n, kHyper, 0.5f);
  expect_close(download(d_p), param, kF32Tolerance, what + " param");
  expect_close(download(d_m), m, kF32Tolerance, what + " m");
  expect_close(download(d_v), v, kF32Tolerance, what + " v");
  EXPECT_EQ(download(d_g), grad) << what << " grad must not be written";
}

TEST(AdamWGpu, MatchesCpuF32Grad) {
  TT_REQUIRE_GPU();
  for (int64_t n : kSizes) check_update<float>(n);
}
TEST(AdamWGpu, MatchesCpuBF16Grad) {
  TT_REQUIRE_GPU();
  for (int64_t n : kSizes) check_update<bf16>(n);
}

std::vector<uint16_t> download_bits(const DeviceBuffer<bf16>& d) {
  const auto bytes = download_bytes(d);
  std::vector<uint16_t> bits(d.size());
  std::memcpy(bits.data(), bytes.data(), bytes.size());
  return bits;
}

TEST(AdamWGpu, MixedPrecisionRounding) {
  TT_REQUIRE_GPU();
  const int64_t n = 100003;
  const auto param0 = random_floats(n, 1), m0 = random_floats(n, 2, -0.1f, 0.1f), v0 = random_floats(n, 3, 0.f, 0.01f);
  const auto grad = bf16_round(random_floats(n, 4));
  auto d_g = upload<bf16>(grad);
  for (bool stochastic : {false, true}) {
    const BF16Rounding rounding{stochastic, 1234, 1000};
    std::vector<uint16_t> first;
    for (int run = 0; run < 2; ++run) {
      auto d_p = upload<float>(param0), d_m = upload<float>(m0), d_v = upload<float>(v0);
      DeviceBuffer<bf16> d_pb(n);
      d_pb.poison();
      adamw_update_mixed_cuda(d_p.get(), d_m.get(), d_v.get(), d_pb.get(), d_g.get(), n, kHyper, 1.0f, rounding);
      const auto master = download(d_p);
      auto ref = param0, m = m0, v = v0;
      adamw_update_cpu(ref.data(), m.data(), v.data(), grad.data(), n, kHyper, 1.0f);
      expect_close(master, ref, kF32Tolerance, "mixed master");
      const auto bits = download_bits(d_pb);
      size_t wrong = 0, up = 0;
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t want =
            stochastic ? f32_to_bf16_stochastic(
                             master[i], adamw_rounding_bits(rounding.seed, kHyper.step, rounding.index_base + i))
                       : f32_to_bf16(master[i]);
        wrong += bits[i] != want;
        up += std::fabs(bf16_to_f32(bits[i])) > std::fabs(master[i]);
      }
      EXPECT_EQ(wrong, 0u) << (stochastic ? "stochastic" : "nearest") << " rounding differs from the host emulation";
      if (stochastic) {  // rounds away from zero about half the time for random low bits
        EXPECT_GT(up, size_t(n) * 4 / 10);
        EXPECT_LT(up, size_t(n) * 6 / 10);
      }
      if (run == 0)
        first = bits;
      else
        EXPECT_EQ(bits, first) << "two runs of the same step must round identically";
    }
  }
}

// Host-only: the stochastic rounding helper is unbiased and never leaves the two neighbours.
TEST(AdamWGpu, StochasticRoundingHelperIsUnbiased) {
  const float x = 1.0f + 0.3f * 0.0078125f;  // 30% of the way from 1 to the next bf16 value
  int up = 0;
  const int trials = 100000;
  for (int i = 0; i < trials; ++i) {
    const float r = bf16_to_f32(f32_to_bf16_stochastic(x, adamw_rounding_bits(42, 1, i)));
    ASSERT_TRUE(r == 1.0f || r == 1.0078125f) << r;
    up += r > 1.0f;
  }
  EXPECT_NEAR(static_cast<double>(up) / trials, 0.3, 0.01);
}

}  // namespace
}  // namespace tt::test
