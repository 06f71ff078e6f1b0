// safetensors reading (mmap, header validated up front) and streaming writing (see safetensors.h).
#include "core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/mapping_guard.h"

namespace tt {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;  // the format's own limit is 100 MB
constexpr const char* kSupported = "F32, BF16 and F16";

[[noreturn]] void bad(const std::string& path, const std::string& what, const std::string& hint) {
  throw Error(ErrorKind::kCheckpoint, what, path, hint);
}

// DType of a header dtype name; readable = whether weights of it can be read.
bool parse_dtype(const std::string& s, DType* dtype, size_t* bytes, bool* readable) {
  struct Row {
    const char* name;
    DType dtype;
    size_t bytes;
    bool readable;
  };
  static const Row kRows[] = {
      {"F32", DType::kF32, 4, true},          {"BF16", DType::kBF16, 2, true},        {"F16", DType::kF16, 2, true},
      {"F8_E4M3", DType::kFP8E4M3, 1, false}, {"F8_E5M2", DType::kFP8E5M2, 1, false}, {"I8", DType::kI8, 1, false},
      {"U8", DType::kI8, 1, false},           {"BOOL", DType::kI8, 1, false},         {"I16", DType::kU16, 2, false},
      {"U16", DType::kU16, 2, false},         {"I32", DType::kI32, 4, false},         {"U32", DType::kU32, 4, false},
      {"F64", DType::kF32, 8, false},         {"I64", DType::kI32, 8, false},         {"U64", DType::kU32, 8, false}};
  for (const Row& r : kRows)
    if (s == r.name) {
      *dtype = r.dtype;
      *bytes = r.bytes;
      *readable = r.readable;
      return true;
    }
  return false;
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kBF16:
      return "BF16";
    case DType::kF16:
      return "F16";
    default:
      TT_ASSERT(false, "safetensors weights are F32, BF16 or F16, not ", dtype_name(dtype));
  }
  return "";
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) bad(path, "cannot open safetensors file: " + std::string(std::strerror(errno)), "check the path");
  struct stat st;
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    bad(path, "not a regular file", "pass the .safetensors file or the model directory holding it");
  }
  size_ = size_t(st.st_size);
  try {
    if (size_ < 8)
      bad(path, str("file is ", size_, " bytes, shorter than the 8-byte safetensors header length"),
          "the file was cut short; download it again");
    if (size_ > 0) {
      void* m = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
      if (m == MAP_FAILED) bad(path, "cannot map the file: " + std::string(std::strerror(errno)), "check the file");
      map_ = static_cast<const uint8_t*>(m);
      guard_mapping(map_, size_, path, "safetensors file", ErrorKind::kCheckpoint);
    }
    uint64_t header_len = 0;
    std::memcpy(&header_len, map_, 8);
    if (header_len > kMaxHeaderBytes || 8 + header_len > size_)
      bad(path, str("header length ", header_len, " runs past the end of the ", size_, "-byte file"),
          "not a safetensors file, or it was cut short; download it again");
    data_start_ = 8 + header_len;
    json header;
    try {
      header = json::parse(map_ + 8, map_ + 8 + header_len);
    } catch (const json::exception& e) {
      bad(path, std::string("the header is not valid JSON: ") + e.what(), "not a safetensors file, or it is damaged");
    }
    if (!header.is_object()) bad(path, "the header is not a JSON object", "not a safetensors file");
    const uint64_t data_bytes = size_ - data_start_;
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (const auto& [name, t] : header.items()) {
      if (name == "__metadata__") {
        if (t.is_object())
          for (const auto& [k, v] : t.items())
            if (v.is_string()) metadata_[k] = v.get<std::string>();
        continue;
      }
      const std::string where = path + " (tensor '" + name + "')";
      if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
        bad(where, "header entry lacks dtype, shape or data_offsets", "the file is damaged; download it again");
      SafetensorInfo info;
      info.name = name;
      try {
        info.dtype_name = t["dtype"].get<std::string>();
        info.shape = t["shape"].get<Shape>();
        const auto off = t["data_offsets"].get<std::vector<uint64_t>>();
        if (off.size() != 2) throw std::runtime_error("data_offsets must hold two numbers");
        info.begin = off[0];
        info.end = off[1];
      } catch (const std::exception& e) {
        bad(where, std::string("malformed header entry: ") + e.what(), "the file is damaged; download it again");
      }
      size_t elem_bytes = 0;
      if (!parse_dtype(info.dtype_name, &info.dtype, &elem_bytes, &info.readable))
        bad(where, "unknown dtype '" + info.dtype_name + "'", std::string("weights are read as ") + kSupported);
      for (int64_t d : info.shape)
        if (d < 0) bad(where, "negative dimension in shape", "the file is damaged; download it again");
      // The element count must not overflow (shape [2^62, 4] would wrap, and a wrapped product can
      // even match the byte span); a tensor that fits in the file has fewer elements than bytes.
      uint64_t numel = 1;
      bool overflow = false;
      for (int64_t d : info.shape) overflow |= __builtin_mul_overflow(numel, uint64_t(d), &numel);
      if (overflow || numel > data_bytes)
        bad(where, str("shape ", shape_str(info.shape), " has more elements than the file has bytes"),
            "the file is damaged; download it again");
      if (info.begin > info.end || info.end > data_bytes)
        bad(where,
            str("data_offsets [", info.begin, ", ", info.end, ") run past the ", data_bytes, "-byte data section"),
            "the file was cut short or is damaged; download it again");
      if (info.end - info.begin != uint64_t(info.numel()) * elem_bytes)
        bad(where,
            str("shape ", shape_str(info.shape), " of ", info.dtype_name, " needs ",
                uint64_t(info.numel()) * elem_bytes, " bytes but data_offsets span ", info.end - info.begin),
            "the file is damaged; download it again");
      spans.push_back({info.begin, info.end});
      tensors_[name] = std::move(info);
    }
    std::sort(spans.begin(), spans.end());
    uint64_t reach = 0;  // end of the data claimed by the tensors before
    for (const auto& [begin, end] : spans) {
      if (end == begin) continue;  // empty tensors claim nothing
      if (begin < reach)
        for (const auto& [name, info] : tensors_)
          if (info.begin == begin && info.end == end)
            bad(path + " (tensor '" + name + "')",
                str("data_offsets [", begin, ", ", end, ") overlap the data of another tensor (ending at ", reach, ")"),
                "the file is damaged; download it again");
      reach = std::max(reach, end);
    }
  } catch (...) {
    unguard_mapping(map_);
    if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
    ::close(fd_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  unguard_mapping(map_);
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

const SafetensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    bad(path_, "no tensor '" + name + "' in the file",
        "the checkpoint does not match its config.json, or a shard of it is missing");
  return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : tensors_) out.push_back(name);
  return out;
}

