// The checks a run passes before it allocates or trains (see trainer.h): token ids against the
// vocabulary, and the memory plan against the budget and the memory that is there.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/format.h"
#include "core/host_memory.h"
#include "core/logging.h"
#include "data/shard.h"
#include "launch/train/trainer.h"
#include "parallel/strategy/model_spec.h"

namespace tt {

// Every token id below the vocabulary, checked before the first step rather than when a batch
// reaches a bad one hours in; the ranks split the shards between them.
void Trainer::check_shard_ids(const std::vector<std::string>& shards) const {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> mine;
  for (size_t i = size_t(comm_.rank()); i < shards.size(); i += size_t(comm_.size())) mine.push_back(shards[i]);
  data::check_shard_ids_below(mine, desc_.vocab_size);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (is_rank0() && seconds > 2.0)
    log_info("checked the token ids of ", shards.size(), " shards in ", format_duration(seconds));
}

strategy::MemoryBreakdown Trainer::predicted_memory() const { return strategy::rank_memory(memory_inputs()); }

strategy::MemoryInputs Trainer::memory_inputs() const {
  const auto& t = cfg_.train();
  const auto& par = cfg_.parallel();
  const strategy::ModelSpec spec = strategy::model_spec(desc_, t.seq_len(), 0);
  strategy::MemoryInputs in;
  in.num_params = spec.num_params;
  in.ranks = comm_.size();
  in.zero_stage = par.zero_stage();
  in.working_bytes = int(dtype_size(runner_->dtype()));
  in.state = parse_state_dtype(cfg_.optimizer().state_dtype());
  // The payload matters to memory only through the block-scaled payloads' error-feedback residual
  // (several ranks).
  const parallel::GradCompression gc = parallel::parse_grad_compression(par.grad_compression());
  if (comm_.size() > 1 && parallel::block_scaled(gc))
    in.payload = gc == parallel::GradCompression::kFp8 ? cost::Payload::kFp8 : cost::Payload::kInt8;
  in.zero3_window_elements = strategy::zero3_window_elements(spec);
  in.desc = &desc_;
  in.device = runner_->device().device;
  in.batch = t.batch_size();
  in.seq_len = t.seq_len();
  in.recompute = {parse_recompute(t.recompute()), t.recompute_blocks()};
  return in;
}

// Logs the predicted memory per rank and stops before allocating when it exceeds the budget or the
// memory that is there: free device memory, or the host's available memory (MemAvailable, the
// cgroup's limit) shared by the ranks on this host. Under overcommit a host allocation that does
// not fit "succeeds" and the OOM killer ends the process later, without a word.
void Trainer::check_memory_plan() const {
  const strategy::MemoryInputs in = memory_inputs();  // once: a deep model's layout takes a while to build
  const strategy::MemoryBreakdown m = strategy::rank_memory(in);
  const auto& t = cfg_.train();
  if (is_rank0())
    log_info("memory per rank (predicted): ", strategy::describe(m), " | recompute ",
             describe(Recompute{parse_recompute(t.recompute()), t.recompute_blocks()}, desc_.n_layer),
             " | optimizer state ", state_dtype_name(parse_state_dtype(cfg_.optimizer().state_dtype())));
  const uint64_t budget = t.memory_budget_bytes();
  double limit = double(budget);
  std::string limit_name = "the memory budget (train.memory_budget_bytes)";
  const Device device = runner_->device().device;
  if (runner_->is_cuda()) {
    const double free = double(device_bytes_free(device));
    if (budget == 0 || free < limit) limit = free, limit_name = "the free memory of " + runner_->name();
  } else {
    const HostMemory host = host_memory_available();
    const int sharers = std::max(1, comm_.local_size());
    const double share = double(host.available_bytes) / sharers;
    if (budget == 0 || share < limit)
      limit = share, limit_name = sharers > 1 ? str("this rank's share of the host's available memory (",
                                                    host.limited_by, ", over ", sharers, " ranks on this host)")
                                              : str("the host's available memory (", host.limited_by, ")");
  }
  // Every rank has measured before any allocates: the verdict's reduction is also a barrier.
  uint32_t short_of_memory = m.total() > limit ? 1 : 0;
  const uint32_t mine = short_of_memory;
  if (comm_.size() > 1) comm_.all_reduce(&short_of_memory, 1, DType::kU32, parallel::ReduceOp::kMax)->wait();
  if (!mine) return;
  std::vector<std::pair<std::string, double>> parts = m.parts();
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string consumers;
  for (size_t i = 0; i < std::min<size_t>(2, parts.size()); ++i)
    consumers += str(i ? ", " : "", parts[i].first, " ", format_bytes(parts[i].second));
  const std::string levers = strategy::levers_that_fit(in, limit);
  throw Error(ErrorKind::kMemory,
              str("the run needs ", format_bytes(m.total()), " per rank, more than ", limit_name, ": ",
                  format_bytes(limit), "; the biggest consumers are ", consumers),
              budget > 0 && limit == double(budget) ? "train.memory_budget_bytes" : origin_,
              levers.empty()
                  ? str("the model's parameters and optimizer state alone do not fit: use a smaller model",
                        comm_.size() > 1 ? "" : ", or more ranks with parallel.zero_stage=3")
                  : "it would fit with " + levers + " (`topotrain plan --config <this config>` compares more)");
}

}  // namespace tt
