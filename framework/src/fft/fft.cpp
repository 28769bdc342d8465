// The distributed FFT plan (fft.hpp): a schedule of local batched 1-D transforms and all-to-all
// exchanges that swap which axis is cut, made once and run forwards or backwards.
#include "tessera/framework/fft.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "local_fft.hpp"
#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/transpose.hpp"

namespace tessera::fft {

Norm parse_norm(const std::string& text) {
  if (text == "backward") return Norm::backward;
  if (text == "ortho") return Norm::ortho;
  if (text == "forward") return Norm::forward;
  throw UsageError("fft: norm '" + text + "' is not one of backward, ortho, forward");
}

const char* norm_name(Norm norm) {
  switch (norm) {
    case Norm::backward: return "backward";
    case Norm::ortho: return "ortho";
    case Norm::forward: return "forward";
  }
  return "?";
}

double nominal_flops(const std::vector<index_t>& shape, Kind kind, int axis) {
  double n = 1;
  if (axis >= 0) {
    n = static_cast<double>(shape.at(static_cast<std::size_t>(axis)));
  } else {
    for (index_t s : shape) n *= static_cast<double>(s);
  }
  double total = 1;
  for (index_t s : shape) total *= static_cast<double>(s);
  const double batches = total / n;
  const double flops = n > 1 ? 5.0 * n * std::log2(n) * batches : 0.0;
  return kind == Kind::r2c ? flops / 2 : flops;
}

namespace detail {
namespace {

constexpr std::size_t kPieceAlignment = 256;
// Options::exchange_chunks: at most, and the cuda backend's default.
constexpr int kMaxChunks = 64;
constexpr int kCudaChunks = 4;
// force_cpu_schedule's setting.
CpuSchedule cpu_schedule = CpuSchedule::chosen;

// Backend memory that frees itself on its queue.
struct FreeOnQueue {
  kernels::Queue queue;
  void operator()(void* p) const { kernels::deallocate(queue, p); }
};
using QueueBuffer = std::unique_ptr<void, FreeOnQueue>;

// Which axes are cut, and the global lengths, at one point of the schedule.
struct State {
  int ndim = 2;
  std::array<index_t, 3> n{1, 1, 1};
  std::array<int, 3> dist{-1, -1, -1};  // -1 whole; 0 or 1: the grid dimension that cuts the axis
  bool real = false;                    // elements are Real (before the r2c step)
  bool swapped = false;                 // axes 0 and 1 swapped in memory (Order::swapped)
};

// The axes in the order they lie in memory, slowest first.
std::array<int, 3> memory_order(const State& s) {
  if (s.swapped) return {1, 0, 2};
  return {0, 1, 2};
}

struct Step {
  bool local = true;
  // A local step that moves the block from natural order to swapped (axes 0 and 1 exchanged) and
  // transforms nothing, unless folded into the exchange before it (swap_folded: that exchange's
  // unpack transposes each piece into place).
  bool transpose = false;
  bool swap_folded = false;
  State before, after;
  // Local steps.
  int axis = 0;
  LocalKind forward_kind = LocalKind::forward, inverse_kind = LocalKind::inverse;
  LocalShape shape;
  std::unique_ptr<LocalFft> forward_fft, inverse_fft;
  // The same transforms in place (cpu, c2c with the same layout on both sides; null elsewhere:
  // in_place_plan), run where the step's input is a buffer of the plan's or the caller's output. On
  // a transposition (cpu, one rank's swapped order where measured planning chose it or
  // CpuSchedule::in_place forces it): FFTW's transposition in place, forward [l0][l1] -> [l1][l0]
  // and inverse.
  std::unique_ptr<LocalFft> forward_in_place, inverse_in_place;
  // A local step whose forward output goes into the exchange after it (packs_by_batch): the
  // forward transform of one batch (cpu), run batch by batch into `batch_out`, each batch's pieces
  // copied from there into the exchange's buffers and the new block while they are in cache. Such
  // a step has no forward_fft.
  std::unique_ptr<LocalFft> forward_batch;
  QueueBuffer batch_out;
  // Exchanges: along grid dimension g, axis `whole` (cut before) becomes whole and axis `cut`
  // (whole before) is cut. The exchanges are made once and run each time.
  int g = 0, whole = 0, cut = 0;
  std::optional<Exchange> forward_exchange, inverse_exchange;
  std::vector<std::size_t> forward_send, forward_recv, inverse_send, inverse_recv;  // piece per peer
  // An exchange whose pieces land straight in the destination block is listed for one destination
  // and kept while calls name the same one (the schedule's work buffer, unless the exchange is the
  // last step): that destination, forward and inverse.
  void* straight_destination[2] = {nullptr, nullptr};
  // On an exchange that makes axis 0 whole after a local step of axes 1 onwards (batches along
  // axis 0): the pair run in chunks of axis 0's rows (Options::exchange_chunks), chunk s's exchange
  // travelling while the local transforms of chunk s + 1 run (forward) or of chunk s - 1 (inverse).
  struct Chunks {
    std::map<index_t, std::unique_ptr<LocalFft>> forward_fft, inverse_fft;  // by chunk length
    std::vector<Exchange> forward, inverse;                                  // by chunk
    std::vector<std::vector<std::size_t>> forward_send, forward_recv, inverse_send, inverse_recv;
    void* destination = nullptr;  // the one the forward exchanges' straight receives are listed for
    index_t granule = 1;          // chunks start at multiples of this many rows (chunk_granule)
  };
  std::unique_ptr<Chunks> chunks;
};

std::string dims_text(const std::vector<index_t>& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

}  // namespace

class PlanImpl {
 public:
  PlanImpl(const Context& ctx, std::vector<index_t> shape, Kind kind, const Options& options, std::size_t real_bytes)
      : ctx_(ctx), shape_(std::move(shape)), kind_(kind), options_(options), real_bytes_(real_bytes) {
    const int ndim = static_cast<int>(shape_.size());
    if (ndim != 2 && ndim != 3)
      throw UsageError("fft: the shape " + dims_text(shape_) + " has " + std::to_string(ndim) +
                       " axes; a plan takes 2 or 3");
    for (index_t s : shape_)
      if (s < 1) throw UsageError("fft: the shape " + dims_text(shape_) + " has an axis shorter than 1");
    if (options_.axis != -1 && (options_.axis < 0 || options_.axis >= ndim))
      throw UsageError("fft: axis " + std::to_string(options_.axis) + " is outside the " + std::to_string(ndim) +
                       "-D array");
    if (options_.axis != -1 && ndim != 2)
      throw UsageError("fft: a batched 1-D transform (axis " + std::to_string(options_.axis) +
                       ") takes a 2-D array, not " + dims_text(shape_));
    const bool pencil = options_.decomposition == Decomposition::pencil;
    if (pencil && (ndim != 3 || options_.axis != -1))
      throw UsageError("fft: the pencil decomposition takes a 3-D transform, not " +
                       std::string(options_.axis != -1 ? "a batched 1-D transform of " : "") + dims_text(shape_) +
                       " (use the slab decomposition)");
    if (!pencil && (options_.grid_rows != 0 || options_.grid_cols != 0) &&
        (options_.grid_rows != ctx.size() || options_.grid_cols != 1))
      throw UsageError("fft: the slab decomposition takes no process grid (grid " + std::to_string(options_.grid_rows) +
                       "x" + std::to_string(options_.grid_cols) + " given)");
    if (pencil && (options_.grid_rows != 0 || options_.grid_cols != 0) &&
        static_cast<long long>(options_.grid_rows) * options_.grid_cols != ctx.size())
      throw UsageError("fft: the pencil grid " + std::to_string(options_.grid_rows) + "x" +
                       std::to_string(options_.grid_cols) + " does not match the " + std::to_string(ctx.size()) +
                       " ranks");
    if (options_.output_order == Order::swapped && (options_.return_to_input_layout || options_.axis == 1))
      throw UsageError(std::string("fft: the swapped output order needs axis 0 transformed last, which ") +
                       (options_.return_to_input_layout ? "return_to_input_layout" : "a batched 1-D transform along axis 1") +
                       " does not do");
    if (options_.exchange_chunks < 0 || options_.exchange_chunks > kMaxChunks)
      throw UsageError("fft: exchange_chunks " + std::to_string(options_.exchange_chunks) + " is outside 0.." +
                       std::to_string(kMaxChunks));
    chunks_ = options_.exchange_chunks > 0 ? options_.exchange_chunks
                                           : ctx.backend() == Backend::cuda ? kCudaChunks : 1;
    if (ctx.backend() == Backend::cuda && !have_cufft())
      throw UsageError("fft: the cuda backend needs cuFFT, which this build does not have");
    grid_ = pencil ? ProcessGrid::create(ctx, options_.grid_rows, options_.grid_cols)
                   : ProcessGrid::create(ctx, ctx.size(), 1);
    gdim_ = {grid_.rows(), grid_.cols()};
    coord_ = {grid_.process_row(), grid_.process_col()};

    // The transformed axes, and the real axis (the last of them) for r2c.
    std::vector<int> axes;
    if (options_.axis >= 0) axes.push_back(options_.axis);
    else
      for (int k = 0; k < ndim; ++k) axes.push_back(k);
    real_axis_ = kind_ == Kind::r2c ? axes.back() : -1;
    norm_n_ = 1;
    for (int k : axes) norm_n_ *= static_cast<double>(shape_[static_cast<std::size_t>(k)]);
    output_shape_ = shape_;
    if (real_axis_ >= 0) output_shape_[static_cast<std::size_t>(real_axis_)] = shape_[static_cast<std::size_t>(real_axis_)] / 2 + 1;

    State s;
    s.ndim = ndim;
    for (int k = 0; k < ndim; ++k) s.n[static_cast<std::size_t>(k)] = shape_[static_cast<std::size_t>(k)];
    s.dist[0] = 0;
    if (pencil) s.dist[1] = 1;
    s.real = kind_ == Kind::r2c;
    input_ = s;
    std::vector<int> pending = axes;
    std::vector<std::pair<int, std::pair<int, int>>> swaps;  // g, (whole, cut), in order
    while (!pending.empty()) {
      int p = -1;
      bool swap = false;
      if (s.real) {
        p = real_axis_;
        swap = s.dist[static_cast<std::size_t>(p)] != -1;
      } else {
        for (int k : pending)
          if (s.dist[static_cast<std::size_t>(k)] == -1) p = std::max(p, k);
        if (p < 0) {
          p = *std::max_element(pending.begin(), pending.end());
          swap = true;
        }
      }
      if (!swap) {
        // Order::swapped: the block swaps axes 0 and 1 just before axis 0, the last, is
        // transformed where an exchange has just made axis 0 whole (its unpack writes the swapped
        // order: fold_transposes); otherwise after the last transform, a pass of its own, so that
        // the local transforms stay one plan (one rank, float 512^3 on an H200: cuFFT's 3-D plan
        // and the pass 2.35 ms, its 2-D planes, the pass and a strided axis 0 4.34).
        const bool swap_here = p == 0 && options_.output_order == Order::swapped;
        const bool after_exchange = !steps_.empty() && !steps_.back().local && steps_.back().whole == 0 && steps_.back().cut == 1;
        if (swap_here && after_exchange) add_transpose(s);
        add_local(s, p);
        if (swap_here && !after_exchange) add_transpose(s);
        pending.erase(std::find(pending.begin(), pending.end(), p));
        continue;
      }
      // The whole axis nearest to p takes p's cut.
      int q = -1;
      for (int k = 0; k < ndim; ++k)
        if (s.dist[static_cast<std::size_t>(k)] == -1 &&
            (q < 0 || std::abs(k - p) < std::abs(q - p) || (std::abs(k - p) == std::abs(q - p) && k > q)))
          q = k;
      TESSERA_ASSERT(q >= 0, "fft: no whole axis to cut");
      const int g = s.dist[static_cast<std::size_t>(p)];
      add_swap(s, g, p, q);
      swaps.push_back({g, {p, q}});
    }
    if (options_.return_to_input_layout)
      for (auto it = swaps.rbegin(); it != swaps.rend(); ++it) add_swap(s, it->first, it->second.second, it->second.first);
    output_ = s;
    merge_local_steps();
    fold_transposes();

    // Work buffers: the largest block of the schedule, twice; the local plans are made on them.
    std::size_t bytes = 16;
    for (const Step& step : steps_) bytes = std::max({bytes, block_bytes(step.before), block_bytes(step.after)});
    buffer_bytes_ = bytes;
    // FFTW plans on them (cpu); under cuda they are made at the first call that needs them (one
    // rank's whole transform needs none).
    if (ctx_.backend() == Backend::cpu) {
      work(0);
      work(1);
      if (options_.effort == Effort::measure || cpu_schedule != CpuSchedule::chosen) choose_swap_folds();
    }
    std::size_t work_area = 0;
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      Step& step = steps_[i];
      // A pipelined pair runs on its chunks' plans and exchanges alone (make_chunks, below).
      const bool in_pair = (i + 1 < steps_.size() && pipelined(step, steps_[i + 1])) ||
                           (i > 0 && pipelined(steps_[i - 1], step));
      if (in_pair) continue;
      if (!step.local) {
        make_exchange(step, true);
        make_exchange(step, false);
        continue;
      }
      if (step.transpose || step.shape.a * step.shape.s == 0) continue;  // nothing to transform
      if (ctx_.backend() == Backend::cuda) {
        step.forward_fft = real_bytes_ == 4 ? make_cufft<float>(ctx_.queue(), step.forward_kind, step.shape)
                                            : make_cufft<double>(ctx_.queue(), step.forward_kind, step.shape);
        step.inverse_fft = real_bytes_ == 4 ? make_cufft<float>(ctx_.queue(), step.inverse_kind, step.shape)
                                            : make_cufft<double>(ctx_.queue(), step.inverse_kind, step.shape);
      } else {
        const bool measure = options_.effort == Effort::measure;
        const bool same_layout = step.shape.swapped_outer == 0;
        if (i + 1 < steps_.size() && packs_by_batch(step, steps_[i + 1])) {
          LocalShape one = step.shape;
          one.a = 1;
          const std::size_t out_bytes = batch_bytes(one, step.forward_kind, false);
          step.batch_out = QueueBuffer(kernels::allocate(ctx_.queue(), std::max<std::size_t>(out_bytes, 16)),
                                       FreeOnQueue{ctx_.queue()});
          void* const batch = step.batch_out.get();
          step.forward_batch = fftw(step.forward_kind, one, work(0), batch, measure);
        } else {
          step.forward_fft = fftw(step.forward_kind, step.shape, work(0), work(1), measure);
          // In place where the step may run so (never the first of its direction: it reads the caller's input).
          if (same_layout && step.forward_kind == LocalKind::forward && i > 0)
            step.forward_in_place = fftw(LocalKind::forward, step.shape, work(0), work(0), measure);
        }
        step.inverse_fft = fftw(step.inverse_kind, step.shape, work(0), work(1), measure);
        if (same_layout && step.inverse_kind == LocalKind::inverse && i + 1 < steps_.size())
          step.inverse_in_place = fftw(LocalKind::inverse, step.shape, work(0), work(0), measure);
      }
      work_area = std::max({work_area, step.forward_fft ? step.forward_fft->work_bytes() : 0, step.inverse_fft->work_bytes()});
    }
    for (std::size_t i = 0; i + 1 < steps_.size(); ++i)
      if (pipelined(steps_[i], steps_[i + 1])) work_area = std::max(work_area, make_chunks(steps_[i], steps_[i + 1]));
    // One scratch area for every local plan (cuFFT's): the steps run one after another.
    if (work_area > 0) {
      scratch_ = kernels::allocate(ctx_.queue(), work_area);
      for (Step& step : steps_)
        for (LocalFft* fft : {step.forward_fft.get(), step.inverse_fft.get()})
          if (fft) fft->set_work_area(scratch_);
      for (Step& step : steps_)
        if (step.chunks)
          for (auto* plans : {&step.chunks->forward_fft, &step.chunks->inverse_fft})
            for (auto& [length, fft] : *plans) fft->set_work_area(scratch_);
    }
  }

