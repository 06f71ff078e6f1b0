// Training loop, validation, progress/metrics output and checkpoint save/restore (see trainer.h).
#include "launch/trainer.h"

#include <cblas.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/allocator.h"
#include "core/checkpoint_io.h"
#include "core/format.h"
#include "core/fs.h"
#include "core/json_writer.h"
#include "core/logging.h"
#include "core/metrics.h"
#include "data/shard.h"
#include "kernels/reductions/reductions.h"
#include "launch/grad_reducer_config.h"
#include "optim/grad_clip.h"
#include "parallel/ddp/shard_gather.h"
#include "parallel/ddp/sharding.h"

namespace tt {

std::atomic<bool> g_stop_requested{false};

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// SIGINT/SIGTERM: finish the step, checkpoint, stop. When mpirun SIGTERMs the survivors of a dead
// rank, the note says which collective this rank was waiting in (async-signal-safe).
extern "C" void on_stop_signal(int) {
  g_stop_requested.store(true);
  parallel::write_pending_collective_note(2);
}

// AdamW's ranges over a ZeRO shard's local buffer: each piece's tensors, at the piece's local offset.
std::vector<ParamRange> adamw_ranges(const std::vector<ParamInfo>& layout, const parallel::ShardLayout& shard) {
  std::vector<ParamRange> ranges;
  for (const auto& piece : shard.pieces())
    for (ParamRange r : tt::adamw_ranges(layout, piece.begin, piece.end)) {
      r.offset += piece.local;
      ranges.push_back(r);
    }
  return merge_param_ranges(ranges);
}

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

std::string model_signature(const GPT2Config& c) { return c.str(); }
}  // namespace

void install_stop_signal_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

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
  const auto& m = cfg.model();
  const auto& t = cfg.train();
  const auto& o = cfg.optimizer();
  run_dir_ = cfg.logging().run_dir();
  ckpt_dir_ = run_dir_ + "/checkpoints";
  device_ = resolve_train_device(cfg, device_facts(comm_));
  if (!device_.note.empty() && is_rank0()) log_warn(device_.note);
  if (t.memory_budget_bytes() > 0) set_memory_budget(device_.device, size_t(t.memory_budget_bytes()));

  model_config_ = GPT2Config::make(m.n_layer(), m.n_head(), m.n_embd(), m.vocab_size(), m.max_seq_len());
  const GPT2Config& mc = model_config_;
  if (device_.is_cuda()) {
    cuda_ = create_cuda_training(cfg, mc, device_, comm_, initial_weights().data());
  } else {
    init_cpu_model();
  }
  schedule_ = LrSchedule{o.lr(), o.min_lr_ratio(), o.warmup_steps(), t.steps()};

  std::vector<std::string> train_shards;
  try {
    train_shards = data::resolve_shards(cfg.data().train());
  } catch (const Error& e) {
    if (!random_data_fallback) throw;
    if (is_rank0()) log_warn("no training data (", e.what(), "); using seeded random tokens");
  }
  if (!train_shards.empty()) {
    train_loader_ = std::make_unique<data::PrefetchLoader>(std::make_unique<data::DataLoader>(
        train_shards, t.batch_size(), t.seq_len(), comm_.rank(), comm_.size(), t.seed(), /*shuffle=*/true));
    if (!cfg.data().val().empty())
      val_loader_ = std::make_unique<data::DataLoader>(data::resolve_shards(cfg.data().val()), t.batch_size(),
                                                       t.seq_len(), comm_.rank(), comm_.size(), /*seed=*/0,
                                                       /*shuffle=*/false);
    codec_ = codec_for_shards(cfg.data().train(), cfg.data().tokenizer());
  } else {
    rng_ = Rng(cfg.train().seed() ^ 0x5eed5eedull ^ (uint64_t(comm_.rank()) << 32));  // different random data per rank
  }
  inputs_.resize(size_t(t.batch_size()) * t.seq_len());
  targets_.resize(inputs_.size());
}

std::vector<float> Trainer::initial_weights() {
  std::vector<float> init(size_t(gpt2_num_params(model_config_)));
  init_weights(init.data());
  return init;
}

