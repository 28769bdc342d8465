// The skeleton every data-moving algorithm is written with (the second of the two, beside
// three_phases in skeleton.hpp): plan -> pack -> exchange -> unpack, with local work that may run
// while the exchange travels.
//
//   plan      who sends what where: an Exchange that lists this rank's messages, worked out on the
//             host from the layouts (which every rank knows), with no counting pass
//   pack      kernels that put the pieces that travel packed into the exchange's own buffers
//             (and move what the rank keeps for itself)
//   exchange  one all-to-all, or messages with a few neighbours, on the context's device path
//             (DeviceComm: NCCL, CUDA-aware MPI, staging through pinned host memory, host MPI)
//   overlap   local work that needs nothing received (optional), queued while the exchange travels
//   unpack    kernels that read what arrived
//
//   return exchange_phases(ctx, times,
//       [&] { Exchange x(ctx, ExchangePattern::all_to_all); ... x.send(...); x.receive(...); return x; },
//       [&](Exchange& x) { ... pack kernels into x.send_slot(i) ... },
//       [&] { ... local work beside the exchange ... },     // or no_overlap
//       [&](Exchange& x) { ... unpack kernels from x.received_slot(i) ...; return result; });
//
// PhaseTimes (skeleton.hpp) mean what they mean for three_phases: host = the plan and the buffers,
// local = the pack and the overlapped work, communication = the part of the exchange that was not
// hidden behind the overlapped work, fixup = the unpack.
//
// Messages travel from and to 16-byte boundaries where the path copies faster from there (NCCL: its
// copies into and out of its buffers take 16-byte steps only where both addresses allow; measured
// on the sort's exchange, 58-65% of the all-to-all rate from unaligned runs, 93-110% from aligned
// ones, docs/PERFORMANCE.md). A message that starts `lead` bytes past a boundary is sent from the
// boundary, the lead bytes before it along; its receiver takes them too, into a 16-byte-aligned
// slot of the exchange's own buffer, and copies the run from there into place once the exchange is
// done (or hands the slot to the unpack, for pieces received packed). So every caller gets the
// full rate without laying out its buffers for it, and a caller that lays them out aligned (packed
// pieces, rows on 16-byte boundaries) pays no copy. Messages under Exchange::kAlignedFromBytes
// (1 MiB) travel as they lie: for them the staged copy costs more than the rate gains (a rebalance
// that moves a few kilobytes: 86 us without the remedy, 93 us with it, between two H200s).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/framework/trace.hpp"

namespace tessera {

// Whom a rank exchanges with: every rank (one all-to-all, counted as one alltoallv of every byte
// sent, this rank's own included), a few neighbours (counted as one neighbor_exchange of the bytes
// sent to other ranks), or one root to every rank (one broadcast, counted as one bcast of its
// bytes). Each is one exchange in flight at once; the count is what the collective plans
// (collective_plan.hpp) charge.
enum class ExchangePattern { all_to_all, neighbours, broadcast };

// The messages of one exchange on one rank, and the buffers of those that travel packed.
//
// Every rank lists what it sends to and receives from each peer: p's sends to r match r's receives
// from p in the order both list them, with the same sizes (messages to the rank itself are copies).
// A message travels straight (from backend memory the caller names, into backend memory the caller
// names) or packed (from and into slots of the exchange's own buffers, on `packed_alignment`-byte
// boundaries, at least 16).
//
// The remedy for unaligned messages (top of this file) needs a receiver to know how far past a
// 16-byte boundary its sender's data lies: the `sender_lead` of each receive. For a packed send it
// is 0; for a straight send, its offset modulo 16 in the buffer it lies in (a block of a DistArray,
// DistMatrix or Field2D, an allocation of kernels::allocate: all start on 16-byte boundaries, but
// a block a DistArray views may not), which the algorithm's plan, knowing both sides, gives both.
class Exchange {
 public:
  Exchange(const Context& ctx, ExchangePattern pattern, std::size_t packed_alignment = 16);
  ~Exchange();  // waits for an exchange still in flight before its buffers go
  Exchange(Exchange&&) noexcept;
  Exchange& operator=(Exchange&&) noexcept;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  const Context& context() const { return ctx_; }
  ExchangePattern pattern() const { return pattern_; }

