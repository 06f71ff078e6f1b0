// Training loop, validation, progress/metrics output and checkpoint save/restore (see trainer.h).
#include "launch/train/trainer.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/allocator.h"
#include "core/checkpoint_io.h"
#include "core/device_info.h"
#include "core/format.h"
#include "core/fs.h"
#include "core/json_writer.h"
#include "core/logging.h"
#include "core/metrics.h"
#include "core/model/init_weights.h"
#include "core/model/low_precision_state.h"
#include "core/model/weights.h"
#include "core/step_range.h"
#include "core/tensorboard_writer.h"
#include "core/trace_recorder.h"
#include "data/shard.h"
#include "kernels/ops/ops.h"
#include "launch/train/grad_reducer_config.h"
#include "launch/train/trace/device_spans.h"
#include "launch/train/trace/step_prediction.h"
#include "launch/train/trace/step_tracer.h"
#include "optim/grad_clip.h"
#include "parallel/ddp/finite_check.h"
#include "parallel/ddp/shard_gather.h"
#include "parallel/ddp/sharding.h"
#include "parallel/strategy/model_spec.h"

namespace tt {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Elements moved between the host and a rank's part of the state at a time (64 MiB of fp32).
constexpr int64_t kStateChunk = int64_t(1) << 24;

// The parts of a run's state that are not big tensors, stored as one binary section.
struct RunState {
  int64_t steps_done;
  int64_t optimizer_steps;
  Rng::State rng;
  data::LoaderState train_loader;  // identical on every rank, so N ranks can resume as M
  int64_t world_size;              // informational: the run that wrote it
  int64_t zero_stage;
};
static_assert(std::is_trivially_copyable_v<RunState>, "RunState is stored raw in checkpoints");

constexpr const char* kCheckpointFormat = "topotrain-v2";

// The optimizer's ranges of a rank's part of the flat buffer: its pieces' trainable tensors, merged.
std::vector<ParamRange> optimizer_ranges(const ModelLayout& layout, const parallel::ShardLayout& shard) {
  std::vector<ParamRange> ranges;
  for (const auto& piece : shard.pieces())
    for (const ParamRange& r : adamw_ranges(layout.tensors, piece.begin, piece.end, piece.local)) ranges.push_back(r);
  return merge_param_ranges(ranges);
}

// fp32 host values of a chunk of working parameters (fp32 or bf16).
void to_f32(const void* chunk, DType dtype, int64_t count, float* out) {
  if (dtype == DType::kF32) {
    std::memcpy(out, chunk, size_t(count) * sizeof(float));
    return;
  }
  const auto* bits = static_cast<const uint16_t*>(chunk);
  for (int64_t i = 0; i < count; ++i) out[i] = bf16_to_f32(bits[i]);
}
}  // namespace

int configure_threads(int requested) {
  const int n = requested > 0 ? requested : omp_get_max_threads();
  omp_set_num_threads(n);
  // The CPU matmul runs one sgemm per output tile on the OpenMP threads. An OpenMP build of OpenBLAS
  // runs single-threaded inside them; a pthreads build would start its own threads there (and tile
  // by their count again), so it gets one.
  openblas_set_num_threads(openblas_get_parallel() == 2 ? n : 1);
  return n;
}

Trainer::Trainer(const config::Config& cfg, const std::string& origin, parallel::Communicator& comm,
                 bool random_data_fallback)
    : cfg_(cfg), origin_(origin), comm_(comm), rng_(cfg.train().seed() ^ 0x5eed5eedull) {
  const auto& t = cfg.train();
  const auto& o = cfg.optimizer();
  run_dir_ = cfg.logging().run_dir();
  ckpt_dir_ = run_dir_ + "/checkpoints";
  const TrainDevice device = resolve_train_device(cfg, device_facts(comm_));
  if (!device.note.empty() && is_rank0()) log_warn(device.note);
  desc_ = run_model_desc(cfg);
  fill_model_config(desc_, cfg_.mutable_model());  // the effective config names the model it trains
  runner_ = std::make_unique<DeviceRunner>(device, comm_);
  check_matmul_precision(cfg_, device, runner_->name(), device_compute_capability(device.device));
  check_memory_plan();
  if (t.memory_budget_bytes() > 0) set_memory_budget(runner_->device().device, size_t(t.memory_budget_bytes()));
  build_model();
  schedule_ = LrSchedule{o.lr(), o.min_lr_ratio(), o.warmup_steps(), t.steps()};

  std::vector<std::string> train_shards;
  try {
    train_shards = data::resolve_shards(cfg.data().train());
  } catch (const Error& e) {
    if (!random_data_fallback) throw;
    if (is_rank0()) log_warn("no training data (", e.what(), "); using seeded random tokens");
  }
  if (!train_shards.empty()) {
    check_shard_ids(train_shards);
    if (!cfg.data().val().empty()) check_shard_ids(data::resolve_shards(cfg.data().val()));
    train_loader_ = std::make_unique<data::PrefetchLoader>(std::make_unique<data::DataLoader>(
        train_shards, t.batch_size(), t.seq_len(), comm_.rank(), comm_.size(), t.seed(), cfg.data().shuffle()));
    if (!cfg.data().val().empty())
      val_loader_ = std::make_unique<data::DataLoader>(data::resolve_shards(cfg.data().val()), t.batch_size(),
                                                       t.seq_len(), comm_.rank(), comm_.size(), /*seed=*/0,
                                                       /*shuffle=*/false);
    codec_ = run_codec();
  } else {
    rng_ = Rng(cfg.train().seed() ^ 0x5eed5eedull ^ (uint64_t(comm_.rank()) << 32));  // different random data per rank
  }
  inputs_.resize(size_t(t.batch_size()) * t.seq_len());
  targets_.resize(inputs_.size());
}

// The tokenizer for prompts and samples: data.tokenizer, else the one that came with init_from's
// weights (a Hugging Face tokenizer.json), else what the shards name (codec_for_shards).
TextCodec Trainer::run_codec() const {
  const auto& d = cfg_.data();
  if (d.tokenizer().empty() && !init_tokenizer_.empty()) {
    try {
      return codec_for_shards(d.train(), init_tokenizer_);
    } catch (const Error& e) {
      if (is_rank0())
        log_warn("the tokenizer beside the weights (", init_tokenizer_, ") is not one topotrain reads (", e.what(),
                 "); using the data's");
    }
  }
  return codec_for_shards(d.train(), d.tokenizer());
}