void Trainer::init_weights(float* params) {
  gpt2_init_weights(model_config_, params, cfg_.train().seed(), cfg_.model().init_std());
  // Same seed on every rank already gives the same weights; the broadcast makes it a guarantee.
  comm_.broadcast(params, gpt2_num_params(model_config_), DType::kF32, 0)->wait();
}

// The CPU model, its gradient reducer and the (sharded) AdamW; with ZeRO-3 the model holds no
// parameters (it reads them from the ranks' shards, sharded_params_) and no gradient buffer (it
// writes into the reducer's gradient windows).
void Trainer::init_cpu_model() {
  const auto& t = cfg_.train();
  const auto& o = cfg_.optimizer();
  const auto& par = cfg_.parallel();
  const bool zero3 = par.zero_stage() == 3;
  if (zero3) {  // cut this rank's shard, and free the whole initial weights before the model allocates
    std::vector<float> init = initial_weights();
    sharded_params_ =
        std::make_unique<parallel::ShardedParams>(comm_, gpt2_param_groups(model_config_), int64_t(init.size()),
                                                  std::vector<int>{kGpt2ReusedGroup}, par.zero3_prefetch());
    for (const auto& piece : sharded_params_->layout().pieces())
      std::memcpy(sharded_params_->shard_data() + piece.local, init.data() + piece.begin,
                  size_t(piece.size()) * sizeof(float));
  }
  model_ = std::make_unique<GPT2>(model_config_, t.batch_size(), t.seq_len(), /*hold_params=*/!zero3,
                                  /*hold_grads=*/!zero3);
  if (zero3)
    model_->set_param_source(sharded_params_.get());
  else
    init_weights(model_->params().data<float>());  // in place: no second copy of the weights

  reducer_ = create_grad_reducer(cfg_, comm_, model_->grads(), model_->layout());
  model_->set_grad_ready_callback([this](int64_t b, int64_t e) { reducer_->on_grads_ready(b, e); });
  if (zero3) model_->set_grad_sink(reducer_->use_grad_windows({kGpt2ReusedGroup}));

  // The optimizer sees only this rank's shard (the whole buffer without ZeRO).
  const parallel::ShardLayout& shard = reducer_->shard_layout();
  optimizer_ = std::make_unique<AdamW>(adamw_ranges(model_->layout(), shard), std::max<int64_t>(shard.size(), 1),
                                       AdamWSettings{o.beta1(), o.beta2(), o.eps(), o.weight_decay()});
  TT_ASSERT(!zero3 || sharded_params_->layout() == shard, "ZeRO-3 parameter and gradient shards differ");
  if (is_rank0() && comm_.size() > 1)
    log_info("data parallel: ", comm_.size(), " ranks (", comm_.backend(), ", ", comm_.num_nodes(),
             " node(s)) | zero_stage ", par.zero_stage(), zero3 ? " (parameters gathered per layer)" : "",
             " | gradients ", parallel::grad_compression_name(reducer_->compression()),
             reducer_->residual().defined() ? " with error feedback" : "", " | ",
             parallel::describe_buckets(reducer_->buckets(), sizeof(float)));
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
  const uint64_t V = uint64_t(cfg_.model().vocab_size());
  inputs_[0] = int32_t(rng_.next_u64() % V);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    targets_[i] = int32_t(rng_.next_u64() % V);
    if (i + 1 < inputs_.size()) inputs_[i + 1] = targets_[i];
  }
  return seconds_since(t0);
}

float Trainer::average_over_ranks(float value) {
  if (comm_.size() == 1) return value;
  comm_.all_reduce(&value, 1, DType::kF32, parallel::ReduceOp::kAvg)->wait();
  return value;
}

double Trainer::all_gather_params() {
  // ZeRO-3 gathers parameter groups when forward/backward need them instead.
  if (reducer_->zero_stage() == 0 || comm_.size() == 1 || sharded_params_) return 0.0;
  const auto t0 = Clock::now();
  const parallel::Shard shard = reducer_->shard();
  float* params = model_->params().data<float>();
  comm_
      .all_gather_v(params + shard.begin, params, parallel::shard_sizes(model_->params().numel(), comm_.size()),
                    DType::kF32)
      ->wait();
  return seconds_since(t0);
}

