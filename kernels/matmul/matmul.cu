// CUDA linear layer through cuBLASLt, with fused epilogues and unfused fallbacks.
// Design: cuBLAS is column-major, our tensors are row-major, so every product is computed as its
// transpose: a row-major X[r, c] is a column-major Xᵀ[c, r] with the same leading dimension.
//   forward  outᵀ[N,M]    = op_T(weight: K×N col-major)  · inpᵀ (K×M)            -> "TN"
//   dinp     dinpᵀ[K,M]  += weight (K×N col-major)        · doutᵀ (N×M)           -> "NN"
//   dweight  dweightᵀ[K,N] += inpᵀ (K×M)                  · op_T(doutᵀ: N×M)      -> "NT"
// Bias vectors then run along the rows of D (forward BIAS, DGELU_BGRAD) or its columns (BGRADB in
// the dweight GEMM, reducing over the M rows of dout), exactly what the epilogues provide. Fused
// bias gradients are written by cuBLASLt (not accumulated), so they land in a scratch vector that
// one small kernel adds into the caller's gradient. Every fused configuration has an unfused
// fallback, taken when cuBLASLt has no algorithm for it (e.g. an aux leading dimension not a
// multiple of 8) or when fusion is switched off.
#include <cublasLt.h>

#include <atomic>
#include <map>
#include <mutex>

#include "core/error.h"
#include "kernels/common/column_reduce.cuh"
#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_scratch.cuh"
#include "kernels/gelu/gelu.h"
#include "kernels/matmul/matmul.h"

#define TT_CUBLASLT_CHECK(call)                                                                                     \
  do {                                                                                                              \
    cublasStatus_t tt_st_ = (call);                                                                                 \
    if (tt_st_ != CUBLAS_STATUS_SUCCESS)                                                                            \
      throw ::tt::Error(                                                                                            \
          ::tt::ErrorKind::kRuntime,                                                                                \
          ::tt::str(#call, " failed: ", cublasLtGetStatusName(tt_st_), " (", cublasLtGetStatusString(tt_st_), ")"), \
          ::tt::str(__FILE__, ":", __LINE__));                                                                      \
  } while (0)

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::from_f32;
using cuda::to_f32;

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // Hopper's recommended cuBLASLt workspace
constexpr int kThreads = 256;

std::atomic<bool> g_fused_epilogues{true};

std::mutex& handle_mutex() {
  static std::mutex m;
  return m;
}
std::map<int, cublasLtHandle_t>& handles() {
  static auto* h = new std::map<int, cublasLtHandle_t>();  // leaked on purpose: see matmul_cuda_release
  return *h;
}

cublasLtHandle_t lt_handle() {
  int device = 0;
  TT_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(handle_mutex());
  auto& h = handles()[device];
  if (h == nullptr) TT_CUBLASLT_CHECK(cublasLtCreate(&h));
  return h;
}

template <typename T>
constexpr cudaDataType_t cuda_type();
template <>
constexpr cudaDataType_t cuda_type<float>() {
  return CUDA_R_32F;
}
template <>
constexpr cudaDataType_t cuda_type<bf16>() {
  return CUDA_R_16BF;
}

uint32_t pointer_alignment(const void* p) {  // largest power of two dividing p, at most 256
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a == 0) return 256;
  const uintptr_t low = a & (~a + 1);
  return static_cast<uint32_t>(low > 256 ? 256 : low);
}

// Column-major D[m,n] (ldd) = op(A)[m,k] · op(B)[k,n] + beta · D, with an optional epilogue.
struct Gemm {
  cudaDataType_t type;  // of A, B, C/D (and of bias / bias gradient / aux)
  bool trans_a, trans_b;
  int m, n, k;
  const void* A;
  int64_t lda;
  const void* B;
  int64_t ldb;
  void* D;
  int64_t ldd;
  float beta;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  void* bias = nullptr;  // bias (read) or bias gradient (written), as the epilogue says
  void* aux = nullptr;   // GELU pre-activation: written by GELU_AUX, read by DGELU
  int64_t aux_ld = 0;
  // Low-precision operands: A/B types other than `type` (fp8, int8), their dequantise factors
  // (device fp32, fp8 only), and the int32 compute of the int8 GEMM (D int32, alpha/beta int32).
  cudaDataType_t a_type = CUDA_R_32F, b_type = CUDA_R_32F;  // used when low_precision
  bool low_precision = false;
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  bool int32_compute = false;
};

