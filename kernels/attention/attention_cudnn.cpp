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

// (device, pass, B, T, NH, HS, io dtype): one built graph, or the reason cuDNN refused the shape.
using Key = std::tuple<int, Pass, int, int, int, int, fe::DataType_t>;
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

// Strides of the packed layouts, as dims {B, NH, T, HS}.
std::vector<int64_t> qkv_strides(int64_t T, int64_t C, int64_t HS) { return {T * 3 * C, HS, 3 * C, 1}; }
std::vector<int64_t> out_strides(int64_t T, int64_t C, int64_t HS) { return {T * C, HS, C, 1}; }

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

// Q, K and V: [B, NH, T, HS] views into the interleaved [B, T, 3C] qkv buffer.
std::array<std::shared_ptr<fe::graph::Tensor_attributes>, 3> qkv_inputs(fe::graph::Graph& g,
                                                                        const std::vector<int64_t>& dim, int64_t T,
                                                                        int64_t C, int64_t HS) {
  return {input(g, "Q", kQ, dim, qkv_strides(T, C, HS)), input(g, "K", kK, dim, qkv_strides(T, C, HS)),
          input(g, "V", kV, dim, qkv_strides(T, C, HS))};
}

std::shared_ptr<fe::graph::Graph> forward_graph(int64_t B, int64_t T, int64_t NH, int64_t HS) {
  const int64_t C = NH * HS;
  auto g = new_graph();
  const std::vector<int64_t> dim{B, NH, T, HS};
  auto [Q, K, V] = qkv_inputs(*g, dim, T, C, HS);
  auto attrs = fe::graph::SDPA_attributes()
                   .set_name("causal_sdpa")
                   .set_causal_mask(true)
                   .set_attn_scale(1.0f / std::sqrt(static_cast<float>(HS)));
  TT_SDPA_GENERATE_STATS(attrs);
  auto [O, Stats] = g->sdpa(Q, K, V, attrs);
  O->set_output(true).set_uid(kO).set_dim(dim).set_stride(out_strides(T, C, HS));
  Stats->set_output(true)
      .set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({B, NH, T, 1})
      .set_stride({NH * T, T, 1, 1});
  return g;
}

std::shared_ptr<fe::graph::Graph> backward_graph(int64_t B, int64_t T, int64_t NH, int64_t HS) {
  const int64_t C = NH * HS;
  auto g = new_graph();
  const std::vector<int64_t> dim{B, NH, T, HS};
  auto [Q, K, V] = qkv_inputs(*g, dim, T, C, HS);
  auto O = input(*g, "O", kO, dim, out_strides(T, C, HS));
  auto dO = input(*g, "dO", kdO, dim, out_strides(T, C, HS));
  auto Stats = input(*g, "Stats", kStats, {B, NH, T, 1}, {NH * T, T, 1, 1}, fe::DataType_t::FLOAT);
  auto attrs = fe::graph::SDPA_backward_attributes()
                   .set_name("causal_sdpa_backward")
                   .set_causal_mask(true)
                   .set_attn_scale(1.0f / std::sqrt(static_cast<float>(HS)))
                   .set_deterministic_algorithm(true);
  auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, Stats, attrs);
  dQ->set_output(true).set_uid(kdQ).set_dim(dim).set_stride(qkv_strides(T, C, HS));
  dK->set_output(true).set_uid(kdK).set_dim(dim).set_stride(qkv_strides(T, C, HS));
  dV->set_output(true).set_uid(kdV).set_dim(dim).set_stride(qkv_strides(T, C, HS));
  return g;
}

std::string shape_label(Pass pass, int B, int T, int NH, int HS) {
  return str("cuDNN SDPA ", pass == Pass::kForward ? "forward" : "backward", " (bf16, B=", B, " T=", T, " NH=", NH,
             " HS=", HS, ")");
}