StepStats Trainer::step(int step) {
  StepStats s;
  const auto& t = cfg_.train();
  const int B = t.batch_size(), T = t.seq_len(), accum = t.grad_accum_steps();
  comm_.set_step(step + 1);
  const auto start = Clock::now();
  if (cuda_) {
    s = cuda_->step(
        step, schedule_.lr_at(step), [this] { return next_batch(); }, inputs_.data(), targets_.data());
    s.loss = average_over_ranks(s.loss);
    s.total_s = seconds_since(start);
    return s;
  }
  model_->zero_grad();
  // ZeRO-3: the time forward and backward wait for parameter groups is communication, not compute.
  double gather_wait_s = 0.0, loss_sum = 0.0;
  auto compute_s_since = [&](Clock::time_point t0) {
    const double waited = sharded_params_ ? sharded_params_->take_wait_s() : 0.0;
    gather_wait_s += waited;
    return seconds_since(t0) - waited;
  };
  if (sharded_params_) sharded_params_->take_wait_s();  // validation's or sampling's waits are not this step's
  for (int micro = 0; micro < accum; ++micro) {
    s.data_s += next_batch();
    auto t0 = Clock::now();
    loss_sum += model_->forward(inputs_.data(), targets_.data(), B, T);
    s.forward_s += compute_s_since(t0);
    t0 = Clock::now();
    reducer_->begin_backward(micro, accum);
    model_->backward(1.0f / float(accum));
    s.backward_s += compute_s_since(t0);
    reducer_->finish_backward();
  }
  const parallel::CommTimes comm = reducer_->take_times();
  s.comm_s = comm.comm_s;
  s.exposed_comm_s = comm.exposed_comm_s;
  s.backward_s -= comm.backward_wait_s;  // ZeRO-3's waits for gradient windows are communication

  auto t0 = Clock::now();
  const float* shard_grads = reducer_->shard_grads().data<float>();
  float sum_sq = float(kernels::sum_squares_cpu(shard_grads, reducer_->shard_layout().size()));
  if (reducer_->zero_stage() > 0 && comm_.size() > 1)
    comm_.all_reduce(&sum_sq, 1, DType::kF32, parallel::ReduceOp::kSum)->wait();
  s.grad_norm = std::sqrt(double(sum_sq));
  const float scale = clip_scale(s.grad_norm, cfg_.optimizer().grad_clip());
  s.lr = schedule_.lr_at(step);
  if (sharded_params_) sharded_params_->invalidate();  // before the shard changes
  float* shard_params =
      sharded_params_ ? sharded_params_->shard_data() : model_->params().data<float>() + reducer_->shard().begin;
  if (scale > 0.0f)
    optimizer_->step(shard_params, shard_grads, s.lr, scale);
  else if (is_rank0())
    log_warn("step ", step + 1, ": gradient norm is not finite; skipping the update");
  const double gather_s = all_gather_params();
  s.optimizer_s = seconds_since(t0) - gather_s;
  // ZeRO-3 waited for its parameter groups inside forward and backward instead.
  s.param_gather_s = sharded_params_ ? gather_wait_s : gather_s;
  s.comm_s += s.param_gather_s;
  s.exposed_comm_s += s.param_gather_s;
  s.loss = average_over_ranks(float(loss_sum / accum));
  s.total_s = seconds_since(start);
  return s;
}

float Trainer::validate() {
  TT_ASSERT(val_loader_, "validate() without validation data");
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
  if (cuda_) return cuda_->evaluate(inputs_.data(), targets_.data());
  return model_->forward(inputs_.data(), targets_.data(), cfg_.train().batch_size(), cfg_.train().seq_len());
}

