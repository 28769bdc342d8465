// A two-level network in the cost model (docs/SCALING.md, "Two levels: within a node and between
// nodes"). Ranks sit on nodes, G per node; a collective over ranks spread on N nodes is charged as
// an intra-node stage over the (at most) G ranks of a node, with the intra-node latency and
// bandwidth (shared memory, NVLink), and an inter-node stage over the N nodes, with the
// inter-node ones (the network):
//   small collective   alpha_intra ceil(log2 G) + alpha_inter ceil(log2 N)
//   allreduce of b     + 2 (G-1)/G b / beta_intra + 2 (N-1)/N b / beta_inter
//   broadcast of b     + [G > 1] b / beta_intra + [N > 1] b / beta_inter
// which is what a hierarchical collective (NCCL's, or reduce within the node, allreduce among the
// nodes, broadcast within the node) costs, and for the latency also what recursive doubling over
// block-placed ranks costs (its first ceil(log2 G) rounds stay within a node). The intra- and
// inter-node parameters come from the same launch: collectives on the ranks of one node
// (MPI_Comm_split_type) and among one rank per node. Projections are given as nodes x ranks
// (GPUs) per node. Pure arithmetic, like scaling.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "model/scaling.hpp"

namespace tessera::scaling {

// How a group of ranks lies on the nodes: the nodes it spans and the most ranks it has on one.
struct NodeShape {
  int nodes = 1;
  int per_node = 1;
  int ranks() const { return nodes * per_node; }
};

// The first p ranks when ranks fill nodes of ranks_per_node in order (block placement: Slurm's
// default distribution, mpirun --map-by ppr:G:node).
NodeShape block_shape(int p, int ranks_per_node);
// The group of the given ranks (0-based, any order) under the same block placement.
NodeShape shape_of(const std::vector<int>& ranks, int ranks_per_node);

struct TwoLevelNetwork {
  NetworkModel intra;  // within a node
  NetworkModel inter;  // between nodes (one rank per node)

  double latency_intra(NodeShape s) const { return intra.latency * tree_depth(s.per_node); }
  double latency_inter(NodeShape s) const { return inter.latency * tree_depth(s.nodes); }
  double small_collective(NodeShape s) const { return latency_intra(s) + latency_inter(s); }
  // Seconds of the bandwidth terms: per payload byte times bytes, 0 where a bandwidth is unknown.
  double allreduce_bytes_intra(NodeShape s, double bytes) const;
  double allreduce_bytes_inter(NodeShape s, double bytes) const;
  double allreduce(NodeShape s, double bytes) const {
    return small_collective(s) + allreduce_bytes_intra(s, bytes) + allreduce_bytes_inter(s, bytes);
  }
  double bcast_bytes_intra(NodeShape s, double bytes) const;
  double bcast_bytes_inter(NodeShape s, double bytes) const;
  // An allgather of b bytes per rank: (G-1) b within the node, (N-1) G b between the nodes.
  double allgather_bytes_intra(NodeShape s, double bytes) const;
  double allgather_bytes_inter(NodeShape s, double bytes) const;
  double bcast(NodeShape s, double bytes) const {
    return small_collective(s) + bcast_bytes_intra(s, bytes) + bcast_bytes_inter(s, bytes);
  }
};

// The two levels fitted as fit_network / fit_device_network fit one: `intra` from collectives on
// the ranks of one node (CollectiveSample::ranks = ranks in the node), `inter` from collectives
// among one rank per node (CollectiveSample::ranks = nodes).
TwoLevelNetwork fit_two_level(const std::vector<CollectiveSample>& intra, const std::vector<CollectiveSample>& inter);
TwoLevelNetwork fit_two_level_device(const std::vector<CollectiveSample>& intra,
                                     const std::vector<CollectiveSample>& inter);

// The cost model of one operation on N nodes x G ranks per node, block-placed. `base` carries the
// operation, sizes, the local rate and overhead, the node sharing (its local term is slowed by
// slowdown(ranks per node)) and the host constant (fit_cost_model); its
// one-level networks are not used.
struct TwoLevelModel {
  CostModel base;
  TwoLevelNetwork host;    // the scalar collectives of sum, scan and filter
  TwoLevelNetwork device;  // SUMMA's panels
  int ranks_per_node = 1;

  struct Terms {
    double local = 0, latency_intra = 0, latency_inter = 0, bandwidth_intra = 0, bandwidth_inter = 0, host = 0;
    double hidden = 0;  // matmul: what ran in the shadow of the other side of a step (not in the total)
    double total() const { return local + latency_intra + latency_inter + bandwidth_intra + bandwidth_inter + host; }
    // "local", "latency_intra", "latency_inter", "bandwidth_intra", "bandwidth_inter" or "host".
    const char* dominant() const;
  };
  // nodes x per_node ranks (per_node <= ranks_per_node; fewer only on a group within one node).
  Terms predict(int nodes, int per_node) const;
  // The first p ranks of a launch with ranks_per_node per node.
  Terms predict_ranks(int p) const;
};

// SUMMA on the grid of p = nodes x per_node block-placed ranks with the two-level device network:
// as summa_overlap, with the broadcast of a panel along process row 0 and process column 0 charged
// to the levels those groups span (shape_of their ranks).
TwoLevelModel::Terms summa_overlap_two_level(const Problem& problem, int p, int ranks_per_node,
                                             std::int64_t panel_width, double seconds_per_flop,
                                             const TwoLevelNetwork& device);

struct TwoLevelProjection {
  int nodes = 1;
  int per_node = 1;
  double time = 0;
  double speedup = 0;     // strong: T(1 x 1) / T; weak: scaled, p T(1 x 1) / T
  double efficiency = 0;  // strong: speedup / p; weak: T(1 x 1) / T
  TwoLevelModel::Terms terms;
};
// The model at each node count with ranks_per_node ranks per node; speedups against the model's
// own time on one rank.
std::vector<TwoLevelProjection> project_two_level(const TwoLevelModel& model, const std::vector<int>& nodes);
// 1, 2, 4, ..., 1024 nodes.
std::vector<int> default_projection_nodes();

}  // namespace tessera::scaling
