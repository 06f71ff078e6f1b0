// parallel.strategy "auto": before training, probe the process group's links (the same measurement
// as `topotrain probe`), price the gradient strategies with the planner (`topotrain plan`), and fill
// the strategy fields the config left unset (zero_stage, bucket_cap_mb, grad_compression,
// collective; train.matmul_precision when it is "auto", also on one rank, from this device's
// peaks per precision) with the best candidate `train` runs — fields set in the config or with
// --set stay forced. Every rank computes the same plan (the probe's result is identical on all ranks and the
// planner is a pure function), so no extra agreement step is needed.
#pragma once

#include "core/config.h"
#include "parallel/comm/communicator.h"
#include "parallel/strategy/planner.h"

namespace tt {

// The planner's options for a run of `cfg` on `ranks` ranks: its memory budget and the strategy
// fields its config forces (those it sets), and whether its communicator is NCCL's (tree
// all-reduce selectable). `topotrain plan --config` passes the same, so both print one pick.
strategy::PlanOptions plan_options(const config::Config& cfg, int ranks, bool nccl);

// The precisions the planner prices for a train.matmul_precision value (or plan / simulate's
// --matmul-precision): "auto" all three, else the one named ("" = default). Throws kUsage naming
// `field` for anything else.
std::vector<ops::MatmulPrecision> offered_matmul_precisions(const std::string& value, const std::string& field);

// Collective over `comm`. Leaves cfg fully defaulted and validated; logs the pick and its reason
// on rank 0. A no-op for strategy "manual".
void resolve_auto_strategy(config::Config& cfg, const std::string& origin, parallel::Communicator& comm);

}  // namespace tt
