// Hugging Face model directories (see hf_checkpoint.h).
#include "core/model/hf_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "core/error.h"
#include "core/fs.h"
#include "core/safetensors.h"

namespace tt {

namespace {

using nlohmann::json;

constexpr const char* kIndexFile = "model.safetensors.index.json";
constexpr const char* kSingleFile = "model.safetensors";

[[noreturn]] void bad(const std::string& where, const std::string& what, const std::string& hint) {
  throw Error(ErrorKind::kCheckpoint, what, where, hint);
}

// A JSON value as T, or a kCheckpoint error naming the field. nlohmann converts any number to any
// arithmetic type, and a double outside int's range converted to int is undefined behaviour, so an
// int must be an integer (or an integral double) that fits.
template <typename T>
T as(const json& v, const char* name, const std::string& where) {
  try {
    if constexpr (std::is_same_v<T, int>) {
      const double x = v.is_number() ? v.get<double>() : 0.5;
      if (v.is_number() && std::trunc(x) == x && x >= std::numeric_limits<int>::min() &&
          x <= std::numeric_limits<int>::max())
        return v.is_number_integer() ? int(v.get<int64_t>()) : int(x);
    } else {
      return v.get<T>();
    }
  } catch (const json::exception&) {
  }
  bad(where, std::string("config.json field \"") + name + "\" has the wrong type or is out of range",
      "the file is damaged");
}

template <typename T>
T field(const json& c, const char* name, const std::string& where) {
  if (!c.contains(name) || c[name].is_null())
    bad(where, std::string("config.json has no \"") + name + "\"", "the file is incomplete; download it again");
  return as<T>(c[name], name, where);
}

template <typename T>
T field_or(const json& c, const char* name, T fallback, const std::string& where) {
  return c.contains(name) && !c[name].is_null() ? as<T>(c[name], name, where) : fallback;
}

bool is_gpt2(const ModelDesc& d) { return d.arch == "gpt2"; }

// GPT-2's Conv1D layers: the 2-D weights inside the blocks, stored [in, out].
bool conv1d(const ModelDesc& d, const ParamInfo& p) {
  return is_gpt2(d) && p.shape.size() == 2 && p.name.rfind("h.", 0) == 0;
}

bool vocab_table(const ModelLayout& layout, const ParamInfo& p) {
  return p.offset == layout.tok_emb || p.offset == layout.lm_head;
}

// The shape the tensor has in a Hugging Face checkpoint.
Shape hf_shape(const ModelDesc& d, const ModelLayout& layout, const ParamInfo& p) {
  if (vocab_table(layout, p)) return {d.vocab_size, d.n_embd};
  if (conv1d(d, p)) return {p.shape[1], p.shape[0]};
  return p.shape;
}

ModelDesc desc_from_hf_config(const json& c, const std::string& where) {
  const std::string type = field_or<std::string>(c, "model_type", "", where);
  ModelDesc d;
  if (type == "gpt2") {
    const std::string act = field_or<std::string>(c, "activation_function", "gelu_new", where);
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
      bad(where, "GPT-2 activation_function \"" + act + "\" is not supported",
          "topotrain's GPT-2 uses GELU with the tanh approximation (gelu_new)");
    const int positions =
        c.contains("n_positions") ? field<int>(c, "n_positions", where) : field<int>(c, "n_ctx", where);
    d = gpt2_desc(field<int>(c, "n_layer", where), field<int>(c, "n_head", where), field<int>(c, "n_embd", where),
                  field<int>(c, "vocab_size", where), positions);
    d.norm.eps = field_or<float>(c, "layer_norm_epsilon", 1e-5f, where);
    if (c.contains("n_inner") && !c["n_inner"].is_null()) d.mlp_hidden = field<int>(c, "n_inner", where);
    d.tied_head = field_or<bool>(c, "tie_word_embeddings", true, where);
  } else if (type == "llama" || type == "mistral") {
    const std::string act = field_or<std::string>(c, "hidden_act", "silu", where);
    if (act != "silu")
      bad(where, "hidden_act \"" + act + "\" is not supported",
          "topotrain's SwiGLU uses silu, as Llama and Mistral do");
    // transformers 5 keeps the RoPE settings in rope_parameters, earlier versions in rope_theta and
    // rope_scaling.
    const json rope = c.contains("rope_parameters") && c["rope_parameters"].is_object() ? c["rope_parameters"]
                      : c.contains("rope_scaling") && c["rope_scaling"].is_object()     ? c["rope_scaling"]
                                                                                        : json::object();
    const float theta = rope.contains("rope_theta") ? field<float>(rope, "rope_theta", where)
                                                    : field_or<float>(c, "rope_theta", 10000.0f, where);
    const int heads = field<int>(c, "num_attention_heads", where);
    d = llama_desc(field<int>(c, "num_hidden_layers", where), heads,
                   field_or<int>(c, "num_key_value_heads", heads, where), field<int>(c, "hidden_size", where),
                   field<int>(c, "vocab_size", where), field<int>(c, "max_position_embeddings", where),
                   field<int>(c, "intermediate_size", where), theta);
    if (c.contains("head_dim") && !c["head_dim"].is_null()) d.head_dim = field<int>(c, "head_dim", where);
    d.norm.eps = field_or<float>(c, "rms_norm_eps", 1e-6f, where);
    const std::string rope_type = rope.contains("rope_type") ? as<std::string>(rope["rope_type"], "rope_type", where)
                                  : rope.contains("type")    ? as<std::string>(rope["type"], "type", where)
                                                             : "default";
    if (rope_type == "llama3") {
      d.rope.scaling_factor = field<float>(rope, "factor", where);
      d.rope.low_freq_factor = field<float>(rope, "low_freq_factor", where);
      d.rope.high_freq_factor = field<float>(rope, "high_freq_factor", where);
      d.rope.original_max_seq_len = field<int>(rope, "original_max_position_embeddings", where);
    } else if (rope_type != "default") {
      bad(where, "RoPE scaling \"" + rope_type + "\" is not supported",
          "topotrain implements plain RoPE and Llama 3.1's \"llama3\" frequency scaling");
    }
    const bool attention_bias = field_or<bool>(c, "attention_bias", false, where);
    const bool mlp_bias = field_or<bool>(c, "mlp_bias", false, where);
    if (attention_bias != mlp_bias)
      bad(where, "attention_bias and mlp_bias differ",
          "topotrain describes biases on q/k/v and on the other "
          "projections; both present or both absent are supported");
    d.qkv_bias = d.bias = attention_bias;
    d.tied_head = field_or<bool>(c, "tie_word_embeddings", false, where);
    // Mistral's sliding window: full causal attention equals it up to the window, so that is the context.
    if (type == "mistral" && c.contains("sliding_window") && !c["sliding_window"].is_null())
      d.max_seq_len = std::min(d.max_seq_len, field<int>(c, "sliding_window", where));
  } else {
    bad(where, "architecture \"" + type + "\" (model_type) is not supported",
        "topotrain reads GPT2LMHeadModel, LlamaForCausalLM and MistralForCausalLM checkpoints");
  }
  try {
    d.validate();
  } catch (const Error& e) {
    bad(where, std::string("config.json describes an impossible model: ") + e.what(), "the file is damaged");
  }
  return d;
}

class HfSource : public WeightSource {
 public:
  HfSource(const ModelDesc& desc, const std::string& dir) : WeightSource(desc, dir), dir_(dir) {
    const std::string index = dir + "/" + kIndexFile;
    std::map<std::string, std::string> file_of;  // tensor -> file name
    if (is_regular_file(index)) {
      json j;
      try {
        j = json::parse(read_file_to_string(index, ErrorKind::kCheckpoint));
      } catch (const json::exception& e) {
        bad(index, std::string("not valid JSON: ") + e.what(), "the file is damaged; download it again");
      }
      if (!j.contains("weight_map") || !j["weight_map"].is_object())
        bad(index, "no \"weight_map\" in the index", "the file is damaged; download it again");
      for (const auto& [name, file] : j["weight_map"].items()) {
        if (!file.is_string())
          bad(index, "weight_map entry '" + name + "' is not a file name", "the file is damaged; download it again");
        const std::string file_name = file.get<std::string>();
        // Shards sit beside the index (as transformers writes them); a path would read outside it.
        if (file_name.empty() || file_name.find('/') != std::string::npos || file_name == "." || file_name == "..")
          bad(index, "weight_map entry '" + name + "' names '" + file_name + "', which is not a file name in " + dir,
              "the index must list shard file names in its own directory (e.g. model-00001-of-00002.safetensors)");
        file_of[name] = file_name;
      }
      for (const auto& [name, file] : file_of)
        if (!files_.count(file)) {
          if (!is_regular_file(dir + "/" + file))
            bad(index, "shard '" + file + "' (holding tensor '" + name + "') is missing",
                "download every shard the index lists into " + dir);
          files_[file] = std::make_unique<SafetensorsFile>(dir + "/" + file);
          shard_names_.push_back(file);
        }
    } else if (is_regular_file(dir + "/" + kSingleFile)) {
      auto f = std::make_unique<SafetensorsFile>(dir + "/" + kSingleFile);
      for (const std::string& name : f->names()) file_of[name] = kSingleFile;
      files_[kSingleFile] = std::move(f);
      shard_names_.push_back(kSingleFile);
    } else {
      bad(dir, std::string("neither ") + kSingleFile + " nor " + kIndexFile + " is in the directory",
          "download the model's safetensors weights (older .bin checkpoints can be converted with transformers)");
    }
    for (const ParamInfo& p : layout().tensors) {
      std::string name = p.name;
      if (!file_of.count(name) && is_gpt2(desc) && file_of.count("transformer." + name)) name = "transformer." + name;
      if (!file_of.count(name))
        bad(dir, "tensor '" + p.name + "' is not in the checkpoint",
            "the weights do not match config.json, or a shard is missing");
      SafetensorsFile& file = *files_.at(file_of.at(name));
      const SafetensorInfo& info = file.info(name);
      const Shape want = hf_shape(desc, layout(), p);
      if (info.shape != want)
        bad(file.path() + " (tensor '" + name + "')",
            str("shape ", shape_str(info.shape), " where config.json implies ", shape_str(want)),
            "the weights do not match config.json");
      if (!info.readable)
        bad(file.path() + " (tensor '" + name + "')", "dtype " + info.dtype_name + " cannot be read as weights",
            "supported weight dtypes: F32, BF16 and F16");
      dtypes_[info.dtype_name] += 1;
      hf_name_[p.offset] = {name, &file};
    }
    if (is_regular_file(dir + "/tokenizer.json")) tokenizer_ = dir + "/tokenizer.json";
  }

