// The GPU side of the training loop: one rank's GPT2Cuda, its fp32 master weights and AdamW moments
// on the device, gradient averaging over NCCL, global-norm clipping and the mixed-precision AdamW
// update. The Trainer (launch/trainer.cpp) keeps data, schedule, logging and checkpoint files, and
// calls this instead of its CPU model/reducer/optimizer when the run resolved to cuda.
//
// Design: the optimizer state is checkpointed exactly as on the CPU (fp32 parameters = the master
// weights, fp32 m and v, whole buffers in gpt2_param_layout order), so a run resumes on either
// device. In bf16 the working weights are re-derived from the master on load with the rounding the
// step that produced them used (round-to-nearest, or the stochastic rounding's stateless hash of
// (seed, step, index)), so a resumed GPU run continues bit for bit. Multi-rank runs need the NCCL
// communicator. The CPU trainer's GradReducer reduces the bf16/fp32 gradient buffer on the device,
// bucket by bucket as backward reports them, with the configured payload (fp32/bf16 as the
// gradients, or compressed bf16/int8 with error feedback), collective shape (flat or hierarchical)
// and ZeRO stage. Its collectives run on NCCL's stream ordered after the model's stream, and its
// codec kernels on the model's stream. With ZeRO 1-2 each rank keeps master weights and moments
// for its shard only, the gradient norm is summed over the shards, and the updated shards of the
// working weights are all-gathered after the update.
// An abstract interface plus a factory keeps CUDA types out of the Trainer; in a build without CUDA
// the factory throws.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/gpt2.h"
#include "launch/step_stats.h"
#include "launch/train_device.h"
#include "parallel/comm/communicator.h"

namespace tt {

namespace parallel {
class GradReducer;
}

class CudaTraining {
 public:
  virtual ~CudaTraining();

  // One optimizer step at index `step` with learning rate `lr`: per micro-step, next_batch() fills
  // `inputs`/`targets` (B×T host arrays) and returns the seconds it waited. Returns this rank's loss
  // (not averaged over ranks) and the phase times.
  virtual StepStats step(int step, float lr, const std::function<double()>& next_batch, const int32_t* inputs,
                         const int32_t* targets) = 0;
  // Mean loss of one B×T batch (no gradients); synchronises.
  virtual float evaluate(const int32_t* inputs, const int32_t* targets) = 0;

  // Checkpoint state as host fp32, whole buffers of gpt2_num_params elements: parameters (the master
  // weights), AdamW m and v. Any pointer may be null (not copied). Synchronise. Collective when
  // sharded(): every rank calls it, with the same pointers null.
  virtual void get_state(float* params, float* m, float* v) = 0;
  // Whether ZeRO shards the optimizer state over the ranks.
  virtual bool sharded() const = 0;
  // The weights the model computes with (bf16 ones widened in bf16 mode), host fp32; this rank only.
  virtual void get_working_params(float* params) = 0;
  virtual void set_state(const float* params, const float* m, const float* v, int64_t optimizer_steps) = 0;
  virtual int64_t optimizer_steps() const = 0;

  // The gradient reducer of a multi-rank run; nullptr on one rank (nothing to reduce).
  virtual const parallel::GradReducer* reducer() const = 0;
  // Error-feedback residuals (reducer()->residual(), fp32, on the device) for checkpoints:
  // gather_residuals is collective and returns every rank's, in rank order (empty without error
  // feedback); set_residuals uploads this rank's.
  virtual std::vector<float> gather_residuals() = 0;
  virtual void set_residuals(const float* mine) = 0;

  virtual std::string device_name() const = 0;  // cudaDeviceProp::name
  // Bytes in use on the device (cudaMemGetInfo: every allocation of every process on it).
  virtual size_t device_bytes_in_use() const = 0;
};

// Builds the model on dev.device (the NCCL communicator's device when comm is one), uploads
// init_params (host fp32, identical on every rank) as the initial weights. Throws kConfig when the
// build has no CUDA, or a multi-rank comm is not NCCL.
std::unique_ptr<CudaTraining> create_cuda_training(const config::Config& cfg, const GPT2Config& model,
                                                   const TrainDevice& dev, parallel::Communicator& comm,
                                                   const float* init_params);

}  // namespace tt