struct LtObjects {  // owns the descriptors of one cublasLtMatmul call
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtObjects() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

template <typename V>
void set_desc(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attr, const V& value) {
  TT_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, attr, &value, sizeof(value)));
}
template <typename V>
void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const V& value) {
  TT_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

// Runs the GEMM; returns false (nothing written) when cuBLASLt has no algorithm for it. Other
// failures throw.
bool run_gemm(const Gemm& g, cudaStream_t stream) {
  cublasLtHandle_t handle = lt_handle();
  LtObjects o;
  TT_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&o.op, g.int32_compute ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                             g.int32_compute ? CUDA_R_32I : CUDA_R_32F));
  if (g.a_scale != nullptr) set_desc(o.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, g.a_scale);
  if (g.b_scale != nullptr) set_desc(o.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, g.b_scale);
  set_desc(o.op, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N));
  set_desc(o.op, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N));
  if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    set_desc(o.op, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(g.epilogue));
    // Bias, bias-gradient and aux types are left at their defaults: the type of D, i.e. T.
    if (g.bias != nullptr) set_desc(o.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
    if (g.aux != nullptr) {
      set_desc(o.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
      set_desc(o.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, g.aux_ld);
    }
  }
  const cudaDataType_t a_type = g.low_precision ? g.a_type : g.type, b_type = g.low_precision ? g.b_type : g.type;
  TT_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&o.a, a_type, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda));
  TT_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&o.b, b_type, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb));
  TT_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&o.d, g.type, g.m, g.n, g.ldd));
  TT_CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&o.pref));
  set_pref(o.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(kWorkspaceBytes));
  // The default preference assumes 256-byte aligned matrices; state the real alignment so an
  // algorithm that needs more is never chosen for an offset view.
  set_pref(o.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, pointer_alignment(g.A));
  set_pref(o.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, pointer_alignment(g.B));
  set_pref(o.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, pointer_alignment(g.D));
  set_pref(o.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, pointer_alignment(g.D));

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(handle, o.op, o.a, o.b, o.d, o.d, o.pref, 1, &heuristic, &found);
  if (hs == CUBLAS_STATUS_NOT_SUPPORTED || (hs == CUBLAS_STATUS_SUCCESS && found == 0)) return false;
  // A fused configuration cuBLASLt rejects as invalid (an epilogue/type/alignment combination this
  // version does not take) is treated like "no algorithm": the caller falls back to the unfused path.
  if (hs == CUBLAS_STATUS_INVALID_VALUE && g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) return false;
  TT_CUBLASLT_CHECK(hs);

  void* workspace = cuda::cuda_scratch(cuda::ScratchSlot::kCublasWorkspace, kWorkspaceBytes, stream);
  const float alpha = 1.0f;
  const int32_t alpha_i = 1, beta_i = int32_t(g.beta);
  const void* alpha_p = g.int32_compute ? static_cast<const void*>(&alpha_i) : &alpha;
  const void* beta_p = g.int32_compute ? static_cast<const void*>(&beta_i) : &g.beta;
  const cublasStatus_t st = cublasLtMatmul(handle, o.op, alpha_p, g.A, o.a, g.B, o.b, beta_p, g.D, o.d, g.D, o.d,
                                           &heuristic.algo, workspace, kWorkspaceBytes, stream);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
      (st == CUBLAS_STATUS_INVALID_VALUE && g.epilogue != CUBLASLT_EPILOGUE_DEFAULT))
    return false;  // rejected before launch: nothing was written
  TT_CUBLASLT_CHECK(st);
  return true;
}

void run_gemm_or_throw(const Gemm& g, cudaStream_t stream, const char* what) {
  if (!run_gemm(g, stream))
    throw Error(ErrorKind::kRuntime,
                str(what, ": cuBLASLt has no algorithm for m=", g.m, " n=", g.n, " k=", g.k, " lda=", g.lda,
                    " ldb=", g.ldb, " ldd=", g.ldd),
                "", "check the pointer alignment and leading dimensions of the operands");
}

// ---- small kernels for the unfused paths ------------------------------------------------------

// out[r, c] = (bias ? bias[c] : 0) for K == 0, or out[r, c] += bias[c].
template <typename T>
__global__ void bias_rows_kernel(T* out, const T* bias, int64_t rows, int cols, bool overwrite) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const float b = bias != nullptr ? to_f32(bias[i % cols]) : 0.0f;
    out[i] = from_f32<T>(overwrite ? b : to_f32(out[i]) + b);
  }
}

// d[i] = d[i] * gelu'(pre[i]).
template <typename T>
__global__ void dgelu_inplace_kernel(T* d, const T* pre, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    d[i] = from_f32<T>(to_f32(d[i]) * gelu_grad_scalar(to_f32(pre[i])));
}

