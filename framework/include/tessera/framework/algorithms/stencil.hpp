// Stencils over distributed data: a halo exchange with the neighbours, then the local sweep, with the
// exchange overlapped with the part of the sweep that does not need it.
//
//   convolve(a, weights, boundary)   the 1-D convolution of a block-distributed array (numpy.convolve
//                                    order, same length): each rank receives the radius elements
//                                    beyond each end of its block from their owners (several ranks
//                                    where the radius is wider than a neighbour's block), computes
//                                    the inner outputs while they travel, then the two ends.
//   Jacobi                           the Jacobi iteration of a 5- or 9-point stencil on a Field<T, 2>
//                                    (a Field2D, for one) with Dirichlet values in its outer ghost
//                                    cells (the heat equation's steady state with the Laplace
//                                    weights): per iteration the block's
//                                    edge cells first (on a high-priority stream under cuda), their
//                                    exchange with the neighbours while the interior is swept, and
//                                    every k iterations the global residual, max |u_k - u_(k-1)|,
//                                    in one allreduce.
//
// Results are bitwise the same for every process grid, rank count and backend: every cell is the
// same expression of the same neighbours (tessera/kernels/stencil.hpp), and the residual is a
// maximum, which no order of combination changes.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera {

namespace detail {
class PeerStores;
}

// What lies beyond the ends of a 1-D array: zeros, or the array again (periodic).
enum class Boundary { zero, periodic };

inline const char* to_string(Boundary b) { return b == Boundary::zero ? "zero" : "periodic"; }

// out[i] = sum_k weights[k] * a[i + r - k] for 2 r + 1 weights (host memory), a[j] outside [0, n)
// being 0 (zero) or a[j mod n] (periodic). Any radius with zero; periodic needs r <= n (UsageError
// otherwise: the array would wrap more than once), as does an even number of weights. The result
// has a's partition. Collective.
template <class T>
DistArray<T> convolve(const DistArray<T>& a, std::span<const T> weights, Boundary boundary = Boundary::zero,
                      PhaseTimes* times = nullptr);

namespace detail {
// The outputs of a convolution that need no halo: n outputs from in[-radius, n + radius) into out
// (the queue's memory), queued on the queue.
template <class T>
using ConvolveInner = std::function<void(const kernels::Queue& queue, const T* in, index_t n, T* out)>;
// convolve with `inner` (where it is set) computing each rank's outputs that need no halo: those of
// a block of at least 2 radius elements but the radius at each end, while the halo travels. The
// ends, and every output of a smaller block, take kernels::convolve_1d. fft::convolve's skeleton.
template <class T>
DistArray<T> convolve_with(const DistArray<T>& a, std::span<const T> weights, Boundary boundary, PhaseTimes* times,
                           const ConvolveInner<T>& inner);
}  // namespace detail

// The collectives of convolve on `rank` (collective_plan.hpp) for an array in `partition`: one
// neighbour exchange of the elements of this rank's block that other ranks' halos hold.
CollectivePlan convolve_plan(const Partition& partition, int rank, index_t radius, Boundary boundary,
                             std::size_t element_bytes);

struct JacobiOptions {
  index_t check_every = 1;  // iterations between residual checks (one allreduce each); >= 1
  double tolerance = 0;     // stop at the first check whose residual is below it (0: never)
  bool overlap = true;      // edge cells first, their exchange hidden behind the interior sweep
};

namespace detail {
template <class T>
class JacobiParts;
}  // namespace detail

// The Jacobi iteration u_(k+1) = S u_k of the stencil S on a field whose outer ghost cells hold the
// Dirichlet boundary values (set_outer_ghosts) and whose ghost width is at least 1, the same along
// both axes, with at least one cell on every rank (UsageError otherwise). The solver keeps a second
// field of u's layout and swaps the two after each iteration; u holds the latest iterate whenever
// run_until returns. Collective over u's grid.
template <class T>
class Jacobi {
 public:
  // iteration: how many iterations u has had already (a run restarted from a checkpoint), so that
  // the residual is checked at the same iterations as in a run that was never interrupted.
  Jacobi(Field<T, 2>& u, const StencilWeights<T>& weights, const JacobiOptions& options, index_t iteration = 0);
  ~Jacobi();
  Jacobi(const Jacobi&) = delete;
  Jacobi& operator=(const Jacobi&) = delete;

  // Iterates until `last` iterations in all, or until a check (at the multiples of check_every)
  // finds the residual below the tolerance. The residual is also taken at `last` itself, to report,
  // without stopping there: where checks fall never depends on how a run is cut into calls.
  void run_until(index_t last, PhaseTimes* times = nullptr);

  index_t iteration() const { return iteration_; }
  bool converged() const { return converged_; }
  // max |u_k - u_(k-1)| over the field at the latest check (NaN before any), and that k.
  double residual() const { return residual_; }
  index_t residual_iteration() const { return residual_iteration_; }
  const Field<T, 2>& field() const { return u_; }
  // The iterate before the latest, u_(k-1), in its owned cells (its ghost cells hold whatever the
  // last step left there), once this solver has made an iteration: the second field, which the
  // last step read. For checking the last step (tessera-stencil --verify).
  const Field<T, 2>& previous() const { return v_; }

