// Start-up of the data-parallel process group for `train` and `bench step`: the communicator built
// from the config's parallel section and the launcher's environment (mpirun, srun, torchrun-style
// variables; a plain single process gets a local communicator and needs no mpirun), and the rule that
// an error on one rank ends the whole job at once instead of leaving its peers waiting.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/config.h"
#include "parallel/comm/communicator.h"

namespace tt {

std::unique_ptr<parallel::Communicator> create_process_group(const config::Config& cfg);

// Runs fn and returns its exit code. In a multi-rank job a tt::Error (or other exception) on this
// rank is printed with the rank and ends every rank with the error's exit code.
int run_on_all_ranks(parallel::Communicator& comm, const std::string& command, const std::function<int()>& fn);

}  // namespace tt
