// Stop signals (see stop_signals.h).
#include "launch/train/stop_signals.h"

#include <csignal>
#include <cstdlib>

#include "core/logging.h"
#include "parallel/comm/communicator.h"

namespace tt {

std::atomic<bool> g_stop_requested{false};

namespace {
// The odls_base_sigkill_timeout to recommend: ranks get SIGTERM that many seconds after mpirun's
// signal and SIGKILL as long again after that. OpenMPI 4.1.4 handles up to about 15 s (with 20 s,
// mpirun was seen to exit without signalling the ranks at all), so larger checkpoints use SIGUSR1.
constexpr int kRecommendedSigkillTimeoutS = 10;

// When mpirun SIGTERMs the survivors of a dead rank, the note says which collective this rank was
// waiting in (async-signal-safe).
extern "C" void on_stop_signal(int) {
  g_stop_requested.store(true);
  parallel::write_pending_collective_note(2);
}
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a stop request must not fail the read or write it interrupts
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
}

void warn_if_launcher_kills_before_checkpoint() {
  if (!std::getenv("OMPI_COMM_WORLD_SIZE")) return;  // not under OpenMPI's mpirun
  // mpirun hands its --mca settings to the ranks as OMPI_MCA_* variables.
  const char* timeout = std::getenv("OMPI_MCA_odls_base_sigkill_timeout");
  if (timeout && std::atoi(timeout) >= kRecommendedSigkillTimeoutS) return;
  log_warn("under mpirun, Ctrl-C or SIGTERM to mpirun kills the ranks ", timeout ? timeout : "1",
           " s after asking them to stop, likely too soon to write a stop checkpoint: start mpirun with `--mca "
           "odls_base_sigkill_timeout ",
           kRecommendedSigkillTimeoutS,
           "` (the ranks then have that long), or stop the job with `kill -USR1 <mpirun's pid>`, which mpirun "
           "forwards to every rank and which waits for any checkpoint");
}

}  // namespace tt