// acc[i] += v[i].
template <typename T>
__global__ void add_vector_kernel(T* acc, const T* v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] = from_f32<T>(to_f32(acc[i]) + to_f32(v[i]));
}

template <typename T>
void bias_rows(T* out, const T* bias, int64_t rows, int cols, bool overwrite, cudaStream_t stream) {
  const int64_t n = rows * cols;
  bias_rows_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(out, bias, rows, cols, overwrite);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void add_vector(T* acc, const T* v, int n, cudaStream_t stream) {
  add_vector_kernel<<<static_cast<unsigned>(cuda::ceil_div(n, kThreads)), kThreads, 0, stream>>>(acc, v, n);
  TT_CUDA_LAUNCH_CHECK();
}

// ---- the ops ---------------------------------------------------------------------------------

template <typename T>
Gemm forward_gemm(T* out, const T* inp, const T* weight, int M, int K, int N) {
  return Gemm{cuda_type<T>(), true, false, N, M, K, weight, K, inp, K, out, N, 0.0f};
}

template <typename T>
void forward(T* out, const T* inp, const T* weight, const T* bias, int M, int K, int N, cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    bias_rows(out, bias, M, N, /*overwrite=*/true, stream);
    return;
  }
  Gemm g = forward_gemm(out, inp, weight, M, K, N);
  if (bias != nullptr && g_fused_epilogues.load()) {
    Gemm fused = g;
    fused.epilogue = CUBLASLT_EPILOGUE_BIAS;
    fused.bias = const_cast<T*>(bias);
    if (run_gemm(fused, stream)) return;
  }
  run_gemm_or_throw(g, stream, "matmul_forward_cuda");
  if (bias != nullptr) bias_rows(out, bias, M, N, /*overwrite=*/false, stream);
}

template <typename T>
void gelu_forward(T* out, T* pre, const T* inp, const T* weight, const T* bias, int M, int K, int N,
                  cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  if (K > 0 && g_fused_epilogues.load() && N % 8 == 0) {  // aux ld (= N) must be a multiple of 8
    Gemm g = forward_gemm(out, inp, weight, M, K, N);
    g.epilogue = bias != nullptr ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    g.bias = const_cast<T*>(bias);
    g.aux = pre;
    g.aux_ld = N;
    if (run_gemm(g, stream)) return;
  }
  forward(pre, inp, weight, bias, M, K, N, stream);
  gelu_forward_cuda(out, pre, static_cast<int64_t>(M) * N, stream);
}

template <typename T>
void backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int M, int K, int N,
              cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  bool dbias_done = dbias == nullptr;
  if (K > 0 && dinp != nullptr) {
    run_gemm_or_throw(Gemm{cuda_type<T>(), false, false, K, M, N, weight, K, dout, N, dinp, K, 1.0f}, stream,
                      "matmul_backward_cuda (dinp)");
  }
  if (K > 0 && dweight != nullptr) {
    const Gemm g{cuda_type<T>(), false, true, K, N, M, inp, K, dout, N, dweight, K, 1.0f};
    bool done = false;
    if (dbias != nullptr && g_fused_epilogues.load()) {
      // BGRADB: dbias[N] = Σ over the GEMM's k (the M rows of dout), written to scratch, then added.
      T* scratch = cuda::cuda_scratch_as<T>(cuda::ScratchSlot::kEpilogue, static_cast<size_t>(N), stream);
      Gemm fused = g;
      fused.epilogue = CUBLASLT_EPILOGUE_BGRADB;
      fused.bias = scratch;
      if (run_gemm(fused, stream)) {
        add_vector(dbias, scratch, N, stream);
        done = dbias_done = true;
      }
    }
    if (!done) run_gemm_or_throw(g, stream, "matmul_backward_cuda (dweight)");
  }
  if (!dbias_done) cuda::column_sum_accumulate(dbias, dout, M, N, stream);
}

