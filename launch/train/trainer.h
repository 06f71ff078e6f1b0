// The training loop of `topotrain train` and `topotrain bench step`: builds the model, optimizer,
// gradient reducer and loaders from a validated Config, runs optimizer steps (gradient
// accumulation, clipping, warmup + cosine LR), validates, logs progress and metrics.jsonl, and
// writes and restores checkpoints.
//
// Design: one loop for every device and architecture. The model is a ModelDesc run through
// kernels/ops, the optimizer and the reducer work on the DeviceRunner's Exec, so nothing here
// forks on the device or names a model family. Everything that decides a step's numbers
// (parameters, AdamW moments and step count, the loader position, the RNG) is in the checkpoint
// and every kernel is deterministic, so a resumed run reproduces the uninterrupted run's losses bit
// for bit. State is handled by this rank's part of the flat buffer (the whole buffer without ZeRO,
// its shard with it): initial weights are made per part (init_weights of that range), checkpoints
// stream the parts through rank 0 in chunks and each rank reads back only its part, so no rank
// holds a whole fp32 copy of the model's state and a run resumes with any rank count or device.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/checkpoint_io.h"
#include "core/config.h"
#include "core/model/model.h"
#include "core/rng.h"
#include "data/loader.h"
#include "data/prefetch.h"
#include "data/text_codec.h"
#include "launch/train/device_runner.h"
#include "launch/train/step_stats.h"
#include "launch/train/stop_signals.h"
#include "launch/train/train_device.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/reducer.h"
#include "parallel/ddp/sharded_params.h"
#include "parallel/strategy/memory_model.h"

namespace tt {

class CheckpointReader;  // core/checkpoint_io.h

struct TrainSummary {
  int steps_done = 0;
  float final_train_loss = 0.0f;
  float final_val_loss = -1.0f;  // -1 when no validation data
  double tokens_per_s = 0.0;
  bool interrupted = false;
};

class Trainer {
 public:
  // comm: the data-parallel group (a local communicator for one process); it outlives the trainer.
  // Every rank builds the same model; rank r reads every world_size-th batch, gradients are averaged
  // by a GradReducer, and with parallel.zero_stage >= 1 each rank updates only its shard.
  // Rank 0 alone logs progress, writes metrics and checkpoints.
  // random_data_fallback: when data.train matches no shard, feed seeded random tokens instead of
  // failing (for `bench step` on configs whose data is not downloaded).
  Trainer(const config::Config& cfg, const std::string& origin, parallel::Communicator& comm,
          bool random_data_fallback = false);
  ~Trainer();

  TrainSummary train(bool resume);

  // One optimizer step at step index `step` (0-based): data, forward, backward, clip, AdamW.
  StepStats step(int step);
  // Mean loss over train.val_batches batches of the validation split (the same batches every time).
  float validate();

  // The model with the current weights as fp32 on the host, on rank 0 (nullptr on the other ranks):
  // the training model itself on the CPU without ZeRO-3, else a CPU copy (batch 1) refreshed by
  // every call. Collective with ZeRO-3 (the shards are gathered onto rank 0, a chunk at a time).
  Model* host_model();
  const ModelDesc& model_desc() const { return desc_; }
  const DeviceRunner& runner() const { return *runner_; }
  const config::Config& config() const { return cfg_; }
  int64_t tokens_per_step() const;  // over all ranks
  bool has_validation() const { return val_loader_ != nullptr; }
  const TextCodec& codec() const { return codec_; }
  bool uses_random_data() const { return train_loader_ == nullptr; }
  strategy::MemoryBreakdown predicted_memory() const;  // per rank, by consumer (memory_model.h)
  strategy::MemoryInputs memory_inputs() const;        // what predicted_memory() prices

 private:
  void build_model();
  void check_memory_plan() const;
  void check_shard_ids(const std::vector<std::string>& shards) const;
  TextCodec run_codec() const;
  // This rank's part of the parameters: [begin, end) pieces of the flat buffer, as the reducer's
  // shard layout says; `fill` writes count fp32 values of the flat buffer from `begin` on.
  void set_params(const std::function<void(int64_t begin, int64_t count, float* out)>& fill);
  // The working parameters of this rank's part (the whole buffer at ZeRO-0).
  void* shard_params();
  void save_checkpoint(int steps_done);
  std::vector<State8Layout> state8_owners() const;
  void stream_state8(const std::vector<State8Layout>& owners, const CheckpointWriter::Sink* sink);
  // Issues the all-gather of updated parameter shards (ZeRO 1-2) and waits; returns its seconds.
  double all_gather_params();
  float average_over_ranks(float value);
  // The first tensor, in buffer order, whose values in `part` (this rank's part of a flat buffer,
  // as the shard layout says) are not all finite, over every rank; "" when all are. Collective.
  std::string first_non_finite_tensor(const void* part, DType dtype);
  // Ends the run after `skipped` consecutive skipped updates, naming the first non-finite tensor.
  [[noreturn]] void stop_diverged(int step, int skipped);
  // Σ over ranks of one double per rank, added in rank order (identical on every rank).
  double sum_in_rank_order(double mine);
  bool is_rank0() const { return comm_.rank() == 0; }
  int zero_stage() const { return cfg_.parallel().zero_stage(); }
  // Whether this rank's part is a shard (ZeRO on several ranks) rather than the whole buffer.
  bool sharded() const { return zero_stage() > 0 && comm_.size() > 1; }
  // Mean loss of the batch in inputs_/targets_.
  float eval_loss();
  int load_checkpoint(const std::string& path);  // returns steps done
  void log_config_changes(const std::string& written_config, const std::string& path, int64_t written_world_size) const;
  std::string error_feedback_layout() const;  // stored beside the residuals in checkpoints
  void load_residuals(CheckpointReader& r, int64_t writer_world_size);
  std::vector<std::pair<std::string, double>> update_fp8_scaling(LowPrecisionState& fp8);
  // Fills inputs_/targets_ with the next training batch; returns the seconds the step waited for it.
  double next_batch();
  void print_progress(int step, const StepStats& s, double tokens_per_s, double eta_s, float val_loss) const;

  config::Config cfg_;
  std::string origin_, run_dir_, ckpt_dir_;
  parallel::Communicator& comm_;
  ModelDesc desc_;
  std::unique_ptr<DeviceRunner> runner_;                     // first in, last out: the stream outlives its users
  std::unique_ptr<parallel::ShardedParams> sharded_params_;  // ZeRO-3 only
  std::unique_ptr<Model> model_;
  std::unique_ptr<Model> host_copy_;  // host_model()'s copy on CUDA and with ZeRO-3
  std::unique_ptr<parallel::GradReducer> reducer_;
  std::unique_ptr<AdamW> optimizer_;
  // Train: shuffled (seed = train.seed) unless data.shuffle is false, read ahead by a background
  // thread. Val: plain, in order.
  std::unique_ptr<data::PrefetchLoader> train_loader_;
  std::unique_ptr<data::DataLoader> val_loader_;
  LrSchedule schedule_;
  TextCodec codec_;
  std::string init_tokenizer_;  // a tokenizer file beside model.init_from's weights, or ""
  Rng rng_;
  std::vector<int32_t> inputs_, targets_;
};

// Applies train.threads to OpenMP and OpenBLAS; returns the thread count in use.
int configure_threads(int requested);

}  // namespace tt