Trainer::~Trainer() {
  if (runner_) synchronize(runner_->exec());  // nothing in flight reads the buffers about to be freed
}

// The model on the runner's device, its gradient reducer and the (sharded) AdamW. With ZeRO-3 the
// model holds no parameters (it reads them from the ranks' shards, sharded_params_) and no gradient
// buffer (it writes into the reducer's gradient windows).
void Trainer::build_model() {
  const auto& t = cfg_.train();
  const auto& o = cfg_.optimizer();
  const auto& par = cfg_.parallel();
  const bool zero3 = par.zero_stage() == 3;
  const Exec& exec = runner_->exec();
  const DType dtype = runner_->dtype();
  const ModelLayout layout = model_layout(desc_);
  if (zero3)
    sharded_params_ = std::make_unique<parallel::ShardedParams>(
        comm_, layout.groups, layout.numel, layout.reused_groups, par.zero3_prefetch(), dtype, exec);
  ModelOptions mo;
  mo.max_batch = t.batch_size();
  mo.max_seq = t.seq_len();
  mo.exec = exec;
  mo.dtype = dtype;
  mo.hold_params = mo.hold_grads = !zero3;
  mo.recompute = {parse_recompute(t.recompute()), t.recompute_blocks()};
  mo.low_precision = low_precision_options(cfg_);
  model_ = std::make_unique<Model>(desc_, mo);
  if (zero3) model_->set_param_source(sharded_params_.get());

  reducer_ = create_grad_reducer(cfg_, comm_, model_->grads(), layout, exec, dtype);
  model_->set_grad_ready_callback([this](int64_t b, int64_t e) { reducer_->on_grads_ready(b, e); });
  if (zero3) model_->set_grad_sink(reducer_->use_grad_windows(layout.reused_groups));

  // The optimizer sees only this rank's part (the whole buffer without ZeRO), piece by piece.
  const parallel::ShardLayout& shard = reducer_->shard_layout();
  const std::vector<ParamRange> ranges = optimizer_ranges(layout, shard);
  AdamWOptions ao;
  ao.exec = exec;
  ao.param_dtype = ao.grad_dtype = dtype;
  ao.stochastic_rounding = runner_->device().stochastic_rounding;
  ao.seed = t.seed();
  ao.state = parse_state_dtype(o.state_dtype());
  optimizer_ =
      std::make_unique<AdamW>(ranges, shard.size(), AdamWSettings{o.beta1(), o.beta2(), o.eps(), o.weight_decay()}, ao);
  TT_ASSERT(!zero3 || sharded_params_->layout() == shard, "ZeRO-3 parameter and gradient shards differ");

  // Initial weights: each rank makes (or reads) its own part; ZeRO-1/2 then gather the working copy.
  if (cfg_.model().init_from().empty()) {
    set_params([&](int64_t begin, int64_t count, float* out) {
      init_weights(desc_, layout, t.seed(), begin, begin + count, out);
    });
  } else {
    const std::unique_ptr<WeightSource> source = open_weights(cfg_.model().init_from());
    set_params([&](int64_t begin, int64_t count, float* out) { source->read(begin, count, out); });
    init_tokenizer_ = source->tokenizer_path();
    if (is_rank0()) log_info("initial weights from ", source->describe());
  }
  if (is_rank0() && comm_.size() > 1)
    log_info("data parallel: ", comm_.size(), " ranks (", comm_.backend(), ", ", comm_.num_nodes(),
             " node(s)) | zero_stage ", par.zero_stage(), zero3 ? " (parameters gathered per layer)" : "",
             " | gradients ", parallel::grad_compression_name(reducer_->compression()),
             reducer_->residual().defined() ? " with error feedback" : "", " | ",
             parallel::describe_buckets(reducer_->buckets(), dtype_size(dtype)));
}

void* Trainer::shard_params() {
  if (sharded_params_) return sharded_params_->shard_data();
  return static_cast<char*>(model_->params().raw()) +
         reducer_->shard_layout().range().begin * int64_t(dtype_size(runner_->dtype()));
}

void Trainer::set_params(const std::function<void(int64_t begin, int64_t count, float* out)>& fill) {
  const parallel::ShardLayout& shard = reducer_->shard_layout();
  if (sharded_params_) sharded_params_->invalidate();  // before the shard changes
  std::vector<float> chunk(size_t(std::min(std::max<int64_t>(shard.size(), 1), kStateChunk)));
  for (const auto& piece : shard.pieces())
    for (int64_t at = piece.begin; at < piece.end; at += kStateChunk) {
      const int64_t count = std::min(kStateChunk, piece.end - at);
      fill(at, count, chunk.data());
      optimizer_->load_params(shard_params(), piece.local + (at - piece.begin), chunk.data(), count);
    }
  all_gather_params();
}

int64_t Trainer::tokens_per_step() const {
  return int64_t(cfg_.train().batch_size()) * cfg_.train().seq_len() * cfg_.train().grad_accum_steps() * comm_.size();
}

double Trainer::next_batch() {
  if (train_loader_) {
    train_loader_->next(inputs_.data(), targets_.data());
    return train_loader_->last_wait_s();
  }
  const auto t0 = Clock::now();
  const uint64_t V = uint64_t(desc_.vocab_size);
  inputs_[0] = int32_t(rng_.next_u64() % V);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    targets_[i] = int32_t(rng_.next_u64() % V);
    if (i + 1 < inputs_.size()) inputs_[i + 1] = targets_[i];
  }
  return seconds_since(t0);
}

double Trainer::sum_in_rank_order(double mine) {
  // An all-gather of one double through a u32 sum (host memory works with every backend's
  // all_reduce): each rank fills only its own slot.
  std::vector<uint32_t> slots(2 * size_t(comm_.size()), 0);
  std::memcpy(&slots[2 * size_t(comm_.rank())], &mine, sizeof mine);
  comm_.all_reduce(slots.data(), int64_t(slots.size()), DType::kU32, parallel::ReduceOp::kSum)->wait();
  double sum = 0.0;
  for (int r = 0; r < comm_.size(); ++r) {
    double part = 0.0;
    std::memcpy(&part, &slots[2 * size_t(r)], sizeof part);
    sum += part;
  }
  return sum;
}

