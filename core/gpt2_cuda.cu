// GPT-2 forward/backward on the GPU (see gpt2_cuda.h). Layer l's forward, T = float or bf16:
//   ln1 = LN(res_in)                       (layer 0: plain LN; later: fused with the previous add)
//   qkv = ln1·Wqkvᵀ + b; atty, lse = attention(qkv); proj = atty·Wprojᵀ + b
//   res2 = res_in + proj, ln2 = LN(res2)   (one fused kernel)
//   fch, fch_gelu = GELU-epilogue matmul(ln2); proj = fch_gelu·Wfcprojᵀ + b
//   res3 = res2 + proj, and the NEXT LayerNorm (ln1 of l+1, or ln_f) in one fused kernel.
// The projections' outputs are consumed at once by the fused residual kernels, so they share one
// scratch buffer instead of being stored per layer. Backward mirrors core/gpt2.cpp: one residual-
// gradient buffer carried through the layers, every op accumulating into it; dgelu runs in the
// c_proj input-gradient GEMM's epilogue together with c_fc's bias gradient.
#include <cmath>
#include <cstring>

#include "core/cuda_check.h"
#include "core/gpt2_cuda.h"
#include "core/tensor.h"
#include "kernels/attention/attention.h"
#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_scratch.cuh"
#include "kernels/embedding/embedding.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/matmul/matmul.h"
#include "kernels/softmax_cross_entropy/softmax_cross_entropy.h"

namespace tt {

using namespace kernels;
using cuda::bf16;

namespace {

constexpr int kParamsPerLayer = 12;  // as core/gpt2.cpp's layout: ln_1 w/b, c_attn w/b, ...
constexpr int kLossThreads = 1024;

// *sum += (Σ losses[i]) / n, one block, fixed reduction tree: deterministic.
__global__ void __launch_bounds__(kLossThreads) add_mean_kernel(float* sum, const float* losses, int64_t n) {
  __shared__ float shared[32];
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kLossThreads) s += losses[i];
  s = cuda::block_sum(s, shared);
  if (threadIdx.x == 0) *sum += s / static_cast<float>(n);
}

}  // namespace

// Device memory of the model: parameters, gradients, activations (per-layer arrays strided by the
// allocated capacity, as the CPU model), backward scratch, token ids and the loss sum.
struct GPT2Cuda::Buffers {
  int device = 0;
  cudaStream_t stream = nullptr;
  Tensor params, grads;
  Tensor tokens, targets;  // int32 [max_batch * max_seq]
  Tensor encoded, ln1, ln1_mean, ln1_rstd, qkv, atty, lse, residual2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu, residual3,
      lnf, lnf_mean, lnf_rstd, logits, losses, proj;
  Tensor dresidual, dbtc, dbtc2, dqkv, dfch;
  Tensor loss_sum;  // one float
  // Pinned staging of the host token arrays, so their copies are truly asynchronous; `staged`
  // marks the end of the last copy out of them (before it, they must not be overwritten).
  int32_t* host_tokens = nullptr;
  int32_t* host_targets = nullptr;
  cudaEvent_t staged = nullptr;

  ~Buffers() {  // the tensors are freed after this body, with the device idle
    if (!stream) return;
    cudaSetDevice(device);
    cudaStreamSynchronize(stream);
    cuda::release_cuda_scratch(stream);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    if (staged) cudaEventDestroy(staged);
    if (host_tokens) cudaFreeHost(host_tokens);
    if (host_targets) cudaFreeHost(host_targets);
  }
};

