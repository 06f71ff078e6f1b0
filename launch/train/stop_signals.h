// Stopping a run cleanly on a signal: the ranks agree on a step, finish it, write a checkpoint and
// exit 130 (trainer.cpp polls g_stop_requested once per step, collectively).
// SIGINT and SIGTERM (a rank signalled directly, srun forwarding a scheduler's signal) and SIGUSR1 /
// SIGUSR2 request the stop. The last two matter under OpenMPI's mpirun: it forwards them to every
// rank and does nothing else, whereas on SIGINT/SIGTERM it sends the ranks SIGCONT, then SIGTERM
// odls_base_sigkill_timeout seconds later (default 1) and SIGKILL as long again after that — too
// soon for a step and a checkpoint unless that timeout is raised (see the README's "Stopping a run").
#pragma once

#include <atomic>

namespace tt {

// Set by the stop signals (see above); the loop checkpoints and stops.
extern std::atomic<bool> g_stop_requested;

// Installs the handler for SIGINT, SIGTERM, SIGUSR1 and SIGUSR2.
void install_stop_signal_handlers();

// Under OpenMPI's mpirun with the default odls_base_sigkill_timeout, logs how to make Ctrl-C and a
// scheduler's SIGTERM to mpirun end in a stop checkpoint. Call on one rank.
void warn_if_launcher_kills_before_checkpoint();

}  // namespace tt