GPT2* Trainer::host_model() {
  if (!cuda_ && !sharded_params_) return is_rank0() ? model_.get() : nullptr;
  if (is_rank0() && !host_copy_)  // for sampling: no gradients
    host_copy_ = std::make_unique<GPT2>(model_config_, 1, cfg_.train().seq_len(), /*hold_params=*/true,
                                        /*hold_grads=*/false);
  float* copy = is_rank0() ? host_copy_->params().data<float>() : nullptr;
  if (sharded_params_)  // collective: every rank sends its shard, rank 0 keeps the chunks
    parallel::gather_to_rank0(comm_, sharded_params_->layout(), sharded_params_->shard_data(), copy);
  else if (copy)
    cuda_->get_working_params(copy);
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
  if (is_rank0()) {
    metrics = std::make_unique<MetricsSink>(run_dir_ + "/metrics.jsonl", resume ? start_step : -1);
    atomic_write_string(run_dir_ + "/config.pbtxt",
                        config_to_text(cfg_));  // the effective config, for plots and humans
    log_info("model GPT-2 ", model_config_.str(), " | ", gpt2_num_params(model_config_) / 1e6, "M parameters | ",
             device_.str(), cuda_ ? " (" + cuda_->device_name() + ")" : std::string(), " | batch_size=", t.batch_size(),
             " seq_len=", t.seq_len(), " grad_accum_steps=", t.grad_accum_steps(), " ranks=", comm_.size(), " (",
             tokens_per_step(), " tokens/step) | ", t.steps(), " steps | run dir ", run_dir_);
  }

  TrainSummary summary;
  summary.steps_done = start_step;
  double ema_step_s = 0.0, ema_tps = 0.0;
  for (int step = start_step; step < t.steps(); ++step) {
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
          .add("peak_memory_bytes", int64_t(memory_stats(device_.device).peak_bytes));  // rank 0's, so far
      if (zero_stage() > 0) j.add("param_gather_s", s.param_gather_s);
      if (do_val) j.add("val_loss", val_loss);
      metrics->write(j);
    }
    const int log_every = std::max(1, t.log_every());
    if (is_rank0() && (last || do_val || (step + 1) % log_every == 0 || step == start_step))
      print_progress(step, s, ema_tps, ema_step_s * (t.steps() - step - 1), val_loss);

    summary.steps_done = step + 1;
    summary.final_train_loss = s.loss;
    summary.tokens_per_s = ema_tps;
    if (do_val) summary.final_val_loss = val_loss;
    const int every = cfg_.checkpoint().every();
    const bool stop =
        comm_.size() > 1 ? comm_.any_rank_requests_stop(g_stop_requested.load()) : g_stop_requested.load();
    if (last || stop || (every > 0 && (step + 1) % every == 0)) save_checkpoint(step + 1);
    if (stop && !last) {
      if (is_rank0())
        log_warn("stopped by signal after step ", step + 1, "; checkpoint written. Continue with --resume");
      summary.interrupted = true;
      break;
    }
  }
  return summary;
}

