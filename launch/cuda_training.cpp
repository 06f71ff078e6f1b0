// GPU side of the training loop (see cuda_training.h): model, master weights and moments on the
// device, bucketed NCCL gradient averaging, clipping, mixed-precision AdamW, CUDA-event phase times.
#include "launch/cuda_training.h"

#include "core/error.h"

#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/cuda_check.h"
#include "core/gpt2_cuda.h"
#include "core/logging.h"
#include "core/tensor.h"
#include "kernels/adamw/adamw.h"
#include "kernels/reductions/reductions.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "parallel/ddp/buckets.h"
#if TOPOTRAIN_HAVE_NCCL
#include "parallel/comm/nccl/nccl_communicator.h"
#endif
#endif

namespace tt {

CudaTraining::~CudaTraining() = default;

#if TOPOTRAIN_HAVE_CUDA
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

// Averages the gradient buffer over the ranks of an NCCL communicator while backward runs: the
// model's grad-ready ranges cover buckets (parallel/ddp/buckets.h, highest offsets first); each
// covered bucket is all-reduced at once (NCCL orders it after the model's stream). As the CPU
// reducer with zero_stage 0, only the last micro-step of an accumulation communicates.
class GradAverager {
 public:
  GradAverager(parallel::Communicator& comm, void* grads, DType dtype, const std::vector<ParamInfo>& layout,
               const parallel::BucketCaps& caps)
      : comm_(comm), grads_(static_cast<char*>(grads)), dtype_(dtype) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const auto& p : layout) ranges.push_back({p.offset, p.offset + shape_numel(p.shape)});
    n_ = ranges.back().second;
    buckets_ = parallel::assign_buckets(ranges, dtype_size(dtype), caps);
  }

  void begin_backward(int micro, int accum_steps) {
    communicate_ = comm_.size() > 1 && micro == accum_steps - 1;
    next_ = 0;
    ready_from_ = n_;
  }

  void on_grads_ready(int64_t begin, int64_t end) {
    TT_ASSERT(end == ready_from_, "gradient ranges must arrive in decreasing order: got [", begin, ", ", end,
              ") after ", ready_from_);
    ready_from_ = begin;
    if (!communicate_) return;
    while (next_ < buckets_.size() && buckets_[next_].begin >= ready_from_) {
      const parallel::Bucket& b = buckets_[next_++];
      issued_at_.push_back(now_s());
      pending_.push_back(
          comm_.all_reduce(grads_ + size_t(b.begin) * dtype_size(dtype_), b.size(), dtype_, parallel::ReduceOp::kAvg));
    }
  }

  bool communicating() const { return communicate_; }

  // Waits for every bucket; adds the in-flight time (union of [issued, done]) to *comm_s.
  void finish(double* comm_s) {
    std::vector<std::pair<double, double>> spans;
    for (size_t i = 0; i < pending_.size(); ++i) {
      pending_[i]->wait();
      spans.push_back({issued_at_[i], issued_at_[i] + pending_[i]->elapsed_s()});
    }
    std::sort(spans.begin(), spans.end());
    double covered = -1e300;
    for (const auto& [b, e] : spans) {
      *comm_s += std::max(0.0, e - std::max(b, covered));
      covered = std::max(covered, e);
    }
    pending_.clear();
    issued_at_.clear();
  }

  const std::vector<parallel::Bucket>& buckets() const { return buckets_; }

 private:
  parallel::Communicator& comm_;
  char* grads_;
  DType dtype_;
  int64_t n_ = 0;
  std::vector<parallel::Bucket> buckets_;
  bool communicate_ = false;
  size_t next_ = 0;
  int64_t ready_from_ = 0;
  std::vector<std::shared_ptr<parallel::Work>> pending_;
  std::vector<double> issued_at_;
};

