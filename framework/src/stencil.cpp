// convolve (1-D, halo exchange with the owners of the radius elements beyond each end of a block) and
// Jacobi (2-D, edge cells first, their exchange overlapped with the interior sweep).
#include "tessera/framework/algorithms/stencil.hpp"

#include "halo_peer_copy.hpp"
#include "halo_transport.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/framework/trace.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

// A run of consecutive halo elements of one rank that one rank owns: global elements [start,
// start + length) (in the array, after wrapping), at positions [position, position + length) of
// the halo (0 .. radius - 1 before the block, radius .. 2 radius - 1 after it).
struct HaloRun {
  int owner = 0;
  index_t start = 0;
  index_t length = 0;
  index_t position = 0;
};

// The runs of rank q's halo, in halo order. Elements beyond the ends are skipped (zero) or wrap
// once (periodic, radius <= n).
std::vector<HaloRun> halo_runs(const Partition& part, int q, index_t radius, Boundary boundary) {
  const index_t n = part.global_size(), offset = part.offset(q), local = part.local_size(q);
  std::vector<HaloRun> runs;
  if (n == 0) return runs;  // an empty array: no halo, whatever the boundary
  auto add = [&](index_t g, index_t end, index_t position) {
    while (g < end) {
      index_t wrapped = g;
      if (g < 0 || g >= n) {
        if (boundary == Boundary::zero) {
          const index_t next = g < 0 ? std::min<index_t>(0, end) : end;
          position += next - g;
          g = next;
          continue;
        }
        wrapped = g < 0 ? g + n : g - n;
      }
      const int owner = part.owner(wrapped);
      const index_t length = std::min(end - g, part.offset(owner) + part.local_size(owner) - wrapped);
      runs.push_back({owner, wrapped, length, position});
      g += length;
      position += length;
    }
  };
  add(offset - radius, offset, 0);
  add(offset + local, offset + local + radius, radius);
  return runs;
}

}  // namespace

template <class T>
DistArray<T> convolve(const DistArray<T>& a, std::span<const T> weights, Boundary boundary, PhaseTimes* times) {
  return detail::convolve_with<T>(a, weights, boundary, times, nullptr);
}

