// Causal self-attention with grouped key/value heads (multi-head, GQA, multi-query), scale
// 1/sqrt(head_dim), on a fused qkv activation.
// Layout (AttentionShape): qkv[B,T,(NH + 2·NKV)·HD] — for token (b,t) the row holds the NH query heads
// (NH·HD values), then the NKV key heads, then the NKV value heads, HD values each; query head h reads
// key/value head h / (NH / NKV). out[B,T,NH·HD] concatenates the query heads' outputs. GPT-2 is
// NKV = NH, HD = C / NH (the row is q | k | v of C values each).
// Design: forward stores the softmax probabilities att[B,NH,T,T] (zeros above the diagonal) so
// backward is a direct chain rule without recomputation; this is the simple reference, the
// memory-lean flash variant belongs to the CUDA side. Backward accumulates (+=) into dqkv
// (nullptr: nothing to do); a key/value head's gradient sums over the query heads of its group in
// head order. Per-thread scratch is O(T); work is split over (b, kv head) pairs so every gradient
// element is summed in a fixed order (deterministic for any thread count).
#pragma once

namespace tt::kernels {

struct AttentionShape {
  int B = 1, T = 1;  // batch, sequence length
  int NH = 1;        // query heads
  int NKV = 1;       // key/value heads, dividing NH
  int HD = 1;        // head size
  int q_dim() const { return NH * HD; }
  int qkv_dim() const { return (NH + 2 * NKV) * HD; }
};

void attention_forward_cpu(float* out, float* att, const float* qkv, const AttentionShape& s);

void attention_backward_cpu(float* dqkv, const float* dout, const float* qkv, const float* att,
                            const AttentionShape& s);

}  // namespace tt::kernels

// ---- CUDA (attention.cu) -----------------------------------------------------------------------
// Causal attention on the GPU (same layouts and AttentionShape), two implementations behind one set of
// entry points:
//  * cuDNN's fused SDPA (flash attention on tensor cores, attention_cudnn.{h,cpp}) for bf16, when
//    the build has the cuDNN frontend and cuDNN accepts the call (device, head size, alignment);
//  * an own flash-style fused kernel (below), the fallback for everything else and for fp32.
// Neither materialises the T×T matrix: instead of att the forward saves the per-row logsumexp
// lse[B,NH,T] (fp32), so the signatures differ from the CPU ones by that buffer (and backward also
// needs the forward output to form D = rowsum(dout ⊙ out)).
// lse is the SAME quantity in both implementations — the natural-log logsumexp of the scaled scores
// of each query row, laid out [B,NH,T] (it is cuDNN's "Stats" tensor) — so a backward may run on
// either implementation whichever one ran the forward (tested both ways): a shape cuDNN accepts for
// the forward but refuses for the backward, or a backend switch between the two calls, is safe.
// Flash kernel: forward tiles the queries of one (b, h) over K/V tiles with an online softmax;
// backward recomputes the probabilities tile by tile from lse: one kernel owns a K/V tile (dk, dv),
// another owns a Q tile (dq), so every gradient element is summed by one thread in a fixed order:
// deterministic, no atomics. cuDNN's backward runs its deterministic algorithm too.
// Backward accumulates (+=) into dqkv (nullptr: nothing to do), like the CPU version, on both paths.
// qkv/out/dout/dqkv are float or __nv_bfloat16 (fp32 math); any T >= 1; the flash kernel needs a head
// size of 32, 64 or 128 (compile-time tiles; anything else throws a kConfig error), cuDNN a multiple
// of 8. Grouped key/value heads: the flash backward's K/V-tile kernel sums dk, dv over the query
// heads of the group in head order (deterministic); cuDNN takes NKV < NH through its own GQA
// support when it accepts the call, else the flash kernel runs. Asynchronous on `stream`; the flash
// backward uses the kRowStats scratch slot for D, the cuDNN path kRowStats (workspace) and kEpilogue
// (gradient staging).
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>

namespace tt::kernels {

// out[B,T,NH·HD], lse[B,NH,T] (natural-log logsumexp of the scaled scores of each query row).
void attention_forward_cuda(float* out, float* lse, const float* qkv, const AttentionShape& s, cudaStream_t stream = 0);
void attention_forward_cuda(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, const AttentionShape& s,
                            cudaStream_t stream = 0);

void attention_backward_cuda(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                             const AttentionShape& s, cudaStream_t stream = 0);
void attention_backward_cuda(__nv_bfloat16* dqkv, const __nv_bfloat16* dout, const __nv_bfloat16* qkv,
                             const __nv_bfloat16* out, const float* lse, const AttentionShape& s,
                             cudaStream_t stream = 0);

// ---- which implementation runs (bf16; fp32 always takes the flash kernel) ----------------------
//  kAuto:  cuDNN SDPA when the build has it and cuDNN accepts the call, else the flash kernel. A
//          refusal (unsupported head size or device, graph build or execution failure) is logged
//          once per reason and remembered per shape, so the fallback costs nothing afterwards.
//  kFlash: always the flash kernel.
//  kCudnn: always cuDNN SDPA; a call it cannot run throws a kConfig error (tests, benchmarks).
// The process-wide choice starts from the environment, TOPOTRAIN_ATTENTION=auto|flash|cudnn (unset
// or empty: auto), read on the first attention call; set_attention_backend() overrides it.
enum class AttentionBackend { kAuto, kFlash, kCudnn };
AttentionBackend parse_attention_backend(const std::string& name);  // throws kConfig on anything else
const char* attention_backend_name(AttentionBackend backend);
void set_attention_backend(AttentionBackend backend);
AttentionBackend attention_backend();

// The implementation that ran this thread's most recent attention_{forward,backward}_cuda call.
enum class AttentionImpl { kNone, kFlash, kCudnn };
AttentionImpl last_attention_impl();

// True when this build contains the cuDNN SDPA path; its versions ("cuDNN 9.19.0 (built against
// 9.19.0), frontend 1.32.0") or why there is none.
bool cudnn_sdpa_compiled();
std::string cudnn_sdpa_version();

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
