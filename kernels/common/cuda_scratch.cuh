// Per-(device, stream) scratch buffers for CUDA kernels that need temporary device memory (cuBLASLt
// workspace, per-block partial sums of deterministic reductions, epilogue outputs) while keeping the
// CPU references' argument lists.
// Design: one buffer per (device, stream, slot), grown on demand with the stream-ordered allocator
// (cudaFreeAsync of the old buffer and cudaMallocAsync of the new one on the SAME stream), so a
// buffer is never freed under a kernel still using it. Because work on one stream runs in order,
// the next op on that stream may reuse the buffer: a pointer returned by cuda_scratch() is valid for
// work enqueued on `stream` until the next cuda_scratch() call with the same (stream, slot).
// Different slots never alias, so one op may hold several slots at once.
// Lifetime: buffers live until release_cuda_scratch() (call it before destroying a stream that
// used scratch, or before cudaDeviceReset); at process exit they are reclaimed with the context.
// Thread safety: the registry is mutex-protected; two host threads must not enqueue scratch-using
// ops on the same stream concurrently (the same rule as for the stream itself).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace tt::kernels::cuda {

enum class ScratchSlot : int {
  kCublasWorkspace = 0,  // cuBLASLt workspace (matmul.cu)
  kPartials = 1,         // per-block partial sums of two-pass deterministic reductions
  kEpilogue = 2,         // small epilogue outputs (bias gradients before they are accumulated)
  kRowStats = 3,         // per-row statistics (attention backward's D = rowsum(dO * O))
  kQuantize = 4,         // the quantisers' reductions (kernels/quantize)
  kInt8Accumulator = 5,  // the int8 GEMM's int32 output before it is dequantised (matmul.cu)
  kLowpOperand0 = 6,     // quantised operands of a low-precision linear layer (kernels/ops), four at
  kLowpOperand1 = 7,     // once in an fp8 backward
  kLowpOperand2 = 8,
  kLowpOperand3 = 9,
  kLowpFactors = 10,     // their int8 dequantise factors
  kCount = 11,
};

// Device memory of at least `bytes` on the current device, ordered on `stream` (see above).
void* cuda_scratch(ScratchSlot slot, size_t bytes, cudaStream_t stream);

template <typename T>
T* cuda_scratch_as(ScratchSlot slot, size_t count, cudaStream_t stream) {
  return static_cast<T*>(cuda_scratch(slot, count * sizeof(T), stream));
}

// Frees every scratch buffer of `stream` on the current device (stream-ordered).
void release_cuda_scratch(cudaStream_t stream);
// Frees every scratch buffer on every device; synchronises each device first.
void release_all_cuda_scratch();

}  // namespace tt::kernels::cuda
