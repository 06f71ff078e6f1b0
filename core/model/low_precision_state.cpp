// fp8 delayed-scaling state (see low_precision_state.h).
#include "core/model/low_precision_state.h"

#include <cstring>

#include "core/error.h"

namespace tt {

LowPrecisionState::LowPrecisionState(int sites, int history_len, int margin, const Exec& exec)
    : sites_(sites), history_len_(history_len), margin_(margin), exec_(exec) {
  TT_ASSERT(sites >= 0 && history_len >= 1 && margin >= 0, "fp8 state: sites ", sites, " history ", history_len,
            " margin ", margin);
  const int64_t n = 3 * int64_t(sites);
  history_ = Tensor::zeros("fp8.amax_history", {std::max<int64_t>(n * history_len, 1)}, DType::kF32, exec.device);
  scale_ = Tensor::zeros("fp8.scale", {std::max<int64_t>(n, 1)}, DType::kF32, exec.device);
  scale_inv_ = Tensor::zeros("fp8.scale_inv", {std::max<int64_t>(n, 1)}, DType::kF32, exec.device);
  amax_ = Tensor::zeros("fp8.amax", {std::max<int64_t>(n, 1)}, DType::kF32, exec.device);
  counts_ = Tensor::zeros("fp8.counts", {std::max<int64_t>(2 * n, 1)}, DType::kU32, exec.device);
  const std::vector<float> ones(size_t(std::max<int64_t>(n, 1)), 1.0f);
  copy_sync(exec_, scale_.raw(), ones.data(), ones.size() * sizeof(float));
  copy_sync(exec_, scale_inv_.raw(), ones.data(), ones.size() * sizeof(float));
}

ops::LinearPrecision LowPrecisionState::site(int i) const {
  TT_ASSERT(i >= 0 && i < sites_, "fp8 site ", i, " of ", sites_);
  return {ops::MatmulPrecision::kFp8, scale_.data<float>() + 3 * i, scale_inv_.data<float>() + 3 * i,
          amax_.data<float>() + 3 * i, counts_.data<uint32_t>() + 6 * i};
}

std::string LowPrecisionState::site_name(int i, int n_layer) {
  static const char* const kNames[kSitesPerBlock] = {"qkv", "out", "up", "down"};
  if (i >= kSitesPerBlock * n_layer) return "head";
  return str("block ", i / kSitesPerBlock, " ", kNames[i % kSitesPerBlock]);
}

void LowPrecisionState::begin_step() {
  zero_async(exec_, amax_.raw(), amax_.nbytes());
  zero_async(exec_, counts_.raw(), counts_.nbytes());
}

void LowPrecisionState::update() {
  const int pos = int(updates_ % history_len_);
  ops::fp8_update_scales(exec_, history_.data<float>(), scale_.data<float>(), scale_inv_.data<float>(),
                         amax_.data<float>(), 3 * int64_t(sites_), history_len_, pos, margin_);
  ++updates_;
}

LowPrecisionState::Stats LowPrecisionState::stats() const {
  const size_t n = 3 * size_t(sites_);
  Stats s{std::vector<float>(n), std::vector<float>(n), std::vector<uint32_t>(2 * n)};
  if (n == 0) return s;
  copy_sync(exec_, s.amax.data(), amax_.raw(), n * sizeof(float));
  copy_sync(exec_, s.scale.data(), scale_.raw(), n * sizeof(float));
  copy_sync(exec_, s.counts.data(), counts_.raw(), 2 * n * sizeof(uint32_t));
  return s;
}

std::string LowPrecisionState::layout() const {
  return str("fp8 delayed scaling: sites=", sites_, " history=", history_len_, " margin=", margin_);
}

std::vector<char> LowPrecisionState::save() const {
  const size_t n = 3 * size_t(sites_), h = n * size_t(history_len_);
  std::vector<char> out((h + 2 * n) * sizeof(float) + sizeof(int64_t));
  char* at = out.data();
  if (h) copy_sync(exec_, at, history_.raw(), h * sizeof(float));
  at += h * sizeof(float);
  if (n) copy_sync(exec_, at, scale_.raw(), n * sizeof(float));
  at += n * sizeof(float);
  if (n) copy_sync(exec_, at, scale_inv_.raw(), n * sizeof(float));
  at += n * sizeof(float);
  std::memcpy(at, &updates_, sizeof updates_);
  return out;
}

void LowPrecisionState::load(const std::string& layout_text, const std::vector<char>& bytes, const std::string& where) {
  const size_t n = 3 * size_t(sites_), h = n * size_t(history_len_);
  if (layout_text != layout() || bytes.size() != (h + 2 * n) * sizeof(float) + sizeof(int64_t))
    throw Error(ErrorKind::kCheckpoint,
                str("the checkpoint's fp8 scaling state (", layout_text, ") does not fit this run (", layout(), ")"),
                where,
                "resume with the train.fp8 settings and model the run was started with, or start a new run_dir");
  const char* at = bytes.data();
  if (h) copy_sync(exec_, history_.raw(), at, h * sizeof(float));
  at += h * sizeof(float);
  if (n) copy_sync(exec_, scale_.raw(), at, n * sizeof(float));
  at += n * sizeof(float);
  if (n) copy_sync(exec_, scale_inv_.raw(), at, n * sizeof(float));
  at += n * sizeof(float);
  std::memcpy(&updates_, at, sizeof updates_);
}

}  // namespace tt
