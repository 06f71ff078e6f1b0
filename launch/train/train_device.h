// Where a run trains and in which precision: train.device / train.precision /
// train.stochastic_rounding resolved against what this build and machine offer.
//
// Design: a pure function of the config and a few facts about the process (DeviceFacts), so every
// rule is unit-tested without a GPU. "cuda" asked explicitly and impossible is a config error naming
// the field that blocks it; "auto" falls back to the CPU instead and says why in `note`, so a GPU
// machine never fails a run the CPU trainer can do (e.g. the quick start's head size 16, which the
// CUDA attention kernels do not take).
#pragma once

#include <string>

#include "core/config.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/model/model.h"

namespace tt {

namespace parallel {
class Communicator;
}

struct DeviceFacts {
  bool build_has_cuda = false;
  int cuda_devices = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;                  // ranks on this node
  std::string comm_backend = "local";  // Communicator::backend()
};

// The facts of this process (build flags, visible GPUs, the communicator's shape).
DeviceFacts device_facts(const parallel::Communicator& comm);
// The same before any communicator exists: world size and local rank from the launcher's environment
// (parallel/comm/rank_discovery.h); comm_backend is "" (unknown).
DeviceFacts device_facts_from_env();

// The communicator backend the process group should be created with: "nccl" when this build has
// NCCL and the run trains on CUDA with several ranks (its gradients live in device memory), else
// "auto". For launch/train/process_group.cpp, before the communicator exists.
std::string comm_backend_for(const config::Config& cfg, const DeviceFacts& facts);

struct TrainDevice {
  Device device = Device::cpu();
  DType dtype = DType::kF32;  // working precision: fp32, or bf16 on CUDA (fp32 master weights kept)
  bool stochastic_rounding = false;
  std::string note;  // why "auto" chose the CPU although CUDA is available; "" otherwise
  bool is_cuda() const { return device.kind == DeviceKind::kCuda; }
  std::string str() const;  // "cuda:0 bf16 (stochastic rounding)", "cpu fp32"
};

// Throws kConfig naming the field at fault (train.device, train.precision,
// train.stochastic_rounding, model.head_dim) with a hint.
TrainDevice resolve_train_device(const config::Config& cfg, const DeviceFacts& facts);

// "fp32" or "bf16": the train.precision value of a working dtype.
const char* precision_name(DType dtype);

// Head sizes the CUDA attention kernels take.
bool cuda_attention_supports_head_size(int head_size);

// train.matmul_precision and train.fp8 as the model's options (the config is validated; "auto" must
// have been resolved by the planner first).
LowPrecisionOptions low_precision_options(const config::Config& cfg);

// The matmul precisions a GPU's tensor cores run, as "default, int8" ("default, fp8, int8" from
// sm_89, Ada and Hopper; int8 from sm_75, Turing); compute_capability = 10·major + minor.
std::string gpu_matmul_precisions(int compute_capability);
// Throws kConfig naming train.matmul_precision, the GPU and the modes it has when the run's device
// cannot run the precision (the CPU emulates every mode).
void check_matmul_precision(const config::Config& cfg, const TrainDevice& device, const std::string& gpu_name,
                            int compute_capability);

}  // namespace tt