  // Consecutive local steps over the trailing axes (k, k + 1, ..., last, transformed last first)
  // become one multi-axis transform: one FFTW or cuFFT plan of contiguous batches instead of
  // strided ones (a slab's two local axes; all axes where one rank holds the array).
  void merge_local_steps() {
    std::vector<Step> merged;
    for (Step& step : steps_) {
      if (!merged.empty() && step.local && !step.transpose && merged.back().local && !merged.back().transpose) {
        Step& group = merged.back();
        const int lowest = group.axis;
        const bool trailing = group.shape.s == 1 && group.shape.rank < 3 && step.axis == lowest - 1 &&
                              step.forward_kind == LocalKind::forward;
        if (trailing) {
          // Axes step.axis .. last, lengths in order; A: the local lengths before step.axis.
          for (int d = group.shape.rank; d > 0; --d) group.shape.n[d] = group.shape.n[d - 1];
          group.shape.n[0] = step.shape.n[0];
          group.shape.rank += 1;
          group.shape.a = step.shape.a;
          group.axis = step.axis;
          group.after = step.after;
          continue;
        }
      }
      merged.push_back(std::move(step));
    }
    steps_ = std::move(merged);
  }

  // A transposition into the swapped order is folded into the exchange before it where that
  // exchange makes axis 0 whole and cuts axis 1: its unpack transposes each piece into place
  // instead of copying it (on the cpu, choose_swap_folds may move it into the transform after
  // it). Elsewhere (it then ends the schedule) it stays a pass of its own (on the cpu,
  // choose_split_transforms may move it into axis 0's transform): FFTW writing the swapped
  // order through its output strides measured no faster than its natural order and the pass (one
  // core, float 64^3: 0.66 ms against 0.39 + 0.09; 128^3, one rank-3 plan: 7.2-7.3 against 7.0-7.1
  // + 0.1-0.2), and cuFFT's layouts cannot swap axes.
  void fold_transposes() {
    for (std::size_t i = 1; i < steps_.size(); ++i) {
      if (!steps_[i].transpose) continue;
      Step& prev = steps_[i - 1];
      if (prev.local || prev.whole != 0 || prev.cut != 1) continue;
      prev.swap_folded = true;
      prev.after = steps_[i].after;
      steps_.erase(steps_.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
    }
  }

  // The cpu with measured planning: where an exchange's unpack writes the swapped order and axis
  // 0's c2c transform follows, the transposition may instead go into that transform, which then
  // reads the exchange's straight receives in the natural order and writes the swapped one (one
  // FFTW plan, LocalShape::swapped_outer). Whichever of the two measures faster on this rank's
  // block, the transform alone against a transposition of the block and the transform of the
  // swapped one in place (2 ranks, one core each, float 128^3, both timed out of place: 1.41-1.46
  // ms against 0.30-0.41 + 1.56-1.57; at 256^3 the natural side's stride of 256 KiB made the single
  // plan twice as slow). Each rank
  // chooses for itself: the messages are the same either way.
  void choose_swap_folds() {
    choose_split_transforms();
    for (std::size_t i = 1; i < steps_.size(); ++i) {
      Step& x = steps_[i - 1];
      Step& step = steps_[i];
      if (x.local || !x.swap_folded || !step.local || step.transpose || step.axis != 0 || step.shape.rank != 1 ||
          step.forward_kind != LocalKind::forward || step.shape.a * step.shape.s == 0)
        continue;
      State natural = x.after;
      natural.swapped = false;
      LocalShape folded = step.shape;  // [A, N, S] of the swapped block: A the local length of axis 1
      folded.swapped_outer = folded.a;
      folded.s *= folded.a;
      folded.a = 1;
      if (cpu_schedule == CpuSchedule::chosen) {
        auto plain = fftw(LocalKind::forward, step.shape, work(1), work(1), true);
        auto fused = fftw(LocalKind::forward, folded, work(0), work(1), true);
        const index_t l0 = range(natural, 0).second, l1 = range(natural, 1).second;
        const std::size_t rest = static_cast<std::size_t>(local_product(natural, 2, natural.ndim)) * element_bytes(natural);
        const double t_unpacked = best_of_three([&] {
          kernels::transpose_bytes(ctx_.queue(), work(0), l0, l1, l1, work(1), l0, rest);
          plain->execute(work(1), work(1));  // in place, as the step runs after an exchange
        });
        const double t_fused = best_of_three([&] { fused->execute(work(0), work(1)); });
        if (t_fused >= t_unpacked) continue;
      } else if (cpu_schedule != CpuSchedule::transform) {
        continue;
      }
      x.swap_folded = false;
      x.after = natural;
      step.before = natural;
      step.shape = folded;
    }
  }

  // The cpu with measured planning at one rank, where one plan transforms every axis (and, in the
  // swapped order, a transposition follows it). The other schedules stop that transform short of
  // axis 0 (the planes: axes 1 onwards, in batches along axis 0); then, in the natural order, axis
  // 0's transform runs in place; in the swapped order, axis 0's c2c transform reads the natural
  // order and writes the swapped one (LocalShape::swapped_outer), or a transposition follows the
  // planes and axis 0's transform runs in place over the contiguous [n0][rest] panels, that
  // transposition out of place or (FFTW-MPI's one-rank schedule) in place on the planes' output by
  // FFTW's own. Whichever measures fastest on the block. Swapped, float 128^3, one core,
  // best of 10-20: the 2-core VM 10.3 (one plan), 8.7 (swapped write), 7.8-8.1 ms (panels); a
  // 16-core Xeon 14.8-16.7, 21.3, 14.5-16.1 (its strided transforms out of place take 2-3x their
  // time in place).
  void choose_split_transforms() {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      Step& whole = steps_[i];
      if (!whole.local || whole.transpose || whole.axis != 0 || whole.shape.rank < 2 || whole.shape.a != 1 ||
          whole.shape.s != 1 || whole.shape.full_elements() == 0)
        continue;
      const bool swapped = i + 1 < steps_.size() && steps_[i + 1].transpose;
      Step planes;  // axes 1 onwards, a batch per index of axis 0
      planes.local = true;
      planes.axis = 1;
      planes.before = whole.before;
      planes.after = whole.after;
      planes.forward_kind = whole.forward_kind;
      planes.inverse_kind = whole.inverse_kind;
      planes.shape.a = whole.shape.n[0];
      planes.shape.rank = whole.shape.rank - 1;
      for (int d = 1; d < whole.shape.rank; ++d) planes.shape.n[d - 1] = whole.shape.n[d];
      const State& natural = whole.after;
      const State done = swapped ? steps_[i + 1].after : natural;
      const index_t l0 = range(natural, 0).second, l1 = range(natural, 1).second;
      const index_t rest = local_product(natural, 2, natural.ndim);
      Step swapped_write;  // natural [n0, l1, rest] in, swapped [l1, n0, rest] out
      swapped_write.local = true;
      swapped_write.axis = 0;
      swapped_write.before = natural;
      swapped_write.after = done;
      swapped_write.shape.n[0] = whole.shape.n[0];
      swapped_write.shape.swapped_outer = l1;
      swapped_write.shape.s = l1 * rest;
      Step panels;  // in place: the swapped [l1, n0, rest], or the natural [n0, l1 rest]
      panels.local = true;
      panels.axis = 0;
      panels.before = done;
      panels.after = done;
      panels.shape.a = swapped ? l1 : 1;
      panels.shape.n[0] = whole.shape.n[0];
      panels.shape.s = swapped ? rest : l1 * rest;
      // FFTW's transpositions in place of the swapped order's block, forward and inverse (null where
      // FFTW has none for the shape).
      std::unique_ptr<LocalFft> forward_flip, inverse_flip;
      const bool measure = options_.effort == Effort::measure;
      auto make_flips = [&] {
        if (!swapped) return;
        const index_t reals = rest * static_cast<index_t>(element_bytes(natural) / real_bytes_);
        forward_flip = fftw_transposition(l0, l1, reals, work(1), measure);
        inverse_flip = fftw_transposition(l1, l0, reals, work(1), measure);
        if (!forward_flip || !inverse_flip) forward_flip.reset(), inverse_flip.reset();
      };
      enum { kWhole, kSwappedWrite, kPanels, kPanelsInPlace } way = kWhole;
      if (cpu_schedule == CpuSchedule::chosen) {
        auto plan = [&](LocalKind kind, const LocalShape& shape, void* in, void* out) { return fftw(kind, shape, in, out, true); };
        auto one = plan(whole.forward_kind, whole.shape, work(0), work(1));
        auto first = plan(planes.forward_kind, planes.shape, work(0), work(1));
        auto panels_in_place = plan(LocalKind::forward, panels.shape, work(0), work(0));
        std::unique_ptr<LocalFft> write_swapped;
        if (swapped) write_swapped = plan(LocalKind::forward, swapped_write.shape, work(1), work(0));
        std::memset(work(0), 0, buffer_bytes_);  // FFTW's planning leaves its own data (no NaN, no subnormal)
        std::memset(work(1), 0, buffer_bytes_);
        const std::size_t row = static_cast<std::size_t>(rest) * element_bytes(natural);
        // The swapped order's transposition, work(1) -> work(0).
        auto into_place = [&] {
          if (swapped) kernels::transpose_bytes(ctx_.queue(), work(1), l0, l1, l1, work(0), l0, row);
        };
        const double t_whole = best_of_three([&] {
          one->execute(work(0), work(1));
          into_place();
        });
        const double t_panels = best_of_three([&] {
          first->execute(work(0), work(1));
          if (swapped) into_place();
          panels_in_place->execute(swapped ? work(0) : work(1), swapped ? work(0) : work(1));
        });
        const double t_write =
            swapped ? best_of_three([&] {
              first->execute(work(0), work(1));
              write_swapped->execute(work(1), work(0));
            })
                    : 1e300;
        make_flips();
        std::memset(work(1), 0, buffer_bytes_);  // the flips' planning too
        const double t_flip = forward_flip ? best_of_three([&] {
          first->execute(work(0), work(1));
          forward_flip->execute(work(1), work(1));
          panels_in_place->execute(work(1), work(1));
        })
                                           : 1e300;
        const double t_best = std::min({t_whole, t_panels, t_write, t_flip});
        if (t_flip == t_best) way = kPanelsInPlace;
        else if (t_write == t_best) way = kSwappedWrite;
        else if (t_panels == t_best) way = kPanels;
      } else if (cpu_schedule == CpuSchedule::transform && swapped) {
        way = kSwappedWrite;
      } else if (cpu_schedule == CpuSchedule::panels) {
        way = kPanels;
      } else if (cpu_schedule == CpuSchedule::in_place) {
        make_flips();
        way = forward_flip ? kPanelsInPlace : kPanels;
      }
      if (way == kWhole) continue;
      steps_[i] = std::move(planes);
      if (way == kSwappedWrite) {
        steps_[i + 1] = std::move(swapped_write);
        continue;
      }
      if (way == kPanelsInPlace) {
        steps_[i + 1].forward_in_place = std::move(forward_flip);
        steps_[i + 1].inverse_in_place = std::move(inverse_flip);
      }
      const std::size_t at = i + (swapped ? 2 : 1);  // after the transposition, if any
      steps_.insert(steps_.begin() + static_cast<std::ptrdiff_t>(at), std::move(panels));
      i = at;
    }
  }

