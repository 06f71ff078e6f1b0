// Device parsing/printing; the CUDA device count comes from core/cuda_runtime.cu when built with CUDA.
#include "core/device.h"

#include "core/error.h"

namespace tt {

#if TOPOTRAIN_HAVE_CUDA
int cuda_runtime_device_count();  // core/cuda_runtime.cu
int cuda_device_count() { return cuda_runtime_device_count(); }
#else
int cuda_device_count() { return 0; }
#endif

Device Device::parse(const std::string& s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  if (s.rfind("cuda:", 0) == 0) {
    try {
      size_t used = 0;
      int i = std::stoi(s.substr(5), &used);
      if (used == s.size() - 5 && i >= 0) return cuda(i);
    } catch (const std::exception&) {
    }
  }
  throw Error(ErrorKind::kConfig, "unknown device '" + s + "'", "", "use cpu, cuda or cuda:N");
}

std::string Device::str() const { return kind == DeviceKind::kCpu ? "cpu" : "cuda:" + std::to_string(index); }

}  // namespace tt