// A pool of timing events, one pair per phase instance of a step.
class EventPool {
 public:
  ~EventPool() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  cudaEvent_t at(size_t i) {
    while (events_.size() <= i) {
      cudaEvent_t e = nullptr;
      TT_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    return events_[i];
  }
  // Seconds from event a to event b (both recorded and complete).
  double seconds(size_t a, size_t b) {
    float ms = 0.0f;
    TT_CUDA_CHECK(cudaEventElapsedTime(&ms, at(a), at(b)));
    return double(ms) * 1e-3;
  }

 private:
  std::vector<cudaEvent_t> events_;
};

class CudaTrainingImpl final : public CudaTraining {
 public:
  CudaTrainingImpl(const config::Config& cfg, const GPT2Config& mc, const TrainDevice& dev,
                   parallel::Communicator& comm, const float* init_params)
      : cfg_(cfg), comm_(comm), stochastic_(dev.stochastic_rounding) {
    int device = dev.device.index;
#if TOPOTRAIN_HAVE_NCCL
    nccl_ = dynamic_cast<parallel::NcclCommunicator*>(&comm);
    if (nccl_) device = nccl_->device();
#endif
    if (comm.size() > 1 && comm.backend() != "nccl")
      throw Error(
          ErrorKind::kConfig,
          str("the CUDA trainer with ", comm.size(), " ranks needs the NCCL communicator, not ", comm.backend()),
          "train.device", "use a process group with the nccl backend, or train.device=cpu");
    TT_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    TT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    device_name_ = prop.name;

    const auto& t = cfg.train();
    model_ = std::make_unique<GPT2Cuda>(mc, t.batch_size(), t.seq_len(), dev.precision, device);
    stream_ = model_->stream();
#if TOPOTRAIN_HAVE_NCCL
    if (nccl_) nccl_->set_compute_stream(stream_);  // collectives wait for the model's queued work
#endif
    const int64_t n = model_->num_params();
    const Device where = Device::cuda(device);
    if (model_->precision() == Precision::kBF16)
      master_ = Tensor::zeros("adamw.master_weights", {n}, DType::kF32, where);
    m_ = Tensor::zeros("adamw.m", {n}, DType::kF32, where);
    v_ = Tensor::zeros("adamw.v", {n}, DType::kF32, where);
    norm_sq_ = Tensor::zeros("grad_norm_squared", {1}, DType::kF32, where);
    TT_CUDA_CHECK(cudaMemsetAsync(m_.raw(), 0, m_.nbytes(), stream_));
    TT_CUDA_CHECK(cudaMemsetAsync(v_.raw(), 0, v_.nbytes(), stream_));

    // AdamW ranges: runs of equal `decay` merged, as optim/adamw.cpp.
    for (const auto& p : model_->layout()) {
      const int64_t size = shape_numel(p.shape);
      if (!ranges_.empty() && ranges_.back().decay == p.decay &&
          ranges_.back().offset + ranges_.back().size == p.offset)
        ranges_.back().size += size;
      else
        ranges_.push_back({p.offset, size, p.decay});
    }
    const auto& par = cfg.parallel();
    const parallel::BucketCaps caps{size_t(double(par.bucket_cap_mb()) * (1 << 20)),
                                    size_t(double(par.first_bucket_cap_mb()) * (1 << 20))};
    averager_ = std::make_unique<GradAverager>(comm, model_->grads(), model_->dtype(), model_->layout(), caps);
    model_->set_grad_ready_callback([this](int64_t b, int64_t e) { averager_->on_grads_ready(b, e); });
    if (comm.size() > 1 && comm.rank() == 0)
      log_info("data parallel: ", comm.size(), " ranks (", comm.backend(), ") | ", precision_name(model_->precision()),
               " gradients all-reduced | ",
               parallel::describe_buckets(averager_->buckets(), dtype_size(model_->dtype())));
    set_state(init_params, nullptr, nullptr, 0);
  }

  ~CudaTrainingImpl() override {
#if TOPOTRAIN_HAVE_NCCL
    if (nccl_) nccl_->set_compute_stream(nullptr);  // the model's stream dies with it
#endif
  }

  StepStats step(int step, float lr, const std::function<double()>& next_batch, const int32_t* inputs,
                 const int32_t* targets) override {
    StepStats s;
    const auto& t = cfg_.train();
    const int B = t.batch_size(), T = t.seq_len(), accum = t.grad_accum_steps();
    const auto start = Clock::now();
    model_->zero_grad();
    for (int micro = 0; micro < accum; ++micro) {
      s.data_s += next_batch();
      record(size_t(3 * micro));
      model_->forward(inputs, targets, B, T);
      record(size_t(3 * micro + 1));
      averager_->begin_backward(micro, accum);
      model_->backward(1.0f / float(accum));
      record(size_t(3 * micro + 2));
    }
    const size_t last_backward = size_t(3 * accum - 1), opt_begin = size_t(3 * accum), opt_end = opt_begin + 1;
    if (averager_->communicating()) {
      TT_CUDA_CHECK(cudaEventSynchronize(events_.at(last_backward)));  // compute is done: the rest is exposed
      const auto t0 = Clock::now();
      averager_->finish(&s.comm_s);
      s.exposed_comm_s = seconds_since(t0);
    }

    record(opt_begin);
    sum_squares(norm_sq_.data<float>());  // accumulated in double, rounded to fp32 as on the CPU
    float norm_sq = 0.0f;
    TT_CUDA_CHECK(cudaMemcpyAsync(&norm_sq, norm_sq_.raw(), sizeof(float), cudaMemcpyDeviceToHost, stream_));
    s.loss = model_->take_loss_sum() / float(accum);  // synchronises the stream
    s.grad_norm = std::sqrt(double(norm_sq));
    const float scale = clip_scale(s.grad_norm, cfg_.optimizer().grad_clip());
    s.lr = lr;
    if (scale > 0.0f)
      adamw(lr, scale);
    else if (comm_.rank() == 0)
      log_warn("step ", step + 1, ": gradient norm is not finite; skipping the update");
    record(opt_end);
    TT_CUDA_CHECK(cudaEventSynchronize(events_.at(opt_end)));
    for (int micro = 0; micro < accum; ++micro) {
      s.forward_s += events_.seconds(size_t(3 * micro), size_t(3 * micro + 1));
      s.backward_s += events_.seconds(size_t(3 * micro + 1), size_t(3 * micro + 2));
    }
    s.optimizer_s = events_.seconds(opt_begin, opt_end);
    s.total_s = seconds_since(start);
    return s;
  }

