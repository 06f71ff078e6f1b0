// GPU tests for cuDNN's fused SDPA behind the public attention entry points (attention.h,
// attention_cudnn.cpp), bf16 against the CPU reference on the same storage-rounded inputs: forward
// output and logsumexp into poisoned buffers, backward accumulation into a pre-filled dqkv, head
// sizes 64 and 128, T below, at and not a multiple of cuDNN's tiles, multi-head, grouped-query and
// multi-query shapes (cuDNN's own GQA: K/V with NKV heads), T = 1 (whose backward cuDNN refuses:
// flash fallback); the lse of either implementation feeds the other's backward; the
// backward is deterministic; auto mode takes cuDNN for bf16 and the flash kernel for fp32; a call
// cuDNN refuses (misaligned tensors) falls back in auto mode and throws in cudnn mode. Skips without
// a device, without the cuDNN frontend in the build, or on GPUs older than sm80. The
// backend-selection tests at the end need no device.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "kernels/attention/attention.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/gpu/attention_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

// "" when cuDNN SDPA can be tested here, else why not.
std::string cudnn_sdpa_skip_reason() {
  std::string reason;
  if (!cuda_device_available(&reason)) return "no CUDA device: " + reason;
  if (!cudnn_sdpa_compiled()) return "no cuDNN SDPA in this build: " + cudnn_sdpa_version();
  int device = 0, major = 0;
  TT_CUDA_CHECK(cudaGetDevice(&device));
  TT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 8) return str("cuDNN's fused SDPA needs sm80 or newer; device ", device, " is sm", major, "x");
  return "";
}

#define TT_REQUIRE_CUDNN_SDPA()                            \
  do {                                                     \
    const std::string tt_skip_ = cudnn_sdpa_skip_reason(); \
    if (!tt_skip_.empty()) GTEST_SKIP() << tt_skip_;       \
  } while (0)

// T = 1 is ForwardBackwardT1's (cuDNN refuses a 1×1 backward). Multi-head first, then grouped-query
// and multi-query.
const AttentionShape kShapes[] = {
    attention_shape(2, 7, 2, 2, 64),    attention_shape(1, 33, 3, 3, 64),   attention_shape(2, 100, 2, 2, 128),
    attention_shape(1, 31, 2, 2, 128),  attention_shape(2, 64, 2, 2, 64),   attention_shape(1, 257, 1, 1, 64),
    attention_shape(2, 129, 3, 3, 128), attention_shape(1, 1000, 2, 2, 64), attention_shape(2, 7, 4, 2, 64),
    attention_shape(2, 100, 4, 1, 128), attention_shape(1, 257, 6, 3, 64),  attention_shape(2, 129, 8, 2, 128),
    attention_shape(1, 1000, 8, 1, 64),
};

constexpr AttentionBackend kCudnn = AttentionBackend::kCudnn, kFlash = AttentionBackend::kFlash;

AttentionImpl impl_of(AttentionBackend b) { return b == kCudnn ? AttentionImpl::kCudnn : AttentionImpl::kFlash; }

// Forward with backend `fwd`, backward (twice, bit-identical) with `bwd`; each call must have run on
// the implementation given (a forced backend that cannot run a call throws).
void check(const AttentionShape& s, AttentionBackend fwd, AttentionBackend bwd, AttentionImpl want_fwd,
           AttentionImpl want_bwd) {
  const std::string what =
      str("attention bf16 ", attention_backend_name(fwd), "->", attention_backend_name(bwd), " ", shape_label(s));
  SCOPED_TRACE(what);
  AttentionCase<bf16> c(s);
  {
    const ScopedAttentionBackend backend(fwd);
    attention_forward_cuda(c.d_out.get(), c.d_lse.get(), c.d_qkv.get(), s);
    EXPECT_EQ(last_attention_impl(), want_fwd);
  }
  expect_close(download(c.d_out), c.out, relative_to_max(kBF16Tolerance, c.out), what + " out");
  // Same quantity on both paths (natural-log logsumexp of the scaled scores): a log2 convention or a
  // missing scale would be off by whole units, far outside this tolerance.
  expect_close(download(c.d_lse), reference_lse(c.qkv, s), {1e-3, 1e-3}, what + " lse");

  std::vector<uint8_t> first;
  for (int run = 0; run < 2; ++run) {
    auto d_dqkv = upload<bf16>(c.dqkv0);
    {
      const ScopedAttentionBackend backend(bwd);
      attention_backward_cuda(d_dqkv.get(), c.d_dout.get(), c.d_qkv.get(), c.d_out.get(), c.d_lse.get(), s);
      EXPECT_EQ(last_attention_impl(), want_bwd);
    }
    expect_close(download(d_dqkv), c.dqkv, relative_to_max({2e-2, 2e-2}, c.dqkv), what + " dqkv (+=)");
    if (run == 0)
      first = download_bytes(d_dqkv);
    else
      expect_bit_identical(download_bytes(d_dqkv), first, what + " dqkv determinism");
  }
}

void check(const AttentionShape& s, AttentionBackend fwd, AttentionBackend bwd) {
  check(s, fwd, bwd, impl_of(fwd), impl_of(bwd));
}

TEST(AttentionCudnnGpu, ForwardBackward) {
  TT_REQUIRE_CUDNN_SDPA();
  for (const AttentionShape& s : kShapes) check(s, kCudnn, kCudnn);
}

