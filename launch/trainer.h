// The training loop of `topotrain train` and `topotrain bench step`: builds the model, optimizer and
// loaders from a validated Config, runs optimizer steps (with gradient accumulation, clipping,
// warmup+cosine LR), validates, logs progress and metrics.jsonl, and writes/restores checkpoints.
//
// Design: everything that decides a step's numbers — parameters, AdamW moments and step count, the
// loader position, the RNG — is in the checkpoint, and every kernel is deterministic, so a resumed
// run reproduces the uninterrupted run's losses bit for bit. train.device picks the CPU model,
// reducer and optimizer here, or the GPU side in launch/cuda_training.h (launch/train_device.h
// decides); data, schedule, logging and the checkpoint format are the same for both.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/config.h"
#include "core/gpt2.h"
#include "core/rng.h"
#include "data/loader.h"
#include "data/prefetch.h"
#include "data/text_codec.h"
#include "launch/cuda_training.h"
#include "launch/step_stats.h"
#include "launch/train_device.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/reducer.h"
#include "parallel/ddp/sharded_params.h"

namespace tt {

class CheckpointReader;  // core/checkpoint_io.h

struct TrainSummary {
  int steps_done = 0;
  float final_train_loss = 0.0f;
  float final_val_loss = -1.0f;  // -1 when no validation data
  double tokens_per_s = 0.0;
  bool interrupted = false;
};

// Set by SIGINT/SIGTERM (see install_stop_signal_handlers); the loop checkpoints and stops.
extern std::atomic<bool> g_stop_requested;
void install_stop_signal_handlers();

class Trainer {
 public:
  // comm: the data-parallel group (a local communicator for one process); it outlives the trainer.
  // Every rank builds the same model; rank r reads every world_size-th batch, gradients are averaged
  // by a GradReducer, and with parallel.zero_stage >= 1 each rank updates only its parameter shard.
  // Rank 0 alone logs progress, writes metrics and checkpoints.
  // random_data_fallback: when data.train matches no shard, feed seeded random tokens instead of
  // failing (for `bench step` on configs whose data is not downloaded).
  Trainer(const config::Config& cfg, const std::string& origin, parallel::Communicator& comm,
          bool random_data_fallback = false);

  TrainSummary train(bool resume);

  // One optimizer step at step index `step` (0-based): data, forward, backward, clip, AdamW.
  StepStats step(int step);
  // Mean loss over train.val_batches batches of the validation split (the same batches every time).
  float validate();

  // The model on the host, on rank 0 (nullptr on the other ranks). On cuda and with ZeRO-3: a CPU
  // copy (batch 1) of the current weights, refreshed by every call (for sampling); with ZeRO-3 the
  // call is collective (gathers the shards onto rank 0, a chunk at a time).
  GPT2* host_model();
  const GPT2Config& model_config() const { return model_config_; }
  const TrainDevice& device() const { return device_; }
  const CudaTraining* cuda() const { return cuda_.get(); }  // null on the CPU
  const config::Config& config() const { return cfg_; }
  int64_t tokens_per_step() const;  // over all ranks
  bool has_validation() const { return val_loader_ != nullptr; }
  const TextCodec& codec() const { return codec_; }
  bool uses_random_data() const { return train_loader_ == nullptr; }

 private:
  // The initial weights (train.seed), identical on every rank (collective).
  // The run's initial weights (seeded, broadcast from rank 0): a new buffer, or written into params.
  std::vector<float> initial_weights();
  void init_weights(float* params);
  void init_cpu_model();
  void save_checkpoint(int steps_done);
  // Issues the all-gather of updated parameter shards (ZeRO) and waits; returns its seconds.
  double all_gather_params();
  float average_over_ranks(float value);
  bool is_rank0() const { return comm_.rank() == 0; }
  int zero_stage() const { return cfg_.parallel().zero_stage(); }
  // Mean loss of the batch in inputs_/targets_ on the run's device.
  float eval_loss();
  int load_checkpoint(const std::string& path);  // returns steps done
  std::string error_feedback_layout() const;     // stored beside the residuals in checkpoints
  void load_residuals(CheckpointReader& r, int64_t writer_world_size, Tensor& mine);
  // CPU side of load_checkpoint: parameters, this rank's moment shards, error feedback, step count.
  void load_cpu_state(CheckpointReader& r, int64_t writer_world_size, int64_t optimizer_steps);
  // Fills inputs_/targets_ with the next training batch; returns the seconds the step waited for it.
  double next_batch();
  void print_progress(int step, const StepStats& s, double tokens_per_s, double eta_s, float val_loss) const;

  config::Config cfg_;
  std::string origin_, run_dir_, ckpt_dir_;
  parallel::Communicator& comm_;
  GPT2Config model_config_;
  TrainDevice device_;
  std::unique_ptr<CudaTraining> cuda_;                       // the GPU side; null on the CPU
  std::unique_ptr<GPT2> model_;                              // CPU only
  std::unique_ptr<GPT2> host_copy_;                          // host_model()'s copy on cuda and with ZeRO-3
  std::unique_ptr<parallel::ShardedParams> sharded_params_;  // CPU ZeRO-3 only
  std::unique_ptr<parallel::GradReducer> reducer_;           // CPU only (the GPU's: cuda_->reducer())
  std::unique_ptr<AdamW> optimizer_;                         // CPU only
  // Train: shuffled (seed = train.seed), read ahead by a background thread. Val: plain, in order.
  std::unique_ptr<data::PrefetchLoader> train_loader_;
  std::unique_ptr<data::DataLoader> val_loader_;
  LrSchedule schedule_;
  TextCodec codec_;
  Rng rng_;
  std::vector<int32_t> inputs_, targets_;
};

// Applies train.threads to OpenMP and OpenBLAS; returns the thread count in use.
int configure_threads(int requested);

}  // namespace tt
