// The strategy planner: enumerates gradient-communication strategies (bucket size × payload
// precision × collective shape × ZeRO stage), prices each with the cost model and the serial-link
// overlap simulation, checks it against GPU memory, and picks one — with a one-line reason and the
// NCCL environment hints that go with it. A pure function of (Topology, ModelSpec, PlanOptions).
//
// Design decisions:
//  * Step time = forward + backward (peak × MFU, or measured) + exposed gradient communication +
//    optimizer pass + (ZeRO-1/2) the parameter all-gather after the optimizer, which nothing hides.
//    Only the last micro-step of an accumulation communicates for ZeRO-0/1; ZeRO-2/3 reduce every
//    micro-step (as GradReducer does for stage 2).
//  * The optimizer pass is memory-bound: kOptimizerBytesPerParam per updated (shard) element at the
//    device's memory bandwidth (mixed-precision AdamW reads and writes fp32 master, m, v and reads
//    the gradient). Parameters are all-gathered in the trainer's working precision
//    (ModelSpec::param_gather_bytes): by default bf16 on GPUs (the mixed-precision working copy) and
//    fp32 on a cluster without GPUs (the CPU trainer keeps and gathers fp32 parameters; pricing it
//    as bf16 put the ZeRO-1 rows of docs/ground_truth.md 35-39% low).
//  * Memory per rank is rank_memory (memory_model.h): what the trainer allocates for parameters,
//    gradients, optimizer state, activations (the micro-batch, recompute policy) and comm buffers,
//    in the working precision (bf16 on GPUs, fp32 on CPU ranks). The memory limit is the budget or
//    device memory × (1 − memory_reserve), the reserve holding workspaces and fragmentation.
//  * Memory levers: every communication candidate is also offered with bf16 and int8 optimizer
//    state and, when it does not fit as is, with selective or full activation recompute of the
//    fewest blocks that make it fit (Megatron's recompute-num-layers, picked from the budget).
//    Recompute runs in backward with the parameters backward gathers anyway (no extra ZeRO-3
//    traffic) and costs the re-run forward FLOPs: full re-runs a block up to its MLP activation
//    (all but the down projection), selective its norms and activation (priced as 2% of the block)
//    plus, on CPU ranks, attention (whose probabilities it drops). The optimizer pass moves
//    16 + 2 × (bytes of m and v) bytes per element, so compact state is slightly faster; ties
//    prefer fp32 state and no recompute.
//  * ZeRO-3 is priced (parameters re-gathered for forward and for backward, the backward gather
//    ahead of the gradient buckets on the link) and is a memory fallback: its candidates are
//    eligible when no stage 0–2 candidate fits. It shards and reduces per parameter group, each cut
//    across all ranks (balanced collectives; the bucket cap plays no part), where ZeRO-1/2's
//    contiguous shards make each bucket's reduce-scatter a reduce to its owners (priced per port).
//    The trainer runs it flat (parallel/ddp/sharded_params.h) on either device.
//  * Tree is an all-reduce algorithm only (as in NCCL), offered for GPU ranks only (NCCL_ALGO=Tree;
//    the MPI backend runs a ring); hierarchical only exists with > 1 node, and
//    only for the all-reduce (GradReducer's HierarchicalAllReduce, every payload: its codec adds the
//    decompress-add of the copies on the node and across nodes) and the priced ZeRO-3.
//  * Only what `topotrain train` runs is offered (Candidate::runnable, config_settings): compressed
//    payloads with ZeRO-0 only (GradReducer compresses the all-reduce), hierarchical with ZeRO-0;
//    ZeRO-3 flat (hierarchical ZeRO-3 is priced for comparison only).
//  * The codec (quantize before, decompress-add after) is priced from the probe's measurement of
//    parallel/ddp/compression on the cluster's CPUs when the Topology has one (CPU ranks), else as
//    a memory-bound pass at the device's bandwidth (cost::codec_time_s).
//  * A compressed (bf16/int8) all-reduce is priced by default as GradReducer runs it: a compressed
//    reduce-scatter (all_to_all of per-rank compressed chunks; each owner decompresses, averages and
//    re-compresses its chunk) + an all-gather of the compressed reduced chunks: 2(n-1)/n · S_c per
//    rank, a ring's volume, bit-identical on all ranks. Its link time is the ring all-reduce of S_c;
//    its codec adds, to one compress + one decompress, the owner's decompress-add of the n copies
//    of its chunk. Only the ring shape is priced for it (GradReducer has no compressed tree).
//    CompressedAllReduce::kAllGather prices the earlier algorithm — all-gather every rank's whole
//    compressed bucket and sum locally ((n-1) · S_c per rank, a gain only while n · S_c / 2 <
//    S_fp32) — and a compressed pick notes what that would have cost.
//  * Choice: the fastest predicted step among the candidates the run can take (PlanOptions::allows:
//    it fits, it runs in `train` on this communicator, it agrees with the fields the config forces);
//    candidates within tie_tolerance of it count as ties, broken towards the simpler/more precise:
//    fp32 > bf16 > int8 > fp8, flat > hierarchical, lower ZeRO stage, ring > tree, bucket size closest to
//    25 MB. `topotrain plan` and `strategy: auto` both take this pick: one rule, in one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/activation_plan.h"
#include "optim/adamw.h"
#include "parallel/cost/collective_cost.h"
#include "parallel/cost/overlap.h"
#include "parallel/ddp/buckets.h"
#include "parallel/strategy/memory_model.h"
#include "parallel/strategy/model_spec.h"
#include "parallel/topology/topology.pb.h"