  ~PlanImpl() {
    steps_.clear();  // the exchanges and local plans first
    for (void*& w : work_)
      if (w) kernels::deallocate(ctx_.queue(), w);
    if (scratch_) kernels::deallocate(ctx_.queue(), scratch_);
  }
  PlanImpl(const PlanImpl&) = delete;
  PlanImpl& operator=(const PlanImpl&) = delete;

  const std::vector<index_t>& shape() const { return shape_; }
  const std::vector<index_t>& output_shape() const { return output_shape_; }
  Kind kind() const { return kind_; }
  const Options& options() const { return options_; }
  const ProcessGrid& grid() const { return grid_; }
  Box input_box() const { return box(input_); }
  Box output_box() const { return box(output_); }
  int exchanges() const {
    int count = 0;
    for (const Step& s : steps_) count += s.local ? 0 : 1;
    return count;
  }
  std::string layout_text() const {
    auto text = [&](const State& s) {
      std::string t = "[";
      for (int k = 0; k < s.ndim; ++k) {
        if (k) t += ',';
        t += std::to_string(s.dist[static_cast<std::size_t>(k)]);
      }
      return t + "]";
    };
    return text(input_) + " -> " + text(output_) + (output_.swapped ? " swapped" : "");
  }

  // Runs the schedule forwards (forward = true) or backwards; in and out are the caller's.
  void run(bool forward, const void* in, void* out, PhaseTimes* times) {
    const kernels::Queue& queue = ctx_.queue();
    const bool cpu = ctx_.backend() == Backend::cpu;
    const std::size_t n_steps = steps_.size();
    const void* cur = in;
    auto other = [&](const void* p) { return work_[0] != nullptr && p == work_[0] ? work(1) : work(0); };
    // (A third buffer serves a pipelined pair, whose input and output must differ from its middle.)
    auto copy_in = [&](const State& s) {  // the caller's input into a work buffer
      void* w = other(cur);
      if (block_bytes(s) > 0) kernels::copy_within(queue, w, cur, block_bytes(s));
      cur = w;
    };
    // The local libraries' alignment: FFTW's SIMD alignment on the cpu; on the GPU cuFFT refuses
    // buffers off their complex type's alignment (CUFFT_INVALID_VALUE): 16 bytes covers both.
    auto usable = [cpu](const void* p) {
      return cpu ? fftw_aligned(p) : reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
    };
    if (!usable(in)) copy_in(forward ? steps_.front().before : steps_.back().after);
    auto at = [&](std::size_t k) -> Step& { return steps_[forward ? k : n_steps - 1 - k]; };  // k-th to run
    // Whether the steps run k-th to the last all run in place: the step (or pipelined pair) before
    // them then writes straight into the caller's output.
    auto rest_in_place = [&](std::size_t k) {
      if (k >= n_steps || !usable(out) || cur == out) return false;
      for (std::size_t j = k; j < n_steps; ++j)
        if (in_place_plan(at(j), forward) == nullptr) return false;
      return true;
    };
    for (std::size_t i = 0; i < n_steps; ++i) {
      Step& step = at(i);
      const State& from = forward ? step.before : step.after;
      const bool last = i + 1 == n_steps;
      // c2r may overwrite its input: never the caller's.
      if (step.local && cur == in && (forward ? step.forward_kind : step.inverse_kind) == LocalKind::c2r) copy_in(from);
      void* dst = (last && usable(out)) || rest_in_place(i + 1) ? out : other(cur);
      // A pipelined pair: the local step and the exchange after it (forward), or the exchange and
      // the local step after it (inverse), through a buffer between them.
      Step* next = i + 1 < n_steps ? &at(i + 1) : nullptr;
      if (next != nullptr && (forward ? pipelined(step, *next) : pipelined(*next, step))) {
        const bool pair_last = i + 2 == n_steps;
        void* mid = other(cur);
        void* end = (pair_last && usable(out)) || rest_in_place(i + 2) ? out : other(mid);
        if (end == cur) end = work(2);  // the pair reads `cur` while it writes `end`
        if (forward) run_chunks(step, *next, true, cur, mid, end, times);
        else run_chunks(*next, step, false, cur, mid, end, times);
        cur = end;
        ++i;
        continue;
      }
      if (forward && next != nullptr && step.forward_batch) {
        // The transform batch by batch, each batch packed for the exchange after it.
        void* end = (i + 2 == n_steps && usable(out)) || rest_in_place(i + 2) ? out : other(cur);
        exchange(*next, true, next->before, cur, end, times, &step);
        cur = end;
        ++i;
        continue;
      }
      // In place on a buffer of the plan's, or on the caller's output where the step is the last
      // (the step before wrote there): FFTW's strided transforms in place touch half the memory
      // (axis 0 of 128^3 float, one core: 2.8 ms in place against 4.0-4.2 out of place on the
      // 2-core VM, 3.9 against 11.6-12.5 on a 16-core Xeon).
      LocalFft* here = in_place_plan(step, forward);
      if (here != nullptr && (cur == in || (last && cur != out))) here = nullptr;
      if (here != nullptr) dst = const_cast<void*>(cur);
      if (step.transpose && here == nullptr) {
        transpose(forward ? step.before : step.after, forward, cur, dst, times);
      } else if (step.local) {
        TESSERA_ASSERT(!forward || !step.forward_batch, "fft: a step packed batch by batch ran on its own");
        LocalFft* fft = here != nullptr ? here : forward ? step.forward_fft.get() : step.inverse_fft.get();
        if (fft) {
          PhaseTimes t;
          tessera::detail::local_phase({step.transpose ? "fft transpose" : "fft local"}, ctx_, times ? &t : nullptr,
                                       [&] { fft->execute(cur, dst); });
          if (times) *times += t;
        }
      } else {
        exchange(step, forward, from, cur, dst, times);
      }
      cur = dst;
    }
    if (cur != out && block_bytes(forward ? output_ : input_) > 0)
      kernels::copy_within(queue, out, cur, block_bytes(forward ? output_ : input_));
    // numpy's normalisation, one pass over the output.
    double factor = 1;
    const Norm norm = options_.norm;
    if (norm == Norm::ortho) factor = 1 / std::sqrt(norm_n_);
    else if ((norm == Norm::forward) == forward) factor = 1 / norm_n_;
    const State& result = forward ? output_ : input_;
    const index_t reals = box(result).count() * (result.real ? 1 : 2);
    if (factor != 1 && reals > 0) {
      PhaseTimes t;
      tessera::detail::local_phase({"fft normalise"}, ctx_, times ? &t : nullptr, [&] {
        if (cpu) {
          if (real_bytes_ == 4) {
            auto* p = static_cast<float*>(out);
            const auto f = static_cast<float>(factor);
            for (index_t k = 0; k < reals; ++k) p[k] *= f;
          } else {
            auto* p = static_cast<double*>(out);
            for (index_t k = 0; k < reals; ++k) p[k] *= factor;
          }
        } else if (real_bytes_ == 4) {
          scale_cuda<float>(queue, static_cast<float*>(out), reals, static_cast<float>(factor));
        } else {
          scale_cuda<double>(queue, static_cast<double*>(out), reals, factor);
        }
      });
      if (times) *times += t;
    }
  }

