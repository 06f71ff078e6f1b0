// Which rank this process is, from the launcher's environment: Open MPI's mpirun (OMPI_COMM_WORLD_*),
// MPICH/Intel MPI hydra (PMI_*), Slurm's srun (SLURM_*), and torchrun-style launchers
// (RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE).
//
// Design: a pure function of an environment map, so every launcher's variables are unit-tested
// without starting processes; discover_rank_from_env() only snapshots the real environment. The
// first launcher whose rank variable is present wins (in the order above); a launcher whose
// variables are partial or inconsistent is a kConfig error naming them, never a silent guess.
#pragma once

#include <map>
#include <string>

namespace tt {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
  std::string source = "default";  // "openmpi", "pmi", "slurm", "torchrun", "default" (no launcher)
};

using EnvMap = std::map<std::string, std::string>;

RankInfo discover_rank_from_env(const EnvMap& env);
RankInfo discover_rank_from_env();  // the process environment

// Slurm's compressed task list ("2(x3),1") expanded and indexed by node: tasks on node `node_id`.
// Throws tt::Error(kConfig) naming `var` when malformed or too short.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node_id, const std::string& var);

}  // namespace tt
