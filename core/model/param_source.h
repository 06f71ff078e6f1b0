// Where the model reads its parameters and writes its gradients, one parameter group at a time
// (param_layout.h's groups). The model's own buffers are the default; ZeRO-3 (parallel/ddp) gathers
// each group from the ranks' shards instead (ShardedParams) and takes each group's gradients in a
// window it reduce-scatters from (GradWindows), so the model then holds neither buffer whole.
// Pointers are memory of the model's device, laid out as the group's part of the flat buffer, in the
// model's working dtype.
#pragma once

namespace tt {

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // The values of group g, readable at the returned pointer until the next acquire. next_group (-1:
  // none) is the group the model will acquire next, for prefetching.
  virtual const void* acquire(int group, int next_group) = 0;
};

class GradSink {
 public:
  virtual ~GradSink() = default;
  // Group g's gradients, to accumulate into until backward reports the group ready.
  virtual void* grads(int group) = 0;
};

}  // namespace tt