  WeightFormat format() const override { return WeightFormat::kHuggingFace; }
  std::string describe() const override {
    std::string dtypes;
    for (const auto& [name, n] : dtypes_) dtypes += (dtypes.empty() ? "" : "/") + name;
    return str("Hugging Face ", hf_architecture(desc()).empty() ? desc().arch : hf_architecture(desc()), " from ", dir_,
               ", ", shard_names_.size(), " safetensors file", shard_names_.size() == 1 ? "" : "s", " (", dtypes, ")");
  }
  std::string tokenizer_path() const override { return tokenizer_; }

 protected:
  void read_tensor(const ParamInfo& p, int64_t first, int64_t count, float* out) override {
    const auto& [name, file] = hf_name_.at(p.offset);
    if (vocab_table(layout(), p)) {  // rows past vocab_size are padding: zero
      const int64_t real = int64_t(desc().vocab_size) * desc().n_embd;
      const int64_t n = std::max<int64_t>(0, std::min(first + count, real) - first);
      if (n > 0) file->read_f32(name, first, n, out);
      std::fill(out + std::max<int64_t>(n, 0), out + count, 0.0f);
      return;
    }
    if (!conv1d(desc(), p)) {
      file->read_f32(name, first, count, out);
      return;
    }
    // [in, out] on file, [out, in] here: the whole tensor converted once, then transposed by range.
    if (cached_ != p.offset) {
      cache_.resize(size_t(shape_numel(p.shape)));
      file->read_f32(name, 0, shape_numel(p.shape), cache_.data());
      cached_ = p.offset;
    }
    const int64_t rows = p.shape[0], cols = p.shape[1];
    for (int64_t i = 0; i < count; ++i) {
      const int64_t e = first + i, r = e / cols, c = e % cols;
      out[i] = cache_[size_t(c * rows + r)];
    }
  }