template <typename T>
void dgelu_backward(T* dpre, T* dbias, const T* dout, const T* weight, const T* pre, int M, int K, int N,
                    cudaStream_t stream) {
  if (M <= 0 || K <= 0) return;
  const int64_t n = static_cast<int64_t>(M) * K;
  if (N <= 0) {  // the product is 0, so dpre = 0 and dbias gains nothing
    TT_CUDA_CHECK(cudaMemsetAsync(dpre, 0, static_cast<size_t>(n) * sizeof(T), stream));
    return;
  }
  const Gemm g{cuda_type<T>(), false, false, K, M, N, weight, K, dout, N, dpre, K, 0.0f};
  if (g_fused_epilogues.load() && K % 8 == 0) {  // aux ld (= K) must be a multiple of 8
    Gemm fused = g;
    fused.aux = const_cast<T*>(pre);
    fused.aux_ld = K;
    T* scratch = nullptr;
    if (dbias != nullptr) {
      scratch = cuda::cuda_scratch_as<T>(cuda::ScratchSlot::kEpilogue, static_cast<size_t>(K), stream);
      fused.epilogue = CUBLASLT_EPILOGUE_DGELU_BGRAD;
      fused.bias = scratch;
    } else {
      fused.epilogue = CUBLASLT_EPILOGUE_DGELU;
    }
    if (run_gemm(fused, stream)) {
      if (dbias != nullptr) add_vector(dbias, scratch, K, stream);
      return;
    }
  }
  run_gemm_or_throw(g, stream, "matmul_dgelu_backward_cuda");
  dgelu_inplace_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(dpre, pre, n);
  TT_CUDA_LAUNCH_CHECK();
  if (dbias != nullptr) cuda::column_sum_accumulate(dbias, dpre, M, K, stream);
}

// ---- low-precision products --------------------------------------------------------------------

cudaDataType_t fp8_type(Fp8Format f) { return f == Fp8Format::kE4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

void check_lowp_shape(const char* what, int M, int N, int K) {
  if (M % 16 == 0 && N % 16 == 0 && K % 16 == 0) return;
  throw Error(ErrorKind::kConfig,
              str(what, ": the tensor cores' low-precision GEMM needs every dimension a multiple of 16, got M=", M,
                  " N=", N, " K=", K),
              "train.matmul_precision",
              "use model widths and train.batch_size x train.seq_len that are multiples of 16, or "
              "train.matmul_precision \"default\"");
}

// out[i] = (accumulate ? out[i] : 0) + float(acc[i]) · (a_row_inv[row] · b_inv[0]) (+ bias[col]).
template <typename T>
__global__ void int8_dequantize_kernel(T* out, const int32_t* acc, const float* a_row_inv, const float* b_inv,
                                       const T* bias, int64_t rows, int cols, bool accumulate) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols;
    // Rounded operations spelled out (no contraction into FMAs): bit-identical to the CPU's.
    float v = __fmul_rn(__int2float_rn(acc[i]), __fmul_rn(a_row_inv[r], b_inv[0]));
    if (bias != nullptr) v = __fadd_rn(v, to_f32(bias[i % cols]));
    out[i] = from_f32<T>(accumulate ? __fadd_rn(to_f32(out[i]), v) : v);
  }
}

}  // namespace

template <typename T>
void matmul_fp8_cuda(T* out, const uint8_t* a, Fp8Format fa, const uint8_t* b, Fp8Format fb, const float* a_scale_inv,
                     const float* b_scale_inv, const T* bias, int M, int N, int K, bool accumulate,
                     cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  check_lowp_shape("matmul_fp8_cuda", M, N, K);
  // Column-major outᵀ[N,M] = op_T(B: K×N) · A (K×M): cuBLASLt's A is our B (and its scale ours).
  Gemm g{cuda_type<T>(), true, false, N, M, K, b, K, a, K, out, N, accumulate ? 1.0f : 0.0f};
  g.low_precision = true;
  g.a_type = fp8_type(fb);
  g.b_type = fp8_type(fa);
  g.a_scale = b_scale_inv;
  g.b_scale = a_scale_inv;
  if (bias != nullptr && !accumulate) {
    Gemm fused = g;
    fused.epilogue = CUBLASLT_EPILOGUE_BIAS;
    fused.bias = const_cast<T*>(bias);
    if (run_gemm(fused, stream)) return;
  }
  if (!run_gemm(g, stream))
    throw Error(ErrorKind::kConfig, str("cuBLASLt has no fp8 GEMM for M=", M, " N=", N, " K=", K, " on this GPU"),
                "train.matmul_precision", "fp8 matmuls need an sm_89+ GPU (Ada, Hopper); use \"int8\" or \"default\"");
  if (bias != nullptr) bias_rows(out, bias, M, N, /*overwrite=*/false, stream);
}

