// The node structure of a communicator as hierarchical collectives need it: which node this rank is
// on and its rank there, and the sub-communicators of one node (intra) and of the ranks with the
// same local rank on every node (inter).
//
// Design: the layout comes from the communicator (node(), local_rank(): hosts, or the pretended
// nodes of CommOptions::ranks_per_node), or is pretended here per call (ranks_per_node > 0:
// consecutive ranks), so a test can exercise two "nodes" of two ranks under one mpirun without
// changing the world communicator. Hierarchical collectives need every node to hold the same
// number of ranks; node_layout() checks that across ranks, so every rank fails together.
#pragma once

#include <memory>
#include <string>

#include "parallel/comm/communicator.h"

namespace tt::parallel {

struct NodeLayout {
  int node = 0, num_nodes = 1;         // this rank's node, and how many there are
  int local_rank = 0, local_size = 1;  // rank within the node, ranks per node (the same on every node)
  std::string str() const;             // "2 nodes x 2 ranks"
};

// Collective over comm (one small all_reduce). ranks_per_node > 0: nodes of that many consecutive
// ranks (throws kConfig unless it divides comm.size()); 0: comm.node() / local_rank(). Throws
// kConfig on every rank when the nodes hold different numbers of ranks.
NodeLayout node_layout(Communicator& comm, int ranks_per_node = 0);

// Collectives over comm (split): this rank's node (ranked by local rank), and the ranks with this
// rank's local rank on every node (ranked by node).
std::unique_ptr<Communicator> split_intra_node(Communicator& comm, const NodeLayout& layout);
std::unique_ptr<Communicator> split_inter_node(Communicator& comm, const NodeLayout& layout);

}  // namespace tt::parallel