std::string Trainer::first_non_finite_tensor(const void* part, DType dtype) {
  const ModelLayout layout = model_layout(desc_);
  const int mine = parallel::first_non_finite_tensor(runner_->exec(), layout, reducer_->shard_layout(), part, dtype);
  const auto n = uint32_t(layout.tensors.size());
  uint32_t found = mine < 0 ? 0 : n - uint32_t(mine);  // the largest over ranks is the first tensor
  if (comm_.size() > 1) comm_.all_reduce(&found, 1, DType::kU32, parallel::ReduceOp::kMax)->wait();
  return found ? layout.tensors[n - found].name : "";
}

void Trainer::stop_diverged(int step, int skipped) {
  std::string culprit = first_non_finite_tensor(optimizer_->fp32_params(shard_params()), DType::kF32);
  if (!culprit.empty()) {
    culprit = "parameter " + culprit;
  } else {
    const Tensor& grads = reducer_->shard_grads();
    culprit = first_non_finite_tensor(grads.raw(), grads.dtype());
    culprit = culprit.empty() ? "not found (the loss itself)" : "the gradient of " + culprit;
  }
  const auto good = list_checkpoints(ckpt_dir_);
  throw Error(ErrorKind::kRuntime,
              str("training diverged: the gradient norm was not finite at ", skipped, " steps in a row (steps ",
                  step + 2 - skipped, "-", step + 1, ", no update made); the first non-finite tensor is ", culprit),
              ckpt_dir_,
              str(good.empty() ? std::string("no checkpoint was written yet: start again")
                               : str("the checkpoints (newest: step ", good.back().first,
                                     ") hold finite state: resume from one"),
                  " with a lower optimizer.lr, more optimizer.warmup_steps or a tighter optimizer.grad_clip, or raise "
                  "train.max_skipped_steps to ride out more skipped steps"));
}

float Trainer::average_over_ranks(float value) {
  if (comm_.size() == 1) return value;
  comm_.all_reduce(&value, 1, DType::kF32, parallel::ReduceOp::kAvg)->wait();
  return value;
}

double Trainer::all_gather_params() {
  // ZeRO-3 gathers parameter groups when forward/backward need them instead.
  if (!sharded() || sharded_params_) return 0.0;
  trace::ScopedSpan span("parameter all-gather", "comm");
  const auto t0 = Clock::now();
  char* params = static_cast<char*>(model_->params().raw());
  const DType dtype = runner_->dtype();
  comm_
      .all_gather_v(params + reducer_->shard().begin * int64_t(dtype_size(dtype)), params,
                    parallel::shard_sizes(model_->num_params(), comm_.size()), dtype)
      ->wait();
  return seconds_since(t0);
}

StepStats Trainer::step(int step) {
  StepStats s;
  const auto& t = cfg_.train();
  const int B = t.batch_size(), T = t.seq_len(), accum = t.grad_accum_steps();
  const Exec& exec = runner_->exec();
  DeviceTimer& timer = runner_->timer();
  comm_.set_step(step + 1);
  trace::ScopedSpan step_span("step", step + 1, "step");
  const auto start = Clock::now();
  model_->zero_grad();
  LowPrecisionState* fp8 = model_->low_precision_state();
  if (fp8) fp8->begin_step();  // validation and sampling since the last step recorded nothing that counts
  // ZeRO-3: the time forward and backward wait for parameter groups is communication, not compute.
  double gather_wait_s = 0.0;
  auto take_gather_wait = [&] {
    const double waited = sharded_params_ ? sharded_params_->take_wait_s() : 0.0;
    gather_wait_s += waited;
    return waited;
  };
  take_gather_wait();  // validation's or sampling's waits are not this step's
  gather_wait_s = 0.0;
  std::vector<double> forward_waits, backward_waits;
  int64_t device_anchor_ns = 0;  // host time of the first device mark, where the device lane starts
  for (int micro = 0; micro < accum; ++micro) {
    const size_t mark = size_t(3 * micro);
    {
      trace::ScopedSpan span("data wait", "data");
      s.data_s += next_batch();
    }
    if (micro == 0 && trace::enabled()) device_anchor_ns = trace::now_ns();
    timer.mark(mark);
    {
      trace::ScopedSpan span("forward", "forward");
      model_->forward(inputs_.data(), targets_.data(), B, T);
    }
    timer.mark(mark + 1);
    forward_waits.push_back(take_gather_wait());
    reducer_->begin_backward(micro, accum);
    {
      trace::ScopedSpan span("backward", "backward");
      // The micro-steps' gradients are summed and averaged by the optimizer's gradient scale: every
      // backward sees the loss gradient unscaled, as each rank of a data-parallel step does (so one
      // rank accumulating N micro-steps quantises fp8 gradients exactly as N ranks do).
      model_->backward(1.0f);
    }
    timer.mark(mark + 2);
    backward_waits.push_back(take_gather_wait());
    trace::ScopedSpan wait_span("gradient wait", "comm");
    // Compute is done when the backward mark is: the reducer's wait after that is exposed.
    if (reducer_->communicates()) timer.wait(mark + 2);
    reducer_->finish_backward();
  }
  if (fp8) s.precision = update_fp8_scaling(*fp8);
  const parallel::CommTimes comm = reducer_->take_times();
  s.comm_s = comm.comm_s;
  s.exposed_comm_s = comm.exposed_comm_s;
  const double window_wait_s = comm.backward_wait_s;  // ZeRO-3's waits for gradient windows are communication

  const size_t opt_begin = size_t(3 * accum), opt_end = opt_begin + 1;
  std::optional<trace::ScopedSpan> optimizer_span;
  if (trace::enabled()) optimizer_span.emplace("optimizer", "optimizer");
  timer.mark(opt_begin);
  const Tensor& shard_grads = reducer_->shard_grads();
  // The global norm from every rank's double partial, summed in rank order and rounded to fp32 once:
  // ZeRO-2's contiguous shards and ZeRO-3's per-group cuts sum other partitions of the same squares,
  // and a float all-reduce of fp32 partials would give them (and so their clip factors) other last bits.
  double sum_sq = ops::sum_squares(exec, shard_grads.dtype(), shard_grads.raw(), reducer_->shard_layout().size());
  if (sharded()) sum_sq = sum_in_rank_order(sum_sq);
  s.grad_norm = std::sqrt(double(float(sum_sq))) / accum;  // of the micro-steps' average
  const float scale = clip_scale(s.grad_norm, cfg_.optimizer().grad_clip()) / float(accum);
  s.lr = schedule_.lr_at(step);
  if (sharded_params_) sharded_params_->invalidate();  // before the shard changes
  s.skipped = !(scale > 0.0f);
  if (!s.skipped)
    optimizer_->step(shard_params(), shard_grads.raw(), s.lr, scale);
  else if (is_rank0())
    log_warn("step ", step + 1, ": gradient norm is not finite; skipping the update");
  timer.mark(opt_end);
  optimizer_span.reset();
  const double gather_s = all_gather_params();
  s.optimizer_s = timer.seconds(opt_begin, opt_end);  // waits for the update: every mark below is done
  for (int micro = 0; micro < accum; ++micro) {
    const size_t mark = size_t(3 * micro);
    s.forward_s += timer.seconds(mark, mark + 1) - forward_waits[size_t(micro)];
    s.backward_s += timer.seconds(mark + 1, mark + 2) - backward_waits[size_t(micro)];
  }
  s.backward_s -= window_wait_s;
  // ZeRO-3 waited for its parameter groups inside forward and backward instead.
  s.param_gather_s = sharded_params_ ? gather_wait_s : gather_s;
  s.comm_s += s.param_gather_s;
  s.exposed_comm_s += s.param_gather_s;
  if (trace::enabled() && exec.is_cuda()) record_device_spans(timer, accum, device_anchor_ns);
  s.loss = average_over_ranks(model_->take_loss_sum() / float(accum));
  s.total_s = seconds_since(start);
  return s;
}

