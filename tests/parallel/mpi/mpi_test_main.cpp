// main() of test_mpi (run as `mpirun -np N test_mpi`): creates the MPI communicator once, runs the
// suites on every rank, and makes the result collective: a test failing on any rank fails the
// process on every rank. Rank 0 prints gtest's normal output; other ranks print only their
// failures, prefixed with their rank.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "tests/parallel/mpi/mpi_test_env.h"

namespace tt::test {

namespace {
std::unique_ptr<parallel::Communicator> g_comm;

// Prints failed assertions of a non-zero rank, one line each.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                 r.summary());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};
}  // namespace

parallel::Communicator& mpi_comm() { return *g_comm; }

}  // namespace tt::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Ranks are oversubscribed on CI machines: OpenMP teams of several threads per rank spin against
  // each other in the codec's parallel loops (60x slower here). One thread per rank, as the
  // examples train, unless the caller asked otherwise.
  if (!std::getenv("OMP_NUM_THREADS")) omp_set_num_threads(1);
  tt::parallel::CommOptions opts;
  opts.backend = "mpi";
  opts.timeout_s = 60;  // oversubscribed CI machines; the failure modes have their own suite
  try {
    tt::test::g_comm = tt::parallel::create_communicator(opts);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_mpi: cannot create the MPI communicator: %s\n", e.what());
    return 1;
  }
  auto& comm = *tt::test::g_comm;
  if (comm.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new tt::test::RankFailurePrinter(comm.rank()));
  }
  const int local = RUN_ALL_TESTS();
  std::vector<int32_t> failed(comm.size(), 0);
  failed[comm.rank()] = local != 0 ? 1 : 0;
  comm.all_gather(&failed[comm.rank()], failed.data(), 1, tt::DType::kI32)->wait();
  std::string bad;
  for (int r = 0; r < comm.size(); ++r)
    if (failed[r]) bad += tt::str(bad.empty() ? "" : ", ", r);
  if (comm.rank() == 0) {
    if (bad.empty())
      std::printf("test_mpi: all tests passed on all %d ranks\n", comm.size());
    else
      std::printf("test_mpi: FAILED on rank(s) %s of %d (their failures are printed above)\n", bad.c_str(),
                  comm.size());
    std::fflush(stdout);
  }
  tt::test::g_comm.reset();
  return bad.empty() ? 0 : 1;
}
