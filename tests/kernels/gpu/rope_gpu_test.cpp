// GPU tests for rope.cu against the CPU reference: forward and backward in place on qkv, fp32 and
// bf16, multi-head, GQA and multi-query shapes with head sizes up to 128 and Llama 3.1 scaled
// frequencies; the v part must come back bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/rope/rope.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

AttentionShape make_shape(int B, int T, int NH, int NKV, int HD) {
  AttentionShape s;
  s.B = B, s.T = T, s.NH = NH, s.NKV = NKV, s.HD = HD;
  return s;
}

const AttentionShape kShapes[] = {
    make_shape(1, 1, 1, 1, 2),   make_shape(2, 5, 4, 4, 8),     make_shape(2, 17, 4, 2, 64),
    make_shape(3, 33, 4, 1, 32), make_shape(2, 128, 8, 2, 128), make_shape(1, 300, 12, 4, 64),
};

// Bytes of the v part of every row (positions 0 … B·T−1).
template <typename T>
std::vector<uint8_t> v_bytes(const std::vector<uint8_t>& all, const AttentionShape& s) {
  std::vector<uint8_t> v;
  const size_t row = static_cast<size_t>(s.qkv_dim()) * sizeof(T);
  const size_t v0 = static_cast<size_t>(s.NH + s.NKV) * s.HD * sizeof(T);
  for (size_t r = 0; r < static_cast<size_t>(s.B) * s.T; ++r)
    v.insert(v.end(), all.begin() + r * row + v0, all.begin() + (r + 1) * row);
  return v;
}

template <typename T>
void check(const AttentionShape& s) {
  const std::string what = std::string("rope ") + dtype_label<T>() + " B=" + std::to_string(s.B) +
                           " T=" + std::to_string(s.T) + " NH=" + std::to_string(s.NH) +
                           " NKV=" + std::to_string(s.NKV) + " HD=" + std::to_string(s.HD);
  RopeSettings settings;
  settings.theta = 500000.0f;
  settings.scaling_factor = 8.0f;
  const auto inv = rope_inv_freq(s.HD, settings);
  std::vector<float> cos(static_cast<size_t>(s.T) * inv.size()), sin(cos.size());
  rope_tables(cos.data(), sin.data(), s.T, inv);
  auto d_cos = upload<float>(cos), d_sin = upload<float>(sin);

  const size_t n = static_cast<size_t>(s.B) * s.T * s.qkv_dim();
  const auto qkv = storage_round<T>(random_floats(n, 1, -2.f, 2.f));
  auto d_qkv = upload<T>(qkv);
  const auto v_before = v_bytes<T>(download_bytes(d_qkv), s);
  rope_forward_cuda(d_qkv.get(), d_cos.get(), d_sin.get(), s);
  auto ref = qkv;
  rope_forward_cpu(ref.data(), cos.data(), sin.data(), s);
  expect_close(download(d_qkv), ref, default_tolerance<T>(), what + " forward");
  expect_bit_identical(v_bytes<T>(download_bytes(d_qkv), s), v_before, what + " forward leaves v");

  const auto dqkv = storage_round<T>(random_floats(n, 2));
  auto d_dqkv = upload<T>(dqkv);
  rope_backward_cuda(d_dqkv.get(), d_cos.get(), d_sin.get(), s);
  auto dref = dqkv;
  rope_backward_cpu(dref.data(), cos.data(), sin.data(), s);
  expect_close(download(d_dqkv), dref, default_tolerance<T>(), what + " backward");
  expect_bit_identical(v_bytes<T>(download_bytes(d_dqkv), s), v_bytes<T>(download_bytes(upload<T>(dqkv)), s),
                       what + " backward leaves v");
}

TEST(RopeGpu, F32) {
  TT_REQUIRE_GPU();
  for (const auto& s : kShapes) check<float>(s);
}
TEST(RopeGpu, BF16) {
  TT_REQUIRE_GPU();
  for (const auto& s : kShapes) check<bf16>(s);
}

}  // namespace
}  // namespace tt::test