// The step's fp8 statistics over every rank (amax by max, counts by sum: the same scales come out on
// every rank, as if one rank had run all the micro-steps), as metrics, then the next step's scales.
std::vector<std::pair<std::string, double>> Trainer::update_fp8_scaling(LowPrecisionState& fp8) {
  const int64_t n = 3 * int64_t(fp8.sites());
  if (comm_.size() > 1 && n > 0) {
    comm_.all_reduce(fp8.amax(), n, DType::kF32, parallel::ReduceOp::kMax)->wait();
    comm_.all_reduce(fp8.counts(), 2 * n, DType::kU32, parallel::ReduceOp::kSum)->wait();
  }
  const LowPrecisionState::Stats st = fp8.stats();  // the scales this step used
  fp8.update();
  std::vector<std::pair<std::string, double>> out;
  static const char* const kRoles[3] = {"x", "w", "dy"};
  for (int r = 0; r < 3; ++r) {
    double over = 0, under = 0, amax = 0;
    for (int i = 0; i < fp8.sites(); ++i) {
      over += st.counts[size_t(6 * i + r)];
      under += st.counts[size_t(6 * i + 3 + r)];
      amax = std::max(amax, double(st.amax[size_t(3 * i + r)]));
    }
    out.push_back({str("fp8_overflow_", kRoles[r]), over});
    out.push_back({str("fp8_underflow_", kRoles[r]), under});
    out.push_back({str("fp8_amax_", kRoles[r]), amax});
  }
  // The scales of a few layers: the first block's q/k/v, the last block's down projection, the head.
  std::vector<int> watched = {0};
  if (fp8.sites() > kSitesPerBlock) watched.push_back(kSitesPerBlock * desc_.n_layer - 1);
  if (fp8.sites() > kSitesPerBlock * desc_.n_layer) watched.push_back(kSitesPerBlock * desc_.n_layer);
  for (int i : watched) {
    std::string name = LowPrecisionState::site_name(i, desc_.n_layer);
    std::replace(name.begin(), name.end(), ' ', '_');
    for (int r = 0; r < 3; ++r) out.push_back({str("fp8_scale_", name, "_", kRoles[r]), st.scale[size_t(3 * i + r)]});
  }
  return out;
}

float Trainer::validate() {
  TT_ASSERT(val_loader_, "validate() without validation data");
  trace::ScopedSpan span("validation", "validation");
  const auto& t = cfg_.train();
  const int world = comm_.size(), rank = comm_.rank();
  // The same val_batches batches whatever the number of ranks: rank r evaluates batches r, r+world, ...
  val_loader_->reset();
  float sum = 0.0f;
  for (int round = 0; round * world < t.val_batches(); ++round) {
    val_loader_->next(inputs_.data(), targets_.data());
    const bool counted = round * world + rank < t.val_batches();
    // ZeRO-3's forward is collective (parameter gathers): every rank runs every round.
    if (counted || sharded_params_) {
      const float loss = eval_loss();
      if (counted) sum += loss;
    }
  }
  if (world > 1) comm_.all_reduce(&sum, 1, DType::kF32, parallel::ReduceOp::kSum)->wait();
  return sum / float(t.val_batches());
}

float Trainer::eval_loss() {
  model_->forward(inputs_.data(), targets_.data(), cfg_.train().batch_size(), cfg_.train().seq_len());
  return model_->take_loss_sum();
}

Model* Trainer::host_model() {
  if (!runner_->is_cuda() && !sharded_params_) return is_rank0() ? model_.get() : nullptr;
  if (is_rank0() && !host_copy_) {  // for sampling: no gradients
    ModelOptions mo;
    mo.max_batch = 1;
    mo.max_seq = cfg_.train().seq_len();
    mo.hold_grads = false;
    host_copy_ = std::make_unique<Model>(desc_, mo);
  }
  float* copy = is_rank0() ? host_copy_->params().data<float>() : nullptr;
  int64_t at = 0;
  const DType dtype = runner_->dtype();
  const parallel::ChunkSink sink = [&](const void* chunk, int64_t count) {
    to_f32(chunk, dtype, count, copy + at);
    at += count;
  };
  if (sharded_params_)  // collective: every rank sends its shard, rank 0 keeps the chunks
    parallel::gather_to_rank0(comm_, sharded_params_->layout(), sharded_params_->shard_data(), dtype, runner_->exec(),
                              sink);
  else if (copy)
    parallel::stream_to_host(runner_->exec(), model_->params().raw(), dtype, model_->num_params(), sink);
  return is_rank0() ? host_copy_.get() : nullptr;
}

