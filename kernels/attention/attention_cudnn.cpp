// cuDNN fused causal SDPA through the cuDNN frontend graph API (see attention_cudnn.h). Compiled
// with the frontend only; without it the functions refuse every call.
#include "kernels/attention/attention_cudnn.h"

#if TOPOTRAIN_HAVE_CUDA

#include <string>

#if TOPOTRAIN_HAVE_CUDNN_FRONTEND

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/common/cuda_scratch.cuh"
#include "kernels/residual/residual.h"

namespace tt::kernels::cudnn_sdpa {

namespace {

namespace fe = cudnn_frontend;

// The frontend spells the softmax-stats request set_generate_stats(true) from 1.13 on (the older
// set_is_inference(false) is deprecated from 1.14).
#if CUDNN_FRONTEND_VERSION >= 11300
#define TT_SDPA_GENERATE_STATS(attrs) (attrs).set_generate_stats(true)
#else
#define TT_SDPA_GENERATE_STATS(attrs) (attrs).set_is_inference(false)
#endif

// Tensor uids of the variant packs.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kdO, kdQ, kdK, kdV };
enum class Pass : int { kForward = 0, kBackward = 1 };

// (device, pass, B, T, NH, NKV, HD, io dtype): one built graph, or the reason cuDNN refused the shape.
using Key = std::tuple<int, Pass, int, int, int, int, int, fe::DataType_t>;
struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;  // null: refused
  int64_t workspace = 0;
  std::string refused;
};

struct State {
  std::mutex mu;
  std::map<int, cudnnHandle_t> handles;  // per device; never destroyed (process lifetime)
  std::map<int, std::string> handle_errors;
  std::map<Key, Plan> plans;
};
State& state() {
  static State* s = new State;  // leaked on purpose: graphs must not be destroyed after the CUDA context
  return *s;
}

bool refuse(const std::string& why, std::string* out) {
  if (out != nullptr) *out = why;
  return false;
}

std::string message(fe::error_t status) { return status.get_message(); }

// The current device's cuDNN handle (created on first use), or nullptr with the reason in *why.
cudnnHandle_t handle_for(State& st, int device, std::string* why) {
  if (auto it = st.handles.find(device); it != st.handles.end()) return it->second;
  if (auto it = st.handle_errors.find(device); it != st.handle_errors.end()) {
    *why = it->second;
    return nullptr;
  }
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t s = cudnnCreate(&h);
  if (s != CUDNN_STATUS_SUCCESS) {
    *why = str("cuDNN is not usable on device ", device, " (cudnnCreate: ", cudnnGetErrorString(s), ")");
    st.handle_errors.emplace(device, *why);
    return nullptr;
  }
  st.handles.emplace(device, h);
  return h;
}

// Strides of the packed layouts, as dims {B, heads, T, HD}: a qkv row is qkv_dim wide, an out row
// q_dim; the head stride is HD in both.
std::vector<int64_t> qkv_strides(const AttentionShape& s) {
  const int64_t D = s.qkv_dim();
  return {s.T * D, s.HD, D, 1};
}
std::vector<int64_t> out_strides(const AttentionShape& s) {
  const int64_t C = s.q_dim();
  return {s.T * C, s.HD, C, 1};
}
std::vector<int64_t> q_dims(const AttentionShape& s) { return {s.B, s.NH, s.T, s.HD}; }
std::vector<int64_t> kv_dims(const AttentionShape& s) { return {s.B, s.NKV, s.T, s.HD}; }
std::vector<int64_t> stats_dims(const AttentionShape& s) { return {s.B, s.NH, s.T, 1}; }
std::vector<int64_t> stats_strides(const AttentionShape& s) { return {int64_t{s.NH} * s.T, s.T, 1, 1}; }
float attn_scale(const AttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.HD)); }

std::shared_ptr<fe::graph::Graph> new_graph() {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& g, const char* name, int64_t uid,
                                                    std::vector<int64_t> dim, std::vector<int64_t> stride,
                                                    fe::DataType_t type = fe::DataType_t::BFLOAT16) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(std::move(dim))
                      .set_stride(std::move(stride))
                      .set_data_type(type));
}

// Q [B, NH, T, HD], K and V [B, NKV, T, HD]: views into the packed qkv buffer (NKV < NH is cuDNN's
// grouped-query attention, selected by the head counts alone).
std::array<std::shared_ptr<fe::graph::Tensor_attributes>, 3> qkv_inputs(fe::graph::Graph& g, const AttentionShape& s) {
  return {input(g, "Q", kQ, q_dims(s), qkv_strides(s)), input(g, "K", kK, kv_dims(s), qkv_strides(s)),
          input(g, "V", kV, kv_dims(s), qkv_strides(s))};
}

