// TT_HOST_DEVICE marks functions written once and compiled both for CPU code (reference loops,
// bf16/fp8 emulation in core/dtype.h) and for a CUDA grid (elementwise kernel bodies). It expands
// to __host__ __device__ under nvcc and to nothing in plain C++ translation units.
#pragma once

#if defined(__CUDACC__)
#define TT_HOST_DEVICE __host__ __device__
#else
#define TT_HOST_DEVICE
#endif
