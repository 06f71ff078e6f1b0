// GPU tests for embedding.cu: forward gather; backward with pre-filled gradients (+=), repeated and
// very frequent tokens, Vp not a multiple of the 32-row bucket, C not a multiple of the 256-column
// tile. The fp32 backward sums every element in the same order as the CPU reference, so it must be
// bit-identical to it (and across runs); bf16 is compared with a tolerance.
#include <gtest/gtest.h>

#include "kernels/embedding/embedding.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

struct Shape {
  int B, T, C, Vp, vocab_used;  // tokens drawn from [0, vocab_used)
};
const Shape kShapes[] = {
    {1, 1, 1, 1, 1}, {2, 5, 7, 11, 11}, {4, 33, 300, 1000, 7}, {3, 64, 257, 70, 70}, {8, 128, 768, 2049, 2049}};

template <typename T>
void check(Shape s, bool hot_token) {
  const std::string what = str("embedding ", dtype_label<T>(), " B=", s.B, " T=", s.T, " C=", s.C, " Vp=", s.Vp,
                               hot_token ? " hot-token" : "");
  const size_t rows = size_t(s.B) * s.T;
  auto tokens = random_tokens(rows, s.vocab_used, 1);
  tokens.back() = s.Vp - 1;  // the last vocabulary row (last, partial bucket)
  if (hot_token)
    for (size_t i = 0; i < rows; i += 2) tokens[i] = s.Vp / 2;
  const auto wte = storage_round<T>(random_floats(size_t(s.Vp) * s.C, 2));
  const auto wpe = storage_round<T>(random_floats(size_t(s.T) * s.C, 3));
  auto d_tokens = upload_raw(tokens);
  auto d_wte = upload<T>(wte), d_wpe = upload<T>(wpe);

  DeviceBuffer<T> d_out(rows * s.C);
  d_out.poison();
  embedding_forward_cuda(d_out.get(), d_tokens.get(), d_wte.get(), d_wpe.get(), s.B, s.T, s.C);
  std::vector<float> out(rows * s.C);
  embedding_forward_cpu(out.data(), tokens.data(), wte.data(), wpe.data(), s.B, s.T, s.C);
  expect_close(download(d_out), out, default_tolerance<T>(), what + " forward");

  const auto dout = storage_round<T>(random_floats(rows * s.C, 4));
  const auto dwte0 = storage_round<T>(random_floats(size_t(s.Vp) * s.C, 5));
  const auto dwpe0 = storage_round<T>(random_floats(size_t(s.T) * s.C, 6));
  auto dwte = dwte0, dwpe = dwpe0;
  embedding_backward_cpu(dwte.data(), dwpe.data(), dout.data(), tokens.data(), s.B, s.T, s.C);
  auto d_dout = upload<T>(dout);
  std::vector<uint8_t> first_wte, first_wpe;
  for (int run = 0; run < 2; ++run) {
    auto d_dwte = upload<T>(dwte0), d_dwpe = upload<T>(dwpe0);
    embedding_backward_cuda(d_dwte.get(), d_dwpe.get(), d_dout.get(), d_tokens.get(), s.B, s.T, s.C, s.Vp);
    const auto got_wte = download(d_dwte), got_wpe = download(d_dwpe);
    if constexpr (std::is_same_v<T, float>) {
      EXPECT_EQ(got_wte, dwte) << what << " dwte must equal the CPU reference bit for bit";
      EXPECT_EQ(got_wpe, dwpe) << what << " dwpe must equal the CPU reference bit for bit";
    } else {
      expect_close(got_wte, dwte, relative_to_max(default_tolerance<T>(), dwte), what + " dwte");
      expect_close(got_wpe, dwpe, relative_to_max(default_tolerance<T>(), dwpe), what + " dwpe");
    }
    if (run == 0) {
      first_wte = download_bytes(d_dwte), first_wpe = download_bytes(d_dwpe);
    } else {
      expect_bit_identical(download_bytes(d_dwte), first_wte, what + " dwte determinism");
      expect_bit_identical(download_bytes(d_dwpe), first_wpe, what + " dwpe determinism");
    }
  }
  // dwpe only: dwte untouched.
  auto d_dwpe = upload<T>(dwpe0);
  embedding_backward_cuda(static_cast<T*>(nullptr), d_dwpe.get(), d_dout.get(), d_tokens.get(), s.B, s.T, s.C, s.Vp);
  expect_close(download(d_dwpe), dwpe, relative_to_max(default_tolerance<T>(), dwpe), what + " dwpe only");
}

TEST(EmbeddingGpu, F32) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes)
    for (bool hot : {false, true}) check<float>(s, hot);
}
TEST(EmbeddingGpu, BF16) {
  TT_REQUIRE_GPU();
  for (Shape s : kShapes)
    for (bool hot : {false, true}) check<bf16>(s, hot);
}

}  // namespace
}  // namespace tt::test
