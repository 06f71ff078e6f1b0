// How topotrain dtypes and reductions travel through MPI: the wire type of a reduction, the raw
// type for pure data movement, and the fp32 staging of 16-bit formats (MPI has no bf16/f16
// arithmetic, so they are widened, reduced in fp32, and rounded once). Used by the MPI backend only.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "core/dtype.h"
#include "parallel/comm/communicator.h"

namespace tt::parallel::mpi_types {

MPI_Datatype wire_type(DType t);  // element type MPI reduces (MPI_FLOAT for staged 16-bit types)
MPI_Datatype raw_type(DType t);   // untyped element of the same size, for data movement
MPI_Op mpi_op(ReduceOp op);       // avg is a sum followed by divide_in_place / from_f32's divisor
bool needs_staging(DType t);      // bf16, f16

void to_f32(const void* src, float* dst, int64_t n, DType t);
// Rounds src / divisor (divisor 1 for sum and max) into the 16-bit format.
void from_f32(const float* src, void* dst, int64_t n, DType t, float divisor);
void divide_in_place(void* buf, int64_t n, DType t, int size);
// n as MPI's int count; throws kInternal (naming `what`) above INT_MAX.
int to_int(int64_t n, const char* what);

}  // namespace tt::parallel::mpi_types