std::shared_ptr<fe::graph::Graph> forward_graph(const AttentionShape& s) {
  auto g = new_graph();
  auto [Q, K, V] = qkv_inputs(*g, s);
  auto attrs = fe::graph::SDPA_attributes().set_name("causal_sdpa").set_causal_mask(true).set_attn_scale(attn_scale(s));
  TT_SDPA_GENERATE_STATS(attrs);
  auto [O, Stats] = g->sdpa(Q, K, V, attrs);
  O->set_output(true).set_uid(kO).set_dim(q_dims(s)).set_stride(out_strides(s));
  Stats->set_output(true)
      .set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim(stats_dims(s))
      .set_stride(stats_strides(s));
  return g;
}

std::shared_ptr<fe::graph::Graph> backward_graph(const AttentionShape& s) {
  auto g = new_graph();
  auto [Q, K, V] = qkv_inputs(*g, s);
  auto O = input(*g, "O", kO, q_dims(s), out_strides(s));
  auto dO = input(*g, "dO", kdO, q_dims(s), out_strides(s));
  auto Stats = input(*g, "Stats", kStats, stats_dims(s), stats_strides(s), fe::DataType_t::FLOAT);
  auto attrs = fe::graph::SDPA_backward_attributes()
                   .set_name("causal_sdpa_backward")
                   .set_causal_mask(true)
                   .set_attn_scale(attn_scale(s))
                   .set_deterministic_algorithm(true);
  auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, Stats, attrs);
  dQ->set_output(true).set_uid(kdQ).set_dim(q_dims(s)).set_stride(qkv_strides(s));
  dK->set_output(true).set_uid(kdK).set_dim(kv_dims(s)).set_stride(qkv_strides(s));
  dV->set_output(true).set_uid(kdV).set_dim(kv_dims(s)).set_stride(qkv_strides(s));
  return g;
}

std::string shape_label(Pass pass, const AttentionShape& s) {
  return str("cuDNN SDPA ", pass == Pass::kForward ? "forward" : "backward", " (bf16, B=", s.B, " T=", s.T,
             " NH=", s.NH, " NKV=", s.NKV, " HD=", s.HD, ")");
}

// The cached plan for this call's key, building it on first use. Holds state().mu.
Plan& plan_for(State& st, cudnnHandle_t handle, int device, Pass pass, const AttentionShape& s) {
  const Key key{device, pass, s.B, s.T, s.NH, s.NKV, s.HD, fe::DataType_t::BFLOAT16};
  if (auto it = st.plans.find(key); it != st.plans.end()) return it->second;
  Plan plan;
  try {
    auto g = pass == Pass::kForward ? forward_graph(s) : backward_graph(s);
    if (auto b = g->build(handle, {fe::HeurMode_t::A}); b.is_bad()) {
      plan.refused = str(shape_label(pass, s), " is not supported here: ", message(b));
    } else if (auto w = g->get_workspace_size(plan.workspace); w.is_bad()) {
      plan.refused = str(shape_label(pass, s), ": workspace query failed: ", message(w));
    } else {
      plan.graph = std::move(g);
    }
  } catch (const std::exception& e) {  // the frontend throws on a few paths (e.g. no implementation)
    plan.refused = str(shape_label(pass, s), " could not be built: ", e.what());
  }
  return st.plans.emplace(key, std::move(plan)).first->second;
}

