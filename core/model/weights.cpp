// Weight sources: the range reader every format shares, topotrain checkpoints as a source, format
// detection, and the run's model description with model.init_from (see weights.h).
#include "core/model/weights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/checkpoint_io.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/model/hf_checkpoint.h"
#include "core/model/llmc_model.h"

namespace tt {

WeightSource::WeightSource(const ModelDesc& desc, std::string path)
    : desc_(desc), layout_(model_layout(desc)), path_(std::move(path)) {}

WeightSource::~WeightSource() = default;

void WeightSource::read(int64_t begin, int64_t count, float* out) {
  const int64_t end = begin + count;
  TT_ASSERT(begin >= 0 && end <= layout_.numel, "weights [", begin, ", ", end, ") of ", layout_.numel);
  for (const ParamInfo& p : layout_.tensors) {
    const int64_t t_end = p.offset + shape_numel(p.shape);
    const int64_t lo = std::max(begin, p.offset), hi = std::min(end, t_end);
    if (lo >= hi) continue;
    float* dst = out + (lo - begin);
    read_tensor(p, lo - p.offset, hi - lo, dst);
    for (int64_t i = 0; i < hi - lo; ++i)
      if (!std::isfinite(dst[i]))
        throw Error(ErrorKind::kCheckpoint,
                    str("element ", lo - p.offset + i, " of ", shape_str(p.shape), " is ", dst[i]), origin_of(p),
                    "the checkpoint holds NaN or Inf weights; use an earlier or another checkpoint");
    if (hi == t_end) release_tensor(p);
  }
}

namespace {

// The newest complete checkpoint of a run directory (or its checkpoints/ directory), or the file.
std::string resolve_checkpoint_file(const std::string& path) {
  if (!is_directory(path)) return path;
  const std::string dir = is_directory(path + "/checkpoints") ? path + "/checkpoints" : path;
  const std::string newest = newest_complete_checkpoint(dir);
  if (newest.empty())
    throw Error(ErrorKind::kCheckpoint, "no complete checkpoint in the directory", dir,
                "point at a run directory that has written a checkpoint, or at a .ckpt file");
  return newest;
}

// A topotrain checkpoint's parameters (fp32; the master weights of bf16 runs).
class CheckpointSource : public WeightSource {
 public:
  CheckpointSource(const ModelDesc& desc, std::unique_ptr<CheckpointReader> reader)
      : WeightSource(desc, reader->path()), reader_(std::move(reader)) {
    reader_->expect_bytes("params", uint64_t(layout().numel) * sizeof(float));
  }
  WeightFormat format() const override { return WeightFormat::kCheckpoint; }
  std::string describe() const override { return "topotrain checkpoint " + path(); }

 protected:
  void read_tensor(const ParamInfo& p, int64_t first, int64_t count, float* out) override {
    reader_->read_range("params", uint64_t(p.offset + first) * sizeof(float), out, size_t(count) * sizeof(float));
  }
  std::string origin_of(const ParamInfo& p) const override {
    return path() + " (section 'params', tensor '" + p.name + "')";
  }

