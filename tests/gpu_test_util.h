// Helpers for the GPU test suites (test_kernels_gpu, label "gpu"): device detection with a skip
// macro, RAII device buffers, host<->device copies with fp32<->bf16 conversion, output poisoning
// and tolerance / bit-identity comparisons.
// Design: every CUDA kernel test runs the CPU reference on the same (storage-rounded) inputs and
// compares; outputs are poisoned with all-ones bytes (a NaN in fp32 and bf16) before a kernel runs
// so any element it fails to write shows up as NaN. Tests skip, never fail, without a device.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cuda_check.h"
#include "core/dtype.h"

namespace tt::test {

// True when the CUDA runtime sees at least one usable device; otherwise fills *reason.
bool cuda_device_available(std::string* reason = nullptr);

// First statement of a GPU test: skips it (GTEST_SKIP) with "no CUDA device: <reason>".
#define TT_REQUIRE_GPU()                                                                                           \
  do {                                                                                                             \
    std::string tt_gpu_reason_;                                                                                    \
    if (!::tt::test::cuda_device_available(&tt_gpu_reason_)) GTEST_SKIP() << "no CUDA device: " << tt_gpu_reason_; \
  } while (0)

using bf16 = __nv_bfloat16;

// Owns n elements of device memory (cudaMalloc / cudaFree).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n_ > 0) TT_CUDA_CHECK(cudaMalloc(&ptr_, n_ * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    return *this;
  }
  T* get() const { return ptr_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  // All bytes 0xFF: NaN in fp32 and bf16, -1 in int32.
  void poison() {
    if (n_ > 0) TT_CUDA_CHECK(cudaMemset(ptr_, 0xFF, bytes()));
  }
  void zero() {
    if (n_ > 0) TT_CUDA_CHECK(cudaMemset(ptr_, 0, bytes()));
  }

 private:
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

// ---- bf16 on the host (uint16_t bit patterns, RNE as the device) --------------------------------
std::vector<uint16_t> to_bf16_bits(const std::vector<float>& v);
std::vector<float> from_bf16_bits(const std::vector<uint16_t>& v);
// Round trip through bf16: the values a bf16 tensor holding v really has.
std::vector<float> bf16_round(const std::vector<float>& v);

// Values as stored in T (identity for float, bf16_round for bf16).
template <typename T>
std::vector<float> storage_round(const std::vector<float>& v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return bf16_round(v);
}

// ---- copies ----------------------------------------------------------------------------------
// Device copy of host fp32 values converted to T (bf16: round to nearest even).
template <typename T>
DeviceBuffer<T> upload(const std::vector<float>& host) {
  DeviceBuffer<T> d(host.size());
  if (host.empty()) return d;
  if constexpr (std::is_same_v<T, float>) {
    TT_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), d.bytes(), cudaMemcpyHostToDevice));
  } else {
    static_assert(std::is_same_v<T, bf16>, "upload<T>: float or bf16");
    const auto bits = to_bf16_bits(host);
    TT_CUDA_CHECK(cudaMemcpy(d.get(), bits.data(), d.bytes(), cudaMemcpyHostToDevice));
  }
  return d;
}

// Raw element copies (ints, or bit patterns).
template <typename T>
DeviceBuffer<T> upload_raw(const std::vector<T>& host) {
  DeviceBuffer<T> d(host.size());
  if (!host.empty()) TT_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

// Synchronises the device (so asynchronous errors surface here) and returns the values as fp32.
template <typename T>
std::vector<float> download(const DeviceBuffer<T>& d) {
  TT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(d.size());
  if (d.size() == 0) return out;
  if constexpr (std::is_same_v<T, float>) {
    TT_CUDA_CHECK(cudaMemcpy(out.data(), d.get(), d.bytes(), cudaMemcpyDeviceToHost));
  } else {
    std::vector<uint16_t> bits(d.size());
    TT_CUDA_CHECK(cudaMemcpy(bits.data(), d.get(), d.bytes(), cudaMemcpyDeviceToHost));
    out = from_bf16_bits(bits);
  }
  return out;
}

// Bit patterns of the elements (for bit-identity checks), after a device synchronisation.
template <typename T>
std::vector<uint8_t> download_bytes(const DeviceBuffer<T>& d) {
  TT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint8_t> out(d.bytes());
  if (!out.empty()) TT_CUDA_CHECK(cudaMemcpy(out.data(), d.get(), d.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

// ---- comparisons -----------------------------------------------------------------------------
struct Tolerance {
  double rtol, atol;
};
constexpr Tolerance kF32Tolerance{1e-5, 1e-5};
constexpr Tolerance kBF16Tolerance{1e-2, 1e-2};
template <typename T>
constexpr Tolerance default_tolerance() {
  return std::is_same_v<T, float> ? kF32Tolerance : kBF16Tolerance;
}
// tol with atol scaled by max(1, max |want|): for sums whose magnitude grows with the problem and
// whose small elements come from cancellation.
Tolerance relative_to_max(Tolerance t, const std::vector<float>& want);

// Every got[i] finite-or-equal to want[i] and |got - want| <= atol + rtol·|want|; reports the
// number of failures and the first few indices (a NaN in got is an unwritten, poisoned element).
void expect_close(const std::vector<float>& got, const std::vector<float>& want, Tolerance tol,
                  const std::string& what);
void expect_bit_identical(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const std::string& what);

const char* dtype_label(float*);
const char* dtype_label(bf16*);
template <typename T>
const char* dtype_label() {
  return dtype_label(static_cast<T*>(nullptr));
}

}  // namespace tt::test