  // Straight messages: `bytes` bytes at `data` (backend memory, untouched until finish()). A send's
  // `lead` is the run's offset modulo 16 in the buffer it lies in, the sender_lead its receiver
  // names (lead_of(offset)); where the remedy applies, the message starts `lead` bytes before the
  // run, which lie in the same buffer whatever its alignment. Left out: the address's own, the same
  // for a buffer that starts on a 16-byte boundary.
  static constexpr std::size_t kLeadOfAddress = static_cast<std::size_t>(-1);
  void send(int peer, const void* data, std::size_t bytes, std::size_t lead = kLeadOfAddress);
  void receive(int peer, void* data, std::size_t bytes, std::size_t sender_lead = 0);
  // Packed messages: the index of the piece (0, 1, ... in the order of the calls of each kind),
  // whose slot prepare() allocates.
  // A packed receive's slot starts on the exchange's packed alignment, or, where `alignment` is
  // given (a power of two, at most the packed alignment), on that boundary alone where the message
  // brings no lead (a message from this rank itself; any message on a path without the remedy):
  // packed receives of one element type laid one after another then land end to end, in one run
  // a caller can read as a whole (the distributed sort's merge). A message that brings a lead
  // lands on a 16-byte boundary whatever `alignment` says.
  std::size_t send_packed(int peer, std::size_t bytes);
  std::size_t receive_packed(int peer, std::size_t bytes, std::size_t sender_lead = 0, std::size_t alignment = 0);
  // A broadcast (ExchangePattern::broadcast, one per exchange): `bytes` bytes of backend memory
  // from root's `data` into every other rank's `data` (each rank names its own buffer; the root's
  // is only read). Every rank names the same root and size.
  void broadcast(int root, void* data, std::size_t bytes);

  // The bytes this rank sends to other ranks, and to itself (messages to itself).
  double bytes_to_others() const { return bytes_to_others_; }
  double bytes_to_self() const { return bytes_to_self_; }
  // The collectives of one run (collective_plan.hpp): one alltoallv of every byte sent (all_to_all),
  // one neighbor_exchange of the bytes sent to other ranks (neighbours), or one bcast of the
  // broadcast's bytes (broadcast). Pure arithmetic.
  CollectivePlan plan() const;

  // Allocates the slots of the packed pieces (and of the straight receives the remedy stages).
  // Not collective: a rank out of memory throws OutOfMemory, as making its result's block would.
  void prepare();
  // Where the pack writes send piece i, and where the unpack reads receive piece i (its run, past
  // the lead where the remedy took one), once prepared. Backend memory.
  void* send_slot(std::size_t piece) const;
  const void* received_slot(std::size_t piece) const;

  // Posts every message (prepare() first, where not yet done); stream-ordered with the context's
  // queue as DeviceComm's exchanges are: the sends read what work queued before start() wrote.
  void start();
  // Completes the exchange: work queued after it sees every message received (straight receives
  // the remedy staged copied into place).
  void finish();
  void run() {
    start();
    finish();
  }
  // Frees the slots (after finish(), in stream order: work queued before may still read them),
  // for an unpack that has copied out what it needs and has more to do.
  void release_buffers();

  // Whether this exchange sends from and receives to 16-byte boundaries (the path's preference,
  // DeviceComm::prefers_aligned_messages, or the test override below): the messages to other ranks
  // of kAlignedFromBytes or more, or every one where the override forces it.
  bool aligned() const { return aligned_; }
  // Below this size a message travels as it lies: its staged copy and slot (a few microseconds on
  // an H200) cost more than the faster copies gain, which pass that at about 1 MiB between two
  // H200s (NCCL at 60% of its rate from unaligned runs, about 150 GB/s).
  static constexpr std::size_t kAlignedFromBytes = std::size_t{1} << 20;

