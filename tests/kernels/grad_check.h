// Finite-difference gradient checking for the kernel tests (header-only: only *_test.cpp files are
// globbed into test_kernels). A test defines a scalar objective L(params) = Σ out ⊙ R with a fixed
// random R (computed in double), perturbs a subset of elements by ±eps and compares the central
// difference with the analytic gradient. Criterion: ‖a−n‖/‖n‖ < rel_l2 over the checked set AND
// |a−n| <= rel_elem·|n| + abs_elem for every checked element — tight enough to catch a wrong sign,
// a missing term, a transposed index or a 10% scale error (see grad_check_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tt::test {

inline std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<int32_t> random_tokens(size_t n, int32_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Σ out[i]·r[i] in double.
inline double weighted_sum(const float* out, const float* r, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(out[i]) * r[i];
  return s;
}

// All indices of [0, n) when n <= max_checks, else a sorted random subset of max_checks of them.
inline std::vector<int64_t> pick_indices(int64_t n, int64_t max_checks, uint64_t seed) {
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  if (n <= max_checks) return idx;
  std::mt19937_64 rng(seed);
  std::shuffle(idx.begin(), idx.end(), rng);
  idx.resize(max_checks);
  std::sort(idx.begin(), idx.end());
  return idx;
}

struct GradTolerance {
  double rel_l2 = 1e-2;
  double rel_elem = 2e-2;
  double abs_elem = 2e-3;
};

struct GradComparison {
  bool ok = false;
  double rel_l2 = 0.0;  // ‖a−n‖ / ‖n‖ over the checked set
  int64_t checked = 0;
  int64_t bad_elements = 0;  // elements outside rel_elem·|n| + abs_elem
  std::string message;       // summary with the worst element, for test failure output
};

// Compares analytic[idx[k]] with numeric[k] for every k.
inline GradComparison compare_gradients(const float* analytic, const std::vector<int64_t>& idx,
                                        const std::vector<double>& numeric, const GradTolerance& tol = {}) {
  GradComparison r;
  r.checked = static_cast<int64_t>(idx.size());
  double diff2 = 0.0, num2 = 0.0, worst_excess = -1.0;
  int64_t worst = -1;
  for (size_t k = 0; k < idx.size(); ++k) {
    const double a = analytic[idx[k]], n = numeric[k];
    const double d = std::fabs(a - n);
    diff2 += d * d;
    num2 += n * n;
    const double excess = d - (tol.rel_elem * std::fabs(n) + tol.abs_elem);
    if (excess > 0) ++r.bad_elements;
    if (excess > worst_excess || worst < 0) {
      worst_excess = excess;
      worst = static_cast<int64_t>(k);
    }
  }
  r.rel_l2 = num2 > 0 ? std::sqrt(diff2 / num2) : std::sqrt(diff2);
  r.ok = r.rel_l2 < tol.rel_l2 && r.bad_elements == 0;
  std::ostringstream os;
  os << "checked " << r.checked << " elements: rel_l2=" << r.rel_l2 << " (limit " << tol.rel_l2 << "), "
     << r.bad_elements << " outside |a-n| <= " << tol.rel_elem << "|n| + " << tol.abs_elem;
  if (worst >= 0)
    os << "; worst index " << idx[worst] << ": analytic " << analytic[idx[worst]] << " numeric " << numeric[worst];
  r.message = os.str();
  return r;
}

// Central differences of loss() w.r.t. x[idx[k]]; x is perturbed in place and restored exactly.
// The step actually taken in float is used as the denominator.
template <typename Loss>
std::vector<double> numeric_gradient(float* x, const std::vector<int64_t>& idx, Loss&& loss, float eps = 1e-3f) {
  std::vector<double> g(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) {
    const float orig = x[idx[k]];
    const float xp = orig + eps, xm = orig - eps;
    x[idx[k]] = xp;
    const double lp = loss();
    x[idx[k]] = xm;
    const double lm = loss();
    x[idx[k]] = orig;
    g[k] = (lp - lm) / (static_cast<double>(xp) - static_cast<double>(xm));
  }
  return g;
}

// numeric_gradient over (a subset of) x, compared with analytic (same length as x).
template <typename Loss>
GradComparison check_gradient(std::vector<float>& x, const std::vector<float>& analytic, Loss&& loss,
                              int64_t max_checks = 200, uint64_t seed = 1234, const GradTolerance& tol = {},
                              float eps = 1e-3f) {
  const auto idx = pick_indices(static_cast<int64_t>(x.size()), max_checks, seed);
  const auto numeric = numeric_gradient(x.data(), idx, loss, eps);
  return compare_gradients(analytic.data(), idx, numeric, tol);
}

inline ::testing::AssertionResult gradients_match(const GradComparison& r) {
  if (r.ok) return ::testing::AssertionSuccess() << r.message;
  return ::testing::AssertionFailure() << r.message;
}

// a - b elementwise (used to strip a pre-filled gradient and test += semantics).
inline std::vector<float> minus(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

// Runs f() with the OpenMP thread count set to n, restoring the previous setting.
template <typename F>
void with_threads(int n, F&& f) {
  const int previous = omp_get_max_threads();
  omp_set_num_threads(n);
  f();
  omp_set_num_threads(previous);
}

inline bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](float x, float y) { return std::memcmp(&x, &y, sizeof(float)) == 0; });
}

}  // namespace tt::test
