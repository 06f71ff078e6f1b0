// `topotrain --version`: version and build features, for bug reports.
#include <cblas.h>

#include <cstdio>
#include <string>

#include "core/device.h"
#include "launch/commands.h"

#if TOPOTRAIN_HAVE_CUDA
#include "kernels/attention/attention.h"
#endif
#if TOPOTRAIN_HAVE_MPI
#include <mpi.h>
#endif
#if TOPOTRAIN_HAVE_NCCL
#include "parallel/comm/nccl/nccl_communicator.h"
#endif

namespace tt {

#if TOPOTRAIN_HAVE_CUDA
std::string cuda_runtime_version_string();  // core/cuda_runtime.cu
#endif

int version_main(const Args&) {
  std::printf("topotrain %s\n", TOPOTRAIN_VERSION);
#if TOPOTRAIN_HAVE_CUDA
  std::printf("  CUDA:   yes (%s, %d device(s) visible)\n", cuda_runtime_version_string().c_str(), cuda_device_count());
#else
  std::printf("  CUDA:   no (built with TOPOTRAIN_CUDA=OFF or without nvcc)\n");
#endif
#if TOPOTRAIN_HAVE_CUDA
  // The attention backend can be forced with TOPOTRAIN_ATTENTION=auto|flash|cudnn (kernels/attention/attention.h).
  if (kernels::cudnn_sdpa_compiled())
    std::printf("  cuDNN:  yes (%s; fused SDPA attention for bf16)\n", kernels::cudnn_sdpa_version().c_str());
  else
    std::printf("  cuDNN:  no (%s; attention uses the flash kernel)\n", kernels::cudnn_sdpa_version().c_str());
#else
  std::printf("  cuDNN:  no (built without CUDA)\n");
#endif
#if TOPOTRAIN_HAVE_NCCL
  std::printf("  NCCL:   yes (%s)\n", parallel::nccl_version_string().c_str());
#else
  std::printf("  NCCL:   no (built without CUDA or without NCCL found)\n");
#endif
#if TOPOTRAIN_HAVE_MPI
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, size_t(len));
  if (auto nl = mpi.find_first_of(",\n"); nl != std::string::npos) mpi.resize(nl);
  std::printf("  MPI:    yes (%s)\n", mpi.c_str());
#else
  std::printf("  MPI:    no (built with TOPOTRAIN_MPI=OFF)\n");
#endif
  std::printf("  BLAS:   %s\n", openblas_get_config());
  std::printf("  OpenMP: yes\n");
  return 0;
}

}  // namespace tt
