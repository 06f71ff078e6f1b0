// The training loop's device (see device_runner.h).
#include "launch/train/device_runner.h"

#include "core/error.h"

#if TOPOTRAIN_HAVE_NCCL
#include "parallel/comm/nccl/nccl_communicator.h"
#endif

namespace tt {

#if TOPOTRAIN_HAVE_NCCL  // only NCCL builds declare NcclCommunicator (and use this)
namespace {
parallel::NcclCommunicator* as_nccl(parallel::Communicator& comm) {
  return dynamic_cast<parallel::NcclCommunicator*>(&comm);
}
}  // namespace
#endif

DeviceRunner::DeviceRunner(const TrainDevice& device, parallel::Communicator& comm) : device_(device), comm_(comm) {
  if (device_.is_cuda()) {
    if (comm.size() > 1 && comm.backend() != "nccl")
      throw Error(
          ErrorKind::kConfig,
          str("training on CUDA with ", comm.size(), " ranks needs the NCCL communicator, not ", comm.backend()),
          "train.device", "use a build with NCCL (see `topotrain --version`), or train.device=cpu");
#if TOPOTRAIN_HAVE_NCCL
    if (auto* nccl = as_nccl(comm)) device_.device = Device::cuda(nccl->device());  // the rank's GPU
#endif
  }
  stream_ = std::make_unique<DeviceStream>(device_.device);
  exec_ = stream_->exec();
  timer_ = std::make_unique<DeviceTimer>(exec_);
  name_ = device_name(device_.device);
#if TOPOTRAIN_HAVE_NCCL
  if (auto* nccl = as_nccl(comm)) {
    nccl->set_compute_stream(static_cast<cudaStream_t>(exec_.stream));  // collectives wait for queued work
    hooked_ = true;
  }
#endif
}

DeviceRunner::~DeviceRunner() {
#if TOPOTRAIN_HAVE_NCCL
  if (hooked_) as_nccl(comm_)->set_compute_stream(nullptr);  // the stream dies with the runner
#endif
}

size_t DeviceRunner::bytes_in_use() const { return device_bytes_in_use(device_.device); }

}  // namespace tt
