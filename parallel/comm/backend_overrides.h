// The declarations every Communicator backend repeats: its overrides of the collectives and of
// abort(). Written once here so adding a collective to Communicator changes one list, not one per
// backend. Use inside the public section of a class deriving from tt::parallel::Communicator:
//   class FooCommunicator : public Communicator { public: TT_COMMUNICATOR_BACKEND_OVERRIDES ... };
// Collectives with a default implementation in Communicator (that throws "not supported") are
// listed separately, so a backend opts in to each without breaking the others:
//   TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE   all_to_all (local, mpi)
//   TT_COMMUNICATOR_SPLIT_OVERRIDE        split (local, mpi, nccl)
#pragma once

#include "parallel/comm/communicator.h"

#define TT_COMMUNICATOR_BACKEND_OVERRIDES                                                                           \
  std::shared_ptr<Work> all_reduce(void* buf, int64_t count, DType dtype, ReduceOp op) override;                    \
  std::shared_ptr<Work> reduce_scatter(const void* send, void* recv, int64_t recv_count, DType dtype, ReduceOp op)  \
      override;                                                                                                     \
  std::shared_ptr<Work> all_gather(const void* send, void* recv, int64_t send_count, DType dtype) override;         \
  std::shared_ptr<Work> broadcast(void* buf, int64_t count, DType dtype, int root) override;                        \
  std::shared_ptr<Work> barrier() override;                                                                         \
  std::shared_ptr<Work> reduce_scatter_v(const void* send, void* recv, const std::vector<int64_t>& counts,          \
                                         DType dtype, ReduceOp op) override;                                        \
  std::shared_ptr<Work> all_gather_v(const void* send, void* recv, const std::vector<int64_t>& counts, DType dtype) \
      override;                                                                                                     \
  [[noreturn]] void abort(int exit_code, const std::string& reason) override;

#define TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE \
  std::shared_ptr<Work> all_to_all(const void* send, void* recv, int64_t count_per_rank, DType dtype) override;

#define TT_COMMUNICATOR_SPLIT_OVERRIDE std::unique_ptr<Communicator> split(int color, int key) override;
