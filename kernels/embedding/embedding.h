// Token + position embedding (GPT-2): out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :].
// Shapes: tokens int32 [B,T], wte [Vp,C], wpe [maxT,C] (T <= maxT), out [B,T,C].
// Design: backward scatters into dwte with repeated tokens, so it is parallelised over channel
// chunks (each thread owns a column range and walks all tokens in order) rather than over tokens:
// no atomics, no per-call buffers, bit-identical for any thread count. Backward accumulates (+=);
// dwte or dwpe may be nullptr.
#pragma once

#include <cstdint>

namespace tt::kernels {

void embedding_forward_cpu(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                           int B, int T, int C);

void embedding_backward_cpu(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                            int B, int T, int C);

}  // namespace tt::kernels