// Element offsets of the K and V parts within a packed qkv row.
int64_t k_offset(const AttentionShape& s) { return s.q_dim(); }
int64_t v_offset(const AttentionShape& s) { return static_cast<int64_t>(s.NH + s.NKV) * s.HD; }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Shared by forward and backward: validation, plan lookup, execution. `pointers` maps uids to the
// call's device pointers; backward passes `accumulate` (the caller's dqkv): cuDNN then writes dq, dk,
// dv into a staging buffer (kEpilogue scratch slot) that is added to it afterwards.
bool run(Pass pass, const AttentionShape& s, cudaStream_t stream, std::unordered_map<int64_t, void*> pointers,
         __nv_bfloat16* accumulate, std::string* why) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (s.HD % 8 != 0 || s.HD > 256)
    return refuse(str("cuDNN SDPA needs a head size that is a multiple of 8 and at most 256, not ", s.HD), why);
  if (s.NKV <= 0 || s.NH % s.NKV != 0) return refuse(str(shape_label(pass, s), ": NKV must divide NH"), why);
  for (const auto& [uid, p] : pointers)
    if (!aligned16(p)) return refuse(str(shape_label(pass, s), ": a tensor is not 16-byte aligned"), why);
  int device = 0;
  TT_CUDA_CHECK(cudaGetDevice(&device));
  std::string reason;
  cudnnHandle_t handle = handle_for(st, device, &reason);
  if (handle == nullptr) return refuse(reason, why);
  Plan& plan = plan_for(st, handle, device, pass, s);
  if (!plan.graph) return refuse(plan.refused, why);

  // Scratch (may throw kMemory: a real error, not a refusal). Slots never alias each other.
  void* workspace = nullptr;
  if (plan.workspace > 0)
    workspace = cuda::cuda_scratch(cuda::ScratchSlot::kRowStats, static_cast<size_t>(plan.workspace), stream);
  const int64_t n = static_cast<int64_t>(s.B) * s.T * s.qkv_dim();
  __nv_bfloat16* staged = nullptr;
  if (accumulate != nullptr) {
    staged = cuda::cuda_scratch_as<__nv_bfloat16>(cuda::ScratchSlot::kEpilogue, static_cast<size_t>(n), stream);
    pointers[kdQ] = staged;
    pointers[kdK] = staged + k_offset(s);
    pointers[kdV] = staged + v_offset(s);
  }
  if (const cudnnStatus_t set = cudnnSetStream(handle, stream); set != CUDNN_STATUS_SUCCESS)
    return refuse(str("cudnnSetStream failed: ", cudnnGetErrorString(set)), why);
  fe::error_t status;
  try {
    status = plan.graph->execute(handle, pointers, workspace);
  } catch (const std::exception& e) {
    status = fe::error_t(fe::error_code_t::GRAPH_EXECUTION_FAILED, e.what());
  }
  if (status.is_bad()) {
    // Not retried: the shape takes the fallback from now on.
    plan.refused = str(shape_label(pass, s), " failed to execute: ", message(status));
    plan.graph.reset();
    return refuse(plan.refused, why);
  }
  if (staged != nullptr) residual_forward_cuda(accumulate, accumulate, staged, n, stream);  // dqkv += staged
  return true;
}

template <typename T>
void* mut(const T* p) {
  return const_cast<T*>(p);  // the variant pack takes void*; inputs are only read
}

}  // namespace

bool compiled() { return true; }

std::string version_string() {
  const size_t v = cudnnGetVersion();
  return str("cuDNN ", v / 10000, ".", (v % 10000) / 100, ".", v % 100, " (built against ", CUDNN_MAJOR, ".",
             CUDNN_MINOR, ".", CUDNN_PATCHLEVEL, "), frontend ", CUDNN_FRONTEND_MAJOR_VERSION, ".",
             CUDNN_FRONTEND_MINOR_VERSION, ".", CUDNN_FRONTEND_PATCH_VERSION);
}

bool forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, const AttentionShape& s, cudaStream_t stream,
             std::string* why) {
  return run(Pass::kForward, s, stream,
             {{kQ, mut(qkv)}, {kK, mut(qkv + k_offset(s))}, {kV, mut(qkv + v_offset(s))}, {kO, out}, {kStats, lse}},
             nullptr, why);
}

bool backward(__nv_bfloat16* dqkv, const __nv_bfloat16* dout, const __nv_bfloat16* qkv, const __nv_bfloat16* out,
              const float* lse, const AttentionShape& s, cudaStream_t stream, std::string* why) {
  return run(Pass::kBackward, s, stream,
             {{kQ, mut(qkv)},
              {kK, mut(qkv + k_offset(s))},
              {kV, mut(qkv + v_offset(s))},
              {kO, mut(out)},
              {kdO, mut(dout)},
              {kStats, mut(lse)}},
             dqkv, why);
}

}  // namespace tt::kernels::cudnn_sdpa

#else  // !TOPOTRAIN_HAVE_CUDNN_FRONTEND

namespace tt::kernels::cudnn_sdpa {

namespace {
bool not_compiled(std::string* why) {
  if (why != nullptr) *why = "this build has no cuDNN SDPA (the cuDNN frontend was not found at configure time)";
  return false;
}
}  // namespace

bool compiled() { return false; }
std::string version_string() { return "the cuDNN frontend was not found at configure time"; }
bool forward(__nv_bfloat16*, float*, const __nv_bfloat16*, const AttentionShape&, cudaStream_t, std::string* why) {
  return not_compiled(why);
}
bool backward(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, const float*,
              const AttentionShape&, cudaStream_t, std::string* why) {
  return not_compiled(why);
}

}  // namespace tt::kernels::cudnn_sdpa

#endif  // TOPOTRAIN_HAVE_CUDNN_FRONTEND
#endif  // TOPOTRAIN_HAVE_CUDA
