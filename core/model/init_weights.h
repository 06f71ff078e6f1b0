// Initial weights of a model, computed per element from (seed, index in the flat buffer), so any
// range of the buffer (a rank's ZeRO shard, a chunk on its way to a GPU) is made on its own and is
// identical to the same range of the whole buffer: no rank builds the whole model to keep its part,
// and nothing has to be broadcast.
// Rule (GPT-2 / llm.c): matrices N(0, init_std), the residual projections (attention output and MLP
// down) N(0, init_std / sqrt(2·n_layer)); norm weights 1; biases 0; padded vocabulary rows 0.
#pragma once

#include <cstdint>

#include "core/model/model_desc.h"
#include "core/model/param_layout.h"

namespace tt {

// Elements [begin, end) of the initial flat buffer into out[end - begin] (fp32).
void init_weights(const ModelDesc& d, const ModelLayout& layout, uint64_t seed, int64_t begin, int64_t end, float* out);

}  // namespace tt
