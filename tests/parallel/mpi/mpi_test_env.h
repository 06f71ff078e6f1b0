// The communicator shared by the multi-process suites (created once by mpi_test_main.cpp, since
// MPI can be initialised only once per process). Every test must issue the same collectives in the
// same order on every rank: use EXPECT_* (not ASSERT_*) around collectives so a failing rank does
// not skip the rest and leave its peers waiting.
#pragma once

#include "parallel/comm/communicator.h"

namespace tt::test {
parallel::Communicator& mpi_comm();
}  // namespace tt::test
