// The rank-layout accessors that the multi-process backends (mpi, nccl) implement identically: each
// returns the member of the same name with a trailing underscore. Written once here so the two
// cannot drift. Use inside the public section of a class deriving from tt::parallel::Communicator
// that has int members rank_, size_, local_rank_, local_size_, node_ and num_nodes_:
//   class FooCommunicator : public Communicator { public: TT_COMMUNICATOR_LAYOUT_ACCESSORS("foo") ... };
#pragma once

#include <string>

#include "parallel/comm/communicator.h"

#define TT_COMMUNICATOR_LAYOUT_ACCESSORS(backend_name)    \
  int rank() const override { return rank_; }             \
  int size() const override { return size_; }             \
  int local_rank() const override { return local_rank_; } \
  int local_size() const override { return local_size_; } \
  int node() const override { return node_; }             \
  int num_nodes() const override { return num_nodes_; }   \
  std::string backend() const override { return backend_name; }
