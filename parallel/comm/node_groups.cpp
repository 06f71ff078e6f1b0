// Node layout and the node sub-communicators (see node_groups.h).
#include "parallel/comm/node_groups.h"

#include "core/error.h"

namespace tt::parallel {

std::string NodeLayout::str() const {
  return tt::str(num_nodes, num_nodes == 1 ? " node x " : " nodes x ", local_size,
                 local_size == 1 ? " rank" : " ranks");
}

NodeLayout node_layout(Communicator& comm, int ranks_per_node) {
  NodeLayout l;
  if (ranks_per_node < 0)
    throw Error(ErrorKind::kConfig, str("ranks_per_node ", ranks_per_node, " is negative"), "parallel.ranks_per_node",
                "use 0 (the hosts' own layout) or a divisor of the rank count");
  if (ranks_per_node > 0) {
    if (comm.size() % ranks_per_node != 0)
      throw Error(ErrorKind::kConfig,
                  str("parallel.ranks_per_node ", ranks_per_node, " does not divide the ", comm.size(), " ranks"),
                  "parallel.ranks_per_node", "use a divisor of the rank count, or 0 for the hosts' own layout");
    l.local_size = ranks_per_node;
    l.local_rank = comm.rank() % ranks_per_node;
    l.node = comm.rank() / ranks_per_node;
    l.num_nodes = comm.size() / ranks_per_node;
    return l;
  }
  l.node = comm.node();
  l.num_nodes = comm.num_nodes();
  l.local_rank = comm.local_rank();
  l.local_size = comm.local_size();
  // Every node must hold as many ranks as this one: compare the largest and smallest node.
  int32_t sizes[2] = {l.local_size, -l.local_size};
  if (comm.size() > 1) comm.all_reduce(sizes, 2, DType::kI32, ReduceOp::kMax)->wait();
  if (sizes[0] != -sizes[1])
    throw Error(ErrorKind::kConfig,
                str("hierarchical collectives need the same number of ranks on every node, but nodes hold between ",
                    -sizes[1], " and ", sizes[0], " ranks"),
                str("rank ", comm.rank()),
                "start as many ranks on every node (mpirun --map-by ppr:N:node), or use parallel.collective \"flat\"");
  return l;
}

std::unique_ptr<Communicator> split_intra_node(Communicator& comm, const NodeLayout& layout) {
  return comm.split(layout.node, layout.local_rank);
}

std::unique_ptr<Communicator> split_inter_node(Communicator& comm, const NodeLayout& layout) {
  return comm.split(layout.local_rank, layout.node);
}

}  // namespace tt::parallel
