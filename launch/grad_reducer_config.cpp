// The configured gradient reducer (see grad_reducer_config.h).
#include "launch/grad_reducer_config.h"

#include <algorithm>

namespace tt {

std::unique_ptr<parallel::GradReducer> create_grad_reducer(const config::Config& cfg, parallel::Communicator& comm,
                                                           const Tensor& grads, const std::vector<ParamInfo>& layout,
                                                           void* cuda_stream) {
  const auto& par = cfg.parallel();
  // ZeRO-3 reduces (and shards) per parameter group: GradReducer makes each range a bucket.
  std::vector<std::pair<int64_t, int64_t>> tensor_ranges;
  if (par.zero_stage() == 3)
    tensor_ranges = group_ranges(gpt2_param_groups(layout));
  else
    for (const auto& p : layout) tensor_ranges.push_back({p.offset, p.offset + shape_numel(p.shape)});
  const parallel::BucketCaps caps{size_t(double(par.bucket_cap_mb()) * (1 << 20)),
                                  size_t(double(par.first_bucket_cap_mb()) * (1 << 20))};
  return std::make_unique<parallel::GradReducer>(
      comm, grads, tensor_ranges, par.zero_stage(), caps, parallel::parse_grad_compression(par.grad_compression()),
      par.error_feedback(), parallel::parse_collective_shape(par.collective()),
      /*ranks_per_node: the communicator's own (launch/process_group.cpp applies the config's)*/ 0, cuda_stream);
}

}  // namespace tt
