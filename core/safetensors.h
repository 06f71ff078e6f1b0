// Hugging Face safetensors files, the format published checkpoints come in and `export` writes: an
// 8-byte little-endian header length, a JSON header {name: {"dtype", "shape", "data_offsets":
// [begin, end)}} (offsets into the data section that follows), an optional "__metadata__" map of
// strings, then the raw little-endian tensor bytes.
//
// Design: the reader maps the file read-only and validates the whole header before anything is
// read: JSON syntax, each tensor's dtype (F32, BF16 and F16 are read; the integer and bool buffers
// some checkpoints carry are listed but cannot be read as weights), its shape against its byte span,
// spans inside the file and not overlapping. A bad file is a kCheckpoint error naming the file and
// the tensor. Tensors are read as fp32, any element range of them, and release() hands a tensor's
// pages back to the kernel once read, so a model is loaded tensor by tensor without ever holding the
// mapped file and the converted model at once. The writer streams each tensor from a callback in
// fp32 chunks, converting to the tensor's dtype, into an atomically replaced file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace tt {

struct SafetensorInfo {
  std::string name;
  std::string dtype_name;  // as the header says ("F32", "BF16", "I64", ...)
  DType dtype = DType::kF32;
  bool readable = false;  // F32, BF16 or F16
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte span in the data section
  int64_t numel() const { return shape_numel(shape); }
};

class SafetensorsFile {
 public:
  // Maps and validates `path`; throws kCheckpoint (naming the file, and the tensor when one is at
  // fault) on a missing, truncated or inconsistent file.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  // Throws kCheckpoint naming the file and the missing tensor.
  const SafetensorInfo& info(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Elements [first, first + count) of the tensor (flat, row-major) as fp32 into out. Throws
  // kCheckpoint for a tensor that is not F32, BF16 or F16, saying which are supported.
  void read_f32(const std::string& name, int64_t first, int64_t count, float* out) const;
  // The tensor's pages may leave memory (they are reread from the file if needed again).
  void release(const std::string& name) const;

 private:
  std::string path_;
  int fd_ = -1;
  const uint8_t* map_ = nullptr;
  size_t size_ = 0;
  uint64_t data_start_ = 0;
  std::map<std::string, SafetensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes a safetensors file tensor by tensor: add() records each tensor (its data comes later
// from `fill`, asked for fp32 chunks [first, first + count) of the flat tensor), write() lays out
// the header and streams the data through atomic_write_file. dtype: F32, BF16 or F16.
class SafetensorsWriter {
 public:
  using Fill = std::function<void(int64_t first, int64_t count, float* out)>;
  void add(const std::string& name, DType dtype, const Shape& shape, Fill fill);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // Bytes of tensor data added so far.
  uint64_t data_bytes() const { return bytes_; }
  bool empty() const { return tensors_.empty(); }
  void write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    Fill fill;
  };
  std::vector<Entry> tensors_;
  std::map<std::string, std::string> metadata_;
  uint64_t bytes_ = 0;
};

// "F32" / "BF16" / "F16" for those dtypes (kInternal for others).
const char* safetensors_dtype_name(DType dtype);

}  // namespace tt