void Trainer::print_progress(int step, const StepStats& s, double tokens_per_s, double eta_s, float val_loss) const {
  char line[320];
  int n = std::snprintf(line, sizeof line, "step %*d/%d | loss %.4f", int(std::to_string(cfg_.train().steps()).size()),
                        step + 1, cfg_.train().steps(), s.loss);
  if (val_loss >= 0) n += std::snprintf(line + n, sizeof line - n, " | val %.4f", val_loss);
  n += std::snprintf(line + n, sizeof line - n, " | lr %.2e | norm %.3f | %.0f tok/s | %.0f ms/step", s.lr, s.grad_norm,
                     tokens_per_s, s.total_s * 1e3);
  if (comm_.size() > 1)
    n += std::snprintf(line + n, sizeof line - n, " | comm %.0f ms (exposed %.0f)", s.comm_s * 1e3,
                       s.exposed_comm_s * 1e3);
  std::snprintf(line + n, sizeof line - n, " | ETA %s", format_duration(eta_s).c_str());
  log_info(line);
}

TrainSummary Trainer::train(bool resume) {
  const auto& t = cfg_.train();
  if (is_rank0()) ensure_dir(run_dir_);
  int start_step = 0;
  if (resume) {
    // Rank 0 picks the checkpoint; every rank reads the same file.
    int32_t newest = -1;
    if (is_rank0()) {
      const std::string path = newest_complete_checkpoint(ckpt_dir_);
      for (const auto& [step, p] : list_checkpoints(ckpt_dir_))
        if (p == path) newest = int32_t(step);
    }
    comm_.broadcast(&newest, 1, DType::kI32, 0)->wait();
    if (newest < 0)
      throw Error(ErrorKind::kCheckpoint, "no complete checkpoint to resume from", ckpt_dir_,
                  "run without --resume to start fresh, or point logging.run_dir at the run to continue");
    const std::string path = checkpoint_path(ckpt_dir_, int64_t(newest));
    start_step = load_checkpoint(path);
    if (is_rank0()) log_info("resumed from ", path, " at step ", start_step);
  }
  std::unique_ptr<MetricsSink> metrics;
  std::unique_ptr<TensorBoardWriter> tensorboard;  // gets every metrics.jsonl record too
  if (is_rank0()) {
    metrics = std::make_unique<MetricsSink>(run_dir_ + "/metrics.jsonl", resume ? start_step : -1);
    const std::string config_text = config_to_text(cfg_);
    atomic_write_string(run_dir_ + "/config.pbtxt", config_text);  // the effective config, for plots and humans
    if (cfg_.logging().tensorboard())  // a new event file whose START at the first step drops later old events
      tensorboard = std::make_unique<TensorBoardWriter>(run_dir_ + "/tb", start_step + 1, config_text);
    log_info("model ", desc_.str(), " | ", double(model_num_params(desc_)) / 1e6, "M parameters | ",
             runner_->device().str(), runner_->is_cuda() ? " (" + runner_->name() + ")" : std::string(),
             " | batch_size=", t.batch_size(), " seq_len=", t.seq_len(), " grad_accum_steps=", t.grad_accum_steps(),
             " ranks=", comm_.size(), " (", tokens_per_step(), " tokens/step) | ", t.steps(), " steps | run dir ",
             run_dir_);
  }

  TrainSummary summary;
  summary.steps_done = start_step;
  double ema_step_s = 0.0, ema_tps = 0.0;
  int skipped_in_a_row = 0;
  StepRange trace_range;
  std::string trace_error;
  parse_step_range(t.trace_steps(), &trace_range, &trace_error);  // validated with the config
  StepTracer tracer(trace_range, trace_path(run_dir_, trace_range), comm_);
  write_step_prediction(cfg_, desc_, runner_->dtype(), comm_, run_dir_ + "/prediction.json",
                        trace_range.empty() ? std::string() : predicted_trace_path(run_dir_, trace_range));
  const std::optional<double> peak_tflops =
      runner_->is_cuda() ? peak_bf16_tflops(runner_->name()) : std::optional<double>();
  for (int step = start_step; step < t.steps(); ++step) {
    tracer.before_step(step + 1);
    const StepStats s = this->step(step);
    const double tps = double(tokens_per_step()) / s.total_s;
    ema_step_s = step == start_step ? s.total_s : 0.9 * ema_step_s + 0.1 * s.total_s;
    ema_tps = step == start_step ? tps : 0.9 * ema_tps + 0.1 * tps;
    const bool last = step + 1 == t.steps();
    const bool do_val = val_loader_ && (last || (t.val_every() > 0 && (step + 1) % t.val_every() == 0));
    float val_loss = -1.0f;
    if (do_val) val_loss = validate();

    if (metrics) {
      JsonLine j;
      j.add("step", step + 1)
          .add("loss", s.loss)
          .add("lr", s.lr)
          .add("grad_norm", s.grad_norm)
          .add("tokens_per_s", tps)
          .add("step_s", s.total_s)
          .add("data_s", s.data_s)
          .add("forward_s", s.forward_s)
          .add("backward_s", s.backward_s)
          .add("optimizer_s", s.optimizer_s)
          .add("comm_s", s.comm_s)
          .add("exposed_comm_s", s.exposed_comm_s)
          .add("peak_memory_bytes", int64_t(memory_stats(runner_->device().device).peak_bytes));  // rank 0's, so far
      if (zero_stage() > 0) j.add("param_gather_s", s.param_gather_s);
      // Model FLOP utilisation against the GPU's dense bf16 peak (6N + 12·L·d·T FLOPs per token).
      if (peak_tflops)
        j.add("mfu", model_flops_per_token(desc_, t.seq_len()) * tps / comm_.size() / (*peak_tflops * 1e12));
      if (do_val) j.add("val_loss", val_loss);
      if (s.skipped) j.add("skipped", true);
      for (const auto& [name, value] : s.precision) j.add(name.c_str(), value);
      metrics->write(j);
      if (tensorboard) tensorboard->write_metrics(j);
    }
    const int log_every = std::max(1, t.log_every());
    if (is_rank0() && (last || do_val || (step + 1) % log_every == 0 || step == start_step))
      print_progress(step, s, ema_tps, ema_step_s * (t.steps() - step - 1), val_loss);

    skipped_in_a_row = s.skipped ? skipped_in_a_row + 1 : 0;
    if (t.max_skipped_steps() > 0 && skipped_in_a_row >= t.max_skipped_steps()) stop_diverged(step, skipped_in_a_row);

    summary.steps_done = step + 1;
    summary.final_train_loss = s.loss;
    summary.tokens_per_s = ema_tps;
    if (do_val) summary.final_val_loss = val_loss;
    const int every = cfg_.checkpoint().every();
    const bool stop =
        comm_.size() > 1 ? comm_.any_rank_requests_stop(g_stop_requested.load()) : g_stop_requested.load();
    if (last || stop || (every > 0 && (step + 1) % every == 0)) save_checkpoint(step + 1);
    tracer.after_step(step + 1);
    if (stop && !last) {
      if (is_rank0())
        log_warn("stopped by signal after step ", step + 1, "; checkpoint written. Continue with --resume");
      summary.interrupted = true;
      break;
    }
  }
  tracer.finish();
  return summary;
}

