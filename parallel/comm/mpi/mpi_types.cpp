// dtype/op mapping and 16-bit staging for the MPI backend (see mpi_types.h).
#include "parallel/comm/mpi/mpi_types.h"

#include <climits>

#include "core/error.h"

namespace tt::parallel::mpi_types {

MPI_Datatype wire_type(DType t) {
  switch (t) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kI32:
      return MPI_INT32_T;
    case DType::kU32:
      return MPI_UINT32_T;
    case DType::kBF16:
    case DType::kF16:
      return MPI_FLOAT;  // via staging
    default:
      break;
  }
  return MPI_DATATYPE_NULL;
}

// Untyped element of the same size, for data movement without arithmetic.
MPI_Datatype raw_type(DType t) {
  switch (dtype_size(t)) {
    case 1:
      return MPI_UINT8_T;
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    default:
      break;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::kMax ? MPI_MAX : MPI_SUM; }

bool needs_staging(DType t) { return t == DType::kBF16 || t == DType::kF16; }

void to_f32(const void* src, float* dst, int64_t n, DType t) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  if (t == DType::kBF16)
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
}

void from_f32(const float* src, void* dst, int64_t n, DType t, float divisor) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  if (t == DType::kBF16)
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i] / divisor);
  else
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i] / divisor);
}

void divide_in_place(void* buf, int64_t n, DType t, int size) {
  if (t == DType::kF32) {
    float* p = static_cast<float*>(buf);
    for (int64_t i = 0; i < n; ++i) p[i] /= float(size);
  } else if (t == DType::kI32) {
    int32_t* p = static_cast<int32_t*>(buf);
    for (int64_t i = 0; i < n; ++i) p[i] /= size;
  } else if (t == DType::kU32) {
    uint32_t* p = static_cast<uint32_t*>(buf);
    for (int64_t i = 0; i < n; ++i) p[i] /= uint32_t(size);
  }
}

int to_int(int64_t n, const char* what) {
  if (n > INT_MAX)
    throw Error(ErrorKind::kInternal, str(what, " of ", n, " elements exceeds MPI's int count"), "mpi communicator",
                "split the buffer into chunks below 2^31 elements");
  return int(n);
}

}  // namespace tt::parallel::mpi_types
