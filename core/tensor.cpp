// Tensor storage lifetime and views; memory comes from the accounting allocator (core/allocator).
#include "core/tensor.h"

#include <cstring>

#include "core/allocator.h"

namespace tt {

struct Tensor::Storage {
  void* ptr = nullptr;
  size_t bytes = 0;
  Device device;
  Storage(const std::string& name, size_t n, Device d) : ptr(tracked_alloc(name, n, d)), bytes(n), device(d) {}
  ~Storage() { tracked_free(ptr, bytes, device); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor Tensor::zeros(const std::string& name, const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0) throw Error(ErrorKind::kInternal, "negative dimension in " + shape_str(shape), name);
  Tensor t;
  t.name_ = name;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  t.storage_ = std::make_shared<Storage>(name, size_t(shape_numel(shape)) * dtype_size(dtype), device);
  return t;
}

Tensor Tensor::slice_view(const std::string& name, int64_t offset, const Shape& shape) const {
  TT_ASSERT(defined(), "slice_view of an undefined tensor");
  size_t esize = dtype_size(dtype_);
  size_t begin = offset_bytes_ + size_t(offset) * esize;
  TT_ASSERT(offset >= 0 && begin + size_t(shape_numel(shape)) * esize <= storage_->bytes, "view '", name, "' ",
            shape_str(shape), " at offset ", offset, " exceeds storage of '", name_, "'");
  Tensor t = *this;
  t.name_ = name;
  t.shape_ = shape;
  t.offset_bytes_ = begin;
  return t;
}

void* Tensor::raw() const { return storage_ ? static_cast<char*>(storage_->ptr) + offset_bytes_ : nullptr; }

void Tensor::fill_zero() const {
  TT_ASSERT(device_.kind == DeviceKind::kCpu, "fill_zero on ", device_.str(), " is not supported");
  std::memset(raw(), 0, nbytes());
}

}  // namespace tt