  void release_tensor(const ParamInfo& p) override {
    const auto& [name, file] = hf_name_.at(p.offset);
    file->release(name);
    if (cached_ == p.offset) {
      cached_ = -1;
      std::vector<float>().swap(cache_);
    }
  }

  std::string origin_of(const ParamInfo& p) const override {
    const auto& [name, file] = hf_name_.at(p.offset);
    return file->path() + " (tensor '" + name + "')";
  }

 private:
  std::string dir_, tokenizer_;
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> shard_names_;
  std::map<int64_t, std::pair<std::string, const SafetensorsFile*>> hf_name_;  // by layout offset
  std::map<std::string, int> dtypes_;
  int64_t cached_ = -1;
  std::vector<float> cache_;
};

json hf_config(const ModelDesc& d, const std::string& arch, DType dtype) {
  const char* torch_dtype = dtype == DType::kBF16 ? "bfloat16" : dtype == DType::kF16 ? "float16" : "float32";
  json c;
  c["architectures"] = {arch};
  if (arch == "GPT2LMHeadModel") {
    c["model_type"] = "gpt2";
    c["n_layer"] = d.n_layer;
    c["n_head"] = d.n_head;
    c["n_embd"] = d.n_embd;
    c["n_positions"] = d.max_seq_len;
    c["n_ctx"] = d.max_seq_len;
    c["n_inner"] = d.mlp_hidden;
    c["vocab_size"] = d.vocab_size;
    c["activation_function"] = "gelu_new";
    c["layer_norm_epsilon"] = d.norm.eps;
    c["resid_pdrop"] = c["embd_pdrop"] = c["attn_pdrop"] = 0.0;
    c["bos_token_id"] = c["eos_token_id"] = std::min(50256, d.vocab_size - 1);
  } else {
    c["model_type"] = "llama";
    c["hidden_size"] = d.n_embd;
    c["intermediate_size"] = d.mlp_hidden;
    c["num_hidden_layers"] = d.n_layer;
    c["num_attention_heads"] = d.n_head;
    c["num_key_value_heads"] = d.n_kv_head;
    c["head_dim"] = d.head_dim;
    c["max_position_embeddings"] = d.max_seq_len;
    c["vocab_size"] = d.vocab_size;
    c["rms_norm_eps"] = d.norm.eps;
    c["rope_theta"] = d.rope.theta;
    c["hidden_act"] = "silu";
    c["attention_bias"] = c["mlp_bias"] = d.bias;
    if (d.rope.scaling_factor > 1.0f)
      c["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", d.rope.scaling_factor},
                           {"low_freq_factor", d.rope.low_freq_factor},
                           {"high_freq_factor", d.rope.high_freq_factor},
                           {"original_max_position_embeddings", d.rope.original_max_seq_len}};
    c["bos_token_id"] = 1;
    c["eos_token_id"] = std::min(2, d.vocab_size - 1);
  }
  c["tie_word_embeddings"] = d.tied_head;
  c["torch_dtype"] = torch_dtype;
  return c;
}

}  // namespace