void SafetensorsFile::read_f32(const std::string& name, int64_t first, int64_t count, float* out) const {
  const SafetensorInfo& t = info(name);
  if (!t.readable)
    bad(path_ + " (tensor '" + name + "')", "dtype " + t.dtype_name + " cannot be read as weights",
        std::string("supported weight dtypes: ") + kSupported + "; convert the checkpoint (e.g. with transformers)");
  TT_ASSERT(first >= 0 && count >= 0 && first + count <= t.numel(), "read of [", first, ", ", first + count, ") of ",
            name, " with ", t.numel(), " elements");
  const uint8_t* src = map_ + data_start_ + t.begin;
  switch (t.dtype) {
    case DType::kF32:
      std::memcpy(out, src + first * 4, size_t(count) * 4);
      break;
    case DType::kBF16:
    case DType::kF16: {
      const bool bf16 = t.dtype == DType::kBF16;
      for (int64_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, src + (first + i) * 2, 2);
        out[i] = bf16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
      break;
    }
    default:
      TT_ASSERT(false, "unreadable dtype ", t.dtype_name);
  }
}

void SafetensorsFile::release(const std::string& name) const {
  const SafetensorInfo& t = info(name);
  const long page = ::sysconf(_SC_PAGESIZE);
  const uint64_t begin = (data_start_ + t.begin) / uint64_t(page) * uint64_t(page);
  const uint64_t end = data_start_ + t.end;
  if (end > begin) ::madvise(const_cast<uint8_t*>(map_) + begin, end - begin, MADV_DONTNEED);
}

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape, Fill fill) {
  (void)safetensors_dtype_name(dtype);  // asserts the dtype
  tensors_.push_back({name, dtype, shape, std::move(fill)});
  bytes_ += uint64_t(shape_numel(shape)) * dtype_size(dtype);
}

void SafetensorsWriter::write(const std::string& path) const {
  json header = json::object();
  uint64_t at = 0;
  for (const Entry& t : tensors_) {
    const uint64_t bytes = uint64_t(shape_numel(t.shape)) * dtype_size(t.dtype);
    header[t.name] = {
        {"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  json meta = json::object();
  for (const auto& [k, v] : metadata_) meta[k] = v;
  if (!meta.empty()) header["__metadata__"] = meta;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  atomic_write_file(path, [&](FileWriter& w) {
    const uint64_t len = text.size();
    w.write(&len, 8);
    w.write(text);
    constexpr int64_t kChunk = int64_t(1) << 22;
    std::vector<float> f32;
    std::vector<uint16_t> half;
    for (const Entry& t : tensors_) {
      const int64_t n = shape_numel(t.shape);
      for (int64_t first = 0; first < n; first += kChunk) {
        const int64_t count = std::min(kChunk, n - first);
        f32.resize(size_t(count));
        t.fill(first, count, f32.data());
        if (t.dtype == DType::kF32) {
          w.write(f32.data(), size_t(count) * 4);
          continue;
        }
        half.resize(size_t(count));
        for (int64_t i = 0; i < count; ++i)
          half[size_t(i)] = t.dtype == DType::kBF16 ? f32_to_bf16(f32[size_t(i)]) : f32_to_f16(f32[size_t(i)]);
        w.write(half.data(), size_t(count) * 2);
      }
    }
  });
}

}  // namespace tt
