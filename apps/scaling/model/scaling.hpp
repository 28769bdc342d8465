// The analysis of a scaling study (docs/SCALING.md explains every formula here):
//   - Amdahl's law fitted to measured times, T(p) = T(1) (s + (1 - s) / p), s in [0, 1], by least
//     squares on relative residuals, with the residual reported;
//   - the Karp-Flatt metric per point (the serial fraction each point implies on its own);
//   - Gustafson's scaled speedup for weak scaling;
//   - a cost model per operation (local work at a measured rate, each collective as latency plus
//     bytes over bandwidth with the tree or ring depth that grows with P, on the path its data takes
//     (host MPI for scalars, DeviceComm for backend buffers), SUMMA's broadcasts overlapped with its
//     GEMMs, constant host-side work),
//     fitted on some points, checked on the others, and projected to rank counts the run never had.
// Pure arithmetic: no MPI, no device. The scaling app measures; this file explains the measurements.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/framework/collective_plan.hpp"

namespace tessera::scaling {

// ------------------------------------------------------------------------------------------------
// Speedup, efficiency, Karp-Flatt, Gustafson.

// Strong scaling: S(p) = T(1) / T(p).
double speedup(double t1, double tp);
// Strong scaling: E(p) = S(p) / p. Weak scaling: E(p) = T(1) / T(p) (pass p = 1 with the weak
// times, or use weak_efficiency).
double efficiency(double t1, double tp, int p);
double weak_efficiency(double t1, double tp);
// Karp and Flatt (1990): e(p) = (1 / S - 1 / p) / (1 - 1 / p), the experimentally determined serial
// fraction. Undefined at p = 1 (nullopt).
std::optional<double> karp_flatt(double speedup, int p);
// Weak scaling, measured: the work grew p-fold and took T(p) instead of T(1): S_scaled = p T(1) / T(p).
double scaled_speedup(double t1, double tp, int p);

// ------------------------------------------------------------------------------------------------
// Amdahl's law.

struct AmdahlFit {
  bool valid = false;          // false with fewer than two distinct rank counts, or bad times
  double serial_fraction = 0;  // s in [0, 1]
  double t1 = 0;               // fitted T(1), seconds
  // Residuals r_i = (T_fit(p_i) - T_i) / T_i of the fitted points.
  double residual_rms = 0;     // sqrt(mean r_i^2): the number the fit minimised, normalised
  double residual_max = 0;     // max |r_i|: every fitted time lies within this relative distance
  std::vector<double> fitted;  // T_fit(p_i), same order as the input
  double predict(double p) const { return t1 * (serial_fraction + (1 - serial_fraction) / p); }
};

// Fits T(p) = a + b / p with a = T(1) s >= 0 and b = T(1) (1 - s) >= 0, minimising the sum of
// squared relative residuals ((a + b / p_i) - T_i) / T_i, so that the small times at large p count
// as much as T(1). The constraint (s in [0, 1]) is exact: a two-variable non-negative least squares.
// ranks and times have the same length; times > 0.
AmdahlFit fit_amdahl(const std::vector<int>& ranks, const std::vector<double>& times);

// Gustafson's law for weak scaling: S_scaled(p) = p - s (p - 1), s the serial fraction of the
// parallel run. Fitted by least squares to measured scaled speedups, s in [0, 1].
struct GustafsonFit {
  bool valid = false;
  double serial_fraction = 0;
  double residual_rms = 0;  // of the scaled speedups, absolute
  double predict(double p) const { return p - serial_fraction * (p - 1); }
};
GustafsonFit fit_gustafson(const std::vector<int>& ranks, const std::vector<double>& scaled_speedups);

// ------------------------------------------------------------------------------------------------
// Collectives: latency + size / bandwidth, with the depth that grows with P.

// ceil(log2 p): the rounds of a binomial tree or recursive doubling; 0 for p <= 1.
int tree_depth(int p);
// 2 (p - 1) / p: the bytes a ring allreduce moves per byte of payload (reduce-scatter + allgather).
double ring_factor(int p);

struct NetworkModel {
  double latency = 0;    // alpha: seconds per tree round
  double bandwidth = 0;  // beta: bytes per second (0: unknown, bandwidth terms are 0)
  // Small-message allreduce (the scalar collectives): alpha * ceil(log2 p).
  double small_collective(int p) const { return latency * tree_depth(p); }
  // Allreduce of `bytes`: alpha ceil(log2 p) + 2 (p-1)/p bytes / beta.
  double allreduce(int p, double bytes) const;
  // Broadcast of `bytes` over p ranks, pipelined: alpha ceil(log2 p) + bytes / beta.
  double bcast(int p, double bytes) const;
};

// One measurement of the ping collectives on a sub-communicator of `ranks` ranks, on the two paths
// data takes: host MPI (the scalar collectives of sum, scan and filter) and DeviceComm on backend
// memory (SUMMA's panels: NCCL, CUDA-aware MPI or staged under cuda, host MPI under cpu).
struct CollectiveSample {
  int ranks = 1;
  double small_seconds = 0;  // host MPI allreduce of one 8-byte value
  double large_seconds = 0;  // host MPI allreduce of large_bytes
  double large_bytes = 0;
  double device_small_seconds = 0;  // DeviceComm broadcast of device_small_bytes of backend memory
  double device_large_seconds = 0;  // DeviceComm broadcast of device_large_bytes of backend memory
  double device_large_bytes = 0;
  double device_small_bytes = 0;
};

// Host path: alpha by least squares of small_seconds = alpha ceil(log2 p); then beta from the large
// allreduce after its latency part: large - alpha depth = ring_factor(p) bytes / beta. Samples at
// p = 1 carry no information and are ignored. Without samples at p >= 2: latency = bandwidth = 0.
NetworkModel fit_network(const std::vector<CollectiveSample>& samples);
// Device path, from the broadcasts: alpha by least squares of device_small_seconds =
// alpha ceil(log2 p) (the small payload's own bytes are neglected); beta from
// device_large - alpha depth = device_large_bytes / beta (a pipelined broadcast moves the payload
// once). Same rules for p = 1 and missing samples (device_large_bytes = 0: bandwidth 0).
NetworkModel fit_device_network(const std::vector<CollectiveSample>& samples);

// ------------------------------------------------------------------------------------------------
// The cost model of one operation.

enum class Op { sum, scan, filter, matmul };
Op parse_op(const std::string& text);  // throws UsageError naming the text
const char* to_string(Op op);

enum class Mode { strong, weak };
const char* to_string(Mode mode);

// What one point of the study processed: the element count (sum, scan, filter) or the square matrix
// side (matmul), global, and the element size.
struct Problem {
  Op op = Op::sum;
  std::int64_t size = 0;  // global elements, or matrix side n (n x n times n x n)
  int element_bytes = 4;
};

// The problem at p ranks in each mode: strong keeps the global size; weak grows it with p
// (elements: n_per_rank * p; matmul: side n1 * p^(1/3), so that flops per rank stay constant).
Problem problem_at(Op op, Mode mode, std::int64_t size_arg, int element_bytes, int p);

// Work of this rank's local phases: bytes moved (sum: read N/p; scan: read twice, write once;
// filter: read, then write the kept part, taken as half) or flops (matmul: 2 n^3 / p).
double local_work(const Problem& problem, int p);
// Process grid rows x cols for p ranks, as MPI_Dims_create chooses it (rows >= cols, closest to square).
void grid_dims(int p, int& rows, int& cols);
// The collectives of one call: rounds of latency and bytes over bandwidth, at p ranks.
struct CommCost {
  double latency_rounds = 0;  // multiplies alpha
  double bytes = 0;           // divided by beta
};
// An operation's collective plan (the one its algorithm declares, collective_plan.hpp), each call
// charged as MPI's usual algorithm for it moves a rank's b bytes:
//   allreduce   ceil(log2 p) rounds, 2 (p-1)/p b bytes (recursive doubling; ring for large b)
//   allgather   ceil(log2 p) rounds, (p-1) b bytes     (recursive doubling: every item reaches every rank)
//   exscan      ceil(log2 p) rounds, ceil(log2 p) b bytes
//   bcast       ceil(log2 p) rounds, b bytes           (pipelined for large b)
//   alltoallv   p-1 rounds, b bytes                    (pairwise exchange of what a rank sends)
//   reduce_scatter  ceil(log2 p) rounds, (p-1)/p b bytes (b: the whole vector; recursive halving)
//   neighbor_exchange  1 round, b bytes                (every halo message in flight at once)
CommCost comm_cost(const CollectivePlan& plan, int p);
// SUMMA's panel broadcasts (matmul) without overlap: ceil(n / b) steps, each an A panel along a
// process row and a B panel along a process column. The projections use summa_overlap.
CommCost summa_comm_cost(const Problem& problem, int p, std::int64_t panel_width);

// SUMMA's critical path with the broadcast of panel s+1 overlapping the GEMM of panel s (matmul.cpp
// posts step s+1 before it multiplies step s). K is cut into ceil(n / b) steps of width b (the last
// one narrower); step s costs g_s = seconds_per_flop 2 ceil(n/r) ceil(n/c) w_s of GEMM, and its
// broadcasts c_s = [c > 1] (alpha ceil(log2 c) + ceil(n/r) w_s e / beta)
//                + [r > 1] (alpha ceil(log2 r) + w_s ceil(n/c) e / beta)   (A then B, not in parallel)
// on the device network. Time = c_0 + sum_s max(g_s, c_{s+1}) with c_S = 0: the first panel's
// broadcast is exposed, after it each step lasts as long as the longer of its GEMM and the next
// broadcast. Each summand is charged to the side that set it: a broadcast's alpha part to latency
// and its bytes part to bandwidth, a GEMM to local (a tie goes to local); the shorter side of each
// step is `hidden`. Closed form over the equal steps, so any n and b cost O(1).
struct OverlapTerms {
  double local = 0, latency = 0, bandwidth = 0;
  double hidden = 0;  // seconds that ran in the shadow of the other side (not part of the time)
  double total() const { return local + latency + bandwidth; }
};
OverlapTerms summa_overlap(const Problem& problem, int p, std::int64_t panel_width, double seconds_per_flop,
                           const NetworkModel& device);

// ------------------------------------------------------------------------------------------------
// The node's shared resource: the local phase's bandwidth with k ranks of one node busy at once.
//
// The launch's probe streams a buffer on the first k ranks of node 0 at once, k = 1 .. G (G: the
// ranks on the node), and records the slowest rank's time t(k). slowdown(k) = t(k) / t(1) is how
// much longer a memory-bound local phase takes with k ranks of the node busy than with one: CPU
// ranks share the node's DRAM channels (and its cores, where ranks outnumber them); GPU ranks have
// their own HBM but share PCIe and the host. The model's local term at p ranks is charged
// slowdown(min(p, G)) times the one-rank rate (block placement: the first p ranks fill node 0).
struct NodeSharing {
  std::vector<int> active;       // k, ascending; 1 first
  std::vector<double> seconds;   // t(k), the slowest rank's probe time
  bool measured() const { return !active.empty() && active.front() == 1 && seconds.front() > 0; }
  int max_active() const { return active.empty() ? 1 : active.back(); }
  // 1 without a probe; t(k) / t(1) at a measured k, linear in k between two, the last one's beyond.
  double slowdown(int k) const;
};

// ------------------------------------------------------------------------------------------------
// Collectives charged as they run.
//
// The launch times each collective of the operation's plan at the plan's message size on every
// sub-communicator it measures (Communicator, host MPI; the slowest rank, per call). The model
// charges a call the time measured for (collective, group size, size class), the size class being
// floor(log2 bytes): at a measured group size the measured time; between two measured sizes p0 < p <
// p1 the interpolation t0 + (t1 - t0) (f(p) - f(p0)) / (f(p1) - f(p0)), f the cost of the algorithm
// the library picks (below) with the fitted alpha and beta (linear in log2 p where f is flat); past
// the largest measured size pm, t(pm) f(p) / f(pm): the measured cost scaled as the algorithm's cost
// grows. Where the plan's collective was not measured, f itself.

// The library that runs a collective: host MPI (Open MPI's tuned component) or NCCL.
enum class CollectiveLibrary { open_mpi, nccl };

// What an algorithm costs on p ranks for b bytes per rank: alpha rounds + bytes / beta.
struct AlgorithmCost {
  const char* name = "";
  double rounds = 0;  // multiplies alpha
  double bytes = 0;   // divided by beta
};

// The algorithm Open MPI 4.1's tuned component picks (coll_tuned_decision_fixed.c) and its cost,
// with d = ceil(log2 p) and the adjustment of 2 rounds where p is not a power of two (recursive
// doubling folds the extra ranks in and out):
//   allreduce (commutative), by p and b:
//     recursive doubling      (d + 2 [p not 2^k]) (alpha + b / beta)
//     ring, segmented ring    2 (p - 1) alpha + 2 (p - 1)/p b / beta
//     Rabenseifner            (2 d + 2 [p not 2^k]) alpha + 2 (p - 1)/p b / beta
//     reduce + bcast          2 d (alpha + b / beta)          (nonoverlapping, binomial trees)
//     linear                  2 (p - 1) (alpha + b / beta)
//     (the ring, segmented ring and Rabenseifner fall back to recursive doubling where the vector
//     has fewer elements than p, counted as b / 8)
//   allgather, b per rank: below 64 KiB in all, recursive doubling (p = 2^k) or Bruck (other p):
//     d alpha + (p - 1) b / beta; above, ring: (p - 1) (alpha + b / beta)
//   bcast: below 2 KiB binomial: d (alpha + b / beta); above, pipelined (segments of s = 128 KiB
//     or split binary tree): (d + ceil(b / s) - 1) alpha + b / beta
//   exscan: linear chain in Open MPI's basic component: (p - 1) (alpha + b / beta)
//   alltoallv: pairwise exchange: (p - 1) alpha + (p - 1)/p b / beta
//   reduce_scatter (b: the whole vector): recursive halving: d alpha + (p - 1)/p b / beta
//   neighbor_exchange: 1 alpha + b / beta
AlgorithmCost openmpi_algorithm(Collective kind, int p, double bytes);
// NCCL: allreduce as a ring, 2 (p - 1) alpha + 2 (p - 1)/p b / beta, or, for b below 64 KiB, as
// its double binary tree, 2 d alpha + 2 b / beta (the cheaper of the two, as NCCL's tuner picks);
// broadcast as a pipelined ring, (p - 1) alpha + b / beta; allgather and reduce-scatter as rings,
// (p - 1) alpha + (p - 1) b / beta and (p - 1) alpha + (p - 1)/p b / beta; the others as Open MPI.
AlgorithmCost nccl_algorithm(Collective kind, int p, double bytes);
AlgorithmCost library_algorithm(CollectiveLibrary library, Collective kind, int p, double bytes);

// One collective timed by the launch.
struct CollectiveTiming {
  Collective kind = Collective::allreduce;
  int ranks = 1;
  double bytes = 0;
  double seconds = 0;  // per call, the slowest rank; the median over the batches
  std::vector<double> batches;  // per batch, its mean per call (the bootstrap draws from these)
};

int size_class(double bytes);  // floor(log2 bytes); 0 below 2 bytes

struct CollectiveCharge {
  double seconds = 0;
  double latency = 0, bandwidth = 0;  // seconds split as the algorithm's alpha and beta shares
  const char* algorithm = "";
  const char* source = "";            // "measured", "interpolated", "extrapolated" or "formula"
};
// One call of `kind` on p ranks, b bytes per rank, as described above.
CollectiveCharge charge_collective(const std::vector<CollectiveTiming>& measured, CollectiveLibrary library,
                                   const NetworkModel& network, Collective kind, int p, double bytes);

// One measured point of a study, the median over repeats of the slowest rank's times.
struct Measurement {
  int ranks = 1;
  double time = 0;   // wall time of the call
  double local = 0;  // local + fix-up phases
  double communication = 0;
  double host = 0;   // host phase plus what the phases did not cover (wall - phases)
};

struct CostModel {
  Op op = Op::sum;
  Mode mode = Mode::strong;
  std::int64_t size_arg = 0;
  int element_bytes = 4;
  std::int64_t panel_width = 512;
  CollectivePlan plan;          // sum, scan, filter: the collectives their algorithm declares
  NetworkModel network;         // host MPI: the scalar collectives of sum, scan, filter
  NetworkModel device_network;  // DeviceComm on backend memory: SUMMA's panels
  NodeSharing sharing;               // the local phase's slowdown with k ranks of a node busy
  int ranks_per_node = 0;            // G; 0: the probe's largest k
  std::vector<CollectiveTiming> collectives;  // measured; empty: the plan charged by the formulas
  CollectiveLibrary library = CollectiveLibrary::open_mpi;
  double local_overhead = 0;         // seconds per call that do not shrink with the local work (launches)
  double local_seconds_per_work = 0;  // seconds per byte (flop for matmul) of one rank's local phases
  double host = 0;            // constant host-side serial seconds per call
  std::vector<int> fitted_on;