void Trainer::save_checkpoint(int steps_done) {
  const int64_t n = gpt2_num_params(model_config_);
  // Each of params, adam_m, adam_v is whole on rank 0, or sharded (CPU trainer, ZeRO): then every
  // rank takes part in gathering it chunk by chunk while rank 0 writes it, so no rank holds the
  // whole tensor. (The CUDA trainer still copies its state whole to the host on every rank.) Should
  // rank 0 fail to write, it exits with the error and mpirun ends the ranks gathering with it.
  struct StateTensor {
    const char* name = nullptr;
    const float* whole = nullptr;  // rank 0's whole tensor, or null when sharded
    const float* shard = nullptr;  // this rank's shard, when sharded
  };
  StateTensor state_tensors[3];
  Tensor params, m, v;  // the CUDA trainer's host copies
  Tensor residuals;
  if (cuda_) {
    // Error-feedback residuals differ per rank: the checkpoint holds all of them, in rank order.
    const std::vector<float> all = cuda_->gather_residuals();  // collective
    // Without ZeRO rank 0 holds the whole state; with it, every rank takes part in gathering it.
    if (!is_rank0() && !cuda_->sharded()) return;
    params = Tensor::zeros("checkpoint.params", {n});
    m = Tensor::zeros("checkpoint.adamw.m", {n});
    v = Tensor::zeros("checkpoint.adamw.v", {n});
    cuda_->get_state(params.data<float>(), m.data<float>(), v.data<float>());
    if (!is_rank0()) return;
    if (!all.empty()) {
      residuals = Tensor::zeros("checkpoint.error_feedback", {int64_t(all.size())});
      std::memcpy(residuals.raw(), all.data(), residuals.nbytes());
    }
    state_tensors[0] = {"params", params.data<float>(), nullptr};
    state_tensors[1] = {"adam_m", m.data<float>(), nullptr};
    state_tensors[2] = {"adam_v", v.data<float>(), nullptr};
  } else {
    const bool sharded_moments = reducer_->zero_stage() > 0 && comm_.size() > 1;
    auto state = [&](const char* name, const float* data, bool sharded) {
      return sharded ? StateTensor{name, nullptr, data} : StateTensor{name, data, nullptr};
    };
    state_tensors[0] = state("params", sharded_params_ ? sharded_params_->shard_data() : model_->params().data<float>(),
                             sharded_params_ != nullptr);
    state_tensors[1] = state("adam_m", optimizer_->m().data<float>(), sharded_moments);
    state_tensors[2] = state("adam_v", optimizer_->v().data<float>(), sharded_moments);
    // Error-feedback residuals differ per rank: the checkpoint holds all of them, in rank order.
    if (reducer_->residual().defined()) {
      Tensor& mine = reducer_->residual();
      residuals = Tensor::zeros("checkpoint.error_feedback", {mine.numel() * comm_.size()});
      comm_.all_gather(mine.raw(), residuals.raw(), mine.numel(), DType::kF32)->wait();
    }
    if (!is_rank0()) {  // the gathers rank 0 runs while writing, in the same order
      for (const StateTensor& t : state_tensors)
        if (t.shard) parallel::gather_to_rank0(comm_, reducer_->shard_layout(), t.shard, [](const float*, int64_t) {});
      return;
    }
  }
  ensure_dir(ckpt_dir_);
  RunState state{steps_done,   cuda_ ? cuda_->optimizer_steps() : optimizer_->steps_taken(),
                 rng_.state(), train_loader_ ? train_loader_->state() : data::LoaderState{},
                 comm_.size(), zero_stage()};
  CheckpointWriter w;
  w.add_string("format", "topotrain-gpt2-v1");
  w.add_string("model_signature", model_signature(model_config_));
  w.add_string("config", config_to_text(cfg_));
  w.add_string("tokenizer", codec_.serialize());
  w.add("state", &state, sizeof state);
  const size_t tensor_bytes = size_t(n) * sizeof(float);
  for (const StateTensor& t : state_tensors) {
    if (t.whole) {
      w.add(t.name, t.whole, tensor_bytes);
      continue;
    }
    w.add_streamed(t.name, tensor_bytes, [this, t](const CheckpointWriter::Sink& sink) {
      parallel::gather_to_rank0(comm_, reducer_->shard_layout(), t.shard,
                                [&](const float* chunk, int64_t count) { sink(chunk, size_t(count) * sizeof(float)); });
    });
  }
  if (residuals.defined()) {
    w.add("error_feedback", residuals.raw(), residuals.nbytes());
    w.add_string("error_feedback_layout", error_feedback_layout());
  }
  const std::string path = checkpoint_path(ckpt_dir_, steps_done);
  const auto t0 = Clock::now();
  w.write(path);
  prune_checkpoints(ckpt_dir_, cfg_.checkpoint().keep());
  log_info("checkpoint ", path, " (", format_bytes(double(tensor_bytes) * 3), ", ", int(seconds_since(t0) * 1e3),
           " ms)");
}

