// Device and precision resolution (see train_device.h).
#include "launch/train/train_device.h"

#include <vector>

#include "core/error.h"
#include "core/model/weights.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/rank_discovery.h"

namespace tt {

namespace {
// A reason the CUDA trainer cannot take this run: the field to blame, what, and how to fix it.
struct Blocker {
  std::string field, what, hint;
};

std::vector<Blocker> cuda_blockers(const config::Config& cfg, const DeviceFacts& f) {
  std::vector<Blocker> out;
  const int head_dim = run_model_desc(cfg).head_dim;
  if (!cuda_attention_supports_head_size(head_dim))
    out.push_back({"model.head_dim", str("head size ", head_dim, " is not supported by the CUDA attention kernels"),
                   "use a head size of 32, 64 or 128 (model.head_dim, or n_embd / n_head), or train.device=cpu"});
  if (f.world_size > 1 && f.comm_backend != "nccl")
    out.push_back({"train.device",
                   str("the CUDA trainer with ", f.world_size, " ranks needs the NCCL communicator, but this job uses ",
                       f.comm_backend),
                   "run a build with NCCL (see `topotrain --version`) whose process group uses the nccl backend for "
                   "cuda runs, or train.device=cpu"});
  if (f.cuda_devices > 0 && f.local_size > f.cuda_devices)
    out.push_back({"train.device",
                   str(f.local_size, " ranks on this node share ", f.cuda_devices,
                       " visible GPU(s); NCCL needs one GPU per rank"),
                   str("start at most ", f.cuda_devices,
                       " rank(s) per node (mpirun -np / --npernode), or "
                       "train.device=cpu")});
  return out;
}
}  // namespace

const char* precision_name(DType dtype) { return dtype == DType::kBF16 ? "bf16" : "fp32"; }

bool cuda_attention_supports_head_size(int head_size) {
  return head_size == 32 || head_size == 64 || head_size == 128;  // kernels/attention/attention.h
}

DeviceFacts device_facts(const parallel::Communicator& comm) {
  DeviceFacts f;
  f.build_has_cuda = TOPOTRAIN_HAVE_CUDA != 0;
  f.cuda_devices = cuda_device_count();
  f.world_size = comm.size();
  f.local_rank = comm.local_rank();
  f.local_size = comm.local_size();
  f.comm_backend = comm.backend();
  return f;
}

DeviceFacts device_facts_from_env() {
  const RankInfo env = discover_rank_from_env();
  DeviceFacts f;
  f.build_has_cuda = TOPOTRAIN_HAVE_CUDA != 0;
  f.cuda_devices = cuda_device_count();
  f.world_size = env.world_size;
  f.local_rank = env.local_rank;
  f.local_size = env.local_size;
  f.comm_backend = "";
  return f;
}

std::string comm_backend_for(const config::Config& cfg, const DeviceFacts& facts) {
  if (!TOPOTRAIN_HAVE_NCCL || facts.world_size <= 1) return "auto";
  DeviceFacts with_nccl = facts;
  with_nccl.comm_backend = "nccl";
  try {
    return resolve_train_device(cfg, with_nccl).is_cuda() ? "nccl" : "auto";
  } catch (const Error&) {
    return "auto";  // the Trainer reports the problem with the communicator it gets
  }
}

std::string TrainDevice::str() const {
  return device.str() + " " + precision_name(dtype) + (stochastic_rounding ? " (stochastic rounding)" : "");
}

TrainDevice resolve_train_device(const config::Config& cfg, const DeviceFacts& f) {
  const auto& t = cfg.train();
  const std::string asked = t.device().empty() ? "auto" : t.device();
  TrainDevice out;
  bool cuda = false;
  if (asked == "cuda") {
    if (!f.build_has_cuda)
      throw Error(ErrorKind::kConfig, "train.device is \"cuda\" but this topotrain was built without CUDA",
                  "train.device",
                  "rebuild with the CUDA toolkit (-DTOPOTRAIN_CUDA=ON), or set train.device=cpu (or auto)");
    if (f.cuda_devices == 0)
      throw Error(ErrorKind::kConfig, "train.device is \"cuda\" but no CUDA device is visible", "train.device",
                  "check nvidia-smi and CUDA_VISIBLE_DEVICES, or set train.device=cpu (or auto)");
    const auto blockers = cuda_blockers(cfg, f);
    if (!blockers.empty()) {
      const Blocker& b = blockers.front();
      throw Error(ErrorKind::kConfig, b.what + " (train.device is \"cuda\")", b.field, b.hint);
    }
    cuda = true;
  } else if (asked == "auto" && f.build_has_cuda && f.cuda_devices > 0) {
    const auto blockers = cuda_blockers(cfg, f);
    cuda = blockers.empty();
    if (!cuda) out.note = "train.device auto: training on the CPU because " + blockers.front().what;
  } else if (asked != "auto" && asked != "cpu") {
    throw Error(ErrorKind::kConfig, "train.device \"" + asked + "\" is not supported", "train.device",
                "use \"auto\", \"cpu\" or \"cuda\"");
  }

  if (cuda) {
    out.device = Device::cuda(f.local_rank % f.cuda_devices);
    out.dtype = t.precision() == "fp32" ? DType::kF32 : DType::kBF16;
  } else if (t.precision() == "bf16") {
    throw Error(ErrorKind::kConfig,
                "train.precision \"bf16\" needs the CUDA trainer, but this run trains on the CPU" +
                    (out.note.empty() ? std::string() : " (" + out.note + ")"),
                "train.precision", "drop train.precision (or set \"fp32\") to train on the CPU");
  }
  if (t.stochastic_rounding() && out.dtype != DType::kBF16)
    throw Error(ErrorKind::kConfig,
                str("train.stochastic_rounding applies to bf16 weights, but this run trains in ",
                    precision_name(out.dtype), " on ", out.device.str()),
                "train.stochastic_rounding", "set train.precision=bf16 on a GPU, or drop train.stochastic_rounding");
  out.stochastic_rounding = t.stochastic_rounding();
  return out;
}

LowPrecisionOptions low_precision_options(const config::Config& cfg) {
  const auto& t = cfg.train();
  LowPrecisionOptions o;
  const std::string& p = t.matmul_precision();
  TT_ASSERT(p != "auto", "train.matmul_precision \"auto\" reached the trainer unresolved");
  o.matmul = p == "fp8" ? ops::MatmulPrecision::kFp8 : p == "int8" ? ops::MatmulPrecision::kInt8
                                                                     : ops::MatmulPrecision::kDefault;
  o.lm_head = t.low_precision_lm_head();
  o.amax_history_len = t.fp8().has_amax_history_len() ? t.fp8().amax_history_len() : 1024;
  o.margin = t.fp8().margin();
  return o;
}

std::string gpu_matmul_precisions(int cc) {
  if (cc >= 89) return "default, fp8, int8";
  if (cc >= 75) return "default, int8";
  return "default";
}

void check_matmul_precision(const config::Config& cfg, const TrainDevice& device, const std::string& gpu_name,
                            int cc) {
  const std::string& p = cfg.train().matmul_precision();
  if (!device.is_cuda() || p.empty() || p == "default") return;
  const bool ok = p == "fp8" ? cc >= 89 : cc >= 75;
  if (ok) return;
  throw Error(ErrorKind::kConfig,
              str("train.matmul_precision \"", p, "\" needs ", p == "fp8" ? "an sm_89+ GPU (Ada, Hopper)" : "an sm_75+ GPU",
                  "; ", gpu_name, " (sm_", cc / 10, cc % 10, ") runs ", gpu_matmul_precisions(cc)),
              "train.matmul_precision",
              str("use one of ", gpu_matmul_precisions(cc), ", or train.device \"cpu\" to emulate ", p, " exactly"));
}

}  // namespace tt