  // The halo exchange of the two fields (its path: halo().path()).
  const HaloExchange& halo() const { return *halo_; }
  // How the steps move the frame's cells, halo().path(): "peer-store" (under cuda with every
  // neighbour on the node and its GPU mappable: the overlapped step's frame sweep writes them
  // straight into the neighbours' ghost cells, their streams ordered by flags in device memory;
  // auto's choice where every rank can take it, TESSERA_HALO=peer-store asks for it), or the path
  // a HaloExchange takes otherwise (field_2d.hpp).
  const char* exchange_path() const;
  // Whether the last overlapped step on the peer-store path swept in one launch, the frame last
  // (kernels::stencil_2d_stored_frame's choice: under cuda on sm_90, every neighbour on another GPU,
  // the interior on the ring-of-rows sweep's 16-byte boundary and leaving no room for a frame
  // beside it, as the 9-point float sweep does), its flags polled and set by the frame's thread
  // blocks; otherwise the frame has a launch on a second queue of its own.
  bool frame_last() const { return frame_last_; }
  // The collectives of run_until(last) from the current iteration (collective_plan.hpp), unless it
  // converges first: each iteration's halo exchange (none on one rank), and an allreduce of the
  // residual at each check.
  CollectivePlan plan(index_t last) const;

 private:
  friend class detail::JacobiParts<T>;
  // The parts of one iteration (detail::JacobiParts, which measures them): step() is one iteration
  // without a residual (overlapped or not, whatever the options say); sweep() the stencil over the
  // whole block into the second field, without exchange or swap; sweep_split() the same cells cut as
  // the overlapped step cuts them (the interior, and the frame on the second queue, queued in that
  // step's order), without the exchange: the least an overlapped step can take; exchange() the halo
  // exchange of u alone. Each queues its work `times` times back to back, as run_until queues
  // iterations (the host queues the next while the device runs the last), and returns when all of
  // it is done.
  void step(bool overlap, index_t times = 1);
  void sweep(index_t times = 1);
  void sweep_split(index_t times = 1);
  void exchange(index_t times = 1);
  // Whether this rank has anything to exchange (one rank alone has not).
  bool exchanges() const { return halo_->peers() > 0 || halo_->bytes_sent() > 0; }
  void iterate(bool check);
  // Queues on `queue` the wait for the neighbours' stores of the last frame (peer-store path only):
  // before other work reads or writes the ghosts.
  void settle(const kernels::Queue& queue) const;
  kernels::StencilFrame frame() const;  // the cells of the block the overlapped step sweeps as its frame
  bool has_interior(const kernels::StencilFrame& frame) const;
  void sweep_parts(const T* in, T* out, T* change, bool exchange);
  index_t interior_left_column() const;
  double finish_check();

  Field<T, 2>& u_;
  Field<T, 2> v_;
  FieldLayout plane_;  // the 2-D layout of both (detail::plane_layout)
  StencilWeights<T> weights_;
  JacobiOptions options_;
  index_t iteration_ = 0;
  bool converged_ = false;
  double residual_ = std::numeric_limits<double>::quiet_NaN();
  index_t residual_iteration_ = -1;
  kernels::Queue edge_queue_;  // high priority under cuda; the field's queue under cpu
  std::unique_ptr<HaloExchange> halo_;
  T* change_ = nullptr;        // backend memory: max |u_k - u_(k-1)| of this block
  bool frame_last_ = false;  // the last overlapped step's frame at the end of the interior's launch
  // The frame's cells the overlapped step writes where the halo takes them as it sweeps them: on
  // the peer-store path into the neighbours' ghost cells, per field of the two (PeerStores'
  // field()); on the others where the halo's claim puts them, each step.
  std::array<std::vector<kernels::FrameCopy<T>>, 2> store_copies_;
  std::vector<kernels::FrameCopy<T>> frame_copies_;
};

namespace detail {
// The parts of one Jacobi iteration, for measuring them (tessera_bench_stencil_step) and testing
// them, outside the solver's interface: step(overlap, times), sweep(times), sweep_split(times) and
// exchange(times), as the solver's private members of those names describe.
template <class T>
class JacobiParts {
 public:
  explicit JacobiParts(Jacobi<T>& solver) : solver_(solver) {}
  void step(bool overlap, index_t times = 1) { solver_.step(overlap, times); }
  void sweep(index_t times = 1) { solver_.sweep(times); }
  void sweep_split(index_t times = 1) { solver_.sweep_split(times); }
  void exchange(index_t times = 1) { solver_.exchange(times); }

 private:
  Jacobi<T>& solver_;
};
}  // namespace detail

extern template DistArray<float> convolve<float>(const DistArray<float>&, std::span<const float>, Boundary, PhaseTimes*);
extern template DistArray<double> convolve<double>(const DistArray<double>&, std::span<const double>, Boundary,
                                                   PhaseTimes*);
extern template class Jacobi<float>;
extern template class Jacobi<double>;

}  // namespace tessera