void Trainer::save_checkpoint(int steps_done) {
  trace::ScopedSpan span("checkpoint", "checkpoint");
  // A checkpoint replaces older ones (checkpoint.keep): never let non-finite weights displace good ones.
  const std::string bad = first_non_finite_tensor(optimizer_->fp32_params(shard_params()), DType::kF32);
  if (!bad.empty())
    throw Error(ErrorKind::kRuntime, str("parameter ", bad, " is not finite after step ", steps_done),
                checkpoint_path(ckpt_dir_, steps_done),
                "not writing this checkpoint, so the older ones stay; resume from the newest with a lower "
                "optimizer.lr or a tighter optimizer.grad_clip");
  const Exec& exec = runner_->exec();
  const int64_t n = model_->num_params();
  const parallel::ShardLayout& shard = reducer_->shard_layout();
  // Each of params (fp32: the master weights), adam_m and adam_v is this rank's part of the flat
  // buffer. Whole (no ZeRO, or one rank): rank 0 streams it from its device into the file. Sharded:
  // every rank takes part in gathering it chunk by chunk while rank 0 writes it, so no rank holds
  // the whole tensor. Should rank 0 fail to write, it exits with the error and mpirun ends the
  // ranks gathering with it.
  // The moments are read chunk by chunk as fp32 (exact for every state dtype: see optim/adamw.h).
  const float* params = optimizer_->fp32_params(shard_params());
  const parallel::LocalReader state_readers[3] = {
      [params](int64_t local, int64_t) { return static_cast<const void*>(params + local); },
      [this](int64_t local, int64_t count) {
        return static_cast<const void*>(optimizer_->read_moments(0, local, count));
      },
      [this](int64_t local, int64_t count) {
        return static_cast<const void*>(optimizer_->read_moments(1, local, count));
      }};
  const int64_t chunk = AdamW::kMomentChunk;
  const char* names[3] = {"params", "adam_m", "adam_v"};
  // 8-bit moments are stored as they are: every owner's codes, scales and small ranges (state8_owners).
  const bool state8 = optimizer_->state_dtype() == StateDType::kInt8;
  const int num_tensors = state8 ? 1 : 3;
  const std::vector<State8Layout> owners = state8 ? state8_owners() : std::vector<State8Layout>{};
  // Error-feedback residuals differ per rank: the checkpoint holds all of them, in rank order.
  Tensor residuals;
  if (reducer_->residual().defined()) {
    const Tensor& mine = reducer_->residual();
    residuals = Tensor::zeros("checkpoint.error_feedback", {mine.numel() * comm_.size()}, DType::kF32, mine.device());
    comm_.all_gather(mine.raw(), residuals.raw(), mine.numel(), DType::kF32)->wait();
  }
  synchronize(exec);  // the last update is in the state read below
  if (!is_rank0()) {  // the gathers rank 0 runs while writing, in the same order
    if (sharded()) {
      for (int i = 0; i < num_tensors; ++i)
        parallel::gather_to_rank0(
            comm_, shard, state_readers[i], DType::kF32, exec, [](const void*, int64_t) {}, chunk);
      if (state8) stream_state8(owners, nullptr);
    }
    return;
  }
  ensure_dir(ckpt_dir_, ErrorKind::kCheckpoint);
  RunState state{steps_done,   optimizer_->steps_taken(),
                 rng_.state(), train_loader_ ? train_loader_->state() : data::LoaderState{},
                 comm_.size(), zero_stage()};
  CheckpointWriter w;
  w.add_string("format", kCheckpointFormat);
  w.add_string("model_signature", desc_.str());
  w.add_string("config", config_to_text(cfg_));
  w.add_string("tokenizer", codec_.serialize());
  w.add("state", &state, sizeof state);
  const size_t tensor_bytes = size_t(n) * sizeof(float);
  size_t total_bytes = tensor_bytes * size_t(num_tensors);
  for (int i = 0; i < num_tensors; ++i) {
    const parallel::LocalReader& read = state_readers[i];
    w.add_streamed(names[i], tensor_bytes, [&](const CheckpointWriter::Sink& sink) {
      const parallel::ChunkSink chunk_sink = [&](const void* data, int64_t count) {
        sink(data, size_t(count) * sizeof(float));
      };
      if (sharded()) {
        parallel::gather_to_rank0(comm_, shard, read, DType::kF32, exec, chunk_sink, chunk);
        return;
      }
      for (int64_t at = 0; at < n; at += chunk) {
        const int64_t count = std::min(chunk, n - at);
        parallel::stream_to_host(exec, read(at, count), DType::kF32, count, chunk_sink);
      }
    });
  }
  if (state8) {
    int64_t bytes = 0;
    for (const State8Layout& l : owners) bytes += l.total_bytes();
    w.add_string("adam_state8_layout", state8_owners_str(owners));
    w.add_streamed("adam_state8", size_t(bytes),
                   [&](const CheckpointWriter::Sink& sink) { stream_state8(owners, &sink); });
    total_bytes += size_t(bytes);
  }
  if (LowPrecisionState* fp8 = model_->low_precision_state()) {
    w.add_string("fp8_scaling_layout", fp8->layout());
    std::vector<char> bytes = fp8->save();
    w.add_owned("fp8_scaling", std::string(bytes.begin(), bytes.end()));
  }
  if (residuals.defined()) {
    const Tensor& all = residuals;
    w.add_streamed("error_feedback", all.nbytes(), [&](const CheckpointWriter::Sink& sink) {
      parallel::stream_to_host(exec, all.raw(), DType::kF32, all.numel(),
                               [&](const void* chunk, int64_t count) { sink(chunk, size_t(count) * sizeof(float)); });
    });
    w.add_string("error_feedback_layout", error_feedback_layout());
  }
  const std::string path = checkpoint_path(ckpt_dir_, steps_done);
  const auto t0 = Clock::now();
  w.write(path);
  prune_checkpoints(ckpt_dir_, cfg_.checkpoint().keep());
  log_info("checkpoint ", path, " (", format_bytes(double(total_bytes)), ", ", int(seconds_since(t0) * 1e3), " ms)");
}

