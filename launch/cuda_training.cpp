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
#include "launch/grad_reducer_config.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "parallel/ddp/reducer.h"
#include "parallel/ddp/sharding.h"
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
    if (comm.size() > 1) create_reducer();
    // The optimizer state covers this rank's shard (ZeRO 1-2), or the whole buffer.
    const int64_t n = model_->num_params();
    shard_ = reducer_ ? reducer_->shard() : parallel::Shard{0, n};
    const int64_t len = std::max<int64_t>(shard_.size(), 1);
    const Device where = Device::cuda(device);
    if (model_->precision() == Precision::kBF16)
      master_ = Tensor::zeros("adamw.master_weights", {len}, DType::kF32, where);
    m_ = Tensor::zeros("adamw.m", {len}, DType::kF32, where);
    v_ = Tensor::zeros("adamw.v", {len}, DType::kF32, where);
    norm_sq_ = Tensor::zeros("grad_norm_squared", {1}, DType::kF32, where);
    ranges_ = adamw_ranges(model_->layout(), shard_.begin, shard_.end);
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
      if (reducer_) reducer_->begin_backward(micro, accum);
      model_->backward(1.0f / float(accum));
      record(size_t(3 * micro + 2));
      if (reducer_) {
        // Compute is done when the backward event is: the reducer's wait after that is exposed.
        if (reducer_->communicates()) TT_CUDA_CHECK(cudaEventSynchronize(events_.at(size_t(3 * micro + 2))));
        reducer_->finish_backward();
      }
    }
    const size_t opt_begin = size_t(3 * accum), opt_end = opt_begin + 1;
    if (reducer_) {
      const parallel::CommTimes comm = reducer_->take_times();
      s.comm_s = comm.comm_s;
      s.exposed_comm_s = comm.exposed_comm_s;
    }

    record(opt_begin);
    sum_squares(norm_sq_.data<float>());  // accumulated in double, rounded to fp32 as on the CPU
    if (sharded())  // each rank summed its shard; NCCL runs after the kernel, the copy after the wait
      comm_.all_reduce(norm_sq_.raw(), 1, DType::kF32, parallel::ReduceOp::kSum)->wait();
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
    if (sharded()) {  // every rank's updated shard of the working weights to every rank
      const auto t0 = Clock::now();
      char* params = static_cast<char*>(model_->params());
      comm_
          .all_gather_v(params + shard_.begin * dtype_size(model_->dtype()), params,
                        parallel::shard_sizes(model_->num_params(), comm_.size()), model_->dtype())
          ->wait();
      s.param_gather_s = seconds_since(t0);
      s.comm_s += s.param_gather_s;
      s.exposed_comm_s += s.param_gather_s;
    }
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

  bool sharded() const override { return reducer_ && reducer_->zero_stage() > 0; }

  void get_state(float* params, float* m, float* v) override {
    if (params) {
      if (master_.defined())
        gather(params, master_);
      else
        model_->get_params(params);
    }
    if (m) gather(m, m_);
    if (v) gather(v, v_);
  }

  void get_working_params(float* params) override { model_->get_params(params); }

  void set_state(const float* params, const float* m, const float* v, int64_t optimizer_steps) override {
    const int64_t n = model_->num_params();
    steps_ = optimizer_steps;
    if (m) upload(m_, m + shard_.begin, shard_.size());
    if (v) upload(v_, v + shard_.begin, shard_.size());
    if (!params) return;
    if (!master_.defined()) {
      model_->set_params(params);
      return;
    }
    upload(master_, params + shard_.begin, shard_.size());
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
  const parallel::GradReducer* reducer() const override { return reducer_.get(); }

  std::vector<float> gather_residuals() override {
    if (!reducer_ || !reducer_->residual().defined()) return {};
    const Tensor& mine = reducer_->residual();
    Tensor all = Tensor::zeros("checkpoint.error_feedback", {mine.numel() * comm_.size()}, DType::kF32, mine.device());
    comm_.all_gather(mine.raw(), all.raw(), mine.numel(), DType::kF32)->wait();
    std::vector<float> host(size_t(all.numel()));
    download(host.data(), all, all.numel());
    return host;
  }

  void set_residuals(const float* mine) override {
    TT_ASSERT(reducer_ && reducer_->residual().defined(), "set_residuals without error feedback");
    Tensor& r = reducer_->residual();
    upload(r, mine, r.numel());
  }
  std::string device_name() const override { return device_name_; }
  size_t device_bytes_in_use() const override {
    size_t free = 0, total = 0;
    TT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return total - free;
  }

 private:
  void record(size_t i) { TT_CUDA_CHECK(cudaEventRecord(events_.at(i), stream_)); }

  // The gradient reducer of a multi-rank run: GradReducer on the device gradients, its codec on the
  // model's stream (the NCCL communicator's compute stream).
  void create_reducer() {
    reducer_ = create_grad_reducer(cfg_, comm_, model_->grads_tensor(), model_->layout(), stream_);
    model_->set_grad_ready_callback([this](int64_t b, int64_t e) { reducer_->on_grads_ready(b, e); });
    if (comm_.rank() == 0)
      log_info("data parallel: ", comm_.size(), " ranks (", comm_.backend(), ") | ",
               precision_name(model_->precision()), " gradients, payload ",
               parallel::grad_compression_name(reducer_->compression()),
               reducer_->residual().defined() ? " with error feedback" : "", " | ",
               parallel::describe_buckets(reducer_->buckets(), dtype_size(model_->dtype())));
  }

  // This rank's reduced gradients: its ZeRO shard, or the whole buffer.
  const void* shard_grads() const { return reducer_ ? reducer_->shard_grads().raw() : model_->grads(); }

  void sum_squares(float* out) {
    if (model_->precision() == Precision::kBF16)
      kernels::sum_squares_cuda(out, static_cast<const __nv_bfloat16*>(shard_grads()), shard_.size(), stream_);
    else
      kernels::sum_squares_cuda(out, static_cast<const float*>(shard_grads()), shard_.size(), stream_);
  }

  // ranges_, m, v, master and the gradients are indexed from the shard's start; the working weights
  // (and the stochastic rounding's element index) by the whole buffer's.
  void adamw(float lr, float grad_scale) {
    ++steps_;
    const auto& o = cfg_.optimizer();
    float* m = m_.data<float>();
    float* v = v_.data<float>();
    for (const ParamRange& r : ranges_) {
      const int64_t global = shard_.begin + r.offset;
      const kernels::AdamWHyper h{lr, o.beta1(), o.beta2(), o.eps(), r.decay ? o.weight_decay() : 0.0f, steps_};
      if (master_.defined()) {
        const kernels::BF16Rounding rounding{stochastic_, cfg_.train().seed(), global};
        kernels::adamw_update_mixed_cuda(master_.data<float>() + r.offset, m + r.offset, v + r.offset,
                                         static_cast<__nv_bfloat16*>(model_->params()) + global,
                                         static_cast<const __nv_bfloat16*>(shard_grads()) + r.offset, r.size, h,
                                         grad_scale, rounding, stream_);
      } else {
        kernels::adamw_update_cuda(static_cast<float*>(model_->params()) + global, m + r.offset, v + r.offset,
                                   static_cast<const float*>(shard_grads()) + r.offset, r.size, h, grad_scale, stream_);
      }
    }
  }

  // The whole buffer of a per-shard fp32 tensor (master weights, moments) in host memory: collective
  // over the ranks when the state is sharded.
  void gather(float* dst, const Tensor& part) {
    const int64_t n = model_->num_params();
    if (!sharded()) {
      download(dst, part, n);
      return;
    }
    Tensor whole = Tensor::zeros("checkpoint.gather", {n}, DType::kF32, part.device());
    float* w = whole.data<float>();
    TT_CUDA_CHECK(cudaMemcpyAsync(w + shard_.begin, part.raw(), size_t(shard_.size()) * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream_));
    comm_.all_gather_v(w + shard_.begin, w, parallel::shard_sizes(n, comm_.size()), DType::kF32)->wait();
    download(dst, whole, n);
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
  // shard_.size() elements; master_: bf16 mode only (fp32 mode updates the model's weights).
  Tensor master_, m_, v_, norm_sq_;
  parallel::Shard shard_;                           // the part of the flat buffer this rank's optimizer updates
  std::vector<ParamRange> ranges_;                  // AdamW ranges within shard_, offsets from its start
  std::unique_ptr<parallel::GradReducer> reducer_;  // multi-rank runs only
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
