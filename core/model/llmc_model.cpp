// llm.c model files (see llmc_model.h).
#include "core/model/llmc_model.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "core/mapping_guard.h"

namespace tt {

namespace {

constexpr int kHeaderInts = 256;
constexpr int32_t kVersionF32 = 3, kVersionBf16 = 5;

[[noreturn]] void bad(const std::string& path, const std::string& what, const std::string& hint) {
  throw Error(ErrorKind::kCheckpoint, what, path, hint);
}

}  // namespace

bool llmc_holds(const ModelDesc& d) {
  return d.arch == "gpt2" && !d.rope_positions() && d.layer_norm() && d.mlp == ops::MlpActivation::kGeluTanh &&
         d.qkv_bias && d.bias && d.tied_head && d.n_kv_head == d.n_head && d.head_dim * d.n_head == d.n_embd &&
         d.mlp_hidden == 4 * d.n_embd;
}

namespace {

// Element offset in llm.c's parameter block of each tensor of the layout (by layout order).
std::vector<int64_t> llmc_offsets(const ModelLayout& layout) {
  std::vector<int64_t> at(layout.tensors.size(), -1);
  const int L = int(layout.blocks.size());
  // Embeddings first, in the same order; then per kind j the L slices; then the final norm.
  int64_t pos = 0;
  size_t i = 0;
  for (; i < layout.tensors.size() && layout.tensors[i].group == 0; ++i) {
    at[i] = pos;
    pos += shape_numel(layout.tensors[i].shape);
  }
  const size_t first_block = i;
  const size_t per_block = L > 0 ? (layout.tensors.size() - first_block - 2) / size_t(L) : 0;  // 12
  for (size_t j = 0; j < per_block; ++j)
    for (int l = 0; l < L; ++l) {
      const size_t t = first_block + size_t(l) * per_block + j;
      at[t] = pos;
      pos += shape_numel(layout.tensors[t].shape);
    }
  for (size_t t = first_block + size_t(L) * per_block; t < layout.tensors.size(); ++t) {
    at[t] = pos;
    pos += shape_numel(layout.tensors[t].shape);
  }
  return at;
}

class LlmcSource : public WeightSource {
 public:
  LlmcSource(const ModelDesc& desc, const std::string& path, const uint8_t* map, size_t size, bool bf16)
      : WeightSource(desc, path), map_(map), size_(size), bf16_(bf16), offsets_(llmc_offsets(layout())) {
    const uint64_t need = uint64_t(kHeaderInts) * 4 + uint64_t(layout().numel) * (bf16 ? 2 : 4);
    if (size < need)
      bad(path,
          str("file is ", size, " bytes but its header describes ", need, " (", layout().numel, " parameters in ",
              bf16 ? "bf16" : "fp32", ")"),
          "the file was cut short; copy or regenerate it");
  }
  ~LlmcSource() override {
    unguard_mapping(map_);
    ::munmap(const_cast<uint8_t*>(map_), size_);
  }

  WeightFormat format() const override { return WeightFormat::kLlmc; }
  std::string describe() const override {
    return str("llm.c model file ", path(), " (", bf16_ ? "bf16, version 5" : "fp32, version 3", ")");
  }

 protected:
  void read_tensor(const ParamInfo& p, int64_t first, int64_t count, float* out) override {
    const uint8_t* src = data() + (offset_of(p) + first) * (bf16_ ? 2 : 4);
    if (!bf16_) {
      std::memcpy(out, src, size_t(count) * 4);
      return;
    }
    for (int64_t i = 0; i < count; ++i) {
      uint16_t h;
      std::memcpy(&h, src + i * 2, 2);
      out[i] = bf16_to_f32(h);
    }
  }

  void release_tensor(const ParamInfo& p) override {
    const long page = ::sysconf(_SC_PAGESIZE);
    const uint64_t es = bf16_ ? 2 : 4;
    const uint64_t begin = uint64_t(kHeaderInts) * 4 + uint64_t(offset_of(p)) * es;
    const uint64_t end = begin + uint64_t(shape_numel(p.shape)) * es;
    const uint64_t aligned = begin / uint64_t(page) * uint64_t(page);
    ::madvise(const_cast<uint8_t*>(map_) + aligned, end - aligned, MADV_DONTNEED);
  }

  std::string origin_of(const ParamInfo& p) const override { return path() + " (tensor '" + p.name + "')"; }

 private:
  const uint8_t* data() const { return map_ + kHeaderInts * 4; }
  int64_t offset_of(const ParamInfo& p) const {
    const auto& t = layout().tensors;
    for (size_t i = 0; i < t.size(); ++i)
      if (t[i].offset == p.offset) return offsets_[i];
    TT_ASSERT(false, "no tensor at offset ", p.offset);
    return 0;
  }

  const uint8_t* map_;
  size_t size_;
  bool bf16_;
  std::vector<int64_t> offsets_;
};

}  // namespace

bool is_llmc_model_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int32_t magic = 0;
  const bool ok = ::read(fd, &magic, 4) == 4 && magic == kLlmcModelMagic;
  ::close(fd);
  return ok;
}