std::unique_ptr<WeightSource> open_hf_checkpoint(const std::string& dir) {
  const std::string config = dir + "/config.json";
  if (!is_regular_file(config))
    bad(dir, "no config.json in the model directory",
        "a Hugging Face model directory holds config.json and the safetensors weights; download both");
  json c;
  try {
    c = json::parse(read_file_to_string(config, ErrorKind::kCheckpoint));
  } catch (const json::exception& e) {
    bad(config, std::string("not valid JSON: ") + e.what(), "the file is damaged; download it again");
  }
  return std::make_unique<HfSource>(desc_from_hf_config(c, config), dir);
}

std::string hf_architecture(const ModelDesc& d) {
  const bool plain_heads = d.n_kv_head == d.n_head && d.head_dim * d.n_head == d.n_embd;
  if (d.arch == "gpt2" && !d.rope_positions() && d.layer_norm() && d.mlp == ops::MlpActivation::kGeluTanh &&
      d.qkv_bias && d.bias && d.tied_head && plain_heads)
    return "GPT2LMHeadModel";
  if (d.arch == "llama" && d.rope_positions() && !d.layer_norm() && d.mlp == ops::MlpActivation::kSwiGLU &&
      d.qkv_bias == d.bias)
    return "LlamaForCausalLM";
  return "";
}