GPT2Cuda::GPT2Cuda(const GPT2Config& cfg, int max_batch, int max_seq, Precision precision, int device)
    : cfg_(cfg),
      max_batch_(max_batch),
      max_seq_(max_seq),
      precision_(precision),
      device_(device),
      layout_(gpt2_param_layout(cfg)),
      buf_(std::make_unique<Buffers>()) {
  if (max_seq > cfg.max_seq_len)
    throw Error(ErrorKind::kConfig,
                str("sequence length ", max_seq, " exceeds the model's max_seq_len ", cfg.max_seq_len), "train.seq_len",
                "lower train.seq_len or raise model.max_seq_len");
  TT_CUDA_CHECK(cudaSetDevice(device));
  buf_->device = device;
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&buf_->stream, cudaStreamNonBlocking));
  TT_CUDA_CHECK(cudaEventCreateWithFlags(&buf_->staged, cudaEventDisableTiming));
  const size_t token_bytes = size_t(max_batch) * size_t(max_seq) * sizeof(int32_t);
  TT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&buf_->host_tokens), token_bytes));
  TT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&buf_->host_targets), token_bytes));
  try {
    allocate();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kMemory || e.where() == "train.memory_budget_bytes") throw;  // budget: says it all
    throw Error(ErrorKind::kMemory,
                str("out of memory on cuda:", device, " allocating GPT-2 ", cfg.str(), " for batches of ", max_batch,
                    " x ", max_seq, " tokens in ", precision_name(precision), " (", e.what(), ")"),
                "train.batch_size",
                str("lower train.batch_size or train.seq_len (raise train.grad_accum_steps to keep the tokens per "
                    "step)",
                    precision == Precision::kFP32 ? ", or use train.precision=bf16" : ""));
  }
}

void GPT2Cuda::allocate() {
  const GPT2Config& cfg = cfg_;
  const int max_batch = max_batch_, max_seq = max_seq_;

  const Device dev = Device::cuda(device_);
  const DType T = dtype();
  const int64_t n = gpt2_num_params(cfg);
  const int64_t BT = int64_t(max_batch) * max_seq, C = cfg.n_embd, L = cfg.n_layer, NH = cfg.n_head;
  auto make = [&](const std::string& name, Shape s, DType t) { return Tensor::zeros(name, s, t, dev); };
  auto act = [&](const char* name, Shape s) { return make(std::string("activations.") + name, s, T); };
  auto stat = [&](const char* name, Shape s) { return make(std::string("activations.") + name, s, DType::kF32); };
  Buffers& b = *buf_;
  b.params = make("parameters", {n}, T);
  b.grads = make("gradients", {n}, T);
  b.tokens = make("inputs", {BT}, DType::kI32);
  b.targets = make("targets", {BT}, DType::kI32);
  b.encoded = act("encoded", {BT, C});
  b.ln1 = act("ln1", {L, BT, C});
  b.ln1_mean = stat("ln1_mean", {L, BT});
  b.ln1_rstd = stat("ln1_rstd", {L, BT});
  b.qkv = act("qkv", {L, BT, 3 * C});
  b.atty = act("atty", {L, BT, C});
  b.lse = stat("lse", {L, int64_t(max_batch) * NH * max_seq});
  b.residual2 = act("residual2", {L, BT, C});
  b.ln2 = act("ln2", {L, BT, C});
  b.ln2_mean = stat("ln2_mean", {L, BT});
  b.ln2_rstd = stat("ln2_rstd", {L, BT});
  b.fch = act("fch", {L, BT, 4 * C});
  b.fch_gelu = act("fch_gelu", {L, BT, 4 * C});
  b.residual3 = act("residual3", {L, BT, C});
  b.lnf = act("lnf", {BT, C});
  b.lnf_mean = stat("lnf_mean", {BT});
  b.lnf_rstd = stat("lnf_rstd", {BT});
  b.logits = act("logits", {BT, cfg.padded_vocab_size});
  b.losses = stat("losses", {BT});
  b.proj = act("projection", {BT, C});
  b.dresidual = act("backward.dresidual", {BT, C});
  b.dbtc = act("backward.dbtc", {BT, C});
  b.dbtc2 = act("backward.dbtc2", {BT, C});
  b.dqkv = act("backward.dqkv", {BT, 3 * C});
  b.dfch = act("backward.dfch", {BT, 4 * C});
  b.loss_sum = make("loss_sum", {1}, DType::kF32);
  // cudaMalloc does not zero: parameters, gradients and the loss sum start defined.
  TT_CUDA_CHECK(cudaMemsetAsync(b.params.raw(), 0, b.params.nbytes(), b.stream));
  TT_CUDA_CHECK(cudaMemsetAsync(b.grads.raw(), 0, b.grads.nbytes(), b.stream));
  TT_CUDA_CHECK(cudaMemsetAsync(b.loss_sum.raw(), 0, sizeof(float), b.stream));
  TT_CUDA_CHECK(cudaStreamSynchronize(b.stream));
}