 private:
  // Work buffer i (0 or 1) of buffer_bytes_, made on first use.
  void* work(int i) {
    void*& w = work_[i];
    if (w == nullptr) w = kernels::allocate(ctx_.queue(), buffer_bytes_);
    return w;
  }

  const Context& axis_context(int g) const { return g == 0 ? grid_.column() : grid_.row(); }

  // An FFTW plan (make_fftw) in the plan's precision.
  std::unique_ptr<LocalFft> fftw(LocalKind kind, const LocalShape& shape, void* in, void* out, bool measure) const {
    return real_bytes_ == 4 ? make_fftw<float>(kind, shape, in, out, measure) : make_fftw<double>(kind, shape, in, out, measure);
  }
  // FFTW's transposition in place (make_fftw_transposition) in the plan's precision.
  std::unique_ptr<LocalFft> fftw_transposition(index_t rows, index_t cols, index_t reals, void* buffer, bool measure) const {
    return real_bytes_ == 4 ? make_fftw_transposition<float>(rows, cols, reals, buffer, measure)
                            : make_fftw_transposition<double>(rows, cols, reals, buffer, measure);
  }

  // A local step's plan in place for the direction, or null: an exchange, r2c and c2r, a step that
  // swaps axes (swapped_outer), a step inside a pipelined pair, the step that runs first in the
  // direction (it reads the caller's input), a transposition but FFTW's (choose_split_transforms),
  // and every step under cuda.
  static LocalFft* in_place_plan(const Step& step, bool forward) {
    if (!step.local) return nullptr;
    return forward ? step.forward_in_place.get() : step.inverse_in_place.get();
  }

