// TT_MPI_CHECK: turns a failed MPI call into tt::Error(kRuntime) naming the call, MPI's error
// string and file:line. Only meaningful on communicators whose error handler is MPI_ERRORS_RETURN
// (the MPI backend sets it on its own communicators; MPI_COMM_WORLD keeps MPI's fatal default).
#pragma once

#include <mpi.h>

namespace tt::parallel {
[[noreturn]] void mpi_check_failed(const char* call, int code, const char* file, int line);
}  // namespace tt::parallel

#define TT_MPI_CHECK(call)                                                                                  \
  do {                                                                                                      \
    const int tt_mpi_rc_ = (call);                                                                          \
    if (tt_mpi_rc_ != MPI_SUCCESS) ::tt::parallel::mpi_check_failed(#call, tt_mpi_rc_, __FILE__, __LINE__); \
  } while (0)