 private:
  std::unique_ptr<CheckpointReader> reader_;
};

std::unique_ptr<WeightSource> open_checkpoint(const std::string& path) {
  const std::string file = resolve_checkpoint_file(path);
  auto reader = std::make_unique<CheckpointReader>(file, [](const std::string& name) {
    return name != "params" && name != "adam_m" && name != "adam_v" && name != "error_feedback";
  });
  const config::Config cfg = parse_config_text(reader->string("config"), file + " (section 'config')");
  const ModelDesc desc = model_desc_from_config(cfg.model());
  if (reader->has("model_signature") && reader->string("model_signature") != desc.str())
    throw Error(ErrorKind::kCheckpoint,
                "the checkpoint's model (" + reader->string("model_signature") +
                    ") is not what its config describes (" + desc.str() + ")",
                file, "the checkpoint comes from another topotrain version; start from its weights exported with it");
  return std::make_unique<CheckpointSource>(desc, std::move(reader));
}

template <typename T>
void agree(const char* field, bool set, const T& config_value, const T& file_value, const std::string& path) {
  if (!set || config_value == file_value) return;
  std::string a = str(config_value), b = str(file_value);
  throw Error(
      ErrorKind::kConfig, str(field, " is ", a, " in the config but ", b, " in ", path), field,
      str("drop ", field, " (the architecture comes from model.init_from) or point init_from at another model"));
}

const char* norm_name(const ModelDesc& d) { return d.layer_norm() ? "layernorm" : "rmsnorm"; }
const char* position_name(const ModelDesc& d) { return d.rope_positions() ? "rope" : "learned"; }
const char* mlp_name(const ModelDesc& d) { return d.mlp == ops::MlpActivation::kSwiGLU ? "swiglu" : "gelu"; }

}  // namespace

std::unique_ptr<WeightSource> open_weights(const std::string& path) {
  if (is_directory(path)) {
    if (is_regular_file(path + "/config.json")) return open_hf_checkpoint(path);
    if (is_directory(path + "/checkpoints") || !list_checkpoints(path).empty()) return open_checkpoint(path);
    throw Error(ErrorKind::kCheckpoint, "neither a Hugging Face model directory (no config.json) nor a run directory",
                path,
                "point at a directory with config.json and safetensors weights, a topotrain run directory or .ckpt "
                "file, or an llm.c model file");
  }
  if (!is_regular_file(path)) throw Error(ErrorKind::kCheckpoint, "no such file or directory", path, "check the path");
  if (is_llmc_model_file(path)) return open_llmc_model(path);
  return open_checkpoint(path);  // its reader names what is wrong with a file that is neither
}

ModelDesc run_model_desc(const config::Config& cfg) {
  const config::ModelConfig& m = cfg.model();
  if (m.init_from().empty()) return model_desc_from_config(m);
  const std::string& path = m.init_from();
  const ModelDesc d = open_weights(path)->desc();
  agree("model.arch", m.has_arch(), m.arch(), d.arch, path);
  agree("model.n_layer", m.n_layer() > 0, m.n_layer(), d.n_layer, path);
  agree("model.n_head", m.n_head() > 0, m.n_head(), d.n_head, path);
  agree("model.n_kv_head", m.n_kv_head() > 0, m.n_kv_head(), d.n_kv_head, path);
  agree("model.head_dim", m.head_dim() > 0, m.head_dim(), d.head_dim, path);
  agree("model.n_embd", m.n_embd() > 0, m.n_embd(), d.n_embd, path);
  agree("model.vocab_size", m.vocab_size() > 0, m.vocab_size(), d.vocab_size, path);
  agree("model.max_seq_len", m.max_seq_len() > 0, m.max_seq_len(), d.max_seq_len, path);
  agree("model.mlp_hidden", m.mlp_hidden() > 0, m.mlp_hidden(), d.mlp_hidden, path);
  agree("model.norm", !m.norm().empty(), m.norm(), std::string(norm_name(d)), path);
  agree("model.norm_eps", m.has_norm_eps(), m.norm_eps(), d.norm.eps, path);
  agree("model.position", !m.position().empty(), m.position(), std::string(position_name(d)), path);
  agree("model.rope_theta", m.has_rope_theta(), m.rope_theta(), d.rope.theta, path);
  agree("model.mlp", !m.mlp().empty(), m.mlp(), std::string(mlp_name(d)), path);
  agree("model.qkv_bias", m.has_qkv_bias(), m.qkv_bias(), d.qkv_bias, path);
  agree("model.bias", m.has_bias(), m.bias(), d.bias, path);
  agree("model.tied_head", m.has_tied_head(), m.tied_head(), d.tied_head, path);
  return d;
}

void fill_model_config(const ModelDesc& d, config::ModelConfig* m) {
  m->set_arch(d.arch);
  m->set_n_layer(d.n_layer);
  m->set_n_head(d.n_head);
  m->set_n_kv_head(d.n_kv_head);
  m->set_head_dim(d.head_dim);
  m->set_n_embd(d.n_embd);
  m->set_vocab_size(d.vocab_size);
  m->set_max_seq_len(d.max_seq_len);
  m->set_init_std(d.init_std);
  m->set_norm(norm_name(d));
  m->set_norm_eps(d.norm.eps);
  m->set_position(position_name(d));
  m->set_rope_theta(d.rope.theta);
  if (d.rope.scaling_factor > 1.0f) {
    auto* s = m->mutable_rope_scaling();
    s->set_factor(d.rope.scaling_factor);
    s->set_low_freq_factor(d.rope.low_freq_factor);
    s->set_high_freq_factor(d.rope.high_freq_factor);
    s->set_original_max_seq_len(d.rope.original_max_seq_len);
  }
  m->set_mlp(mlp_name(d));
  m->set_mlp_hidden(d.mlp_hidden);
  m->set_qkv_bias(d.qkv_bias);
  m->set_bias(d.bias);
  m->set_tied_head(d.tied_head);
}

}  // namespace tt
