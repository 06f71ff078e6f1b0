// Helpers for the GPU test suites; see gpu_test_util.h.
#include "tests/gpu_test_util.h"

#include <cmath>
#include <sstream>

namespace tt::test {

bool cuda_device_available(std::string* reason) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (reason != nullptr) *reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error
    return false;
  }
  if (n == 0) {
    if (reason != nullptr) *reason = "the CUDA runtime reports 0 devices";
    return false;
  }
  return true;
}

std::vector<uint16_t> to_bf16_bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}

std::vector<float> from_bf16_bits(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
  return out;
}

std::vector<float> bf16_round(const std::vector<float>& v) { return from_bf16_bits(to_bf16_bits(v)); }

Tolerance relative_to_max(Tolerance t, const std::vector<float>& want) {
  double m = 1.0;
  for (float w : want)
    if (std::isfinite(w)) m = std::max(m, static_cast<double>(std::fabs(w)));
  return {t.rtol, t.atol * m};
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  double worst = 0.0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const double err = std::fabs(g - w);
    const bool ok = (std::isnan(w) && std::isnan(g)) || (g == w) || err <= tol.atol + tol.rtol * std::fabs(w);
    if (!ok) {
      if (bad < 5) first << "\n  [" << i << "] got " << g << " want " << w << " (|diff| " << err << ")";
      ++bad;
    }
    if (!std::isnan(err)) worst = std::max(worst, err);
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements outside rtol " << tol.rtol << " atol "
                     << tol.atol << " (largest finite |diff| " << worst << ")" << first.str();
}

void expect_bit_identical(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t first = a.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      first = i;
      break;
    }
  EXPECT_EQ(first, a.size()) << what << ": runs differ, first at byte " << first;
}

const char* dtype_label(float*) { return "f32"; }
const char* dtype_label(bf16*) { return "bf16"; }

}  // namespace tt::test
