// Process-group start-up and the job-wide error rule (see process_group.h).
#include "launch/train/process_group.h"

#include <cstdio>

#include "core/error.h"
#include "core/logging.h"
#include "launch/train/train_device.h"

namespace tt {

std::unique_ptr<parallel::Communicator> create_process_group(const config::Config& cfg) {
  parallel::CommOptions opts;
  opts.timeout_s = cfg.parallel().timeout_s();
  opts.check_collectives = cfg.parallel().check_collectives();
  opts.inject_delay_s = cfg.parallel().inject_comm_delay_s();
  opts.ranks_per_node = cfg.parallel().ranks_per_node();          // pretended nodes reach every component
  opts.backend = comm_backend_for(cfg, device_facts_from_env());  // NCCL when gradients live on GPUs
  auto comm = parallel::create_communicator(opts);
  set_log_rank(comm->rank(), comm->size());
  return comm;
}

int run_on_all_ranks(parallel::Communicator& comm, const std::string& command, const std::function<int()>& fn) {
  if (comm.size() == 1) return fn();
  try {
    return fn();
  } catch (const Error& e) {
    std::fflush(stdout);
    comm.abort(exit_code_for(e.kind()), str("topotrain ", command, ": ", error_kind_name(e.kind()), ": ", e.what(),
                                            " (rank ", comm.rank(), " of ", comm.size(), "; ending the job)"));
  } catch (const std::exception& e) {
    std::fflush(stdout);
    comm.abort(1, str("topotrain ", command, ": error: ", e.what(), " (rank ", comm.rank(), " of ", comm.size(),
                      "; ending the job)"));
  }
  return 1;  // not reached: abort() ends the process
}

}  // namespace tt