namespace detail {

template <class T>
DistArray<T> convolve_with(const DistArray<T>& a, std::span<const T> weights, Boundary boundary, PhaseTimes* times,
                           const ConvolveInner<T>& inner) {
  const Context& ctx = a.context();
  if (weights.size() % 2 == 0)
    throw UsageError("convolve: " + std::to_string(weights.size()) +
                     " weights; a kernel of radius r has 2 r + 1 weights (an odd count)");
  const auto radius = static_cast<index_t>(weights.size() - 1) / 2;
  const index_t n = a.global_size();
  if (boundary == Boundary::periodic && radius > n && n > 0)
    throw UsageError("convolve: radius " + std::to_string(radius) + " exceeds the array's " + std::to_string(n) +
                     " elements; a periodic boundary wraps the array at most once");
  const kernels::Queue& q = ctx.queue();
  DistArray<T> out(ctx, a.partition());
  const index_t local = a.local_size();
  const int me = ctx.rank();

  // With local >= 2 radius the ends are computed from two small buffers [halo | first 2 radius
  // elements] and [last 2 radius | halo], and the inner outputs straight from the block while the
  // halo travels; otherwise from one buffer [halo | block | halo].
  const bool split = local >= 2 * radius;
  const index_t buffer_elements = split ? 6 * radius : local + 2 * radius;
  std::unique_ptr<T, std::function<void(T*)>> buffer(nullptr, [q](T* p) { kernels::deallocate(q, p); });
  const T* block = a.local_data();
  T* result = out.local_data();
  auto halo_slot = [&](index_t position) -> T* {
    T* ends = buffer.get();
    if (split) return position < radius ? ends + position : ends + 5 * radius + (position - radius);
    return position < radius ? ends + position : ends + radius + local + (position - radius);
  };
  detail::exchange_phases(
      {"convolve1d", n}, ctx, times,
      // Plan: where each halo element comes from (its owner sends it straight from its block), and
      // where this rank's elements go.
      [&] {
        buffer.reset(static_cast<T*>(kernels::allocate(q, static_cast<std::size_t>(buffer_elements) * sizeof(T))));
        Exchange exchange(ctx, ExchangePattern::neighbours);
        for (int p = 0; p < ctx.size(); ++p)
          for (const HaloRun& run : halo_runs(a.partition(), p, radius, boundary)) {
            const std::size_t bytes = static_cast<std::size_t>(run.length) * sizeof(T);
            if (run.owner == me)
              exchange.send(p, block + (run.start - a.global_offset()), bytes,
                            detail::lead_of(static_cast<std::size_t>(run.start - a.global_offset()) * sizeof(T)));
            if (p == me)
              exchange.receive(run.owner, halo_slot(run.position), bytes,
                               detail::lead_of(static_cast<std::size_t>(run.start - a.partition().offset(run.owner)) *
                                               sizeof(T)));
          }
        return exchange;
      },
      // Pack: the block's ends beside the halo's slots (the slots outside the array zero).
      [&](Exchange&) {
        if (buffer_elements == 0) return;
        T* ends = buffer.get();
        kernels::fill(q, ends, buffer_elements, T(0));
        if (split) {
          kernels::copy_within_async(q, ends + radius, block, static_cast<std::size_t>(2 * radius) * sizeof(T));
          kernels::copy_within_async(q, ends + 3 * radius, block + local - 2 * radius,
                                     static_cast<std::size_t>(2 * radius) * sizeof(T));
        } else {
          kernels::copy_within_async(q, ends + radius, block, static_cast<std::size_t>(local) * sizeof(T));
        }
      },
      // Beside the exchange: the outputs that need no halo.
      [&] {
        if (!split) return;
        if (inner) inner(q, block + radius, local - 2 * radius, result + radius);
        else kernels::convolve_1d(q, block + radius, local - 2 * radius, weights, result + radius);
      },
      // Unpack: the two ends, now that the halo is here.
      [&](Exchange&) {
        T* ends = buffer.get();
        if (split) {
          kernels::convolve_1d(q, ends + radius, radius, weights, result);
          kernels::convolve_1d(q, ends + 4 * radius, radius, weights, result + local - radius);
        } else {
          kernels::convolve_1d(q, ends + radius, local, weights, result);
        }
      });
  return out;
}

template DistArray<float> convolve_with<float>(const DistArray<float>&, std::span<const float>, Boundary, PhaseTimes*,
                                               const ConvolveInner<float>&);
template DistArray<double> convolve_with<double>(const DistArray<double>&, std::span<const double>, Boundary,
                                                 PhaseTimes*, const ConvolveInner<double>&);

}  // namespace detail

CollectivePlan convolve_plan(const Partition& partition, int rank, index_t radius, Boundary boundary,
                             std::size_t element_bytes) {
  double sent = 0;
  for (int p = 0; p < partition.parts(); ++p)
    if (p != rank)
      for (const HaloRun& run : halo_runs(partition, p, radius, boundary))
        if (run.owner == rank) sent += static_cast<double>(run.length) * static_cast<double>(element_bytes);
  return {{Collective::neighbor_exchange, sent}};
}

// ---- Jacobi ----------------------------------------------------------------------------------------

namespace {

// The residual of a block as the integer of its bits (cpu/stencil.hpp): the maximum over ranks of
// those integers is the largest residual, a NaN above all.
template <class T>
std::uint64_t residual_bits(T value) {
  if constexpr (sizeof(T) == 4) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
  } else {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
  }
}

template <class T>
T from_residual_bits(std::uint64_t bits) {
  T value;
  if constexpr (sizeof(T) == 4) {
    const auto narrow = static_cast<std::uint32_t>(bits);
    std::memcpy(&value, &narrow, sizeof value);
  } else {
    std::memcpy(&value, &bits, sizeof value);
  }
  return value;
}

}  // namespace