// The cached plan for this call's key, building it on first use. Holds state().mu.
Plan& plan_for(State& st, cudnnHandle_t handle, int device, Pass pass, int B, int T, int NH, int HS) {
  const Key key{device, pass, B, T, NH, HS, fe::DataType_t::BFLOAT16};
  if (auto it = st.plans.find(key); it != st.plans.end()) return it->second;
  Plan plan;
  try {
    auto g = pass == Pass::kForward ? forward_graph(B, T, NH, HS) : backward_graph(B, T, NH, HS);
    if (auto s = g->build(handle, {fe::HeurMode_t::A}); s.is_bad()) {
      plan.refused = str(shape_label(pass, B, T, NH, HS), " is not supported here: ", message(s));
    } else if (auto w = g->get_workspace_size(plan.workspace); w.is_bad()) {
      plan.refused = str(shape_label(pass, B, T, NH, HS), ": workspace query failed: ", message(w));
    } else {
      plan.graph = std::move(g);
    }
  } catch (const std::exception& e) {  // the frontend throws on a few paths (e.g. no implementation)
    plan.refused = str(shape_label(pass, B, T, NH, HS), " could not be built: ", e.what());
  }
  return st.plans.emplace(key, std::move(plan)).first->second;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Shared by forward and backward: validation, plan lookup, execution. `pointers` maps uids to the
// call's device pointers; backward passes `accumulate` (the caller's dqkv): cuDNN then writes dq, dk,
// dv into a staging buffer (kEpilogue scratch slot) that is added to it afterwards.
bool run(Pass pass, int B, int T, int C, int NH, cudaStream_t stream, std::unordered_map<int64_t, void*> pointers,
         __nv_bfloat16* accumulate, std::string* why) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  const int HS = C / NH;
  if (HS % 8 != 0 || HS > 256)
    return refuse(str("cuDNN SDPA needs a head size that is a multiple of 8 and at most 256, not ", HS), why);
  for (const auto& [uid, p] : pointers)
    if (!aligned16(p)) return refuse(str(shape_label(pass, B, T, NH, HS), ": a tensor is not 16-byte aligned"), why);
  int device = 0;
  TT_CUDA_CHECK(cudaGetDevice(&device));
  std::string reason;
  cudnnHandle_t handle = handle_for(st, device, &reason);
  if (handle == nullptr) return refuse(reason, why);
  Plan& plan = plan_for(st, handle, device, pass, B, T, NH, HS);
  if (!plan.graph) return refuse(plan.refused, why);

  // Scratch (may throw kMemory: a real error, not a refusal). Slots never alias each other.
  void* workspace = nullptr;
  if (plan.workspace > 0)
    workspace = cuda::cuda_scratch(cuda::ScratchSlot::kRowStats, static_cast<size_t>(plan.workspace), stream);
  const int64_t n = static_cast<int64_t>(B) * T * 3 * C;
  __nv_bfloat16* staged = nullptr;
  if (accumulate != nullptr) {
    staged = cuda::cuda_scratch_as<__nv_bfloat16>(cuda::ScratchSlot::kEpilogue, static_cast<size_t>(n), stream);
    pointers[kdQ] = staged;
    pointers[kdK] = staged + C;
    pointers[kdV] = staged + 2 * C;
  }
  if (const cudnnStatus_t s = cudnnSetStream(handle, stream); s != CUDNN_STATUS_SUCCESS)
    return refuse(str("cudnnSetStream failed: ", cudnnGetErrorString(s)), why);
  fe::error_t status;
  try {
    status = plan.graph->execute(handle, pointers, workspace);
  } catch (const std::exception& e) {
    status = fe::error_t(fe::error_code_t::GRAPH_EXECUTION_FAILED, e.what());
  }
  if (status.is_bad()) {
    // Not retried: the shape takes the fallback from now on.
    plan.refused = str(shape_label(pass, B, T, NH, HS), " failed to execute: ", message(status));
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

bool forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, int B, int T, int C, int NH, cudaStream_t stream,
             std::string* why) {
  return run(Pass::kForward, B, T, C, NH, stream,
             {{kQ, mut(qkv)}, {kK, mut(qkv + C)}, {kV, mut(qkv + 2 * C)}, {kO, out}, {kStats, lse}}, nullptr, why);
}

bool backward(__nv_bfloat16* dqkv, const __nv_bfloat16* dout, const __nv_bfloat16* qkv, const __nv_bfloat16* out,
              const float* lse, int B, int T, int C, int NH, cudaStream_t stream, std::string* why) {
  return run(Pass::kBackward, B, T, C, NH, stream,
             {{kQ, mut(qkv)},
              {kK, mut(qkv + C)},
              {kV, mut(qkv + 2 * C)},
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
bool forward(__nv_bfloat16*, float*, const __nv_bfloat16*, int, int, int, int, cudaStream_t, std::string* why) {
  return not_compiled(why);
}
bool backward(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, const float*, int, int,
              int, int, cudaStream_t, std::string* why) {
  return not_compiled(why);
}

}  // namespace tt::kernels::cudnn_sdpa

#endif  // TOPOTRAIN_HAVE_CUDNN_FRONTEND
#endif  // TOPOTRAIN_HAVE_CUDA
