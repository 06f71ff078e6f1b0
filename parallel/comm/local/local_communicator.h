// The single-rank backend: rank 0 of 1, no MPI. A collective over one rank is the identity, so
// every Work is complete when returned; reduce_scatter / all_gather copy send to recv (nothing when
// they alias).
//
// Design: same argument checks as the MPI backend (parallel/comm/collective_args.h), so code that is wrong
// for N ranks fails on one rank too, not only under mpirun.
#pragma once

#include "parallel/comm/communicator.h"

namespace tt::parallel {

class LocalCommunicator : public Communicator {
 public:
  explicit LocalCommunicator(const CommOptions& opts = {});

  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  int node() const override { return 0; }
  int num_nodes() const override { return 1; }
  std::string backend() const override { return "local"; }

  std::shared_ptr<Work> all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op) override;
  std::shared_ptr<Work> reduce_scatter(const void* send, void* recv, int64_t recv_count, DType dtype,
                                       ReduceOp op) override;
  std::shared_ptr<Work> all_gather(const void* send, void* recv, int64_t send_count, DType dtype) override;
  std::shared_ptr<Work> broadcast(void* buf, int64_t count, DType dtype, int root) override;
  std::shared_ptr<Work> barrier() override;
  std::shared_ptr<Work> reduce_scatter_v(const void* send, void* recv, const std::vector<int64_t>& counts,
                                         DType dtype, ReduceOp op) override;
  std::shared_ptr<Work> all_gather_v(const void* send, void* recv, const std::vector<int64_t>& counts,
                                     DType dtype) override;
  [[noreturn]] void abort(int exit_code, const std::string& reason) override;

  int64_t collectives_issued() const { return seq_; }

 private:
  std::shared_ptr<Work> done();
  int64_t seq_ = 0;
};

}  // namespace tt::parallel