 private:
  struct Piece {
    int peer = 0;
    char* data = nullptr;      // straight: the caller's memory
    std::size_t bytes = 0;     // the run
    std::size_t lead = 0;      // sends: the run's own lead; receives: the sender's
    bool packed = false;
    bool staged = false;       // a straight receive that lands in a slot first
    std::size_t slot = 0;      // offset of the slot in the exchange's buffer
    std::size_t alignment = 0; // packed receives: the slot's boundary without a lead (0: packed_alignment_)
  };
  // The remedy for a message to another rank of at least kAlignedFromBytes (every message where a
  // test forces it): below, staging it costs more than the alignment gains.
  bool travels_aligned(const Piece& piece) const {
    return aligned_ && piece.peer != ctx_.rank() && piece.bytes >= aligned_from_bytes_;
  }
  void release();

  Context ctx_;
  ExchangePattern pattern_;
  std::size_t packed_alignment_;
  DeviceComm comm_;
  bool aligned_ = false;
  std::size_t aligned_from_bytes_ = kAlignedFromBytes;  // 0 where detail::force_aligned_exchange(true)
  bool prepared_ = false;
  std::vector<Piece> sends_, recvs_;
  std::vector<std::size_t> packed_sends_, packed_recvs_;  // indices into sends_ / recvs_
  double bytes_to_others_ = 0, bytes_to_self_ = 0;
  void* send_buffer_ = nullptr;  // kernels::allocate (CUDA-aware MPI maps it)
  void* recv_buffer_ = nullptr;
  std::optional<DeviceComm::Request> pending_;
};

namespace detail {
// Whether exchanges travel from 16-byte boundaries: nullopt follows the path (the default, unless
// TESSERA_TEST_ALIGNED_EXCHANGE=1 or =0 makes it true or false); true or false forces it (tests run
// the remedy on the cpu backend, benchmarks measure a path without it). Not thread-safe.
void force_aligned_exchange(std::optional<bool> aligned);
std::optional<bool> forced_aligned_exchange();
}  // namespace detail

// plan() -> an Exchange (host), prepared; pack(exchange) (local); the exchange started; overlap()
// (local); the exchange finished (communication); unpack(exchange) (fixup), whose value is
// returned. Timed as PhaseTimes says (skeleton.hpp). `call` names the call's NVTX range, inside
// which "plan", "pack", "overlap", "exchange" and "unpack" are ranges of their own (trace.hpp).
template <class Plan, class Pack, class Overlap, class Unpack>
decltype(auto) exchange_phases(const trace::Call& call, const Context& ctx, PhaseTimes* times, Plan&& plan,
                               Pack&& pack, Overlap&& overlap, Unpack&& unpack) {
  const trace::Range whole(call, ctx);
  PhaseClock clock(ctx.queue(), times != nullptr);
  Exchange exchange = [&] {
    const trace::Range phase(call, "plan");
    Exchange planned = plan();
    planned.prepare();
    return planned;
  }();
  clock.end_phase(times ? &times->host : nullptr);
  {
    const trace::Range phase(call, "pack");
    pack(exchange);
  }
  exchange.start();
  {
    const trace::Range phase(call, "overlap");
    overlap();
  }
  clock.end_phase(times ? &times->local : nullptr);
  {
    const trace::Range phase(call, "exchange");
    exchange.finish();
  }
  clock.end_phase(times ? &times->communication : nullptr);
  const trace::Range phase(call, "unpack");
  if constexpr (std::is_void_v<decltype(unpack(exchange))>) {
    unpack(exchange);
    clock.end_phase(times ? &times->fixup : nullptr);
    clock.finish();
  } else {
    auto result = unpack(exchange);
    clock.end_phase(times ? &times->fixup : nullptr);
    clock.finish();
    return result;
  }
}

// A pipeline of exchanges: steps 0 .. steps - 1, each planned (plan(s) -> its exchanges: any range
// of Exchange, started together), packed (pack(s, exchanges)), exchanged and unpacked (unpack(s,
// exchanges): the local work that reads what the step received), with step s + 1 planned, packed
// and started before step s is finished and unpacked, so that its messages travel while step s's
// unpack runs (SUMMA's panels: the broadcasts of the next panels behind the product of these).
// Two steps are in flight at most: the buffers a step packs and receives into must differ from the
// step before's (two that alternate suffice: the pack of step s + 1 is queued after the unpack of
// step s - 1, the last reader of the same buffer).
//
// Timed as PhaseTimes says (skeleton.hpp), each step's unpack counting as local work, since it is
// the work the next step's exchange travels behind: host = the plans, local = the packs and the
// unpacks, communication = the waits for exchanges not yet done; no fixup. `call` names the NVTX
// range, inside which each step's "plan", "pack", "exchange" and "unpack" are ranges of their own.
template <class Plan, class Pack, class Unpack>
void pipelined_exchange_phases(const trace::Call& call, const Context& ctx, PhaseTimes* times, std::size_t steps,
                               Plan&& plan, Pack&& pack, Unpack&& unpack) {
  const trace::Range whole(call, ctx);
  PhaseClock clock(ctx.queue(), times != nullptr);
  using Exchanges = std::decay_t<decltype(plan(std::size_t{0}))>;
  std::optional<Exchanges> in_flight[2];
  auto post = [&](std::size_t s) {
    std::optional<Exchanges>& step = in_flight[s % 2];
    {
      const trace::Range phase(call, "plan");
      step.emplace(plan(s));
      for (Exchange& x : *step) x.prepare();
    }
    clock.end_phase(times ? &times->host : nullptr);
    {
      const trace::Range phase(call, "pack");
      pack(s, *step);
    }
    for (Exchange& x : *step) x.start();
    clock.end_phase(times ? &times->local : nullptr);
  };
  if (steps > 0) post(0);
  for (std::size_t s = 0; s < steps; ++s) {
    if (s + 1 < steps) post(s + 1);
    std::optional<Exchanges>& step = in_flight[s % 2];
    {
      const trace::Range phase(call, "exchange");
      for (Exchange& x : *step) x.finish();
    }
    clock.end_phase(times ? &times->communication : nullptr);
    {
      const trace::Range phase(call, "unpack");
      unpack(s, *step);
    }
    clock.end_phase(times ? &times->local : nullptr);
    step.reset();  // the exchanges' own buffers go in stream order, after the unpack
  }
  clock.finish();
}

// The same, named "exchange" for profilers.
template <class Plan, class Pack, class Overlap, class Unpack>
decltype(auto) exchange_phases(const Context& ctx, PhaseTimes* times, Plan&& plan, Pack&& pack, Overlap&& overlap,
                               Unpack&& unpack) {
  return exchange_phases(trace::Call{"exchange"}, ctx, times, std::forward<Plan>(plan), std::forward<Pack>(pack),
                         std::forward<Overlap>(overlap), std::forward<Unpack>(unpack));
}

// For exchanges with nothing to pack, overlap or unpack.
struct NoPack {
  void operator()(Exchange&) const {}
};
inline constexpr NoPack no_pack{};
struct NoOverlap {
  void operator()() const {}
};
inline constexpr NoOverlap no_overlap{};
struct NoUnpack {
  void operator()(Exchange&) const {}
};
inline constexpr NoUnpack no_unpack{};

// How far past a 16-byte boundary `offset` bytes into a buffer that starts on one lies: the
// sender_lead of a straight message sent from there.
constexpr std::size_t lead_of(std::size_t offset) { return offset % 16; }

namespace detail {
// The library's own algorithms name them here, beside three_phases.
using tessera::exchange_phases;
using tessera::lead_of;
using tessera::pipelined_exchange_phases;
using tessera::no_overlap;
using tessera::no_pack;
using tessera::no_unpack;
}  // namespace detail
}  // namespace tessera