// The int8 optimizer state's owners: every rank's part when sharded, else rank 0's (all hold the
// same). Pure functions of the shard layout, so every rank knows every owner's layout.
std::vector<State8Layout> Trainer::state8_owners() const {
  const parallel::ShardLayout& shard = reducer_->shard_layout();
  const ModelLayout layout = model_layout(desc_);
  if (!sharded()) return {state8_layout(optimizer_ranges(layout, shard), shard.size())};
  std::vector<State8Layout> owners;
  for (int r = 0; r < comm_.size(); ++r) {
    const parallel::ShardLayout other(shard.units(), comm_.size(), r);
    owners.push_back(state8_layout(optimizer_ranges(layout, other), other.size()));
  }
  return owners;
}

// Every owner's int8 state arrays in order, each broadcast by its owner chunk by chunk (collective
// when sharded); rank 0 hands them to `sink` (null elsewhere).
void Trainer::stream_state8(const std::vector<State8Layout>& owners, const CheckpointWriter::Sink* sink) {
  const Exec& exec = runner_->exec();
  const int64_t chunk = AdamW::kMomentChunk * 4;
  Tensor scratch = Tensor::zeros("checkpoint.state8_chunk", {chunk}, DType::kI8, exec.device);
  std::vector<char> host(exec.is_cuda() && sink ? size_t(chunk) : 0);
  for (int o = 0; o < int(owners.size()); ++o)
    for (int i = 0; i < State8Layout::kArrays; ++i) {
      const int64_t bytes = owners[size_t(o)].array_bytes(i);
      char* mine = comm_.rank() == o ? static_cast<char*>(optimizer_->state8_array(i).raw()) : nullptr;
      for (int64_t at = 0; at < bytes; at += chunk) {
        const int64_t count = std::min(chunk, bytes - at);
        char* buf = mine ? mine + at : static_cast<char*>(scratch.raw());
        if (owners.size() > 1) comm_.broadcast(buf, count, DType::kI8, o)->wait();
        if (!sink) continue;
        if (exec.is_cuda()) {
          copy_sync(exec, host.data(), buf, size_t(count));
          buf = host.data();
        }
        (*sink)(buf, size_t(count));
      }
    }
}

int Trainer::load_checkpoint(const std::string& path) {
  // The large sections stay in the file: each rank reads only what it holds (its shard, with ZeRO).
  CheckpointReader r(path, [](const std::string& name) {
    return name != "params" && name != "adam_m" && name != "adam_v" && name != "adam_state8" &&
           name != "error_feedback";
  });
  if (!r.has("format") || r.string("format") != kCheckpointFormat)
    throw Error(ErrorKind::kCheckpoint,
                "checkpoint format '" + (r.has("format") ? r.string("format") : std::string("?")) +
                    "' is not this topotrain's (" + kCheckpointFormat + ")",
                path, "start a new run_dir; weights of older checkpoints cannot be resumed by this version");
  const std::string sig = r.string("model_signature");
  if (sig != desc_.str())
    throw Error(ErrorKind::kCheckpoint,
                "checkpoint model (" + sig + ") does not match the configured model (" + desc_.str() + ")", path,
                "resume with the config the run was started with, or start a new run_dir");
  RunState state;
  r.copy_to("state", &state, sizeof state);
  const size_t full_bytes = size_t(model_->num_params()) * sizeof(float);
  const bool stored8 = r.has("adam_state8");
  for (const char* name : {"params", "adam_m", "adam_v"})  // stored whole, whatever the writer's ranks
    if (!stored8 || std::string(name) == "params") r.expect_bytes(name, full_bytes);
  // The step count first: the bf16 working copy is re-derived with the rounding of that step.
  optimizer_->set_steps_taken(state.optimizer_steps);
  set_params([&](int64_t begin, int64_t count, float* out) {
    r.read_range("params", uint64_t(begin) * sizeof(float), out, size_t(count) * sizeof(float));
  });
  // Each rank takes its shard of the moments, whatever the rank count and state dtype that wrote them:
  // 8-bit state as it is when this rank's layout is the one that wrote it, else as fp32 values.
  const std::vector<State8Layout> stored =
      stored8 ? parse_state8_owners(r.string("adam_state8_layout"), path) : std::vector<State8Layout>{};
  std::vector<int64_t> stored_at;  // where each owner's arrays start in adam_state8
  int64_t stored_bytes = 0;
  for (const State8Layout& l : stored) {
    stored_at.push_back(stored_bytes);
    stored_bytes += l.total_bytes();
  }
  if (stored8) r.expect_bytes("adam_state8", size_t(stored_bytes));
  const int owner = sharded() ? comm_.rank() : 0;
  if (stored8 && optimizer_->state_dtype() == StateDType::kInt8 && stored.size() == state8_owners().size() &&
      stored[size_t(owner)] == optimizer_->state8()) {
    const State8Layout& mine = stored[size_t(owner)];
    for (int i = 0; i < State8Layout::kArrays; ++i) {
      std::vector<char> host(static_cast<size_t>(mine.array_bytes(i)));
      r.read_range("adam_state8", uint64_t(stored_at[size_t(owner)] + mine.array_offset(i)), host.data(), host.size());
      copy_sync(runner_->exec(), optimizer_->state8_array(i).raw(), host.data(), host.size());
    }
  } else {
    const parallel::ShardLayout& shard = reducer_->shard_layout();
    std::vector<float> m(size_t(std::min(std::max<int64_t>(shard.size(), 1), kStateChunk))), v(m.size());
    // The moments of [at, at + count) from the file: fp32 sections, or every stored owner's 8-bit state.
    auto read = [&](int64_t at, int64_t count) {
      if (!stored8) {
        r.read_range("adam_m", uint64_t(at) * sizeof(float), m.data(), size_t(count) * sizeof(float));
        r.read_range("adam_v", uint64_t(at) * sizeof(float), v.data(), size_t(count) * sizeof(float));
        return;
      }
      std::fill(m.begin(), m.begin() + count, 0.0f);
      std::fill(v.begin(), v.begin() + count, 0.0f);
      for (size_t o = 0; o < stored.size(); ++o) {
        const State8Reader from_file = [&](int array, int64_t offset, void* out, int64_t bytes) {
          r.read_range("adam_state8", uint64_t(stored_at[o] + stored[o].array_offset(array) + offset), out,
                       size_t(bytes));
        };
        state8_values(stored[o], 0, at, count, from_file, m.data());
        state8_values(stored[o], 1, at, count, from_file, v.data());
      }
    };
    for (const auto& piece : shard.pieces())
      for (int64_t at = piece.begin, next; at < piece.end; at = next) {
        next = AdamW::state_chunk_end(at, at, piece.end, kStateChunk);  // whole quantisation blocks
        read(at, next - at);
        optimizer_->load_moments(piece.local + (at - piece.begin), m.data(), v.data(), next - at);
      }
  }
  if (reducer_->residual().defined()) load_residuals(r, state.world_size);
  if (LowPrecisionState* fp8 = model_->low_precision_state()) {
    if (r.has("fp8_scaling") && r.has("fp8_scaling_layout")) {
      const std::string& bytes = r.bytes("fp8_scaling");
      fp8->load(r.string("fp8_scaling_layout"), std::vector<char>(bytes.begin(), bytes.end()), path);
    } else if (is_rank0()) {
      log_warn("the checkpoint has no fp8 scaling state (it was written with another train.matmul_precision); "
               "the fp8 scales start at 1");
    }
  }
  rng_.set_state(state.rng);
  if (train_loader_) train_loader_->set_state(state.train_loader);
  if (state.steps_done > cfg_.train().steps())
    throw Error(ErrorKind::kCheckpoint,
                str("checkpoint is at step ", state.steps_done, " but train.steps is ", cfg_.train().steps()), path,
                "raise train.steps (e.g. --set train.steps=N) to continue training");
  if (is_rank0() && state.world_size != comm_.size())
    log_info("checkpoint was written by ", state.world_size, " rank(s) (zero_stage ", state.zero_stage,
             "); resuming with ", comm_.size(), " (zero_stage ", zero_stage(), ")");
  if (is_rank0()) log_config_changes(r.string("config"), path, state.world_size);
  return int(state.steps_done);
}