GPT2Cuda::~GPT2Cuda() = default;

int64_t GPT2Cuda::num_params() const { return buf_->params.numel(); }
void* GPT2Cuda::params() const { return buf_->params.raw(); }
void* GPT2Cuda::grads() const { return buf_->grads.raw(); }
const Tensor& GPT2Cuda::grads_tensor() const { return buf_->grads; }
CUstream_st* GPT2Cuda::stream() const { return buf_->stream; }

namespace {
// fp32 host <-> device buffer of `dtype` (f32 or bf16), through a host staging vector for bf16.
void upload_f32(void* dst, const float* src, int64_t n, DType dtype, cudaStream_t stream) {
  if (dtype == DType::kF32) {
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(n) * sizeof(float), cudaMemcpyHostToDevice, stream));
  } else {
    std::vector<uint16_t> bits(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) bits[size_t(i)] = f32_to_bf16(src[i]);
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice, stream));
  }
  TT_CUDA_CHECK(cudaStreamSynchronize(stream));  // also keeps `bits` alive until the copy is done
}

void download_f32(float* dst, const void* src, int64_t n, DType dtype, cudaStream_t stream) {
  if (dtype == DType::kF32) {
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost, stream));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  std::vector<uint16_t> bits(static_cast<size_t>(n));
  TT_CUDA_CHECK(cudaMemcpyAsync(bits.data(), src, bits.size() * 2, cudaMemcpyDeviceToHost, stream));
  TT_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(bits[size_t(i)]);
}
}  // namespace

void GPT2Cuda::set_params(const float* host) {
  TT_CUDA_CHECK(cudaSetDevice(device_));
  upload_f32(buf_->params.raw(), host, num_params(), dtype(), buf_->stream);
}

void GPT2Cuda::get_params(float* host) const {
  TT_CUDA_CHECK(cudaSetDevice(device_));
  download_f32(host, buf_->params.raw(), num_params(), dtype(), buf_->stream);
}

std::vector<float> GPT2Cuda::grads_to_host() const {
  TT_CUDA_CHECK(cudaSetDevice(device_));
  std::vector<float> out(static_cast<size_t>(num_params()));
  download_f32(out.data(), buf_->grads.raw(), num_params(), dtype(), buf_->stream);
  return out;
}

void GPT2Cuda::zero_grad() { TT_CUDA_CHECK(cudaMemsetAsync(buf_->grads.raw(), 0, buf_->grads.nbytes(), buf_->stream)); }

float GPT2Cuda::take_loss_sum() {
  float sum = 0.0f;
  TT_CUDA_CHECK(cudaMemcpyAsync(&sum, buf_->loss_sum.raw(), sizeof(float), cudaMemcpyDeviceToHost, buf_->stream));
  TT_CUDA_CHECK(cudaMemsetAsync(buf_->loss_sum.raw(), 0, sizeof(float), buf_->stream));
  TT_CUDA_CHECK(cudaStreamSynchronize(buf_->stream));
  return sum;
}

void GPT2Cuda::report_ready(int64_t begin, int64_t end) {
  if (grad_ready_ && end > begin) grad_ready_(begin, end);
}

