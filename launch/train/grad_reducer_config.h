// The gradient reducer a run's config asks for: bucket caps, ZeRO stage, payload, error feedback
// and collective shape from `parallel.*`, over a model's gradient buffer.
#pragma once

#include <memory>

#include "core/config.h"
#include "core/exec.h"
#include "core/model/param_layout.h"
#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/reducer.h"

namespace tt {

// grads: the model's flat gradient buffer laid out as `layout` (undefined for ZeRO-3, whose
// gradients go through GradReducer::use_grad_windows); exec and dtype: the gradients' device,
// stream and element type. zero_stage 3 reduces gradients per parameter group (its parameters:
// parallel/ddp/sharded_params.h). Collective over comm (the hierarchical shape splits it).
std::unique_ptr<parallel::GradReducer> create_grad_reducer(const config::Config& cfg, parallel::Communicator& comm,
                                                           const Tensor& grads, const ModelLayout& layout,
                                                           const Exec& exec, DType dtype);

}  // namespace tt