void write_hf_checkpoint(const std::string& dir, const ModelDesc& d,
                         const std::function<void(int64_t begin, int64_t count, float* out)>& params, DType dtype,
                         uint64_t max_shard_bytes) {
  const std::string arch = hf_architecture(d);
  if (arch.empty())  // (callers check first, so that nothing is written)
    throw Error(ErrorKind::kConfig, "this model (" + d.str() + ") has no Hugging Face architecture to write",
                "--format hf",
                "GPT2LMHeadModel takes gpt2 presets as they are, LlamaForCausalLM llama ones (RoPE, RMSNorm, SwiGLU, "
                "q/k/v and other biases alike); use --format llmc or keep the topotrain checkpoint");
  const ModelLayout layout = model_layout(d);
  struct Out {
    std::string name;
    Shape shape;
    SafetensorsWriter::Fill fill;
    uint64_t bytes;
  };
  std::vector<Out> tensors;
  for (const ParamInfo& p : layout.tensors) {
    const Shape shape = hf_shape(d, layout, p);
    SafetensorsWriter::Fill fill;
    if (conv1d(d, p)) {  // the whole tensor once, then [in, out] by range
      auto cache = std::make_shared<std::vector<float>>();
      fill = [p, cache, &params](int64_t first, int64_t count, float* out) {
        const int64_t rows = p.shape[0], cols = p.shape[1];
        if (cache->empty()) {
          cache->resize(size_t(rows * cols));
          params(p.offset, rows * cols, cache->data());
        }
        for (int64_t i = 0; i < count; ++i) {
          const int64_t e = first + i, c = e / rows, r = e % rows;  // element (c, r) of [in = cols, out = rows]
          out[i] = (*cache)[size_t(r * cols + c)];
        }
        if (first + count == rows * cols) std::vector<float>().swap(*cache);
      };
    } else {  // vocabulary tables: the first vocab_size rows, already first in the buffer
      fill = [p, &params](int64_t first, int64_t count, float* out) { params(p.offset + first, count, out); };
    }
    tensors.push_back({is_gpt2(d) ? "transformer." + p.name : p.name, shape, std::move(fill),
                       uint64_t(shape_numel(shape)) * dtype_size(dtype)});
  }
  // Shards: tensors in order, a new shard when the next tensor would overflow this one.
  std::vector<std::vector<size_t>> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!shards.back().empty() && in_shard + tensors[i].bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(i);
    in_shard += tensors[i].bytes;
    total += tensors[i].bytes;
  }
  ensure_dir(dir);
  json index;
  index["metadata"] = {{"total_size", total}};
  for (size_t s = 0; s < shards.size(); ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    const std::string file = shards.size() == 1 ? kSingleFile : name;
    SafetensorsWriter w;
    w.set_metadata("format", "pt");
    for (size_t i : shards[s]) {
      w.add(tensors[i].name, dtype, tensors[i].shape, tensors[i].fill);
      index["weight_map"][tensors[i].name] = file;
    }
    w.write(dir + "/" + file);
  }
  if (shards.size() > 1) atomic_write_string(dir + "/" + kIndexFile, index.dump(2));
  atomic_write_string(dir + "/config.json", hf_config(d, arch, dtype).dump(2));
}

}  // namespace tt
