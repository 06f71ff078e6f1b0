// Rank discovery from launcher environments (Open MPI, PMI, Slurm, torchrun), as pure functions of
// an environment map: precedence, local ranks, Slurm task lists, and inconsistent values rejected
// with the variable names.
#include "parallel/comm/rank_discovery.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tt {
namespace {

std::string config_error(const EnvMap& env) {
  try {
    discover_rank_from_env(env);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(RankDiscovery, NoLauncherIsOneRank) {
  const RankInfo r = discover_rank_from_env(EnvMap{{"HOME", "/root"}});
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.local_rank, 0);
  EXPECT_EQ(r.local_size, 1);
  EXPECT_EQ(r.source, "default");
}

TEST(RankDiscovery, OpenMpi) {
  const RankInfo r = discover_rank_from_env(EnvMap{{"OMPI_COMM_WORLD_RANK", "5"},
                                                   {"OMPI_COMM_WORLD_SIZE", "8"},
                                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                                   {"RANK", "0"},
                                                   {"WORLD_SIZE", "1"}});
  EXPECT_EQ(r.source, "openmpi");
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 4);
}

TEST(RankDiscovery, PmiWithoutLocalVariablesAssumesOneNode) {
  const RankInfo r = discover_rank_from_env(EnvMap{{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}});
  EXPECT_EQ(r.source, "pmi");
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.local_rank, 2);
  EXPECT_EQ(r.local_size, 3);
}

TEST(RankDiscovery, SlurmStep) {
  const RankInfo r = discover_rank_from_env(EnvMap{{"SLURM_PROCID", "9"},
                                                   {"SLURM_NTASKS", "10"},
                                                   {"SLURM_STEP_ID", "0"},
                                                   {"SLURM_LOCALID", "1"},
                                                   {"SLURM_NODEID", "3"},
                                                   {"SLURM_TASKS_PER_NODE", "4,2(x2),2"}});
  EXPECT_EQ(r.source, "slurm");
  EXPECT_EQ(r.rank, 9);
  EXPECT_EQ(r.world_size, 10);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 2);
}

TEST(RankDiscovery, SlurmBatchScriptIsNotAStep) {
  // sbatch exports SLURM_PROCID/SLURM_NTASKS to the single batch process.
  const RankInfo r = discover_rank_from_env(EnvMap{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}});
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.source, "default");
}

TEST(RankDiscovery, SlurmTaskList) {
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 0, "V"), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 2, "V"), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3, "V"), 1);
  EXPECT_EQ(slurm_tasks_on_node("8", 0, "V"), 8);
  EXPECT_THROW(slurm_tasks_on_node("2(x3),1", 4, "V"), Error);
  EXPECT_THROW(slurm_tasks_on_node("2(y3)", 0, "V"), Error);
  EXPECT_THROW(slurm_tasks_on_node("", 0, "V"), Error);
}

TEST(RankDiscovery, Torchrun) {
  const RankInfo r = discover_rank_from_env(
      EnvMap{{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_EQ(r.source, "torchrun");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 2);
}

TEST(RankDiscovery, InconsistentValuesNameTheVariables) {
  std::string m = config_error(EnvMap{{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_NE(m.find("OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4"), std::string::npos) << m;
  m = config_error(EnvMap{{"RANK", "0"}});
  EXPECT_NE(m.find("RANK is set but WORLD_SIZE is not"), std::string::npos) << m;
  m = config_error(EnvMap{{"RANK", "x"}, {"WORLD_SIZE", "2"}});
  EXPECT_NE(m.find("RANK='x' is not a non-negative integer"), std::string::npos) << m;
  m = config_error(EnvMap{{"RANK", "0"}, {"WORLD_SIZE", "0"}});
  EXPECT_NE(m.find("WORLD_SIZE=0 must be >= 1"), std::string::npos) << m;
  m = config_error(EnvMap{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_NE(m.find("LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"), std::string::npos) << m;
  m = config_error(EnvMap{{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "0"}});
  EXPECT_NE(m.find("MPI_LOCALRANKID is set but MPI_LOCALNRANKS is not"), std::string::npos) << m;
  m = config_error(EnvMap{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "3"}});
  EXPECT_NE(m.find("LOCAL_WORLD_SIZE=3 must be between 1 and WORLD_SIZE=2"), std::string::npos) << m;
}

}  // namespace
}  // namespace tt
