// Tensor: a named, shaped view into reference-counted contiguous storage on one device.
// Storage is owned jointly by every tensor viewing it (shared_ptr) and returned to the accounting
// allocator when the last view dies. Views (slice_view) let one buffer hold many tensors — the
// model's parameters and gradients each live in one contiguous buffer so data parallelism can cut
// it into buckets. Tensors are not thread-safe to mutate; reading from many threads is fine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"

namespace tt {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[4, 64, 768]"

class Tensor {
 public:
  Tensor() = default;

  // Zero-initialised new storage; throws ErrorKind::kMemory when over the device budget.
  static Tensor zeros(const std::string& name, const Shape& shape, DType dtype = DType::kF32,
                      Device device = Device::cpu());

  // A tensor of `shape` starting `offset` elements into this tensor's storage (same dtype/device).
  Tensor slice_view(const std::string& name, int64_t offset, const Shape& shape) const;

  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(raw());
  }
  void* raw() const;

  const std::string& name() const { return name_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(size_t(i < 0 ? i + int(shape_.size()) : i)); }
  int ndim() const { return int(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool defined() const { return storage_ != nullptr; }

  void fill_zero() const;

 private:
  struct Storage;
  std::shared_ptr<Storage> storage_;
  size_t offset_bytes_ = 0;
  std::string name_;
  Shape shape_;
  DType dtype_ = DType::kF32;
  Device device_;
};

}  // namespace tt