namespace tt::strategy {

constexpr double kOptimizerBytesPerParam = 32;     // AdamW pass (fp32 state), memory traffic per updated element
constexpr double kSelectiveRecomputeShare = 0.02;  // of a block's forward: its norms and MLP activation
constexpr double kParamGatherBytes = 2;            // bf16 working parameters (GPU trainer)
constexpr double kCpuParamGatherBytes = 4;         // fp32 parameters (CPU trainer)

enum class CompressedAllReduce {
  kRing,       // compressed reduce-scatter (all_to_all) + all-gather: ring volume (GradReducer)
  kAllGather,  // all-gather the whole compressed buckets, decompress and sum locally (GradReducer before)
};

struct PlanOptions {
  std::vector<double> bucket_mb = {1, 5, 25, 100};  // caps in MB (1e6 bytes) of the fp32 gradient buffer
  std::vector<cost::Payload> payloads = {cost::Payload::kFp32, cost::Payload::kBf16, cost::Payload::kInt8,
                                         cost::Payload::kFp8};
  std::vector<int> zero_stages = {0, 1, 2, 3};
  int ranks = 0;                     // data-parallel ranks; 0 = the whole topology
  uint64_t memory_budget_bytes = 0;  // per GPU; 0 = device memory × (1 − memory_reserve)
  double memory_reserve = 0.10;
  double tie_tolerance = 0.03;  // relative step-time difference that still counts as a tie
  CompressedAllReduce compressed_all_reduce = CompressedAllReduce::kRing;
  // What the run can take: the fields its config forces (-1 / "": free), and whether NCCL_ALGO=Tree
  // reaches its all-reduce (the NCCL backend; the MPI backend runs a ring).
  int forced_zero_stage = -1;
  std::string forced_grad_compression;  // parallel.grad_compression: "none", "bf16", "int8"
  std::string forced_collective;        // parallel.collective: "flat", "hierarchical"
  bool tree_selectable = true;
  // Memory levers offered (recompute modes beyond "none" only where a candidate does not fit) and
  // the ones the config forces ("" / -1: free).
  std::vector<RecomputeMode> recompute_modes = {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull};
  std::vector<StateDType> state_dtypes = {StateDType::kFp32, StateDType::kBf16, StateDType::kInt8};
  std::string forced_recompute;      // train.recompute
  int forced_recompute_blocks = -1;  // train.recompute_blocks
  std::string forced_state_dtype;    // optimizer.state_dtype
  // Matmul precisions offered (train.matmul_precision "auto": every one the cluster's GPU has,
  // available_precisions); those the GPU lacks are skipped. A low-precision pick must beat the
  // default by more than the tie tolerance (ties prefer default, then int8, then fp8).
  std::vector<ops::MatmulPrecision> matmul_precisions = {ops::MatmulPrecision::kDefault};
};

struct Candidate {
  double bucket_mb = 0;  // cap; ZeRO-3 ignores it (one bucket per parameter group) and is offered once
  cost::Payload payload = cost::Payload::kFp32;
  cost::Algorithm shape = cost::Algorithm::kRing;
  int zero_stage = 0;
  int num_buckets = 0;
  // Seconds per optimizer step.
  double comm_s = 0;       // link time of gradient (and ZeRO-3 parameter) collectives, codec included
  double exposed_s = 0;    // of comm_s, the part not hidden behind compute
  double compute_s = 0;    // forward + backward
  double optimizer_s = 0;  // optimizer pass
  double gather_s = 0;     // ZeRO-1/2 parameter all-gather after the optimizer (exposed)
  double step_s = 0;       // compute + exposed + optimizer + gather
  double recompute_s = 0;  // of compute_s, the recompute's share
  Recompute recompute;     // blocks: the number of blocks recomputing (0 with kNone)
  StateDType state = StateDType::kFp32;
  ops::MatmulPrecision matmul_precision = ops::MatmulPrecision::kDefault;  // the compute it was priced with
  MemoryBreakdown memory;   // per GPU (rank)
  double memory_bytes = 0;  // memory.total()
  bool fits = false;
  bool eligible = false;       // may be picked: fits, and not a ZeRO-3 candidate while a stage 0-2 one fits
  bool runs_in_train = false;  // see runnable()
  bool allowed = false;        // the run can take it (PlanOptions): the pick is the best allowed one