  std::pair<index_t, index_t> range(const State& s, int k) const {
    const int g = s.dist[static_cast<std::size_t>(k)];
    const index_t n = s.n[static_cast<std::size_t>(k)];
    if (g < 0) return {0, n};
    const Partition p = Partition::block(n, gdim_[static_cast<std::size_t>(g)]);
    const int c = coord_[static_cast<std::size_t>(g)];
    return {p.offset(c), p.local_size(c)};
  }
  Box box(const State& s) const {
    Box b;
    for (int k = 0; k < s.ndim; ++k) {
      const auto [lo, size] = range(s, k);
      b.lo[static_cast<std::size_t>(k)] = lo;
      b.size[static_cast<std::size_t>(k)] = size;
    }
    return b;
  }
  std::size_t element_bytes(const State& s) const { return s.real ? real_bytes_ : 2 * real_bytes_; }
  std::size_t block_bytes(const State& s) const {
    return static_cast<std::size_t>(box(s).count()) * element_bytes(s);
  }
  index_t local_product(const State& s, int from, int to) const {  // local lengths of axes [from, to)
    index_t p = 1;
    for (int k = from; k < to; ++k) p *= range(s, k).second;
    return p;
  }

  void add_local(State& s, int axis) {
    Step step;
    step.local = true;
    step.axis = axis;
    step.before = s;
    // [A, N, S]: the local lengths of the axes before and after `axis` in memory.
    const std::array<int, 3> order = memory_order(s);
    int at = 0;
    while (order[static_cast<std::size_t>(at)] != axis) ++at;
    step.shape.a = 1;
    step.shape.s = 1;
    for (int t = 0; t < s.ndim; ++t) {
      const index_t len = range(s, order[static_cast<std::size_t>(t)]).second;
      if (t < at) step.shape.a *= len;
      if (t > at) step.shape.s *= len;
    }
    step.shape.n[0] = s.n[static_cast<std::size_t>(axis)];
    if (s.real) {
      step.forward_kind = LocalKind::r2c;
      step.inverse_kind = LocalKind::c2r;
      s.real = false;
      s.n[static_cast<std::size_t>(axis)] = s.n[static_cast<std::size_t>(axis)] / 2 + 1;
    }
    step.after = s;
    steps_.push_back(std::move(step));
  }

  void add_transpose(State& s) {
    Step step;
    step.local = true;
    step.transpose = true;
    step.before = s;
    s.swapped = true;
    step.after = s;
    steps_.push_back(std::move(step));
  }

  // A transposition step: `natural` (axes 0 and 1 in order) to swapped (forward) or back.
  void transpose(const State& natural, bool forward, const void* src, void* dst, PhaseTimes* times) {
    const index_t l0 = range(natural, 0).second, l1 = range(natural, 1).second;
    const std::size_t rest = static_cast<std::size_t>(local_product(natural, 2, natural.ndim)) * element_bytes(natural);
    if (l0 * l1 == 0 || rest == 0) return;
    PhaseTimes t;
    tessera::detail::local_phase({"fft transpose"}, ctx_, times ? &t : nullptr, [&] {
      if (forward) kernels::transpose_bytes(ctx_.queue(), src, l0, l1, l1, dst, l0, rest);
      else kernels::transpose_bytes(ctx_.queue(), src, l1, l0, l0, dst, l1, rest);
    });
    if (times) *times += t;
  }

  void add_swap(State& s, int g, int whole, int cut) {
    if (gdim_[static_cast<std::size_t>(g)] == 1) {
      // One rank along g: the block is the same before and after; nothing moves.
      s.dist[static_cast<std::size_t>(whole)] = -1;
      s.dist[static_cast<std::size_t>(cut)] = g;
      return;
    }
    Step step;
    step.local = false;
    step.before = s;
    step.g = g;
    step.whole = whole;
    step.cut = cut;
    s.dist[static_cast<std::size_t>(whole)] = -1;
    s.dist[static_cast<std::size_t>(cut)] = g;
    step.after = s;
    steps_.push_back(std::move(step));
  }

