// cuDNN's fused causal SDPA (flash attention on tensor cores) through the cuDNN frontend graph API,
// bf16 in/out, fp32 softmax statistics. Internal to kernels/attention: the public entry points in
// attention.h dispatch here (and fall back to the flash kernel in attention.cu); call those instead.
// Layouts are the ones of attention.h (AttentionShape), read and written in place through strides
// (no permutes): Q is the [B,NH,T,HD] view of qkv[B,T,(NH+2·NKV)·HD] at column 0, K and V the
// [B,NKV,T,HD] views at columns NH·HD and (NH+NKV)·HD (row stride (NH+2·NKV)·HD for all three),
// out/dout[B,T,NH,HD], lse[B,NH,T] fp32 = cuDNN's "Stats", i.e. the natural-log logsumexp of the
// scaled scores of each query row: the same quantity the flash kernel saves, so either backward
// consumes either forward's lse.
// Grouped key/value heads (NKV < NH, NKV dividing NH) are cuDNN's own GQA/MQA: the K and V tensors
// simply have NKV heads where Q has NH (the frontend maps query head h to kv head h / (NH/NKV), as
// attention.h does) and the backward's dK, dV come out with NKV heads, summed over each group by
// cuDNN. cuDNN may still refuse a grouped shape on some device/version; the refusal is reported like
// any other, and the dispatcher falls back to the flash kernel.
// Design: one frontend graph per (device, pass, B, T, NH, NKV, HD, dtype), built on first use and
// cached for the life of the process (a training run sees a handful of shapes); a shape cuDNN
// refuses (or whose graph fails to execute) is remembered as refused with its reason, so it is tried
// once. Graph building and execution share one mutex (the cuDNN handle per device is not
// thread-safe).
// cuDNN's workspace comes from the stream's kRowStats scratch slot (kernels/common/cuda_scratch.cuh).
// Backward runs cuDNN's deterministic algorithm (bit-reproducible dq, like the flash kernel).
// Debugging a refusal: CUDNN_FRONTEND_LOG_INFO=1 CUDNN_FRONTEND_LOG_FILE=stderr (frontend) and
// CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr (cuDNN) print their reasoning.
// attention_cudnn.cpp is plain C++ (the frontend is host code, and slow to compile: its own
// translation unit); its body needs the frontend (TOPOTRAIN_HAVE_CUDNN_FRONTEND, set by CMake when
// found), without which the functions below report "not compiled" and refuse every call.
#pragma once

#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>

#include "kernels/attention/attention.h"

namespace tt::kernels::cudnn_sdpa {

// True when this build contains the cuDNN SDPA path.
bool compiled();

// "cuDNN 9.19.0 (built against 9.19.0), frontend 1.32.0", or why there is none.
std::string version_string();

// Causal SDPA forward: overwrites out[B,T,NH·HD] and lse[B,NH,T]. Returns false, with the reason in
// *why, when cuDNN cannot run this call (not compiled, no usable device, unsupported shape or head
// size, misaligned pointers, graph build or execution failure); the outputs are then unspecified and
// the caller computes them another way (and logs the reason; attention.cu does so once per reason).
// Asynchronous on `stream`; B, T >= 1, NH, NKV, HD >= 1 and NKV dividing NH are the caller's to
// check.
bool forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, const AttentionShape& s, cudaStream_t stream,
             std::string* why);

// Causal SDPA backward: accumulates (+=) dq, dk, dv into dqkv[B,T,(NH+2·NKV)·HD] (packed like qkv),
// like attention_backward_cuda, from dout and the forward's qkv, out and lse. cuDNN overwrites its outputs,
// so it writes into a staging buffer (kEpilogue scratch slot) that is then added to dqkv (fp32 add,
// one rounding). Same refusal contract as forward(); false leaves dqkv untouched.
bool backward(__nv_bfloat16* dqkv, const __nv_bfloat16* dout, const __nv_bfloat16* qkv, const __nv_bfloat16* out,
              const float* lse, const AttentionShape& s, cudaStream_t stream, std::string* why);

}  // namespace tt::kernels::cudnn_sdpa
#endif  // TOPOTRAIN_HAVE_CUDA