template <class T>
Jacobi<T>::Jacobi(Field<T, 2>& u, const StencilWeights<T>& weights, const JacobiOptions& options, index_t iteration)
    : u_(u), weights_(weights), options_(options), iteration_(iteration) {
  if (u.ghost_width(0) < 1 || u.ghost_width(1) < 1)
    throw UsageError("Jacobi: the field needs ghost cells (a ghost width of at least 1, the stencil's radius)");
  if (u.ghost_width(0) != u.ghost_width(1))
    throw UsageError("Jacobi: the field's ghost widths differ (" + std::to_string(u.ghost_width(0)) + " and " +
                     std::to_string(u.ghost_width(1)) + "); the solver takes one width for both axes");
  if (u.boundary(0) != AxisBoundary::dirichlet || u.boundary(1) != AxisBoundary::dirichlet)
    throw UsageError("Jacobi: the field has a periodic axis; the solver takes Dirichlet boundaries (apply_stencil "
                     "takes periodic ones)");
  if (u.extent(0) < u.grid().extent(0) || u.extent(1) < u.grid().extent(1))
    throw UsageError("Jacobi: a field of " + std::to_string(u.extent(0)) + " x " + std::to_string(u.extent(1)) +
                     " cells on the process grid " + u.grid().text() + " leaves a rank without cells");
  if (options.check_every < 1)
    throw UsageError("Jacobi: residual checks every " + std::to_string(options.check_every) +
                     " iterations; at least every 1 is needed");
  plane_ = detail::plane_layout(u.layout());
  v_ = Field<T, 2>(u.grid(), {u.extent(0), u.extent(1)}, {u.ghost_width(0), u.ghost_width(1)});
  v_.copy_from(u);  // the outer ghosts: the Dirichlet values
  const kernels::Queue& q = u.context().queue();
  edge_queue_ = kernels::make_priority_queue(q);
  const StencilForm shape = weights.shape == StencilShape::five_point ? StencilForm::star : StencilForm::box;
  // The halo of the two fields the steps alternate between: the peer-store path where every rank
  // can take it (auto) or where asked for (PERFORMANCE.md has it measured against the others).
  halo_ = std::make_unique<HaloExchange>(plane_, shape, sizeof(T), u.context().with_queue(edge_queue_),
                                         std::array<const void*, 2>{u_.origin(), v_.origin()});
  change_ = static_cast<T*>(kernels::allocate(q, sizeof(T)));
  if (detail::PeerStores* stores = halo_->transport().stores())
    for (int f = 0; f < 2; ++f)
      for (const detail::PeerStores::Copy& c : stores->copies(f))
        store_copies_[static_cast<std::size_t>(f)].push_back({c.from, static_cast<T*>(c.to), c.to_ld});
  exchange();  // the ghosts of the first iterate
}

template <class T>
Jacobi<T>::~Jacobi() {
  const kernels::Queue& q = u_.context().queue();
  settle(q);
  q.synchronize();
  kernels::deallocate(q, change_);
  halo_.reset();
  if (edge_queue_.stream != q.stream) kernels::destroy_queue(edge_queue_);
}

template <class T>
void Jacobi<T>::iterate(bool check) {
  const kernels::Queue& q = u_.context().queue();
  const trace::Range range({"jacobi: iteration", plane_.rows * plane_.cols}, u_.context());
  if (check) kernels::fill(q, change_, 1, T(0));
  T* change = check ? change_ : nullptr;
  const T* in = u_.origin();
  T* out = v_.origin();
  auto sweep_whole = [&] {
    kernels::stencil_2d(q, in, plane_.ld, out, plane_.ld, plane_.local_rows(), plane_.local_cols(), weights_, change);
  };
  if (!exchanges()) {
    sweep_whole();  // one rank: nothing to exchange, nothing to overlap
  } else if (!options_.overlap) {
    settle(q);
    sweep_whole();
    kernels::queue_wait(edge_queue_, q);
    halo_->run(out);
    kernels::queue_wait(q, edge_queue_);
  } else {
    if (detail::PeerStores* stores = halo_->transport().stores()) {
      // The peer-store path: the frame's sweep writes its cells into the neighbours' ghost cells,
      // waiting for and setting the flags itself. The kernels choose how the frame runs beside the
      // interior (one launch, the frame last, or its own launch on the edge queue).
      const auto& copies = store_copies_[static_cast<std::size_t>(stores->field(out))];
      frame_last_ = kernels::stencil_2d_stored_frame(q, edge_queue_, in, plane_.ld, out, plane_.ld, plane_.local_rows(),
                                                     plane_.local_cols(), frame(), weights_, change, copies,
                                                     stores->flags(), stores->flags_polled());
      halo_->transport().published_by_kernel();
    } else {
      kernels::queue_wait(edge_queue_, q);
      sweep_parts(in, out, change, true);
      kernels::queue_wait(q, edge_queue_);
    }
  }
  std::swap(u_, v_);
  ++iteration_;
}

