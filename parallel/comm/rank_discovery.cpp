// Rank discovery from launcher environment variables (see rank_discovery.h for the precedence).
#include "parallel/comm/rank_discovery.h"

#include <cctype>
#include <cstdlib>
#include <vector>

#include "core/error.h"

extern char** environ;

namespace tt {

namespace {

const char* kHint =
    "launch with mpirun/srun/torchrun without overriding their variables, or unset them for a "
    "single-process run";

bool has(const EnvMap& env, const std::string& k) { return env.count(k) != 0; }

int parse_int(const EnvMap& env, const std::string& var, const std::string& source) {
  const std::string& v = env.at(var);
  size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &pos);
  } catch (const std::exception&) {
    pos = std::string::npos;
  }
  if (v.empty() || pos != v.size() || x < 0 || x > (1 << 30))
    throw Error(ErrorKind::kConfig, str(var, "='", v, "' is not a non-negative integer"),
                str("rank discovery (", source, ")"), kHint);
  return int(x);
}

int require_int(const EnvMap& env, const std::string& var, const std::string& present, const std::string& source) {
  if (!has(env, var))
    throw Error(ErrorKind::kConfig, str(present, " is set but ", var, " is not"), str("rank discovery (", source, ")"),
                kHint);
  return parse_int(env, var, source);
}

void validate(const RankInfo& r, const std::string& rank_var, const std::string& size_var,
              const std::string& local_rank_var, const std::string& local_size_var) {
  const std::string where = str("rank discovery (", r.source, ")");
  if (r.world_size < 1)
    throw Error(ErrorKind::kConfig, str(size_var, "=", r.world_size, " must be >= 1"), where, kHint);
  if (r.rank >= r.world_size)
    throw Error(ErrorKind::kConfig, str(rank_var, "=", r.rank, " is not below ", size_var, "=", r.world_size), where,
                kHint);
  if (r.local_size < 1 || r.local_size > r.world_size)
    throw Error(ErrorKind::kConfig,
                str(local_size_var, "=", r.local_size, " must be between 1 and ", size_var, "=", r.world_size), where,
                kHint);
  if (r.local_rank >= r.local_size)
    throw Error(ErrorKind::kConfig,
                str(local_rank_var, "=", r.local_rank, " is not below ", local_size_var, "=", r.local_size), where,
                kHint);
}

// One launcher's variable names; local ones may be absent (then local = global: one node assumed).
struct Scheme {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

RankInfo read_scheme(const EnvMap& env, const Scheme& s) {
  RankInfo r;
  r.source = s.source;
  r.rank = parse_int(env, s.rank, s.source);
  r.world_size = require_int(env, s.size, s.rank, s.source);
  const bool has_lr = has(env, s.local_rank), has_ls = has(env, s.local_size);
  if (has_lr != has_ls)
    throw Error(
        ErrorKind::kConfig,
        str(has_lr ? s.local_rank : s.local_size, " is set but ", has_lr ? s.local_size : s.local_rank, " is not"),
        str("rank discovery (", s.source, ")"), kHint);
  if (has_lr) {
    r.local_rank = parse_int(env, s.local_rank, s.source);
    r.local_size = parse_int(env, s.local_size, s.source);
  } else {
    r.local_rank = r.rank;
    r.local_size = r.world_size;
  }
  validate(r, s.rank, s.size, s.local_rank, s.local_size);
  return r;
}

}  // namespace

int slurm_tasks_on_node(const std::string& spec, int node_id, const std::string& var) {
  // Entries separated by ',', each "N" or "N(xM)" (N tasks on each of M nodes).
  int node = 0;
  size_t i = 0;
  auto bad = [&]() {
    return Error(ErrorKind::kConfig, str(var, "='", spec, "' is not a Slurm task list like '2(x3),1'"),
                 "rank discovery (slurm)", kHint);
  };
  while (i < spec.size()) {
    size_t j = i;
    while (j < spec.size() && std::isdigit((unsigned char)spec[j])) ++j;
    if (j == i) throw bad();
    const int tasks = std::atoi(spec.substr(i, j - i).c_str());
    int repeat = 1;
    if (j < spec.size() && spec[j] == '(') {
      if (spec.compare(j, 2, "(x") != 0) throw bad();
      size_t k = j + 2, e = k;
      while (e < spec.size() && std::isdigit((unsigned char)spec[e])) ++e;
      if (e == k || e >= spec.size() || spec[e] != ')') throw bad();
      repeat = std::atoi(spec.substr(k, e - k).c_str());
      j = e + 1;
    }
    if (node_id < node + repeat) return tasks;
    node += repeat;
    if (j < spec.size()) {
      if (spec[j] != ',') throw bad();
      ++j;
    }
    i = j;
  }
  throw Error(ErrorKind::kConfig, str(var, "='", spec, "' lists ", node, " nodes but SLURM_NODEID=", node_id),
              "rank discovery (slurm)", kHint);
}

RankInfo discover_rank_from_env(const EnvMap& env) {
  if (has(env, "OMPI_COMM_WORLD_RANK"))
    return read_scheme(env, {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                             "OMPI_COMM_WORLD_LOCAL_SIZE"});
  if (has(env, "PMI_RANK"))
    return read_scheme(env, {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"});
  // Slurm: only inside an srun step (SLURM_STEP_ID); a batch script also carries SLURM_PROCID and
  // the allocation's SLURM_NTASKS although it is a single process.
  if (has(env, "SLURM_PROCID") && has(env, "SLURM_STEP_ID")) {
    RankInfo r;
    r.source = "slurm";
    r.rank = parse_int(env, "SLURM_PROCID", "slurm");
    const std::string size_var = has(env, "SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    r.world_size = require_int(env, size_var, "SLURM_PROCID", "slurm");
    std::string local_size_var = "SLURM_STEP_TASKS_PER_NODE";
    if (has(env, "SLURM_LOCALID")) {
      r.local_rank = parse_int(env, "SLURM_LOCALID", "slurm");
      if (!has(env, local_size_var)) local_size_var = "SLURM_TASKS_PER_NODE";
      if (has(env, local_size_var)) {
        const int node_id = require_int(env, "SLURM_NODEID", "SLURM_LOCALID", "slurm");
        r.local_size = slurm_tasks_on_node(env.at(local_size_var), node_id, local_size_var);
      } else {
        r.local_size = r.world_size;
      }
    } else {
      r.local_rank = r.rank;
      r.local_size = r.world_size;
    }
    validate(r, "SLURM_PROCID", size_var, "SLURM_LOCALID", local_size_var);
    return r;
  }
  if (has(env, "RANK")) return read_scheme(env, {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"});
  return RankInfo{};
}

RankInfo discover_rank_from_env() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return discover_rank_from_env(env);
}

}  // namespace tt
