// A model with pretrained weights on the host, for the commands that run one outside training
// (`eval`, `sample`, `export`): any weight source (core/model/weights.h) loaded into a CPU fp32
// Model, and the text codec that goes with it.
#pragma once

#include <memory>
#include <string>

#include "core/model/model.h"
#include "core/model/weights.h"
#include "data/text_codec.h"

namespace tt {

// A CPU fp32 model for batches up to max_batch x max_seq (no gradient buffer) with the source's
// weights, read tensor by tensor.
std::unique_ptr<Model> load_host_model(WeightSource& source, int max_batch, int max_seq);

// The codec of a weight source: a topotrain checkpoint's own, a Hugging Face tokenizer.json beside
// the weights (when it is one topotrain reads), else none (ids printed as numbers).
TextCodec codec_of(const WeightSource& source);

}  // namespace tt