  // The geometry of one exchange from `from` to `to` (which differ in which of axes i < j is cut):
  // the block is [A, B, M, C] (B axis i, C axis j, elements of E bytes), with B cut before and C
  // after (b_to_c) or the other way round.
  struct Geometry {
    index_t a = 1, m = 1, e = 1, nb = 1, nc = 1;
    Partition pb, pc;
    bool b_to_c = true;
    // The swapped side (swap_folded: axes 0 and 1, here B and C with A and M 1): the destination
    // [Cl, B, E] (b_to_c) or the source [Cl, B, E] (otherwise) instead of [B, Cl, E].
    bool swapped = false;
    int me = 0, peers = 1;
  };
  Geometry geometry(const Step& step, bool forward) const {
    const State& from = forward ? step.before : step.after;
    const int whole = forward ? step.whole : step.cut;  // the axis cut in `from`, whole afterwards
    const int cut = forward ? step.cut : step.whole;
    const int i = std::min(whole, cut), j = std::max(whole, cut);
    Geometry geo;
    const Context& sub = axis_context(step.g);
    geo.me = sub.rank();
    geo.peers = sub.size();
    geo.a = local_product(from, 0, i);
    geo.m = local_product(from, i + 1, j);
    geo.e = local_product(from, j + 1, from.ndim) * static_cast<index_t>(element_bytes(from));
    geo.nb = from.n[static_cast<std::size_t>(i)];
    geo.nc = from.n[static_cast<std::size_t>(j)];
    geo.pb = Partition::block(geo.nb, geo.peers);
    geo.pc = Partition::block(geo.nc, geo.peers);
    geo.b_to_c = whole == i;
    geo.swapped = step.swap_folded;
    return geo;
  }
  // The rows of B that rank q's pieces cover, in `chunks` chunks (one: all its rows): balanced
  // blocks of its rows in units of `granule` rows, so that every chunk of a pipelined local step
  // starts on a 16-byte boundary on both sides (cuFFT refuses others; FFTW's plans assume their
  // planning buffers' alignment). The granule depends only on the lengths of the axes after 0, the
  // same for every rank of the exchange.
  struct Chunking {
    int chunks = 1;
    index_t granule = 1;
  };
  struct ChunkRows {
    index_t rows = 0, granule = 1;
    int chunks = 1;
    index_t offset(int c) const {
      const index_t units = (rows + granule - 1) / granule;
      return std::min(rows, Partition::block(units, chunks).offset(c) * granule);
    }
    index_t local_size(int c) const { return (c + 1 < chunks ? offset(c + 1) : rows) - offset(c); }
  };
  static ChunkRows rows_of(const Geometry& geo, int q, const Chunking& k) {
    return {geo.pb.local_size(q), k.granule, k.chunks};
  }
  // The piece of chunk c this rank sends to q (sending) or receives from q: [A, rows, M, cols]. Its
  // rows of B are this rank's (`first` an index into its block) where B is cut on the side the piece
  // comes from or goes to, q's (`first` a global index) otherwise; its columns of C are q's or this
  // rank's: b_to_c sends [A, Bl, M, Cq] and receives [A, Bq, M, Cl], the other way round otherwise.
  struct PieceRows {
    index_t first = 0, rows = 0, cols = 0;
  };
  static PieceRows piece_rows(const Geometry& geo, int q, bool sending, const Chunking& k, int c) {
    const bool mine = sending == geo.b_to_c;
    const ChunkRows r = rows_of(geo, mine ? geo.me : q, k);
    return {(mine ? 0 : geo.pb.offset(q)) + r.offset(c), r.local_size(c), geo.pc.local_size(mine ? q : geo.me)};
  }

  // Whether the pieces this rank receives land straight in its new block: [A, Bq, M, Cl] into
  // [A, B, M, Cl] is one run where A is 1 (a slab's forward exchange). The exchange is then listed
  // at each call, with the destination of that call; otherwise it is made once, every piece packed.
  static bool receives_straight(const Geometry& geo) { return geo.b_to_c && geo.a == 1 && !geo.swapped; }

  // The messages of chunk c's exchange (of the whole exchange with Chunking{}): every piece packed,
  // except the receives that land straight in `out` where it is given and receives_straight holds.
  Exchange list_pieces(const Step& step, const Geometry& geo, const Chunking& k, int c, std::vector<std::size_t>& send,
                       std::vector<std::size_t>& recv, char* out) const {
    Exchange x(axis_context(step.g), ExchangePattern::all_to_all, kPieceAlignment);
    send.assign(static_cast<std::size_t>(geo.peers), SIZE_MAX);
    recv = send;
    const index_t unit = geo.a * geo.m * geo.e;
    for (int q = 0; q < geo.peers; ++q) {
      if (q == geo.me) continue;  // copied straight (copy_own_piece)
      const PieceRows sent = piece_rows(geo, q, true, k, c), received = piece_rows(geo, q, false, k, c);
      const auto sb = static_cast<std::size_t>(unit * sent.rows * sent.cols);
      const auto rb = static_cast<std::size_t>(unit * received.rows * received.cols);
      if (sb > 0) send[static_cast<std::size_t>(q)] = x.send_packed(q, sb);
      if (rb == 0) continue;
      if (out != nullptr && receives_straight(geo))
        x.receive(q, out + static_cast<std::size_t>(received.first * geo.m * received.cols * geo.e), rb);
      else
        recv[static_cast<std::size_t>(q)] = x.receive_packed(q, rb);
    }
    return x;
  }

  void make_exchange(Step& step, bool forward) {
    const Geometry geo = geometry(step, forward);
    if (receives_straight(geo)) return;  // listed at each call
    Exchange x = list_pieces(step, geo, {}, 0, forward ? step.forward_send : step.inverse_send,
                             forward ? step.forward_recv : step.inverse_recv, nullptr);
    x.prepare();
    (forward ? step.forward_exchange : step.inverse_exchange).emplace(std::move(x));
  }

  // The copies of chunk c's pieces between [A, B, M, C] blocks (A is 1 where the chunk is short of
  // all the rows); the swapped side is [Cl, B] (A and M 1). pack: q's piece from `in` into its slot.
  void pack(const Geometry& geo, int q, const Chunking& k, int c, const char* in, void* slot) const {
    const kernels::Queue& queue = ctx_.queue();
    const PieceRows p = piece_rows(geo, q, true, k, c);
    const auto e = static_cast<std::size_t>(geo.e);
    if (geo.b_to_c)  // [A, rows, M, Cq] from [A, Bl, M, C] at column Pc(q)
      kernels::copy_2d(queue, slot, p.cols, in + static_cast<std::size_t>(p.first * geo.m * geo.nc + geo.pc.offset(q)) * e,
                       geo.nc, geo.a * p.rows * geo.m, p.cols, e);
    else if (geo.swapped)  // [rows, Cl] from the swapped [Cl, B] at column `first`
      kernels::transpose_bytes(queue, in + static_cast<std::size_t>(p.first) * e, p.cols, p.rows, geo.nb, slot, p.cols, e);
    else  // [A, rows, M, Cl] from [A, B, M, Cl] at row `first`
      kernels::copy_2d(queue, slot, p.rows * geo.m * p.cols, in + static_cast<std::size_t>(p.first * geo.m * p.cols) * e,
                       geo.nb * geo.m * p.cols, geo.a, p.rows * geo.m * p.cols, e);
  }
  // unpack: q's piece from its slot into its place in `out`.
  void unpack(const Geometry& geo, int q, const Chunking& k, int c, const void* slot, char* out) const {
    const kernels::Queue& queue = ctx_.queue();
    const PieceRows p = piece_rows(geo, q, false, k, c);
    const auto e = static_cast<std::size_t>(geo.e);
    if (!geo.b_to_c)  // [A, rows, M, Cq] into [A, Bl, M, C] at column Pc(q)
      kernels::copy_2d(queue, out + static_cast<std::size_t>(p.first * geo.m * geo.nc + geo.pc.offset(q)) * e, geo.nc, slot,
                       p.cols, geo.a * p.rows * geo.m, p.cols, e);
    else if (geo.swapped)  // [rows, Cl] into the swapped [Cl, B] at column `first`
      kernels::transpose_bytes(queue, slot, p.rows, p.cols, p.cols, out + static_cast<std::size_t>(p.first) * e, geo.nb, e);
    else  // [A, rows, M, Cl] into [A, B, M, Cl] at row `first`
      kernels::copy_2d(queue, out + static_cast<std::size_t>(p.first * geo.m * p.cols) * e, geo.nb * geo.m * p.cols, slot,
                       p.rows * geo.m * p.cols, geo.a, p.rows * geo.m * p.cols, e);
  }
  // copy_own_piece: this rank's own piece, from `in` straight into its place in `out` (b_to_c: its
  // rows of [A, Bl, M, C] at column Pc(me) into [A, B, M, Cl] at its rows of Pb(me); otherwise back).
  void copy_own_piece(const Geometry& geo, const Chunking& k, int c, const char* in, char* out) const {
    const kernels::Queue& queue = ctx_.queue();
    const ChunkRows mine = rows_of(geo, geo.me, k);
    const index_t first = mine.offset(c), rows = mine.local_size(c);
    const index_t bl = geo.pb.local_size(geo.me), cl = geo.pc.local_size(geo.me);
    if (rows * cl * geo.m * geo.e == 0) return;
    const auto e = static_cast<std::size_t>(geo.e);
    const index_t b = geo.pb.offset(geo.me) + first, c0 = geo.pc.offset(geo.me);
    if (geo.swapped) {  // [rows, C] at column c0 <-> the swapped [Cl, B] at column b
      if (geo.b_to_c)
        kernels::transpose_bytes(queue, in + static_cast<std::size_t>(first * geo.nc + c0) * e, rows, cl, geo.nc,
                                 out + static_cast<std::size_t>(b) * e, geo.nb, e);
      else
        kernels::transpose_bytes(queue, in + static_cast<std::size_t>(b) * e, cl, rows, geo.nb,
                                 out + static_cast<std::size_t>(first * geo.nc + c0) * e, geo.nc, e);
      return;
    }
    for (index_t a = 0; a < geo.a; ++a) {
      const char* a_in = in + static_cast<std::size_t>(a * (geo.b_to_c ? bl * geo.m * geo.nc : geo.nb * geo.m * cl)) * e;
      char* a_out = out + static_cast<std::size_t>(a * (geo.b_to_c ? geo.nb * geo.m * cl : bl * geo.m * geo.nc)) * e;
      const std::size_t at_c = static_cast<std::size_t>(first * geo.m * geo.nc + c0) * e;  // in [A, Bl, M, C]
      const std::size_t at_b = static_cast<std::size_t>(b * geo.m * cl) * e;                // in [A, B, M, Cl]
      if (geo.b_to_c)
        kernels::copy_2d(queue, a_out + at_b, cl, a_in + at_c, geo.nc, rows * geo.m, cl, e);
      else
        kernels::copy_2d(queue, a_out + at_c, geo.nc, a_in + at_b, cl, rows * geo.m, cl, e);
    }
  }

