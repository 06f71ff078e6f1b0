// The gradient reducer a run's config asks for: bucket caps, ZeRO stage, payload, error feedback
// and collective shape from `parallel.*`, over a GPT-2 gradient buffer. One place for the CPU
// trainer (launch/trainer.cpp) and the GPU trainer (launch/cuda_training.cpp).
#pragma once

#include <memory>
#include <vector>

#include "core/config.h"
#include "core/gpt2.h"
#include "core/tensor.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/reducer.h"

namespace tt {

// grads: the model's flat gradient buffer laid out as `layout` (undefined for ZeRO-3, whose
// gradients go through GradReducer::use_grad_windows); cuda_stream as GradReducer's. zero_stage 3
// reduces gradients per parameter group (its parameters: parallel/ddp/sharded_params.h).
// Collective over comm (the hierarchical shape splits it).
std::unique_ptr<parallel::GradReducer> create_grad_reducer(const config::Config& cfg, parallel::Communicator& comm,
                                                           const Tensor& grads, const std::vector<ParamInfo>& layout,
                                                           void* cuda_stream = nullptr);

}  // namespace tt
