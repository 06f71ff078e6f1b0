// `topotrain bench comm`: collective bandwidth of the communicator this process gets (MPI under
// mpirun, local otherwise), per operation and message size, in the nccl-tests conventions, next to
// the same operation done by a plain blocking MPI call on the same buffers.
//
// Definitions (nccl-tests, doc/PERFORMANCE.md): size S is the whole buffer (all_reduce/broadcast:
// the buffer; reduce_scatter: the send buffer; all_gather: the receive buffer); time t is the
// slowest rank's mean; algbw = S / t; busbw = algbw * 2(n-1)/n for all_reduce, * (n-1)/n for
// reduce_scatter and all_gather, * 1 for broadcast. Rank 0 prints the table. reduce_scatter_v and
// all_gather_v are the calls ZeRO issues (GradReducer; the parameter gather, in place): the uneven
// variants over the buffer's ZeRO shard sizes (parallel/ddp/sharding.h), whatever S is; the probe calibrates
// the cost model on those, so they are what to compare its predictions with.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/sharding.h"
#if TOPOTRAIN_HAVE_MPI
#include <mpi.h>

#include "parallel/comm/mpi/mpi_communicator.h"
#endif

namespace tt {

namespace {

using parallel::Communicator;
using parallel::ReduceOp;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// A size's send, receive and scratch buffers must fit in the host's available memory.
int64_t parse_size(const std::string& s) {
  const int64_t most = int64_t(host_memory_available().available_bytes / 4);
  return parse_byte_size(s, "topotrain bench comm --sizes",
                         str("use e.g. 1K..64M or 4K,1M; a size needs about 3x its bytes, so at most ",
                             format_bytes(double(most)), " here"),
                         1, most);
}

// "1K..256M" (doubling) or "4K,1M,16M".
std::vector<int64_t> parse_sizes(const std::string& spec) {
  std::vector<int64_t> out;
  const size_t dots = spec.find("..");
  if (dots != std::string::npos) {
    const int64_t lo = parse_size(spec.substr(0, dots)), hi = parse_size(spec.substr(dots + 2));
    for (int64_t s = lo; s <= hi; s *= 2) out.push_back(s);
  } else {
    std::stringstream ss(spec);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(parse_size(item));
  }
  if (out.empty()) throw Error(ErrorKind::kUsage, "no sizes in '" + spec + "'", "topotrain bench comm --sizes");
  return out;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

bool is_block_op(const std::string& op) { return op == "reduce_scatter" || op == "all_gather"; }
bool is_uneven_op(const std::string& op) { return op == "reduce_scatter_v" || op == "all_gather_v"; }
// One block (or ZeRO shard) per rank: a receive buffer, and at least one element per rank.
bool is_split_op(const std::string& op) { return is_block_op(op) || is_uneven_op(op); }

double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (is_split_op(op)) return double(n - 1) / n;
  return 1.0;
}

// One timed operation on buffers sized for `bytes`; returns false when the size is too small for
// the rank count (reduce_scatter/all_gather need one element per rank).
struct Case {
  std::string op;
  DType dtype;
  int64_t count = 0;                        // elements of the whole buffer S
  std::vector<int64_t> counts;              // _v ops: the ZeRO shard sizes of count
  size_t own_offset = 0;                    // _v ops: where this rank's shard starts, in bytes
  std::vector<int> mpi_counts, mpi_displs;  // _v ops: counts and their offsets, for the MPI calls
  std::vector<uint8_t> a, b;
};

void run_ours(Communicator& c, Case& k) {
  const int64_t block = k.count / c.size();
  if (k.op == "all_reduce")
    c.all_reduce(k.a.data(), k.count, k.dtype, ReduceOp::kSum)->wait();
  else if (k.op == "reduce_scatter")
    c.reduce_scatter(k.a.data(), k.b.data(), block, k.dtype, ReduceOp::kSum)->wait();
  else if (k.op == "all_gather")
    c.all_gather(k.a.data(), k.b.data(), block, k.dtype)->wait();
  else if (k.op == "reduce_scatter_v")
    c.reduce_scatter_v(k.a.data(), k.b.data(), k.counts, k.dtype, ReduceOp::kSum)->wait();
  else if (k.op == "all_gather_v")  // in place, as the parameter gather
    c.all_gather_v(k.b.data() + k.own_offset, k.b.data(), k.counts, k.dtype)->wait();
  else
    c.broadcast(k.a.data(), k.count, k.dtype, 0)->wait();
}

#if TOPOTRAIN_HAVE_MPI
// The blocking MPI call doing the same; false when MPI has no equivalent (16-bit float reductions).
bool run_blocking_mpi(Communicator& c, Case& k) {
  const int64_t block = k.count / c.size();
  const bool f32 = k.dtype == DType::kF32, i32 = k.dtype == DType::kI32;
  const MPI_Datatype arith = f32                      ? MPI_FLOAT
                             : i32                    ? MPI_INT32_T
                             : k.dtype == DType::kU32 ? MPI_UINT32_T
                                                      : MPI_DATATYPE_NULL;
  const MPI_Datatype raw = dtype_size(k.dtype) == 4   ? MPI_UINT32_T
                           : dtype_size(k.dtype) == 2 ? MPI_UINT16_T
                                                      : MPI_UINT8_T;
  if (k.op == "all_reduce") {
    if (arith == MPI_DATATYPE_NULL) return false;
    MPI_Allreduce(MPI_IN_PLACE, k.a.data(), int(k.count), arith, MPI_SUM, MPI_COMM_WORLD);
  } else if (k.op == "reduce_scatter") {
    if (arith == MPI_DATATYPE_NULL) return false;
    MPI_Reduce_scatter_block(k.a.data(), k.b.data(), int(block), arith, MPI_SUM, MPI_COMM_WORLD);
  } else if (k.op == "all_gather") {
    MPI_Allgather(k.a.data(), int(block), raw, k.b.data(), int(block), raw, MPI_COMM_WORLD);
  } else if (k.op == "all_gather_v") {
    MPI_Allgatherv(MPI_IN_PLACE, 0, raw, k.b.data(), k.mpi_counts.data(), k.mpi_displs.data(), raw, MPI_COMM_WORLD);
  } else if (k.op == "reduce_scatter_v") {
    if (arith == MPI_DATATYPE_NULL) return false;
    MPI_Reduce_scatter(k.a.data(), k.b.data(), k.mpi_counts.data(), arith, MPI_SUM, MPI_COMM_WORLD);
  } else {
    MPI_Bcast(k.a.data(), int(k.count), raw, 0, MPI_COMM_WORLD);
  }
  return true;
}
#endif

}  // namespace

int bench_comm(const Args& args) {
  ArgParser p("topotrain bench comm",
              "Collective bandwidth of this process' communicator (run under mpirun), nccl-tests conventions, next "
              "to plain blocking MPI calls on the same buffers.");
  p.option("--sizes", "A..B|A,B,..", "buffer sizes S in bytes (K/M/G binary); A..B doubles", "1K..64M")
      .option("--ops", "LIST", "collectives (also reduce_scatter_v, all_gather_v: ZeRO's uneven calls)",
              "all_reduce,reduce_scatter,all_gather,broadcast")
      .option("--dtype", "T", "element type: f32, bf16, f16, i32, u32", "f32")
      .option("--iters", "N", "timed iterations per size (fewer for sizes above 64 MiB)", "20")
      .option("--warmup", "N", "untimed iterations per size", "3")
      .option("--timeout", "S", "collective timeout in seconds", "300");
  if (!p.parse(args)) return 0;
  const std::vector<int64_t> sizes = parse_sizes(p.get("--sizes"));
  const std::vector<std::string> ops = split_list(p.get("--ops"));
  const DType dtype = dtype_from_name(p.get("--dtype"));
  const int iters = p.get_int("--iters"), warmup = p.get_int("--warmup");
  if (iters < 1 || warmup < 0)
    throw Error(ErrorKind::kUsage, "--iters must be >= 1 and --warmup >= 0", "topotrain bench comm");
  for (const auto& op : ops)
    if (op != "all_reduce" && !is_block_op(op) && !is_uneven_op(op) && op != "broadcast")
      throw Error(ErrorKind::kUsage, "unknown collective '" + op + "'", "topotrain bench comm --ops",
                  "use all_reduce, reduce_scatter, all_gather, reduce_scatter_v, all_gather_v, broadcast");

  parallel::CommOptions opts;
  opts.timeout_s = p.get_double("--timeout");
  std::unique_ptr<Communicator> comm = parallel::create_communicator(opts);
  Communicator& c = *comm;
  const int n = c.size();
  bool mpi_column = false;
#if TOPOTRAIN_HAVE_MPI
  mpi_column = c.backend() == "mpi" && parallel::mpi_thread_level() == MPI_THREAD_MULTIPLE;
#endif
  if (c.rank() == 0) {
    std::printf(
        "bench comm | %s | %d rank(s) on %d node(s) | %s | %d iters (%d warm-up) | times: slowest rank's mean\n",
        c.backend().c_str(), n, c.num_nodes(), dtype_name(dtype), iters, warmup);
    std::printf("%-16s %10s %11s %11s %9s %9s | %16s %9s %7s\n", "op", "size", "count", "time(us)", "algbw", "busbw",
                "mpi blocking(us)", "busbw", "ratio");
    std::printf("%-16s %10s %11s %11s %9s %9s | %16s %9s %7s\n", "", "", "", "", "(GB/s)", "(GB/s)", "", "(GB/s)", "");
  }
  for (const std::string& op : ops) {
    for (const int64_t bytes : sizes) {
      Case k;
      k.op = op;
      k.dtype = dtype;
      k.count = bytes / int64_t(dtype_size(dtype));
      if (is_block_op(op)) k.count -= k.count % n;
      if (k.count < (is_split_op(op) ? n : 1)) continue;
      const size_t esize = dtype_size(dtype);
      if (is_uneven_op(op)) {  // once per size, outside the timed loops
        k.counts = parallel::shard_sizes(k.count, n);
        k.own_offset = size_t(parallel::shard_of(k.count, n, c.rank()).begin) * esize;
        for (const int64_t e : k.counts) {
          k.mpi_displs.push_back(k.mpi_counts.empty() ? 0 : k.mpi_displs.back() + k.mpi_counts.back());
          k.mpi_counts.push_back(int(e));
        }
      }
      k.a.assign(size_t(k.count) * esize, 0);
      k.b.assign(is_split_op(op) ? size_t(k.count) * esize : 0, 0);
      const int it = std::max(3, std::min<int>(iters, int((int64_t(64) << 20) * iters / std::max<int64_t>(bytes, 1))));
      float t[2] = {0, 0};
      for (int i = 0; i < warmup; ++i) run_ours(c, k);
      c.barrier()->wait();
      double t0 = now_s();
      for (int i = 0; i < it; ++i) run_ours(c, k);
      t[0] = float((now_s() - t0) / it);
#if TOPOTRAIN_HAVE_MPI
      if (mpi_column) {
        bool ok = true;
        for (int i = 0; i < warmup && ok; ++i) ok = run_blocking_mpi(c, k);
        c.barrier()->wait();
        t0 = now_s();
        for (int i = 0; i < it && ok; ++i) run_blocking_mpi(c, k);
        t[1] = ok ? float((now_s() - t0) / it) : 0.0f;
      }
#endif
      c.all_reduce(t, 2, DType::kF32, ReduceOp::kMax)->wait();
      if (c.rank() != 0) continue;
      const double S = double(k.count) * double(esize);
      const double algbw = S / t[0] / 1e9, busbw = algbw * bus_factor(op, n);
      char mpi_cols[64] = "";
      if (t[1] > 0)
        std::snprintf(mpi_cols, sizeof(mpi_cols), "%16.1f %9.2f %6.2fx", t[1] * 1e6, S / t[1] / 1e9 * bus_factor(op, n),
                      double(t[1]) / t[0]);
      else
        std::snprintf(mpi_cols, sizeof(mpi_cols), "%16s %9s %7s", "n/a", "", "");
      std::printf("%-16s %10s %11lld %11.1f %9.2f %9.2f | %s\n", op.c_str(), parallel::format_size(S).c_str(),
                  (long long)k.count, t[0] * 1e6, algbw, busbw, mpi_cols);
      std::fflush(stdout);
    }
  }
  if (c.rank() == 0)
    std::printf("ratio = mpi blocking time / communicator time (> 1: the communicator is faster)%s\n",
                mpi_column ? "" : "; no MPI column: needs the mpi backend with MPI_THREAD_MULTIPLE");
  return 0;
}

}  // namespace tt
