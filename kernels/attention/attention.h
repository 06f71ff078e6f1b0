// Causal multi-head self-attention (GPT-2), scale 1/sqrt(head_size), on a fused qkv activation.
// Layout: qkv[B,T,3C] — for token (b,t) the row holds q (C values), then k (C), then v (C); head h
// uses columns h*hs .. (h+1)*hs-1 of each part, hs = C/NH. out[B,T,C] concatenates the heads.
// Design: forward stores the softmax probabilities att[B,NH,T,T] (zeros above the diagonal) so
// backward is a direct chain rule without recomputation; this is the simple reference, the
// memory-lean flash variant belongs to the CUDA side. Backward accumulates (+=) into dqkv
// (nullptr: nothing to do). Per-thread scratch is O(T); work is split over (b, h) pairs so every
// gradient element is summed in a fixed order (deterministic for any thread count).
#pragma once

namespace tt::kernels {

void attention_forward_cpu(float* out, float* att, const float* qkv, int B, int T, int C, int NH);

void attention_backward_cpu(float* dqkv, const float* dout, const float* qkv, const float* att,
                            int B, int T, int C, int NH);

}  // namespace tt::kernels