  cost::Collective grad_collective() const {
    return zero_stage == 0 ? cost::Collective::kAllReduce : cost::Collective::kReduceScatter;
  }
  std::string shape_name() const;       // "ring", "tree", "hier"
  std::string collective_name() const;  // "all_reduce", "rs+ag"
  std::string bucket_name() const;      // "25MB", or "group" for ZeRO-3
  std::string label() const;            // "25MB fp32 ring all_reduce zero0 [recompute full(12)] [int8-state] [fp8-matmul]"
  std::string recompute_name() const;   // "none", "full 12/32"
  // `topotrain train` runs every candidate of stages 0-2 and flat ZeRO-3; hierarchical ZeRO-3 is a
  // priced memory fallback. Ring and tree both run as the communicator's own all-reduce
  // (parallel.collective "flat"; tree is offered on GPU ranks, where NCCL_ALGO=Tree selects it),
  // hierarchical as GradReducer's.
  bool runnable() const { return runs_in_train; }
  // The config fields that select this candidate, "parallel.zero_stage=0", ... (for --set; no
  // bucket cap for ZeRO-3; train.recompute / recompute_blocks and optimizer.state_dtype when not
  // the defaults); empty when not runnable. Their values one by one:
  std::vector<std::string> config_settings() const;
  double bucket_cap_mib() const;                 // parallel.bucket_cap_mb (MiB; bucket_mb is in MB)
  const char* grad_compression_setting() const;  // parallel.grad_compression: "none", "bf16", "int8"
  const char* collective_setting() const;        // parallel.collective: "flat", "hierarchical"
};

struct StrategyPlan {
  cost::Cluster cluster;
  int64_t model_params = 0;  // Ψ
  ComputeTimes compute;
  double memory_limit_bytes = 0;      // 0 = unknown (everything fits)
  std::vector<Candidate> candidates;  // eligible ones first, then by step time
  int pick = -1;                      // index into candidates; -1 when nothing fits
  std::string reason;                 // one line
  std::vector<std::string> nccl_env;  // "NCCL_P2P_DISABLE=1", "NCCL_ALGO=Ring"
  std::vector<std::string> notes;     // caveats (ZeRO-3 not implemented, extrapolated network ...)

  const Candidate* picked() const { return pick >= 0 ? &candidates[size_t(pick)] : nullptr; }
};

// The simulated step behind a candidate's communication price, for drawing it (the predicted
// timeline of a run). Seconds: ZeRO 0-2 from the start of the last communicating micro-step's
// backward; ZeRO-3 from the start of the step (cost::Zero3Timeline's spans).
struct CandidateTimeline {
  std::vector<parallel::Bucket> buckets;
  std::vector<double> wire_bytes;                          // per bucket, on the link per rank
  std::vector<std::vector<cost::CollectivePhase>> phases;  // per bucket, the collective's parts in order
  std::vector<cost::TimelineSpan> grads;                   // per bucket (index), issue to end
  cost::Zero3Timeline zero3;                               // ZeRO-3 only
};

// Prices one candidate (fits is decided against memory_limit_bytes; 0 = unlimited); fills
// *timeline when given.
Candidate evaluate_candidate(const cost::Cluster& cluster, const ModelSpec& model, const ComputeTimes& compute,
                             double bucket_mb, cost::Payload payload, cost::Algorithm shape, int zero_stage,
                             double memory_limit_bytes,
                             CompressedAllReduce compressed_all_reduce = CompressedAllReduce::kRing,
                             const Recompute& recompute = {}, StateDType state = StateDType::kFp32,
                             CandidateTimeline* timeline = nullptr);
// The same communication candidate with other memory levers (recompute, optimizer state): compute,
// optimizer time and memory re-priced.
Candidate with_levers(const Candidate& base, const cost::Cluster& cluster, const ModelSpec& model,
                      const ComputeTimes& compute, const Recompute& recompute, StateDType state,
                      double memory_limit_bytes);
// Per-rank memory of a candidate's configuration (rank_memory with the model's micro-batch).
MemoryBreakdown candidate_memory(const cost::Cluster& cluster, const ModelSpec& model, int zero_stage,
                                 cost::Payload payload, const Recompute& recompute, StateDType state);

// Bytes per element of the ZeRO parameter all-gather: model.param_gather_bytes when > 0, else
// kParamGatherBytes with GPUs and kCpuParamGatherBytes without.
double param_gather_bytes(const ModelSpec& model, const cost::Cluster& cluster);
// Bytes per gradient element (bucket sizes; the uncompressed payload on the wire): model.grad_bytes
// when > 0, else 4 (the planner's candidates are fp32 gradient buffers).
double grad_bytes(const ModelSpec& model);

StrategyPlan plan_strategy(const cost::Cluster& cluster, const ModelSpec& model, const PlanOptions& options);
// cluster_of(topo, options.ranks), then the above. Throws tt::Error(kConfig) for an empty model.
StrategyPlan plan_strategy(const topology::Topology& topo, const ModelSpec& model, const PlanOptions& options);

// "9.8 s", "12.3 ms", "450 us".
std::string format_seconds(double s);

}  // namespace tt::strategy