void GPT2Cuda::forward(const int32_t* inputs, const int32_t* targets, int B, int T) {
  TT_ASSERT(B >= 1 && B <= max_batch_ && T >= 1 && T <= max_seq_, "forward B=", B, " T=", T, " exceeds the allocated ",
            max_batch_, "x", max_seq_);
  const int64_t BT = int64_t(B) * T;
  gpt2_check_token_ids(inputs, BT, cfg_.vocab_size, "token");
  if (targets) gpt2_check_token_ids(targets, BT, cfg_.vocab_size, "target");
  // Through pinned staging: the caller may reuse its arrays at once, the copies stay ordered after
  // the earlier kernels reading the device buffers, and the host does not wait for those kernels
  // (only for the previous copy out of the staging buffers, long done in a training loop).
  const size_t bytes = size_t(BT) * sizeof(int32_t);
  TT_CUDA_CHECK(cudaEventSynchronize(buf_->staged));
  std::memcpy(buf_->host_tokens, inputs, bytes);
  TT_CUDA_CHECK(cudaMemcpyAsync(buf_->tokens.raw(), buf_->host_tokens, bytes, cudaMemcpyHostToDevice, buf_->stream));
  if (targets) {
    std::memcpy(buf_->host_targets, targets, bytes);
    TT_CUDA_CHECK(
        cudaMemcpyAsync(buf_->targets.raw(), buf_->host_targets, bytes, cudaMemcpyHostToDevice, buf_->stream));
  }
  TT_CUDA_CHECK(cudaEventRecord(buf_->staged, buf_->stream));
  last_B_ = B;
  last_T_ = T;
  have_targets_ = targets != nullptr;
  if (precision_ == Precision::kBF16)
    forward_impl<bf16>(B, T, targets != nullptr);
  else
    forward_impl<float>(B, T, targets != nullptr);
}

void GPT2Cuda::backward(float loss_scale) {
  TT_ASSERT(have_targets_, "backward() needs a forward() with targets first");
  if (precision_ == Precision::kBF16)
    backward_impl<bf16>(loss_scale);
  else
    backward_impl<float>(loss_scale);
}

namespace {
// Typed pointers to one layer's parameters (or gradients) inside a flat buffer.
template <typename T>
struct LayerPtrs {
  T *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
};
template <typename T>
LayerPtrs<T> layer_ptrs(T* base, const std::vector<ParamInfo>& layout, int l) {
  const ParamInfo* p = &layout[2 + size_t(l) * kParamsPerLayer];
  T* q[kParamsPerLayer];
  for (int i = 0; i < kParamsPerLayer; ++i) q[i] = base + p[i].offset;
  return {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9], q[10], q[11]};
}
}  // namespace

