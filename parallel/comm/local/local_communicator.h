// The single-rank backend: rank 0 of 1, no MPI. A collective over one rank is the identity, so
// every Work is complete when returned; reduce_scatter / all_gather / all_to_all copy send to recv
// (nothing when they alias).
//
// Design: same argument checks as the MPI backend (parallel/comm/collective_args.h), so code that is wrong
// for N ranks fails on one rank too, not only under mpirun.
#pragma once

#include "parallel/comm/backend_overrides.h"
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

  TT_COMMUNICATOR_BACKEND_OVERRIDES
  TT_COMMUNICATOR_ALL_TO_ALL_OVERRIDE
  // split: another single-rank communicator with the same options (color must be >= 0).
  TT_COMMUNICATOR_SPLIT_OVERRIDE

  int64_t collectives_issued() const { return seq_; }

 private:
  std::shared_ptr<Work> done();
  CommOptions opts_;
  int64_t seq_ = 0;
};

}  // namespace tt::parallel