  float evaluate(const int32_t* inputs, const int32_t* targets) override {
    model_->forward(inputs, targets, cfg_.train().batch_size(), cfg_.train().seq_len());
    return model_->take_loss_sum();
  }

  void get_state(float* params, float* m, float* v) override {
    const int64_t n = model_->num_params();
    if (params) {
      if (master_.defined())
        download(params, master_, n);
      else
        model_->get_params(params);
    }
    if (m) download(m, m_, n);
    if (v) download(v, v_, n);
  }

  void set_state(const float* params, const float* m, const float* v, int64_t optimizer_steps) override {
    const int64_t n = model_->num_params();
    steps_ = optimizer_steps;
    if (m) upload(m_, m, n);
    if (v) upload(v_, v, n);
    if (!params) return;
    if (!master_.defined()) {
      model_->set_params(params);
      return;
    }
    upload(master_, params, n);
    // The bf16 working copy as the update that produced these master weights wrote it.
    std::vector<uint16_t> bits(static_cast<size_t>(n));
    const bool stochastic = stochastic_ && steps_ > 0;
    const uint64_t seed = cfg_.train().seed();
    for (int64_t i = 0; i < n; ++i)
      bits[size_t(i)] = stochastic
                            ? kernels::f32_to_bf16_stochastic(params[i], kernels::adamw_rounding_bits(seed, steps_, i))
                            : f32_to_bf16(params[i]);
    TT_CUDA_CHECK(cudaMemcpyAsync(model_->params(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice, stream_));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  int64_t optimizer_steps() const override { return steps_; }
  std::string device_name() const override { return device_name_; }
  size_t device_bytes_in_use() const override {
    size_t free = 0, total = 0;
    TT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return total - free;
  }

 private:
  void record(size_t i) { TT_CUDA_CHECK(cudaEventRecord(events_.at(i), stream_)); }

  void sum_squares(float* out) {
    if (model_->precision() == Precision::kBF16)
      kernels::sum_squares_cuda(out, static_cast<const __nv_bfloat16*>(model_->grads()), model_->num_params(), stream_);
    else
      kernels::sum_squares_cuda(out, static_cast<const float*>(model_->grads()), model_->num_params(), stream_);
  }

  void adamw(float lr, float grad_scale) {
    ++steps_;
    const auto& o = cfg_.optimizer();
    float* m = m_.data<float>();
    float* v = v_.data<float>();
    for (const ParamRange& r : ranges_) {
      const kernels::AdamWHyper h{lr, o.beta1(), o.beta2(), o.eps(), r.decay ? o.weight_decay() : 0.0f, steps_};
      if (master_.defined()) {
        const kernels::BF16Rounding rounding{stochastic_, cfg_.train().seed(), r.offset};
        kernels::adamw_update_mixed_cuda(master_.data<float>() + r.offset, m + r.offset, v + r.offset,
                                         static_cast<__nv_bfloat16*>(model_->params()) + r.offset,
                                         static_cast<const __nv_bfloat16*>(model_->grads()) + r.offset, r.size, h,
                                         grad_scale, rounding, stream_);
      } else {
        kernels::adamw_update_cuda(static_cast<float*>(model_->params()) + r.offset, m + r.offset, v + r.offset,
                                   static_cast<const float*>(model_->grads()) + r.offset, r.size, h, grad_scale,
                                   stream_);
      }
    }
  }

  void download(float* dst, const Tensor& src, int64_t n) {
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, src.raw(), size_t(n) * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void upload(const Tensor& dst, const float* src, int64_t n) {
    TT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src, size_t(n) * sizeof(float), cudaMemcpyHostToDevice, stream_));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  config::Config cfg_;
  parallel::Communicator& comm_;
#if TOPOTRAIN_HAVE_NCCL
  parallel::NcclCommunicator* nccl_ = nullptr;
#endif
  bool stochastic_;
  std::string device_name_;
  std::unique_ptr<GPT2Cuda> model_;
  cudaStream_t stream_ = nullptr;
  Tensor master_, m_, v_, norm_sq_;  // master_: bf16 mode only (fp32 mode updates the model's weights)
  std::vector<ParamRange> ranges_;
  std::unique_ptr<GradAverager> averager_;
  EventPool events_;
  int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<CudaTraining> create_cuda_training(const config::Config& cfg, const GPT2Config& model,
                                                   const TrainDevice& dev, parallel::Communicator& comm,
                                                   const float* init_params) {
  return std::make_unique<CudaTrainingImpl>(cfg, model, dev, comm, init_params);
}

#else  // !TOPOTRAIN_HAVE_CUDA

std::unique_ptr<CudaTraining> create_cuda_training(const config::Config&, const GPT2Config&, const TrainDevice&,
                                                   parallel::Communicator&, const float*) {
  throw Error(ErrorKind::kConfig, "this topotrain was built without CUDA", "train.device",
              "rebuild with the CUDA toolkit (-DTOPOTRAIN_CUDA=ON), or set train.device=cpu");
}

#endif  // TOPOTRAIN_HAVE_CUDA

}  // namespace tt
