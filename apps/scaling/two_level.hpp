// The two levels of the network, as the scaling app measures and reports them
// (model/scaling_two_level.hpp has the model; docs/SCALING.md explains both):
//   - the layout of the launch: which node each rank is on (MPI_Comm_split_type), ranks per node;
//   - collectives within one node (the first 2, 4, ... G ranks of node 0) and among the first 2,
//     4, ..., N nodes, as the inter-node stage of a hierarchical collective runs: small ones among
//     the node leaders, large ones split over the G groups of the i-th ranks of those nodes at
//     once (1/G of the payload each: the node's ranks share its link); each on the two paths data
//     takes (host MPI allreduce, DeviceComm broadcast), the other ranks asleep;
//   - the report: both levels' latency and bandwidth; the model fitted on the points and
//     collectives that span at most two nodes, checked on those spanning more (next to the
//     one-level model fitted on the same points); and the projection as nodes x ranks per node.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "json.hpp"
#include "tessera/framework/context.hpp"
#include "model/scaling.hpp"

namespace tessera::apps::two_level {

struct Layout {
  int nodes = 1;
  int ranks_per_node = 1;  // ranks on node 0
  bool block = true;       // consecutive ranks fill a node of ranks_per_node before the next
  std::string irregular;   // why the layout is not block, when it is not
};

// Collective over `world`: which node each rank is on.
Layout discover_layout(const Context& world);

struct Samples {
  std::vector<scaling::CollectiveSample> intra;  // ranks = ranks within node 0
  std::vector<scaling::CollectiveSample> inter;  // ranks = nodes; bytes per node (G groups at once)
};

// Collective over `world` (every rank calls it); the samples are complete on world rank 0.
Samples measure(const Context& world, const Layout& layout, std::int64_t ping_bytes);

// What the scaling app measured, for the report (world rank 0).
struct Study {
  scaling::Op op = scaling::Op::sum;
  int element_bytes = 4;
  std::int64_t panel_width = 512;
  CollectivePlan plan;  // the operation's collectives (sum, scan, filter)
  std::vector<scaling::CollectiveSample> samples;  // on the first p ranks of the launch, p in ranks
  scaling::NodeSharing sharing;  // the local phase's slowdown with k ranks of a node busy (the probe)
  struct Mode {
    scaling::Mode mode = scaling::Mode::strong;
    std::int64_t size_arg = 0;
    std::vector<scaling::Measurement> points;
  };
  std::vector<Mode> modes;
};

// The "two_level" object of the report; prints its summary to `text`.
Json report(const Layout& layout, const Samples& samples, const Study& study, std::FILE* text);

}  // namespace tessera::apps::two_level
