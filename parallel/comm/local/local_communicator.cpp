// Single-rank backend (see local_communicator.h).
#include "parallel/comm/local/local_communicator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/exec.h"
#include "core/logging.h"
#include "parallel/comm/collective_args.h"

namespace tt::parallel {

namespace {
// Host or device buffers alike: a single-rank job on a GPU reduces device gradients through here.
void copy_elems(const void* src, void* dst, int64_t count, DType dtype) {
  if (count > 0 && src != dst) copy_anywhere(dst, src, size_t(count) * dtype_size(dtype));
}
}  // namespace

LocalCommunicator::LocalCommunicator(const CommOptions& opts) : opts_(opts) {}

std::unique_ptr<Communicator> LocalCommunicator::split(int color, int) {
  if (color < 0)
    throw Error(ErrorKind::kInternal, str("split color ", color, " is negative"), "communicator split",
                "this is a bug in the component splitting the communicator");
  return std::make_unique<LocalCommunicator>(opts_);
}

std::shared_ptr<Work> LocalCommunicator::done() {
  ++seq_;
  return completed_work();
}

std::shared_ptr<Work> LocalCommunicator::all_reduce(void*, int64_t count, DType dtype, ReduceOp op) {
  check_count(CollectiveKind::kAllReduce, count);
  check_reduction(CollectiveKind::kAllReduce, dtype, op);
  return done();  // sum/avg/max over one rank is the identity
}

std::shared_ptr<Work> LocalCommunicator::reduce_scatter(const void* send, void* recv, int64_t recv_count, DType dtype,
                                                        ReduceOp op) {
  check_count(CollectiveKind::kReduceScatter, recv_count);
  check_reduction(CollectiveKind::kReduceScatter, dtype, op);
  copy_elems(send, recv, recv_count, dtype);
  return done();
}

std::shared_ptr<Work> LocalCommunicator::all_gather(const void* send, void* recv, int64_t send_count, DType dtype) {
  check_count(CollectiveKind::kAllGather, send_count);
  copy_elems(send, recv, send_count, dtype);
  return done();
}

std::shared_ptr<Work> LocalCommunicator::broadcast(void*, int64_t count, DType, int root) {
  check_count(CollectiveKind::kBroadcast, count);
  check_root(root, 1);
  return done();
}

std::shared_ptr<Work> LocalCommunicator::barrier() { return done(); }

std::shared_ptr<Work> LocalCommunicator::reduce_scatter_v(const void* send, void* recv,
                                                          const std::vector<int64_t>& counts, DType dtype,
                                                          ReduceOp op) {
  const int64_t total = check_counts(CollectiveKind::kReduceScatter, counts, 1);
  check_reduction(CollectiveKind::kReduceScatter, dtype, op);
  copy_elems(send, recv, total, dtype);
  return done();
}

std::shared_ptr<Work> LocalCommunicator::all_gather_v(const void* send, void* recv, const std::vector<int64_t>& counts,
                                                      DType dtype) {
  const int64_t total = check_counts(CollectiveKind::kAllGather, counts, 1);
  copy_elems(send, recv, total, dtype);
  return done();
}

std::shared_ptr<Work> LocalCommunicator::all_to_all(const void* send, void* recv, int64_t count_per_rank, DType dtype) {
  check_count(CollectiveKind::kAllToAll, count_per_rank);
  copy_elems(send, recv, count_per_rank, dtype);  // block 0 to rank 0
  return done();
}

void LocalCommunicator::abort(int exit_code, const std::string& reason) {
  log_error(reason);
  std::fflush(stdout);
  std::_Exit(exit_code);
}

}  // namespace tt::parallel