std::unique_ptr<WeightSource> open_llmc_model(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) bad(path, "cannot open llm.c model file: " + std::string(std::strerror(errno)), "check the path");
  struct stat st;
  if (::fstat(fd, &st) != 0 || size_t(st.st_size) < kHeaderInts * 4) {
    ::close(fd);
    bad(path, "shorter than the 1024-byte llm.c model header", "not an llm.c model file, or it was cut short");
  }
  const size_t size = size_t(st.st_size);
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) bad(path, "cannot map the file: " + std::string(std::strerror(errno)), "check the file");
  const auto* map = static_cast<const uint8_t*>(m);
  guard_mapping(map, size, path, "llm.c model file", ErrorKind::kCheckpoint);
  try {
    int32_t h[8];
    std::memcpy(h, map, sizeof h);
    if (h[0] != kLlmcModelMagic)
      bad(path, str("bad magic ", h[0], " (an llm.c model file starts with ", kLlmcModelMagic, ")"),
          "not an llm.c model file");
    if (h[1] != kVersionF32 && h[1] != kVersionBf16)
      bad(path, str("llm.c model version ", h[1], " is not supported"), "versions 3 (fp32) and 5 (bf16) are");
    const int maxT = h[2], V = h[3], L = h[4], NH = h[5], C = h[6], Vp = h[7];
    if (maxT <= 0 || V <= 0 || L <= 0 || NH <= 0 || C <= 0 || C % NH != 0 || Vp < V)
      bad(path, str("impossible header: maxT ", maxT, ", V ", V, ", L ", L, ", NH ", NH, ", C ", C, ", Vp ", Vp),
          "the file is damaged");
    // The header's sizes against the file before a model is described from them: 1e9 layers in a
    // 1 KB file would otherwise lay out billions of tensors, and a huge C or V overflows int in the
    // description (4 * C, V rounded up to 128). GPT-2 with biases: wte, wpe, 12C^2 + 13C per layer,
    // the final norm (in double: exact enough to compare, never overflowing).
    const double params = double(Vp) * C + double(maxT) * C + double(L) * (12.0 * C * C + 13.0 * C) + 2.0 * C;
    const double bytes = params * (h[1] == kVersionBf16 ? 2 : 4);
    if (Vp > std::numeric_limits<int>::max() - 128 || bytes > double(size - kHeaderInts * 4))
      bad(path,
          str("file is ", size, " bytes but its header (maxT ", maxT, ", V ", V, ", L ", L, ", C ", C, ", Vp ", Vp,
              ") describes ", params, " parameters"),
          "the file was cut short or its header is damaged; copy or regenerate it");
    ModelDesc d = gpt2_desc(L, NH, C, V, maxT);
    if (d.padded_vocab_size != Vp)
      bad(path, str("padded vocabulary ", Vp, " where topotrain pads ", V, " to ", d.padded_vocab_size),
          "llm.c pads to a multiple of 128 as topotrain does; the file is damaged");
    return std::make_unique<LlmcSource>(d, path, map, size, h[1] == kVersionBf16);
  } catch (...) {
    unguard_mapping(map);
    ::munmap(m, size);
    throw;
  }
}

void write_llmc_model(const std::string& path, const ModelDesc& d,
                      const std::function<void(int64_t begin, int64_t count, float* out)>& params, DType dtype) {
  if (!llmc_holds(d))
    throw Error(ErrorKind::kConfig, "llm.c model files hold GPT-2 only, not " + d.str(), "--format llmc",
                "export it with --format hf, or keep the topotrain checkpoint");
  TT_ASSERT(dtype == DType::kF32 || dtype == DType::kBF16, "llm.c model files are fp32 or bf16");
  const ModelLayout layout = model_layout(d);
  const std::vector<int64_t> at = llmc_offsets(layout);
  // Tensors in llm.c's order: by llm.c offset.
  std::vector<size_t> order(layout.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
  int32_t header[kHeaderInts] = {};
  header[0] = kLlmcModelMagic;
  header[1] = dtype == DType::kBF16 ? kVersionBf16 : kVersionF32;
  header[2] = d.max_seq_len;
  header[3] = d.vocab_size;
  header[4] = d.n_layer;
  header[5] = d.n_head;
  header[6] = d.n_embd;
  header[7] = d.padded_vocab_size;
  atomic_write_file(path, [&](FileWriter& w) {
    w.write(header, sizeof header);
    constexpr int64_t kChunk = int64_t(1) << 22;
    std::vector<float> f32;
    std::vector<uint16_t> bits;
    for (size_t i : order) {
      const ParamInfo& p = layout.tensors[i];
      const int64_t n = shape_numel(p.shape);
      for (int64_t first = 0; first < n; first += kChunk) {
        const int64_t count = std::min(kChunk, n - first);
        f32.resize(size_t(count));
        params(p.offset + first, count, f32.data());
        if (dtype == DType::kF32) {
          w.write(f32.data(), size_t(count) * 4);
          continue;
        }
        bits.resize(size_t(count));
        for (int64_t k = 0; k < count; ++k) bits[size_t(k)] = f32_to_bf16(f32[size_t(k)]);
        w.write(bits.data(), size_t(count) * 2);
      }
    }
  });
}

}  // namespace tt