template <class T>
void Jacobi<T>::settle(const kernels::Queue& queue) const {
  halo_->transport().settle(queue);
}

template <class T>
const char* Jacobi<T>::exchange_path() const {
  return halo_->path();
}

template <class T>
kernels::StencilFrame Jacobi<T>::frame() const {
  const index_t w = static_cast<index_t>(plane_.ghost_width);
  const FieldLayout& l = plane_;
  return {l.process_row > 0 ? w : 0, l.process_row < l.grid_rows - 1 ? w : 0,
          l.process_col > 0 ? interior_left_column() : 0, l.process_col < l.grid_cols - 1 ? w : 0};
}

template <class T>
bool Jacobi<T>::has_interior(const kernels::StencilFrame& frame) const {
  return plane_.local_rows() > frame.top + frame.bottom && plane_.local_cols() > frame.left + frame.right;
}

// The cells the neighbours' ghosts hold lie within w of the block's edges that have a neighbour
// (the frame; on the left widened to the interior's aligned first column; an edge on the domain's
// boundary has none and belongs to the interior): the frame on the edge queue, then (exchange) its
// exchange beside the interior sweep. The caller has made the edge queue wait for the last
// iteration's interior sweep, which read what this one overwrites, and makes the field's queue wait
// for the edge queue after.
template <class T>
void Jacobi<T>::sweep_parts(const T* in, T* out, T* change, bool exchange) {
  const kernels::Queue& q = u_.context().queue();
  const index_t lr = plane_.local_rows(), lc = plane_.local_cols(), ld = plane_.ld;
  const kernels::StencilFrame frame = this->frame();
  const bool has_interior = this->has_interior(frame);
  auto sweep_interior = [&] {
    const index_t at = frame.top * ld + frame.left;
    if (has_interior)
      kernels::stencil_2d(q, in + at, ld, out + at, ld, lr - frame.top - frame.bottom, lc - frame.left - frame.right,
                          weights_, change);
  };
  // The frame writes the cells the exchange sends where the exchange takes them (its send buffer,
  // or the neighbours' receive slots) as it computes them (no pass of their own: on the edge queue,
  // beside the interior, every pass waits long for memory); a block with no interior is swept whole
  // and its cells sent after. (The peer-store path's step is kernels::stencil_2d_stored_frame's.)
  const bool fused = exchange && has_interior;
  auto sweep_frame = [&] {
    if (has_interior) {
      frame_copies_.clear();
      if (fused) {
        const std::span<const HaloPlace> places = halo_->claim(out);  // queued before the frame
        const std::span<const kernels::Rectangle> sends = halo_->sends();
        for (std::size_t i = 0; i < sends.size(); ++i)
          if (!detail::HaloTransport::lies_at(places[i], sends[i], out, sizeof(T)))
            frame_copies_.push_back({sends[i], static_cast<T*>(places[i].to), places[i].ld});
      }
      kernels::stencil_2d_frame(edge_queue_, in, ld, out, ld, lr, lc, frame, weights_, change,
                                std::span<const kernels::FrameCopy<T>>(frame_copies_));
    } else {
      kernels::stencil_2d(edge_queue_, in, ld, out, ld, lr, lc, weights_, change);
    }
  };
  auto start_exchange = [&] {
    if (fused) halo_->publish(out);
    else halo_->start(out);
  };
  if (q.backend == Backend::cpu) {
    // On the host the interior runs while MPI moves the frame.
    sweep_frame();
    if (exchange) start_exchange();
    sweep_interior();
  } else {
    // Under cuda the interior is queued first, so that the device starts it at once and sweeps it
    // while the host queues the frame and its exchange (and, on the staged and CUDA-aware paths,
    // waits for them).
    sweep_interior();
    sweep_frame();
    if (exchange) start_exchange();
  }
  if (exchange) halo_->finish(out);
}

