// Tests for kernels/embedding: forward against a loop, backward by finite differences with
// repeated tokens (+= semantics, nullptr gradients), determinism across thread counts.
#include "kernels/embedding/embedding.h"

#include <gtest/gtest.h>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::embedding_backward_cpu;
using kernels::embedding_forward_cpu;

constexpr int B = 3, T = 4, C = 5, Vp = 6, maxT = 7;

TEST(Embedding, ForwardMatchesLoop) {
  const auto wte = random_floats(Vp * C, 1), wpe = random_floats(maxT * C, 2);
  const auto tokens = random_tokens(B * T, Vp, 3);
  std::vector<float> out(B * T * C);
  embedding_forward_cpu(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) EXPECT_EQ(out[(b * T + t) * C + c], wte[tokens[b * T + t] * C + c] + wpe[t * C + c]);
}

TEST(Embedding, BackwardFiniteDifferencesWithRepeatedTokens) {
  auto wte = random_floats(Vp * C, 1), wpe = random_floats(maxT * C, 2);
  std::vector<int32_t> tokens = random_tokens(B * T, 3, 3);  // only 3 distinct ids: many repeats
  tokens[5] = 5;
  const auto R = random_floats(B * T * C, 4);
  std::vector<float> out(B * T * C);
  auto loss = [&] {
    embedding_forward_cpu(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  const auto dwte0 = random_floats(Vp * C, 5), dwpe0 = random_floats(maxT * C, 6);
  auto dwte = dwte0, dwpe = dwpe0;
  embedding_backward_cpu(dwte.data(), dwpe.data(), R.data(), tokens.data(), B, T, C);
  EXPECT_TRUE(gradients_match(check_gradient(wte, minus(dwte, dwte0), loss)));
  EXPECT_TRUE(gradients_match(check_gradient(wpe, minus(dwpe, dwpe0), loss)));
  // Rows of tokens never seen and positions >= T are untouched.
  for (int c = 0; c < C; ++c) {
    EXPECT_EQ(dwte[4 * C + c], dwte0[4 * C + c]);
    EXPECT_EQ(dwpe[(maxT - 1) * C + c], dwpe0[(maxT - 1) * C + c]);
  }
  std::vector<float> dwpe_only(maxT * C, 0.0f);
  embedding_backward_cpu(nullptr, dwpe_only.data(), R.data(), tokens.data(), B, T, C);
  const auto delta = minus(dwpe, dwpe0);
  for (int i = 0; i < maxT * C; ++i) EXPECT_NEAR(dwpe_only[i], delta[i], 1e-6);
}

TEST(Embedding, BackwardBitIdenticalAcrossThreadCounts) {
  const int b = 4, t = 50, c = 200, vp = 17;
  const auto tokens = random_tokens(b * t, vp, 1);
  const auto dout = random_floats(b * t * c, 2);
  std::vector<float> dwte[2], dwpe[2];
  for (int run = 0; run < 2; ++run)
    with_threads(run + 1, [&] {
      dwte[run].assign(vp * c, 0.5f);
      dwpe[run].assign(t * c, 0.25f);
      embedding_backward_cpu(dwte[run].data(), dwpe[run].data(), dout.data(), tokens.data(), b, t, c);
    });
  EXPECT_TRUE(bit_identical(dwte[0], dwte[1]));
  EXPECT_TRUE(bit_identical(dwpe[0], dwpe[1]));
}

}  // namespace
}  // namespace tt::test