// Says what differs from the run that wrote the checkpoint: a changed batch size, learning rate or
// data makes the resumed run something other than that run's continuation, which should not be a
// surprise found later in the loss curve.
void Trainer::log_config_changes(const std::string& written_config, const std::string& path,
                                 int64_t written_world_size) const {
  config::Config before;
  try {
    before = parse_config_text(written_config, path + " (its config)");
  } catch (const Error& e) {
    log_warn("cannot compare the config with the checkpoint's (", e.what(), ")");
    return;
  }
  std::vector<std::string> changes;
  for (const std::string& c : config_changes(before, cfg_))
    if (c.rfind("logging.", 0) != 0) changes.push_back(c);  // where logs go changes nothing
  const auto& t = before.train();
  const int64_t written_tokens = int64_t(t.batch_size()) * t.seq_len() * t.grad_accum_steps() * written_world_size;
  if (written_tokens != tokens_per_step())
    changes.push_back(str("tokens per step: ", written_tokens, " -> ", tokens_per_step()));
  if (changes.empty()) return;
  std::string list;
  for (const std::string& c : changes) list += "\n  " + c;
  log_warn("resuming with a config that differs from the checkpoint's (", path,
           "); from here the run is not the continuation of the one that wrote it:", list);
}

// How this run's error-feedback residuals are laid out: "int8 flat", "int8 hierarchical 2 nodes x 2
// ranks", "int8 flat bf16 gradients". Residuals from a checkpoint with another layout would be fed
// back into the wrong elements.
std::string Trainer::error_feedback_layout() const {
  const parallel::NodeLayout* nodes = reducer_->node_layout();
  // Buckets are capped in bytes, so bf16 gradients have other buckets (and owner slots) than fp32.
  const DType grads = runner_->dtype();
  return str(parallel::grad_compression_name(reducer_->compression()), " ",
             parallel::collective_shape_name(reducer_->shape()), nodes ? " " + nodes->str() : std::string(),
             grads == DType::kF32 ? std::string() : str(" ", dtype_name(grads), " gradients"));
}

// This rank's error-feedback residuals, when the checkpoint holds residuals of this rank count and
// layout; otherwise they stay zero.
void Trainer::load_residuals(CheckpointReader& r, int64_t writer_world_size) {
  Tensor& mine = reducer_->residual();
  const size_t bytes = mine.nbytes();
  // [compressed reduce-scatter] residual() also holds the owner residuals of the reduced chunks, so
  // its length changed; a checkpoint whose section has another length is not loaded (no overread).
  // The hierarchical shape orders them by its node layout, so the layout must match too.
  const bool same_layout =
      r.has("error_feedback") && r.section_bytes("error_feedback") == bytes * size_t(comm_.size()) &&
      r.has("error_feedback_layout") && r.string("error_feedback_layout") == error_feedback_layout();
  if (r.has("error_feedback") && writer_world_size == comm_.size() && same_layout) {
    std::vector<char> host(bytes);
    r.read_range("error_feedback", bytes * size_t(comm_.rank()), host.data(), bytes);
    copy_sync(runner_->exec(), mine.raw(), host.data(), bytes);
  } else if (is_rank0()) {
    log_warn("error-feedback residuals ",
             !r.has("error_feedback") ? "are not in the checkpoint"
             : writer_world_size != comm_.size()
                 ? "were written by a different rank count"
                 : "have another layout (" +
                       (r.has("error_feedback_layout") ? r.string("error_feedback_layout")
                                                       : std::string("older topotrain")) +
                       ", this run: " + error_feedback_layout() + ")",
             "; starting them at zero");
  }
}

}  // namespace tt
