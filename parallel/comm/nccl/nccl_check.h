// TT_NCCL_CHECK: turns a failed NCCL call into tt::Error(kRuntime) naming the call, NCCL's error
// string, NCCL's last error message (the detail it logs, e.g. "socket connect to ... failed") and
// file:line, with a hint chosen by the kind of failure. ncclInProgress counts as success (it only
// occurs on non-blocking communicators, which this backend does not create).
#pragma once

#include <nccl.h>

namespace tt::parallel {
[[noreturn]] void nccl_check_failed(const char* call, ncclResult_t result, const char* file, int line);
}  // namespace tt::parallel

#define TT_NCCL_CHECK(call)                                                      \
  do {                                                                           \
    const ncclResult_t tt_nccl_rc_ = (call);                                     \
    if (tt_nccl_rc_ != ncclSuccess && tt_nccl_rc_ != ncclInProgress)             \
      ::tt::parallel::nccl_check_failed(#call, tt_nccl_rc_, __FILE__, __LINE__); \
  } while (0)