template <typename T>
void matmul_int8_cuda(T* out, const int8_t* a, const float* a_row_inv, const int8_t* b, const float* b_inv,
                      const T* bias, int M, int N, int K, bool accumulate, cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  check_lowp_shape("matmul_int8_cuda", M, N, K);
  int32_t* acc = cuda::cuda_scratch_as<int32_t>(cuda::ScratchSlot::kInt8Accumulator, size_t(M) * N, stream);
  Gemm g{CUDA_R_32I, true, false, N, M, K, b, K, a, K, acc, N, 0.0f};
  g.low_precision = true;
  g.a_type = g.b_type = CUDA_R_8I;
  g.int32_compute = true;
  if (!run_gemm(g, stream))
    throw Error(ErrorKind::kConfig, str("cuBLASLt has no int8 GEMM for M=", M, " N=", N, " K=", K, " on this GPU"),
                "train.matmul_precision", "int8 matmuls need an sm_75+ GPU (Turing or newer); use \"default\"");
  const int64_t n = int64_t(M) * N;
  int8_dequantize_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(out, acc, a_row_inv, b_inv,
                                                                                          bias, M, N, accumulate);
  TT_CUDA_LAUNCH_CHECK();
}

template void matmul_fp8_cuda<float>(float*, const uint8_t*, Fp8Format, const uint8_t*, Fp8Format, const float*,
                                     const float*, const float*, int, int, int, bool, cudaStream_t);
template void matmul_fp8_cuda<bf16>(bf16*, const uint8_t*, Fp8Format, const uint8_t*, Fp8Format, const float*,
                                    const float*, const bf16*, int, int, int, bool, cudaStream_t);
template void matmul_int8_cuda<float>(float*, const int8_t*, const float*, const int8_t*, const float*, const float*,
                                      int, int, int, bool, cudaStream_t);
template void matmul_int8_cuda<bf16>(bf16*, const int8_t*, const float*, const int8_t*, const float*, const bf16*, int,
                                     int, int, bool, cudaStream_t);

void matmul_forward_cuda(float* out, const float* inp, const float* weight, const float* bias, int M, int K, int N,
                         cudaStream_t stream) {
  forward(out, inp, weight, bias, M, K, N, stream);
}
void matmul_forward_cuda(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int M, int K, int N,
                         cudaStream_t stream) {
  forward(out, inp, weight, bias, M, K, N, stream);
}
void matmul_backward_cuda(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, int M, int K, int N, cudaStream_t stream) {
  backward(dinp, dweight, dbias, dout, inp, weight, M, K, N, stream);
}
void matmul_backward_cuda(bf16* dinp, bf16* dweight, bf16* dbias, const bf16* dout, const bf16* inp, const bf16* weight,
                          int M, int K, int N, cudaStream_t stream) {
  backward(dinp, dweight, dbias, dout, inp, weight, M, K, N, stream);
}
void matmul_gelu_forward_cuda(float* out, float* pre_gelu, const float* inp, const float* weight, const float* bias,
                              int M, int K, int N, cudaStream_t stream) {
  gelu_forward(out, pre_gelu, inp, weight, bias, M, K, N, stream);
}
void matmul_gelu_forward_cuda(bf16* out, bf16* pre_gelu, const bf16* inp, const bf16* weight, const bf16* bias, int M,
                              int K, int N, cudaStream_t stream) {
  gelu_forward(out, pre_gelu, inp, weight, bias, M, K, N, stream);
}
void matmul_dgelu_backward_cuda(float* dpre, float* dbias_pre, const float* dout, const float* weight,
                                const float* pre_gelu, int M, int K, int N, cudaStream_t stream) {
  dgelu_backward(dpre, dbias_pre, dout, weight, pre_gelu, M, K, N, stream);
}
void matmul_dgelu_backward_cuda(bf16* dpre, bf16* dbias_pre, const bf16* dout, const bf16* weight, const bf16* pre_gelu,
                                int M, int K, int N, cudaStream_t stream) {
  dgelu_backward(dpre, dbias_pre, dout, weight, pre_gelu, M, K, N, stream);
}

void matmul_cuda_set_fused_epilogues(bool enabled) { g_fused_epilogues.store(enabled); }

void matmul_cuda_release() {
  int current = 0;
  TT_CUDA_CHECK(cudaGetDevice(&current));
  {
    std::lock_guard<std::mutex> lock(handle_mutex());
    for (auto& [device, h] : handles()) {
      TT_CUDA_CHECK(cudaSetDevice(device));
      TT_CUDA_CHECK(cudaDeviceSynchronize());
      if (h != nullptr) TT_CUBLASLT_CHECK(cublasLtDestroy(h));
    }
    handles().clear();
  }
  TT_CUDA_CHECK(cudaSetDevice(current));
  cuda::release_all_cuda_scratch();
}

}  // namespace tt::kernels
