// fault_driver: a tiny "trainer" run under mpirun by tests/parallel/mpi/faults to provoke the
// failures the MPI backend must turn into errors: a rank killed with SIGKILL in the middle of a
// collective (--mode kill), a rank that never reaches a collective (--mode skip), and ranks that
// issue different collectives at the same sequence number (--mode mismatch, check_collectives on).
// --mode none runs the same steps without a fault. Like the trainer, it reports SIGTERM (sent by
// mpirun to the survivors when a peer dies) with write_pending_collective_note().
//
// usage: fault_driver --mode kill|skip|mismatch|none [--timeout S] [--victim R] [--at K]
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "parallel/comm/communicator.h"

using namespace tt;
using namespace tt::parallel;

namespace {
extern "C" void on_term(int) {
  write_pending_collective_note(2);
  _exit(143);
}
}  // namespace

int main(int argc, char** argv) {
  std::string mode = "none";
  double timeout = 3.0;
  int victim = 1, at = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--mode")
      mode = v;
    else if (k == "--timeout")
      timeout = std::atof(v.c_str());
    else if (k == "--victim")
      victim = std::atoi(v.c_str());
    else if (k == "--at")
      at = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "fault_driver: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  signal(SIGTERM, on_term);
  CommOptions opts;
  opts.backend = "mpi";
  opts.timeout_s = timeout;
  opts.check_collectives = mode == "mismatch";
  try {
    auto comm = create_communicator(opts);
    const int rank = comm->rank();
    std::vector<float> grads(256 * 1024, 1.0f);  // 1.0 MiB
    for (int k = 1; k <= at + 1; ++k) {
      comm->set_step(40 + k);
      const bool faulty = k == at && rank == victim;
      if (faulty && mode == "kill") {
        std::vector<float> big(16 * 1024 * 1024, 1.0f);  // die in the middle of a long collective
        auto w = comm->all_reduce(big.data(), int64_t(big.size()), DType::kF32, ReduceOp::kSum);
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        raise(SIGKILL);
      }
      if (faulty && mode == "skip") {
        std::fprintf(stderr, "[fault_driver rank %d] skipping collective #%d\n", rank, k);
        std::this_thread::sleep_for(std::chrono::seconds(120));
        return 0;
      }
      if (mode == "kill" && k == at) {
        std::vector<float> big(16 * 1024 * 1024, 1.0f);
        comm->all_reduce(big.data(), int64_t(big.size()), DType::kF32, ReduceOp::kSum)->wait();
        continue;
      }
      if (faulty && mode == "mismatch") {
        std::vector<float> out(512 * size_t(comm->size()));
        comm->all_gather(grads.data(), out.data(), 512, DType::kF32)->wait();
        continue;
      }
      const int64_t n = mode == "mismatch" ? 1024 : int64_t(grads.size());
      comm->all_reduce(grads.data(), n, DType::kF32, ReduceOp::kAvg)->wait();
    }
    std::printf("[fault_driver rank %d] finished %d collectives\n", rank, at + 1);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "[fault_driver] %s: %s\n", error_kind_name(e.kind()), e.what());
    return exit_code_for(e.kind());
  }
}
