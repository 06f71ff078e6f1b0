// The fp8 and int8 recipes of a linear layer (ops.h: MatmulPrecision, LinearPrecision), written once
// over the device-dispatched quantisers (kernels/quantize) and low-precision GEMMs (kernels/matmul).
// Design: every operand is quantised from the working-precision tensor the model keeps anyway, where
// and in the layout its product reads it (backward re-quantises the input and the weight with the
// step's scales, so the codes equal forward's and nothing extra is kept between the passes); the
// quantised copies live in per-device scratch (CUDA: stream-ordered slots; CPU: per thread), reused
// by the next layer. Called by ops::linear_forward / linear_backward; same contracts.
#pragma once

#include "kernels/ops/ops.h"

namespace tt::ops {

void low_precision_linear_forward(const Exec& e, DType dt, void* out, const void* inp, const void* w, const void* b,
                                  int M, int K, int N, const LinearPrecision& lp);
void low_precision_linear_backward(const Exec& e, DType dt, void* dinp, void* dw, void* db, const void* dout,
                                   const void* inp, const void* w, int M, int K, int N, const LinearPrecision& lp);

}  // namespace tt::ops