  // The terms add up to the time. For matmul they are the critical path of summa_overlap: what
  // ran in the shadow of the other side of a step is in `hidden`, not in the total.
  struct Terms {
    double local = 0, latency = 0, bandwidth = 0, host = 0;
    double hidden = 0;
    double total() const { return local + latency + bandwidth + host; }
    const char* dominant() const;  // "local", "latency", "bandwidth" or "host"
  };
  Terms predict(int p) const;
  // The ranks busy on one node at p ranks, and the local phase's slowdown there (1 for matmul, whose
  // GEMMs are bound by each rank's own cores, not by the node's memory).
  int active_on_node(int p) const;
  double local_slowdown(int p) const;
  // Bytes/s (flop/s for matmul) of the local phases; 0 where the fit found no work-dependent part.
  double local_rate() const { return local_seconds_per_work > 0 ? 1.0 / local_seconds_per_work : 0.0; }
  const char* work_unit() const { return op == Op::matmul ? "flop" : "byte"; }
};

// Fits the local rate and overhead (t_local = overhead + slowdown(k) work / rate, non-negative least squares,
// overhead 0 when the work does not vary across the points, as in weak scaling) and the host
// constant (mean) on the measurements whose rank count is in fit_ranks; the network models are
// given: `network` (host MPI) for the scalar collectives, `device_network` for matmul's panels.
// `plan`: the operation's collectives (sum, scan, filter; matmul is charged by summa_overlap).
CostModel fit_cost_model(Op op, Mode mode, std::int64_t size_arg, int element_bytes, std::int64_t panel_width,
                         const CollectivePlan& plan, const NetworkModel& network, const NetworkModel& device_network,
                         const std::vector<Measurement>& points, const std::vector<int>& fit_ranks);
// The same with one network for both paths (as under the cpu backend, where both are host MPI).
CostModel fit_cost_model(Op op, Mode mode, std::int64_t size_arg, int element_bytes, std::int64_t panel_width,
                         const CollectivePlan& plan, const NetworkModel& network,
                         const std::vector<Measurement>& points, const std::vector<int>& fit_ranks);
// The same, with the node's sharing and the measured collectives (charged before the local fit).
CostModel fit_cost_model(Op op, Mode mode, std::int64_t size_arg, int element_bytes, std::int64_t panel_width,
                         const CollectivePlan& plan, const NetworkModel& network, const NetworkModel& device_network,
                         const NodeSharing& sharing, int ranks_per_node, const std::vector<CollectiveTiming>& collectives,
                         const std::vector<Measurement>& points, const std::vector<int>& fit_ranks);

struct ProjectionPoint {
  int ranks = 1;
  double time = 0;
  double speedup = 0;     // strong: T(1) / T(p); weak: scaled, p T(1) / T(p)
  double efficiency = 0;  // strong: S / p; weak: T(1) / T(p)
  CostModel::Terms terms;
  std::string dominant;
  double low = 0, high = 0;  // the time's 95% interval (project_interval); 0 where not computed
};
// The model at each rank count, speedup and efficiency against the model's own T(1).
std::vector<ProjectionPoint> project(const CostModel& model, const std::vector<int>& ranks);
// 8, 16, ..., 4096.
std::vector<int> default_projection_ranks();
// 1, 2, 4, ..., 1024 nodes of ranks_per_node ranks.
std::vector<int> node_projection_ranks(int ranks_per_node);

// The interval of a projection: the 2.5% and 97.5% quantiles over models refitted to resamples of
// the inputs (a bootstrap: each resample draws the rounds of every point, the probe's repetitions
// and the collectives' batches with replacement). refits[i] holds the times of resample i at
// `ranks`; writes low and high into `points` (same ranks, same order).
void apply_interval(std::vector<ProjectionPoint>& points, const std::vector<std::vector<double>>& refits);
// The q-quantile (0 <= q <= 1) of x, linear between order statistics.
double quantile(std::vector<double> x, double q);

}  // namespace tessera::scaling
