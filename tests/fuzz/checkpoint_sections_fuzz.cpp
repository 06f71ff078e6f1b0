// Fuzz target: what a checkpoint's sections hold, past the container's checksums (which random bytes
// rarely get right, so checkpoint_fuzz seldom reaches them). The input is a list of sections,
// "NAME\nBYTES" separated by "\n@@"; the harness writes them as a valid checkpoint and opens it as
// weights (core/model/weights.h open_weights: the "config" and "model_signature" sections, "params"
// by range), then reads its text codec ("tokenizer", launch/model_loading.h codec_of) and the 8-bit
// AdamW state layout ("adam_state8_layout", optim/adamw.h parse_state8_owners). Without a "params"
// section the harness adds one of the size the config asks for, so the reads are reached too.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/checkpoint_io.h"
#include "core/config.h"
#include "core/model/model_desc.h"
#include "core/model/param_layout.h"
#include "core/model/weights.h"
#include "launch/model_loading.h"
#include "optim/adamw.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr int64_t kMaxSynthesizedParams = int64_t(1) << 20;  // 4 MB of params at most
constexpr int64_t kMaxReadParams = int64_t(1) << 16;

// Params for the model the config section describes (0.5 each, finite), or "" when it describes none
// or one too large to bother with.
std::string synthesized_params(const std::string& config_text) {
  try {
    const tt::config::Config cfg = tt::parse_config_text(config_text, "fuzz");
    const int64_t numel = tt::model_layout(tt::model_desc_from_config(cfg.model())).numel;
    if (numel <= 0 || numel > kMaxSynthesizedParams) return "";
    std::vector<float> values(size_t(numel), 0.5f);
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  } catch (const tt::Error&) {
    return "";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::fuzz::quiet_logs();
  tt::CheckpointWriter writer;
  std::set<std::string> names;
  std::string config_text, state8_text;
  bool has_state8 = false;
  for (std::string_view part : tt::fuzz::split_input(data, size, "\n@@")) {
    const size_t nl = part.find('\n');
    const std::string name(part.substr(0, std::min(nl, part.size())));
    const std::string bytes(nl == std::string_view::npos ? std::string_view() : part.substr(nl + 1));
    if (name.empty() || !names.insert(name).second) continue;  // the writer asserts unique, non-empty names
    if (name == "config") config_text = bytes;
    if (name == "adam_state8_layout") {
      state8_text = bytes;
      has_state8 = true;
    }
    writer.add_string(name, bytes);
  }
  if (!names.count("params")) {
    std::string params = synthesized_params(config_text);
    if (!params.empty()) writer.add_owned("params", std::move(params));
  }
  const std::string path = tt::fuzz::scratch_dir() + "/sections.ckpt";
  writer.write(path);

  tt::fuzz::expect_only_tt_errors([&] {
    std::unique_ptr<tt::WeightSource> source = tt::open_weights(path);
    const int64_t n = std::min<int64_t>(source->layout().numel, kMaxReadParams);
    std::vector<float> out(size_t(std::max<int64_t>(n, 0)));
    if (n > 0) source->read(0, n, out.data());
    tt::TextCodec codec = tt::codec_of(*source);
    const std::string text = codec.decode({0, 1, 2});
    (void)text;
  });
  if (has_state8) tt::fuzz::expect_only_tt_errors([&] { tt::parse_state8_owners(state8_text, "fuzz"); });
  return 0;
}