int Trainer::load_checkpoint(const std::string& path) {
  // The large sections stay in the file: each rank reads only what it holds (its shard, with ZeRO).
  CheckpointReader r(path, [](const std::string& name) {
    return name != "params" && name != "adam_m" && name != "adam_v" && name != "error_feedback";
  });
  const std::string sig = r.string("model_signature");
  if (sig != model_signature(model_config_))
    throw Error(
        ErrorKind::kCheckpoint,
        "checkpoint model (" + sig + ") does not match the configured model (" + model_signature(model_config_) + ")",
        path, "resume with the config the run was started with, or start a new run_dir");
  RunState state;
  r.copy_to("state", &state, sizeof state);
  const size_t full_bytes = size_t(gpt2_num_params(model_config_)) * sizeof(float);
  for (const char* name : {"params", "adam_m", "adam_v"})  // stored whole, whatever the writer's ranks
    r.expect_bytes(name, full_bytes);
  if (cuda_) {
    Tensor params = Tensor::zeros("checkpoint.params", {gpt2_num_params(model_config_)});
    r.copy_to("params", params.raw(), params.nbytes());
    std::vector<float> m(full_bytes / sizeof(float)), v(m.size());
    r.copy_to("adam_m", m.data(), full_bytes);
    r.copy_to("adam_v", v.data(), full_bytes);
    cuda_->set_state(params.data<float>(), m.data(), v.data(), state.optimizer_steps);
    const parallel::GradReducer* reducer = cuda_->reducer();
    if (reducer && reducer->residual().defined()) {
      Tensor mine = Tensor::zeros("checkpoint.error_feedback", {reducer->residual().numel()});
      load_residuals(r, state.world_size, mine);
      cuda_->set_residuals(mine.data<float>());
    }
  } else {
    load_cpu_state(r, state.world_size, state.optimizer_steps);
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
  return int(state.steps_done);
}

// How this run's error-feedback residuals are laid out: "int8 flat", "int8 hierarchical 2 nodes x 2
// ranks", "int8 flat bf16 gradients". Residuals from a checkpoint with another layout would be fed back into the wrong
// elements.
std::string Trainer::error_feedback_layout() const {
  const parallel::GradReducer& reducer = cuda_ ? *cuda_->reducer() : *reducer_;
  const parallel::NodeLayout* nodes = reducer.node_layout();
  // Buckets are capped in bytes, so bf16 gradients have other buckets (and owner slots) than fp32.
  const DType grads = reducer.shard_grads().dtype();
  return str(parallel::grad_compression_name(reducer.compression()), " ",
             parallel::collective_shape_name(reducer.shape()), nodes ? " " + nodes->str() : std::string(),
             grads == DType::kF32 ? std::string() : str(" ", dtype_name(grads), " gradients"));
}

// Parameters, this rank's shard of the moments, error-feedback residuals and the step count.
void Trainer::load_cpu_state(CheckpointReader& r, int64_t writer_world_size, int64_t optimizer_steps) {
  // Each rank takes its shard, whatever the rank count that wrote them (ZeRO-3: of the parameters too).
  std::vector<std::pair<const char*, float*>> shards = {{"adam_m", optimizer_->m().data<float>()},
                                                        {"adam_v", optimizer_->v().data<float>()}};
  if (sharded_params_) {
    sharded_params_->invalidate();  // before the shard changes
    shards.push_back({"params", sharded_params_->shard_data()});
  } else {
    r.copy_to("params", model_->params().raw(), model_->params().nbytes());
  }
  for (const auto& [name, dst] : shards)
    for (const auto& piece : reducer_->shard_layout().pieces())
      r.read_range(name, uint64_t(piece.begin) * sizeof(float), dst + piece.local,
                   size_t(piece.size()) * sizeof(float));
  if (reducer_->residual().defined()) load_residuals(r, writer_world_size, reducer_->residual());
  optimizer_->set_steps_taken(optimizer_steps);
}

// This rank's error-feedback residuals into `mine` (host fp32, as long as the reducer's), when the
// checkpoint holds residuals of this rank count and layout; otherwise `mine` stays zero.
void Trainer::load_residuals(CheckpointReader& r, int64_t writer_world_size, Tensor& mine) {
  const size_t bytes = mine.nbytes();
  // [compressed reduce-scatter] residual() also holds the owner residuals of the reduced chunks, so
  // its length changed; a checkpoint whose section has another length is not loaded (no overread).
  // The hierarchical shape orders them by its node layout, so the layout must match too.
  const bool same_layout =
      r.has("error_feedback") && r.section_bytes("error_feedback") == bytes * size_t(comm_.size()) &&
      r.has("error_feedback_layout") && r.string("error_feedback_layout") == error_feedback_layout();
  if (r.has("error_feedback") && writer_world_size == comm_.size() && same_layout) {
    r.read_range("error_feedback", bytes * size_t(comm_.rank()), mine.raw(), bytes);
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
