// TT_CUDA_CHECK: wraps a CUDA runtime call; a failure becomes a tt::Error naming the call and file:line.
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"

#define TT_CUDA_CHECK(call)                                                                                          \
  do {                                                                                                               \
    cudaError_t tt_err_ = (call);                                                                                    \
    if (tt_err_ != cudaSuccess)                                                                                      \
      throw ::tt::Error(tt_err_ == cudaErrorMemoryAllocation ? ::tt::ErrorKind::kMemory : ::tt::ErrorKind::kRuntime, \
                        ::tt::str(#call, " failed: ", cudaGetErrorString(tt_err_)),                                  \
                        ::tt::str(__FILE__, ":", __LINE__));                                                         \
  } while (0)