template <typename T>
void GPT2Cuda::forward_impl(int B, int T_, bool with_targets) {
  Buffers& b = *buf_;
  cudaStream_t s = b.stream;
  const int C = cfg_.n_embd, NH = cfg_.n_head, L = cfg_.n_layer, V = cfg_.vocab_size, Vp = cfg_.padded_vocab_size;
  const int BT = B * T_;
  const int64_t cap_btc = int64_t(max_batch_) * max_seq_ * C, cap_bt = int64_t(max_batch_) * max_seq_;
  const int64_t cap_lse = int64_t(max_batch_) * NH * max_seq_;
  T* p = b.params.data<T>();
  const T* wte = p + layout_[0].offset;
  const T* wpe = p + layout_[1].offset;
  const T* lnfw = p + layout_[layout_.size() - 2].offset;
  const T* lnfb = p + layout_[layout_.size() - 1].offset;
  const int32_t* tokens = b.tokens.data<int32_t>();
  T* encoded = b.encoded.data<T>();
  T* proj = b.proj.data<T>();

  embedding_forward_cuda(encoded, tokens, wte, wpe, B, T_, C, s);
  if (L == 0) {
    layernorm_forward_cuda(b.lnf.data<T>(), b.lnf_mean.data<float>(), b.lnf_rstd.data<float>(), encoded, lnfw, lnfb, BT,
                           C, s);
  } else {
    const LayerPtrs<T> lp0 = layer_ptrs(p, layout_, 0);
    layernorm_forward_cuda(b.ln1.data<T>(), b.ln1_mean.data<float>(), b.ln1_rstd.data<float>(), encoded, lp0.ln1w,
                           lp0.ln1b, BT, C, s);
  }
  const T* residual = encoded;
  for (int l = 0; l < L; ++l) {
    const LayerPtrs<T> lp = layer_ptrs(p, layout_, l);
    T* ln1 = b.ln1.data<T>() + l * cap_btc;
    T* qkv = b.qkv.data<T>() + l * cap_btc * 3;
    T* atty = b.atty.data<T>() + l * cap_btc;
    float* lse = b.lse.data<float>() + l * cap_lse;
    T* residual2 = b.residual2.data<T>() + l * cap_btc;
    T* ln2 = b.ln2.data<T>() + l * cap_btc;
    T* fch = b.fch.data<T>() + l * cap_btc * 4;
    T* fch_gelu = b.fch_gelu.data<T>() + l * cap_btc * 4;
    T* residual3 = b.residual3.data<T>() + l * cap_btc;

    matmul_forward_cuda(qkv, ln1, lp.qkvw, lp.qkvb, BT, C, 3 * C, s);
    attention_forward_cuda(atty, lse, qkv, B, T_, C, NH, s);
    matmul_forward_cuda(proj, atty, lp.attprojw, lp.attprojb, BT, C, C, s);
    fused_residual_layernorm_forward_cuda(residual2, ln2, b.ln2_mean.data<float>() + l * cap_bt,
                                          b.ln2_rstd.data<float>() + l * cap_bt, residual, proj, lp.ln2w, lp.ln2b, BT,
                                          C, s);
    matmul_gelu_forward_cuda(fch_gelu, fch, ln2, lp.fcw, lp.fcb, BT, C, 4 * C, s);
    matmul_forward_cuda(proj, fch_gelu, lp.fcprojw, lp.fcprojb, BT, 4 * C, C, s);
    if (l + 1 < L) {
      const LayerPtrs<T> next = layer_ptrs(p, layout_, l + 1);
      fused_residual_layernorm_forward_cuda(
          residual3, b.ln1.data<T>() + (l + 1) * cap_btc, b.ln1_mean.data<float>() + (l + 1) * cap_bt,
          b.ln1_rstd.data<float>() + (l + 1) * cap_bt, residual2, proj, next.ln1w, next.ln1b, BT, C, s);
    } else {
      fused_residual_layernorm_forward_cuda(residual3, b.lnf.data<T>(), b.lnf_mean.data<float>(),
                                            b.lnf_rstd.data<float>(), residual2, proj, lnfw, lnfb, BT, C, s);
    }
    residual = residual3;
  }
  matmul_forward_cuda(b.logits.data<T>(), b.lnf.data<T>(), wte, static_cast<const T*>(nullptr), BT, C, Vp, s);
  if (!with_targets) return;
  softmax_cross_entropy_cuda(b.losses.data<float>(), static_cast<T*>(nullptr), b.logits.data<T>(),
                             b.targets.data<int32_t>(), BT, V, Vp, 0.0f, s);
  add_mean_kernel<<<1, kLossThreads, 0, s>>>(b.loss_sum.data<float>(), b.losses.data<float>(), BT);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void GPT2Cuda::backward_impl(float loss_scale) {
  Buffers& b = *buf_;
  cudaStream_t s = b.stream;
  const int B = last_B_, T_ = last_T_, C = cfg_.n_embd, NH = cfg_.n_head, L = cfg_.n_layer, V = cfg_.vocab_size,
            Vp = cfg_.padded_vocab_size;
  const int BT = B * T_;
  const int64_t cap_btc = int64_t(max_batch_) * max_seq_ * C, cap_bt = int64_t(max_batch_) * max_seq_;
  const int64_t cap_lse = int64_t(max_batch_) * NH * max_seq_;
  T* p = b.params.data<T>();
  T* g = b.grads.data<T>();
  const ParamInfo& wte_info = layout_[0];
  const ParamInfo& wpe_info = layout_[1];
  const ParamInfo& lnfw = layout_[layout_.size() - 2];
  const ParamInfo& lnfb = layout_[layout_.size() - 1];
  auto zero = [&](const Tensor& t, int64_t n) { TT_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0, size_t(n) * sizeof(T), s)); };

  // dlogits in place of the logits: (softmax - onehot) · loss_scale / BT.
  T* logits = b.logits.data<T>();
  softmax_cross_entropy_cuda(b.losses.data<float>(), logits, logits, b.targets.data<int32_t>(), BT, V, Vp,
                             loss_scale / float(BT), s);
  T* dres = b.dresidual.data<T>();
  T* dln = b.dbtc.data<T>();
  T* datty = b.dbtc2.data<T>();
  T* dqkv = b.dqkv.data<T>();
  T* dfch = b.dfch.data<T>();
  zero(b.dbtc, int64_t(BT) * C);
  matmul_backward_cuda(dln, g + wte_info.offset, static_cast<T*>(nullptr), logits, b.lnf.data<T>(), p + wte_info.offset,
                       BT, C, Vp, s);
  zero(b.dresidual, int64_t(BT) * C);
  const T* last_residual = L == 0 ? b.encoded.data<T>() : b.residual3.data<T>() + (L - 1) * cap_btc;
  layernorm_backward_cuda(dres, g + lnfw.offset, g + lnfb.offset, dln, last_residual, p + lnfw.offset,
                          b.lnf_mean.data<float>(), b.lnf_rstd.data<float>(), BT, C, s);
  report_ready(lnfw.offset, lnfb.offset + C);

  for (int l = L - 1; l >= 0; --l) {
    const LayerPtrs<T> lp = layer_ptrs(p, layout_, l);
    const LayerPtrs<T> lg = layer_ptrs(g, layout_, l);
    const T* residual = l == 0 ? b.encoded.data<T>() : b.residual3.data<T>() + (l - 1) * cap_btc;
    const T* ln1 = b.ln1.data<T>() + l * cap_btc;
    const T* qkv = b.qkv.data<T>() + l * cap_btc * 3;
    const T* atty = b.atty.data<T>() + l * cap_btc;
    const float* lse = b.lse.data<float>() + l * cap_lse;
    const T* residual2 = b.residual2.data<T>() + l * cap_btc;
    const T* ln2 = b.ln2.data<T>() + l * cap_btc;
    const T* fch = b.fch.data<T>() + l * cap_btc * 4;
    const T* fch_gelu = b.fch_gelu.data<T>() + l * cap_btc * 4;

    // MLP: dres holds d(residual3) = d(fcproj output) = d(residual2 via the skip).
    matmul_backward_cuda(static_cast<T*>(nullptr), lg.fcprojw, lg.fcprojb, dres, fch_gelu, lp.fcprojw, BT, 4 * C, C, s);
    matmul_dgelu_backward_cuda(dfch, lg.fcb, dres, lp.fcprojw, fch, BT, 4 * C, C, s);  // dfch overwritten
    zero(b.dbtc, int64_t(BT) * C);
    matmul_backward_cuda(dln, lg.fcw, static_cast<T*>(nullptr), dfch, ln2, lp.fcw, BT, C, 4 * C, s);
    layernorm_backward_cuda(dres, lg.ln2w, lg.ln2b, dln, residual2, lp.ln2w, b.ln2_mean.data<float>() + l * cap_bt,
                            b.ln2_rstd.data<float>() + l * cap_bt, BT, C, s);
    // Attention: dres now holds d(residual2) = d(attproj output) = d(residual via the skip).
    zero(b.dbtc2, int64_t(BT) * C);
    matmul_backward_cuda(datty, lg.attprojw, lg.attprojb, dres, atty, lp.attprojw, BT, C, C, s);
    zero(b.dqkv, int64_t(BT) * 3 * C);
    attention_backward_cuda(dqkv, datty, qkv, atty, lse, B, T_, C, NH, s);
    zero(b.dbtc, int64_t(BT) * C);
    matmul_backward_cuda(dln, lg.qkvw, lg.qkvb, dqkv, ln1, lp.qkvw, BT, C, 3 * C, s);
    layernorm_backward_cuda(dres, lg.ln1w, lg.ln1b, dln, residual, lp.ln1w, b.ln1_mean.data<float>() + l * cap_bt,
                            b.ln1_rstd.data<float>() + l * cap_bt, BT, C, s);

    const ParamInfo& first = layout_[2 + size_t(l) * kParamsPerLayer];
    const ParamInfo& last = layout_[2 + size_t(l) * kParamsPerLayer + kParamsPerLayer - 1];
    report_ready(first.offset, last.offset + shape_numel(last.shape));
  }
  embedding_backward_cuda(g + wte_info.offset, g + wpe_info.offset, dres, b.tokens.data<int32_t>(), B, T_, C, Vp, s);
  report_ready(0, wpe_info.offset + shape_numel(wpe_info.shape));
}

}  // namespace tt