  // Whether the local step `local` and the exchange `x` after it run in chunks: x makes axis 0
  // whole and cuts axis 1, and `local` transforms axis 1 onwards in batches along axis 0 (the
  // chunks are runs of those batches). The same on every rank.
  bool pipelined(const Step& local, const Step& x) const {
    return chunks_ > 1 && local.local && !local.transpose && local.axis == 1 && !x.local && x.whole == 0 && x.cut == 1;
  }
  // Rows of the local step whose bytes on each side are a multiple of 16.
  index_t chunk_granule(const Step& local) const {
    index_t g = 1;
    for (bool input : {true, false}) {
      const auto bytes = static_cast<index_t>(batch_bytes(local.shape, local.forward_kind, input));
      const index_t side = bytes > 0 ? 16 / std::gcd(index_t{16}, bytes) : 1;
      g = std::lcm(g, side);
    }
    return g;
  }
  // Bytes of one batch of a local step on its input or output side.
  std::size_t batch_bytes(const LocalShape& shape, LocalKind kind, bool input) const {
    const bool complex_side = input ? kind != LocalKind::r2c : kind != LocalKind::c2r;
    const bool halved = (kind == LocalKind::r2c && !input) || (kind == LocalKind::c2r && input);
    const index_t elements = halved ? shape.complex_elements() : shape.full_elements();
    return static_cast<std::size_t>(elements) * (complex_side ? 2 * real_bytes_ : real_bytes_);
  }

  // The chunks' local plans and the inverse's exchanges (the forward's are listed at the first call,
  // for its destination); returns the plans' largest work area.
  std::size_t make_chunks(Step& local, Step& x) {
    auto ch = std::make_unique<Step::Chunks>();
    const Geometry fwd = geometry(x, true);
    ch->granule = chunk_granule(local);
    const ChunkRows mine = rows_of(fwd, fwd.me, {chunks_, ch->granule});
    std::size_t area = 0;
    for (int c = 0; c < chunks_; ++c) {
      const index_t length = mine.local_size(c);
      if (length == 0 || local.shape.s == 0 || ch->forward_fft.count(length)) continue;
      LocalShape shape = local.shape;
      shape.a = length;
      const bool measure = options_.effort == Effort::measure;
      for (bool forward : {true, false}) {
        const LocalKind kind = forward ? local.forward_kind : local.inverse_kind;
        std::unique_ptr<LocalFft> fft =
            ctx_.backend() == Backend::cuda
                ? (real_bytes_ == 4 ? make_cufft<float>(ctx_.queue(), kind, shape) : make_cufft<double>(ctx_.queue(), kind, shape))
                : fftw(kind, shape, work(0), work(1), measure);
        area = std::max(area, fft->work_bytes());
        (forward ? ch->forward_fft : ch->inverse_fft)[length] = std::move(fft);
      }
    }
    const Geometry inv = geometry(x, false);
    x.chunks = std::move(ch);
    Step::Chunks& made = *x.chunks;
    made.inverse_send.resize(static_cast<std::size_t>(chunks_));
    made.inverse_recv.resize(static_cast<std::size_t>(chunks_));
    for (int c = 0; c < chunks_; ++c) {
      Exchange e = list_pieces(x, inv, {chunks_, made.granule}, c, made.inverse_send[static_cast<std::size_t>(c)],
                               made.inverse_recv[static_cast<std::size_t>(c)], nullptr);
      e.prepare();
      made.inverse.push_back(std::move(e));
    }
    return area;
  }

  // The pipelined pair (pipelined()): forward, `local` from `in` into `mid` and `x` from `mid` into
  // `out`, chunk by chunk; inverse, `x` from `in` into `mid` and `local` from `mid` into `out`.
  // Through pipelined_exchange_phases: chunk c + 1's exchange is packed and started before chunk
  // c's is finished. A = M = 1 in this exchange's geometry: the block is [B, C, E].
  void run_chunks(Step& local, Step& x, bool forward, const void* in, void* mid, void* out, PhaseTimes* times) {
    const Geometry geo = geometry(x, forward);
    Step::Chunks& ch = *x.chunks;
    const Chunking k{chunks_, ch.granule};
    const ChunkRows mine = rows_of(geo, geo.me, k);
    const auto* src = static_cast<const char*>(in);
    auto* between = static_cast<char*>(mid);
    auto* dst = static_cast<char*>(out);
    const LocalKind kind = forward ? local.forward_kind : local.inverse_kind;
    const std::size_t local_in = batch_bytes(local.shape, kind, true), local_out = batch_bytes(local.shape, kind, false);
    std::vector<Exchange>& xs = forward ? ch.forward : ch.inverse;
    std::vector<std::vector<std::size_t>>& sends = forward ? ch.forward_send : ch.inverse_send;
    std::vector<std::vector<std::size_t>>& recvs = forward ? ch.forward_recv : ch.inverse_recv;
    if (forward && (xs.empty() || (receives_straight(geo) && ch.destination != out))) {  // listed for this destination
      xs.clear();
      sends.assign(static_cast<std::size_t>(chunks_), {});
      recvs.assign(static_cast<std::size_t>(chunks_), {});
      for (int c = 0; c < chunks_; ++c) {
        Exchange ex = list_pieces(x, geo, k, c, sends[static_cast<std::size_t>(c)], recvs[static_cast<std::size_t>(c)], dst);
        ex.prepare();
        xs.push_back(std::move(ex));
      }
      ch.destination = out;
    }
    // The local step on the chunk's rows (batches), `from` into `to`.
    auto transform = [&](int c, const void* from, void* to) {
      const index_t first = mine.offset(c), length = mine.local_size(c);
      if (length == 0 || local.shape.s == 0) return;
      LocalFft& fft = *(forward ? ch.forward_fft : ch.inverse_fft).at(length);
      fft.execute(static_cast<const char*>(from) + static_cast<std::size_t>(first) * local_in,
                  static_cast<char*>(to) + static_cast<std::size_t>(first) * local_out);
    };
    // Forward: transform `in` into `mid`, pack from `mid`, unpack into `out`; inverse: pack from
    // `in`, unpack into `mid`, transform `mid` into `out`.
    const char* packed_from = forward ? between : src;
    char* unpacked_into = forward ? dst : between;
    pipelined_exchange_phases(
        {"fft exchange", box(forward ? x.before : x.after).count()}, axis_context(x.g), times,
        static_cast<std::size_t>(chunks_),
        [&](std::size_t c) { return std::span<Exchange>(&xs[c], 1); },
        [&](std::size_t cs, std::span<Exchange> step) {
          const int c = static_cast<int>(cs);
          if (forward) transform(c, src, between);
          copy_own_piece(geo, k, c, packed_from, unpacked_into);
          for (int q = 0; q < geo.peers; ++q) {
            const std::size_t piece = sends[cs][static_cast<std::size_t>(q)];
            if (piece != SIZE_MAX) pack(geo, q, k, c, packed_from, step.front().send_slot(piece));
          }
        },
        [&](std::size_t cs, std::span<Exchange> step) {
          const int c = static_cast<int>(cs);
          for (int q = 0; q < geo.peers; ++q) {
            const std::size_t piece = recvs[cs][static_cast<std::size_t>(q)];
            if (piece != SIZE_MAX) unpack(geo, q, k, c, step.front().received_slot(piece), unpacked_into);
          }
          if (!forward) transform(c, between, dst);  // the chunk's rows, whole now, into `out`
        });
  }

