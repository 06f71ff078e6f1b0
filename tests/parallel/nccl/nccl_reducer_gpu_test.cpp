// GradReducer on GPU gradients over NCCL against the same reducer on CPU gradients over the local
// communicator, one rank each: every payload (fp32/bf16 as the gradients, compressed bf16/int8 with
// error feedback), both collective shapes and ZeRO stages 1-2, for fp32 and bf16 gradients. A
// collective over one rank is the identity, and the CUDA codec is bit-identical to the CPU codec, so
// the reduced gradients and residuals must match bit for bit. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/cuda_check.h"
#include "core/device.h"
#include "parallel/comm/local/local_communicator.h"
#include "parallel/comm/nccl/nccl_communicator.h"
#include "parallel/ddp/reducer.h"

namespace tt::parallel {
namespace {

// Three "tensors" of odd sizes, so buckets and int8 blocks end mid-way.
const std::vector<std::pair<int64_t, int64_t>> kRanges = {{0, 3001}, {3001, 3300}, {3300, 9000}};
const int64_t kElems = 9000;

std::vector<uint8_t> gradient_bytes(DType dtype, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1e-2f);
  std::vector<uint8_t> out(size_t(kElems) * dtype_size(dtype));
  for (int64_t i = 0; i < kElems; ++i) {
    const float f = normal(rng);
    if (dtype == DType::kF32) {
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const uint16_t h = f32_to_bf16(f);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

std::vector<uint8_t> host_bytes(const Tensor& t) {
  std::vector<uint8_t> out(t.nbytes());
  if (t.device().kind == DeviceKind::kCuda)
    TT_CUDA_CHECK(cudaMemcpy(out.data(), t.raw(), out.size(), cudaMemcpyDeviceToHost));
  else
    std::memcpy(out.data(), t.raw(), out.size());
  return out;
}

void set_bytes(const Tensor& t, const std::vector<uint8_t>& bytes) {
  if (t.device().kind == DeviceKind::kCuda)
    TT_CUDA_CHECK(cudaMemcpy(t.raw(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  else
    std::memcpy(t.raw(), bytes.data(), bytes.size());
}

struct Setting {
  const char* name;
  int zero_stage;
  GradCompression compression;
  CollectiveShape shape;
};

// Runs 3 optimizer steps of 2 micro-steps through `reducer`; returns the shard gradients after each
// step followed by the final residual, as bytes.
std::vector<uint8_t> run(GradReducer& reducer, const Tensor& grads) {
  std::vector<uint8_t> out;
  for (int step = 0; step < 3; ++step) {
    for (int micro = 0; micro < 2; ++micro) {
      set_bytes(grads, gradient_bytes(grads.dtype(), unsigned(10 * step + micro)));
      reducer.begin_backward(micro, 2);
      for (auto it = kRanges.rbegin(); it != kRanges.rend(); ++it) reducer.on_grads_ready(it->first, it->second);
      reducer.finish_backward();
    }
    TT_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<uint8_t> shard = host_bytes(reducer.shard_grads());
    out.insert(out.end(), shard.begin(), shard.end());
  }
  if (reducer.residual().defined()) {
    const std::vector<uint8_t> r = host_bytes(reducer.residual());
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

TEST(NcclGradReducer, GpuGradientsReduceAsOnTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  CommOptions opts;
  opts.timeout_s = 60;
  std::unique_ptr<NcclCommunicator> nccl = create_nccl_communicator(opts, std::make_unique<LocalCommunicator>(opts));
  LocalCommunicator local(opts);
  TT_CUDA_CHECK(cudaSetDevice(nccl->device()));
  BucketCaps caps;
  caps.cap_bytes = 8 << 10;
  caps.first_cap_bytes = 2 << 10;
  const Setting settings[] = {
      {"flat", 0, GradCompression::kNone, CollectiveShape::kFlat},
      {"flat bf16 payload", 0, GradCompression::kBf16, CollectiveShape::kFlat},
      {"flat int8 payload", 0, GradCompression::kInt8, CollectiveShape::kFlat},
      {"hierarchical", 0, GradCompression::kNone, CollectiveShape::kHierarchical},
      {"hierarchical int8 payload", 0, GradCompression::kInt8, CollectiveShape::kHierarchical},
      {"zero 1", 1, GradCompression::kNone, CollectiveShape::kFlat},
      {"zero 2", 2, GradCompression::kNone, CollectiveShape::kFlat},
  };
  for (const Setting& s : settings)
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      const std::string what = str(s.name, ", ", dtype_name(dtype), " gradients");
      Tensor cpu_grads = Tensor::zeros("cpu.grads", {kElems}, dtype);
      Tensor gpu_grads = Tensor::zeros("gpu.grads", {kElems}, dtype, Device::cuda(nccl->device()));
      GradReducer on_cpu(local, cpu_grads, kRanges, s.zero_stage, caps, s.compression, true, s.shape);
      GradReducer on_gpu(*nccl, gpu_grads, kRanges, s.zero_stage, caps, s.compression, true, s.shape, 0,
                         Exec{Device::cuda(nccl->device()), /*stream: the legacy default*/ nullptr});
      EXPECT_EQ(on_gpu.buckets().size(), on_cpu.buckets().size()) << what;
      const std::vector<uint8_t> want = run(on_cpu, cpu_grads), got = run(on_gpu, gpu_grads);
      ASSERT_EQ(got.size(), want.size()) << what;
      int64_t differ = 0;
      for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
      EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << got.size() << " bytes differ";
      EXPECT_GT(on_gpu.take_times().comm_s, 0.0) << what;
    }
}

}  // namespace
}  // namespace tt::parallel