template <class T>
void Jacobi<T>::sweep_split(index_t times) {
  const kernels::Queue& q = u_.context().queue();
  settle(edge_queue_);
  for (index_t i = 0; i < times; ++i) {
    kernels::queue_wait(edge_queue_, q);
    sweep_parts(u_.origin(), v_.origin(), nullptr, false);
    kernels::queue_wait(q, edge_queue_);
  }
  q.synchronize();
}

// The first column of the interior: the ghost width, moved right to the next 16-byte boundary of
// the input and output rows where both rows reach one at the same column (the aligned sweep is the
// faster one on sm_90), as long as a column of interior is left.
template <class T>
index_t Jacobi<T>::interior_left_column() const {
  const index_t w = static_cast<index_t>(plane_.ghost_width), ld = plane_.ld;
  constexpr std::uintptr_t kBoundary = 16;
  auto shift = [&](const T* p) { return reinterpret_cast<std::uintptr_t>(p + w * ld + w) % kBoundary; };
  const std::uintptr_t in_shift = shift(u_.origin()), out_shift = shift(v_.origin());
  if (in_shift != out_shift || in_shift % sizeof(T) != 0) return w;
  const index_t move = static_cast<index_t>(((kBoundary - in_shift) % kBoundary) / sizeof(T));
  return plane_.local_cols() > w + move + w ? w + move : w;
}

template <class T>
CollectivePlan Jacobi<T>::plan(index_t last) const {
  CollectivePlan plan;
  for (index_t next = iteration_ + 1; next <= last; ++next) {
    if (exchanges()) plan.push_back(halo_->plan().front());
    if (next % options_.check_every == 0 || next == last) plan.push_back({Collective::allreduce, sizeof(std::uint64_t)});
  }
  return plan;
}

template <class T>
double Jacobi<T>::finish_check() {
  T local{};
  kernels::copy_to_host(u_.context().queue(), &local, change_, sizeof(T));
  const std::uint64_t bits = u_.context().comm().allreduce(residual_bits(local), ReduceOp::max);
  return static_cast<double>(from_residual_bits<T>(bits));
}

template <class T>
void Jacobi<T>::run_until(index_t last, PhaseTimes* times) {
  const kernels::Queue& q = u_.context().queue();
  Stopwatch watch;
  double communication = 0;
  while (iteration_ < last && !converged_) {
    const index_t next = iteration_ + 1;
    const bool scheduled = next % options_.check_every == 0;
    const bool check = scheduled || next == last;
    iterate(check);
    if (check) {
      Stopwatch reduce;
      const trace::Range range("jacobi: residual");
      residual_ = finish_check();
      communication += reduce.seconds();
      residual_iteration_ = iteration_;
      if (scheduled && residual_ < options_.tolerance) converged_ = true;
    }
  }
  settle(q);  // u's ghosts complete when the run returns
  q.synchronize();
  if (times) {
    const double total = watch.seconds();
    times->communication += communication;
    times->local += total - communication;
  }
}

template <class T>
void Jacobi<T>::step(bool overlap, index_t times) {
  const bool saved = options_.overlap;
  options_.overlap = overlap;
  for (index_t i = 0; i < times; ++i) iterate(false);
  options_.overlap = saved;
  settle(u_.context().queue());
  u_.context().queue().synchronize();
}

template <class T>
void Jacobi<T>::sweep(index_t times) {
  const kernels::Queue& q = u_.context().queue();
  settle(q);
  for (index_t i = 0; i < times; ++i)
    kernels::stencil_2d(q, u_.origin(), plane_.ld, v_.origin(), plane_.ld, plane_.local_rows(), plane_.local_cols(), weights_);
  q.synchronize();
}

template <class T>
void Jacobi<T>::exchange(index_t times) {
  const kernels::Queue& q = u_.context().queue();
  if (!exchanges()) return;
  settle(edge_queue_);
  kernels::queue_wait(edge_queue_, q);
  for (index_t i = 0; i < times; ++i) halo_->run(u_.origin());
  kernels::queue_wait(q, edge_queue_);
  q.synchronize();
}

template DistArray<float> convolve<float>(const DistArray<float>&, std::span<const float>, Boundary, PhaseTimes*);
template DistArray<double> convolve<double>(const DistArray<double>&, std::span<const double>, Boundary, PhaseTimes*);
template class Jacobi<float>;
template class Jacobi<double>;

}  // namespace tessera