  // Whether a local step's forward output goes into the exchange after it batch by batch (cpu):
  // the exchange makes axis 0 whole and cuts axis 1 with nothing before axis 0 or between the two
  // (a slab's; a pencil's second where this rank holds one index of axis 2), the step transforms axes 1 onwards in batches along axis 0 that keep FFTW's
  // alignment, and the pair does not run in chunks. Saves a pass over the block: the transform's
  // output is written and read again only in cache.
  bool packs_by_batch(const Step& local, const Step& x) const {
    if (ctx_.backend() != Backend::cpu || !local.local || local.transpose || x.local || pipelined(local, x) ||
        local.axis != 1 || local.shape.s != 1 || local.shape.swapped_outer != 0 || x.whole != 0 || x.cut != 1 ||
        local.shape.a * local.shape.full_elements() == 0)
      return false;
    const Geometry geo = geometry(x, true);
    return geo.a == 1 && geo.m == 1 && geo.b_to_c && batch_bytes(local.shape, local.forward_kind, true) % 16 == 0;
  }

  // The pack of such an exchange (packs_by_batch) from the local step before it, batch by batch: batch b
  // (index b of axis 0) transformed from `in` into the step's batch_out, then its piece of every
  // peer copied into that peer's send slot (row b of [Bl, Cq]) and its own piece into `out` (row b
  // of this rank's rows of [B, Cl], or column b of the swapped [Cl, B]).
  void pack_by_batch(Step& local, const Geometry& geo, const char* in, char* out, Exchange& x,
                     const std::vector<std::size_t>& send) {
    const kernels::Queue& queue = ctx_.queue();
    const std::size_t in_bytes = batch_bytes(local.shape, local.forward_kind, true);
    const auto e = static_cast<std::size_t>(geo.e);
    const char* batch = static_cast<const char*>(local.batch_out.get());
    const index_t bl = geo.pb.local_size(geo.me), cl = geo.pc.local_size(geo.me);
    const index_t b0 = geo.pb.offset(geo.me), c0 = geo.pc.offset(geo.me);
    for (index_t b = 0; b < bl; ++b) {
      local.forward_batch->execute(in + static_cast<std::size_t>(b) * in_bytes, local.batch_out.get());
      for (int q = 0; q < geo.peers; ++q) {
        const std::size_t piece = send[static_cast<std::size_t>(q)];
        if (piece == SIZE_MAX) continue;
        const index_t cols = geo.pc.local_size(q);
        std::memcpy(static_cast<char*>(x.send_slot(piece)) + static_cast<std::size_t>(b * cols) * e,
                    batch + static_cast<std::size_t>(geo.pc.offset(q)) * e, static_cast<std::size_t>(cols) * e);
      }
      if (cl == 0) continue;
      if (geo.swapped)
        kernels::copy_2d(queue, out + static_cast<std::size_t>(b0 + b) * e, geo.nb, batch + static_cast<std::size_t>(c0) * e,
                         1, cl, 1, e);
      else
        std::memcpy(out + static_cast<std::size_t>((b0 + b) * cl) * e, batch + static_cast<std::size_t>(c0) * e,
                    static_cast<std::size_t>(cl) * e);
    }
  }

  // batches: the local step before a forward exchange that packs it batch by batch
  // (packs_by_batch), reading `src` as that step's input; null: `src` is the exchange's input.
  void exchange(Step& step, bool forward, const State& from, const void* src, void* dst, PhaseTimes* times,
                Step* batches = nullptr) {
    const Geometry geo = geometry(step, forward);
    std::optional<Exchange>& held = forward ? step.forward_exchange : step.inverse_exchange;
    const auto* in = static_cast<const char*>(src);
    auto* out = static_cast<char*>(dst);
    // Pieces received straight into `out`: the exchange listed for it, kept for the next call.
    void*& destination = step.straight_destination[forward ? 0 : 1];
    const bool list_now = receives_straight(geo) && (!held.has_value() || destination != dst);
    if (list_now) {
      held.reset();
      destination = nullptr;
    }
    std::vector<std::size_t>& send = forward ? step.forward_send : step.inverse_send;
    std::vector<std::size_t>& recv = forward ? step.forward_recv : step.inverse_recv;
    PhaseTimes t;
    exchange_phases(
        {"fft exchange", box(from).count()}, axis_context(step.g), times ? &t : nullptr,
        [&] {
          if (list_now) {
            Exchange x = list_pieces(step, geo, {}, 0, send, recv, out);
            x.prepare();
            destination = dst;
            return x;
          }
          return std::move(*held);
        },
        [&](Exchange& x) {
          if (batches != nullptr) {
            pack_by_batch(*batches, geo, in, out, x, send);
            return;
          }
          copy_own_piece(geo, {}, 0, in, out);
          for (int q = 0; q < geo.peers; ++q) {
            const std::size_t piece = send[static_cast<std::size_t>(q)];
            if (piece != SIZE_MAX) pack(geo, q, {}, 0, in, x.send_slot(piece));
          }
        },
        no_overlap,
        [&](Exchange& x) {
          for (int q = 0; q < geo.peers; ++q) {
            const std::size_t piece = recv[static_cast<std::size_t>(q)];
            if (piece != SIZE_MAX) unpack(geo, q, {}, 0, x.received_slot(piece), out);
          }
          held.emplace(std::move(x));
        });
    if (times) *times += t;
  }

  Context ctx_;
  std::vector<index_t> shape_, output_shape_;
  Kind kind_;
  Options options_;
  std::size_t real_bytes_;
  ProcessGrid grid_;
  std::array<int, 2> gdim_{1, 1}, coord_{0, 0};
  int real_axis_ = -1;
  double norm_n_ = 1;
  State input_, output_;
  std::vector<Step> steps_;
  std::size_t buffer_bytes_ = 0;
  void* work_[3] = {nullptr, nullptr, nullptr};
  int chunks_ = 1;
  void* scratch_ = nullptr;
};

void force_cpu_schedule(CpuSchedule way) { cpu_schedule = way; }

}  // namespace detail

template <class Real>
Plan<Real>::Plan(const Context& ctx, std::vector<index_t> shape, Kind kind, const Options& options)
    : impl_(std::make_unique<detail::PlanImpl>(ctx, std::move(shape), kind, options, sizeof(Real))) {}
template <class Real>
Plan<Real>::~Plan() = default;
template <class Real>
Plan<Real>::Plan(Plan&&) noexcept = default;
template <class Real>
Plan<Real>& Plan<Real>::operator=(Plan&&) noexcept = default;
template <class Real>
const std::vector<index_t>& Plan<Real>::shape() const { return impl_->shape(); }
template <class Real>
const std::vector<index_t>& Plan<Real>::output_shape() const { return impl_->output_shape(); }
template <class Real>
Kind Plan<Real>::kind() const { return impl_->kind(); }
template <class Real>
const Options& Plan<Real>::options() const { return impl_->options(); }
template <class Real>
const ProcessGrid& Plan<Real>::grid() const { return impl_->grid(); }
template <class Real>
Box Plan<Real>::input_box() const { return impl_->input_box(); }
template <class Real>
Box Plan<Real>::output_box() const { return impl_->output_box(); }
template <class Real>
std::string Plan<Real>::layout_text() const { return impl_->layout_text(); }
template <class Real>
int Plan<Real>::exchanges_per_transform() const { return impl_->exchanges(); }
template <class Real>
void Plan<Real>::forward(const void* in, complex_type* out, PhaseTimes* times) {
  TESSERA_ASSERT(in != static_cast<const void*>(out) || impl_->input_box().count() == 0,
                 "fft::Plan::forward: in and out overlap");
  impl_->run(true, in, out, times);
}
template <class Real>
void Plan<Real>::inverse(const complex_type* in, void* out, PhaseTimes* times) {
  TESSERA_ASSERT(static_cast<const void*>(in) != out || impl_->output_box().count() == 0,
                 "fft::Plan::inverse: in and out overlap");
  impl_->run(false, in, out, times);
}

template class Plan<float>;
template class Plan<double>;

}  // namespace tessera::fft
