// Shared helpers for kernel bodies that are written once and compiled both for the CPU reference
// loop and for a CUDA grid (elementwise ops). TT_HOST_DEVICE expands to __host__ __device__ under
// nvcc and to nothing in plain C++ translation units.
#pragma once

#if defined(__CUDACC__)
#define TT_HOST_DEVICE __host__ __device__
#else
#define TT_HOST_DEVICE
#endif
