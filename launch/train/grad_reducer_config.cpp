// The configured gradient reducer (see grad_reducer_config.h).
#include "launch/train/grad_reducer_config.h"

namespace tt {

std::unique_ptr<parallel::GradReducer> create_grad_reducer(const config::Config& cfg, parallel::Communicator& comm,
                                                           const Tensor& grads, const ModelLayout& layout,
                                                           const Exec& exec, DType dtype) {
  const auto& par = cfg.parallel();
  // ZeRO-3 reduces (and shards) per parameter group: GradReducer makes each range a bucket.
  const auto ranges = par.zero_stage() == 3 ? group_ranges(layout.groups) : tensor_ranges(layout);
  const parallel::BucketCaps caps{size_t(double(par.bucket_cap_mb()) * (1 << 20)),
                                  size_t(double(par.first_bucket_cap_mb()) * (1 << 20))};
  return std::make_unique<parallel::GradReducer>(
      comm, grads, ranges, par.zero_stage(), caps, parallel::parse_grad_compression(par.grad_compression()),
      par.error_feedback(), parallel::parse_collective_shape(par.collective()),
      /*ranks_per_node: the communicator's own (launch/train/process_group.cpp applies the config's)*/ 0, exec, dtype);
}

}  // namespace tt