// cuDNN runs the T = 1 forward but refuses the backward (s_q = s_kv = 1): auto mode falls back to the
// flash backward on cuDNN's lse.
TEST(AttentionCudnnGpu, ForwardBackwardT1) {
  TT_REQUIRE_CUDNN_SDPA();
  for (const AttentionShape& s :
       {attention_shape(1, 1, 1, 1, 64), attention_shape(3, 1, 2, 2, 128), attention_shape(2, 1, 4, 2, 64)})
    check(s, kCudnn, AttentionBackend::kAuto, AttentionImpl::kCudnn, AttentionImpl::kFlash);
}

// The saved lse means the same on both paths, so a backward may run on the other implementation.
TEST(AttentionCudnnGpu, LseInterchangeableWithFlash) {
  TT_REQUIRE_CUDNN_SDPA();
  for (const AttentionShape& s : {attention_shape(2, 100, 2, 2, 128), attention_shape(1, 257, 1, 1, 64),
                                  attention_shape(2, 100, 4, 2, 128), attention_shape(1, 257, 4, 1, 64)}) {
    check(s, kCudnn, kFlash);
    check(s, kFlash, kCudnn);
  }
}

TEST(AttentionCudnnGpu, AutoTakesCudnnForBf16AndFlashForF32) {
  TT_REQUIRE_CUDNN_SDPA();
  const ScopedAttentionBackend backend(AttentionBackend::kAuto);
  for (const AttentionShape& s : {attention_shape(2, 48, 2, 2, 64), attention_shape(2, 48, 4, 2, 64)}) {
    SCOPED_TRACE(shape_label(s));
    const size_t n_qkv = size_t(s.B) * s.T * s.qkv_dim(), n_out = size_t(s.B) * s.T * s.q_dim();
    DeviceBuffer<float> d_lse(size_t(s.B) * s.NH * s.T);
    {
      auto d_qkv = upload<bf16>(random_floats(n_qkv, 1));
      DeviceBuffer<bf16> d_out(n_out);
      attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv.get(), s);
      EXPECT_EQ(last_attention_impl(), AttentionImpl::kCudnn);
    }
    {
      auto d_qkv = upload<float>(random_floats(n_qkv, 1));
      DeviceBuffer<float> d_out(n_out);
      attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv.get(), s);
      EXPECT_EQ(last_attention_impl(), AttentionImpl::kFlash);
      const ScopedAttentionBackend cudnn(AttentionBackend::kCudnn);  // fp32 stays on flash even when forced
      attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv.get(), s);
      EXPECT_EQ(last_attention_impl(), AttentionImpl::kFlash);
    }
  }
  TT_CUDA_CHECK(cudaDeviceSynchronize());
}

// qkv two bytes off a 16-byte boundary: cuDNN refuses it; auto falls back to the (correct) flash
// kernel, forced cuDNN throws.
TEST(AttentionCudnnGpu, RefusedCallFallsBackInAutoAndThrowsWhenForced) {
  TT_REQUIRE_CUDNN_SDPA();
  const AttentionShape s = attention_shape(1, 40, 4, 2, 64);
  const size_t n_qkv = size_t(s.B) * s.T * s.qkv_dim(), n_out = size_t(s.B) * s.T * s.q_dim();
  const auto qkv = storage_round<bf16>(random_floats(n_qkv, 4, -1.5f, 1.5f));
  std::vector<float> padded(n_qkv + 1);
  std::copy(qkv.begin(), qkv.end(), padded.begin() + 1);
  auto d_padded = upload<bf16>(padded);
  const bf16* d_qkv = d_padded.get() + 1;
  DeviceBuffer<bf16> d_out(n_out);
  DeviceBuffer<float> d_lse(size_t(s.B) * s.NH * s.T);
  {
    const ScopedAttentionBackend cudnn(AttentionBackend::kCudnn);
    EXPECT_THROW(attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv, s), tt::Error);
  }
  const ScopedAttentionBackend backend(AttentionBackend::kAuto);
  d_out.poison();
  attention_forward_cuda(d_out.get(), d_lse.get(), d_qkv, s);
  EXPECT_EQ(last_attention_impl(), AttentionImpl::kFlash);
  std::vector<float> out(n_out), att(size_t(s.B) * s.NH * s.T * s.T);
  attention_forward_cpu(out.data(), att.data(), qkv.data(), s);
  expect_close(download(d_out), out, relative_to_max(kBF16Tolerance, out), "fallback out");
}

// ---- backend selection (no device needed) -----------------------------------------------------

TEST(AttentionBackendSelection, ParseAndNames) {
  for (AttentionBackend b : {AttentionBackend::kAuto, AttentionBackend::kFlash, AttentionBackend::kCudnn})
    EXPECT_EQ(parse_attention_backend(attention_backend_name(b)), b);
  for (const char* bad : {"", "cuDNN", "fast", "flash "}) {
    try {
      parse_attention_backend(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const tt::Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    }
  }
  const ScopedAttentionBackend flash(AttentionBackend::kFlash);
  EXPECT_EQ(attention_backend(), AttentionBackend::kFlash);
}

// Forced cuDNN with a head size it cannot take (4) throws before touching a device, with or without
// cuDNN SDPA in the build; a null gradient is still a no-op.
TEST(AttentionBackendSelection, ForcedCudnnRefusalThrows) {
  const ScopedAttentionBackend cudnn(AttentionBackend::kCudnn);
  try {
    attention_forward_cuda(static_cast<bf16*>(nullptr), nullptr, nullptr, attention_shape(1, 4, 1, 1, 4));
    ADD_FAILURE() << "forced cuDNN accepted head size 4";
  } catch (const tt::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("cudnn"), std::string::npos) << e.what();
  }
  attention_backward_cuda(static_cast<bf16*>(nullptr), nullptr, nullptr, nullptr, nullptr,
                          attention_shape(1, 4, 1, 1, 64));
}

}  // namespace
}  // namespace tt::test
