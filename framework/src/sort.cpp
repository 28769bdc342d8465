// The distributed sort on bytes (algorithms/sort.hpp explains the algorithm; the element types
// only reach it through the local sort function and the keys' order: a radix format, or a
// comparator's host comparison and device search).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/framework/algorithms/sort.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/framework/trace.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::detail {
namespace {

// Regular samples per rank: 64 per rank of the job, so that the brackets (about N / samples
// elements around each boundary, sent to both neighbours) cost about 1.6% of extra traffic; at
// most 2^20 samples in all (8 MiB on every rank) beyond 128 ranks.
index_t samples_per_rank(int ranks) {
  constexpr index_t kMaxSamples = index_t(1) << 20;
  return std::max<index_t>(64, std::min<index_t>(64 * index_t(ranks), kMaxSamples / ranks));
}

// Where a block of `size` sorted elements takes its samples: every element of a small block,
// otherwise `count` positions `stride` apart from stride / 2.
struct SampleGrid {
  index_t first = 0, stride = 1, count = 0;
  SampleGrid(index_t size, index_t samples) {
    if (size <= samples) {
      count = size;
    } else {
      stride = size / samples;
      first = stride / 2;
      count = samples;
    }
  }
  index_t position(index_t k) const { return first + k * stride; }
};

// A sample: its bytes in the gathered samples (the radix bits of a radix key, the key itself with a
// comparator), and where it came from. Ordered like the elements: by key, then by global position,
// which for two samples of one key is (rank, position in the rank's sorted block): blocks hold
// consecutive global ranges in rank order, and the local sort is stable.
struct Sample {
  const unsigned char* key;
  int rank;
  index_t k;  // the rank's k-th sample
};

// A splitter: a sample, or one of the ends of the whole sequence.
struct Splitter {
  enum Kind { before_all, sample, after_all } kind = before_all;
  Sample at{};
};

std::uint64_t load_radix(const void* key, const SortKeyFormat& format) {
  std::uint64_t bits = 0;
  if (format.bytes == 4) {
    std::uint32_t narrow;
    std::memcpy(&narrow, key, 4);
    return kernels::RadixTwiddle<std::uint32_t>{static_cast<std::uint32_t>(format.sign_mask),
                                                static_cast<std::uint32_t>(format.float_mask)}
        .to_radix(narrow);
  }
  std::memcpy(&bits, key, 8);
  return kernels::RadixTwiddle<std::uint64_t>{format.sign_mask, format.float_mask}.to_radix(bits);
}

void store_key(std::uint64_t radix, const SortKeyFormat& format, void* key) {
  if (format.bytes == 4) {
    const std::uint32_t narrow = kernels::RadixTwiddle<std::uint32_t>{static_cast<std::uint32_t>(format.sign_mask),
                                                                      static_cast<std::uint32_t>(format.float_mask)}
                                     .from_radix(static_cast<std::uint32_t>(radix));
    std::memcpy(key, &narrow, 4);
    return;
  }
  const std::uint64_t bits = kernels::RadixTwiddle<std::uint64_t>{format.sign_mask, format.float_mask}.from_radix(radix);
  std::memcpy(key, &bits, 8);
}

// Backend memory from kernels::allocate, freed unless released.
class Block {
 public:
  Block(const kernels::Queue& queue, std::size_t bytes) : queue_(queue) {
    if (bytes) data_ = kernels::allocate(queue, bytes);
  }
  ~Block() {
    if (data_) kernels::deallocate(queue_, data_);
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  char* data() const { return static_cast<char*>(data_); }
  void* release() { return std::exchange(data_, nullptr); }

 private:
  kernels::Queue queue_;
  void* data_ = nullptr;
};

// Allocations of one step, made on every rank before a collective agrees that all succeeded:
// a rank without the memory must not leave the others waiting in the exchange.
class StepMemory {
 public:
  explicit StepMemory(const kernels::Queue& queue) : queue_(queue) {}
  char* add(std::size_t bytes) {
    if (failed_ || bytes == 0) return nullptr;
    try {
      blocks_.push_back(std::make_unique<Block>(queue_, bytes));
      return blocks_.back()->data();
    } catch (const std::bad_alloc&) {
      failed_ = true;
      failed_bytes_ = bytes;
      return nullptr;
    }
  }
  // A failure of an allocation made elsewhere in the step, to agree on with the others.
  void note_failure(std::size_t bytes) {
    failed_ = true;
    failed_bytes_ = std::max(failed_bytes_, bytes);
  }
  // Collective: throws OutOfMemory on every rank if any rank failed.
  void agree(const Communicator& comm, const char* step) const {
    const std::uint64_t mine = failed_ ? std::max<std::uint64_t>(failed_bytes_, 1) : 0;
    const auto worst = comm.allreduce(static_cast<std::int64_t>(mine), ReduceOp::max);
    if (worst == 0) return;
    const int failing = comm.allreduce(failed_ ? comm.rank() : comm.size(), ReduceOp::min);
    throw OutOfMemory(static_cast<std::size_t>(worst),
                      std::string(step) + " of the distributed sort on rank " + std::to_string(failing));
  }
  bool failed() const { return failed_; }
  // Frees the block at `data` now (in stream order), before the step ends.
  void free(const char* data) {
    for (auto& block : blocks_)
      if (block && block->data() == data) block.reset();
  }
  // Takes the block at `data` out of this step's care (the caller owns it).
  void* release(const char* data) {
    for (auto& block : blocks_)
      if (block && block->data() == data) return block->release();
    return nullptr;
  }

 private:
  kernels::Queue queue_;
  std::vector<std::unique_ptr<Block>> blocks_;
  bool failed_ = false;
  std::size_t failed_bytes_ = 0;
};

struct PeerRange {
  index_t start;  // the first element sent, in the sender's sorted block
  index_t count;
};

// What a rank tells each peer about the range it sends it: a PeerRange, then the samples (see
// SampleOrder) of the range's first and last element (where count > 0), in one record of
// record_bytes(sample_bytes) bytes.
std::size_t record_bytes(std::size_t sample_bytes) { return sizeof(PeerRange) + 2 * sample_bytes; }

// The order of the sample sort on the host: a sample is a key's radix bits (8 bytes, compared as an
// integer) or, with a comparator, the key's own bytes compared by it.
struct SampleOrder {
  const SortOrder& order;
  bool radix() const { return !order.less; }
  std::size_t sample_bytes() const { return radix() ? sizeof(std::uint64_t) : order.key_bytes; }
};

// Where the runs a rank receives lie (one per sender, in rank order, elements of `element_bytes`
// bytes): each at its own address, end to end or with gaps between (the exchange's slots).
// The boundary a run of elements of `bytes` bytes needs: the largest power of two dividing it, at
// most 16 (an element's alignment divides its size).
std::size_t element_alignment(std::size_t bytes) {
  std::size_t a = 1;
  while (a < 16 && bytes % (2 * a) == 0) a *= 2;
  return a;
}

struct Runs {
  std::vector<char*> at;       // the first element of each sender's run
  std::vector<index_t> count;  // its elements
  std::size_t element_bytes = 0;
  bool gapped = false;  // some run does not start where the one before it ends
  char* first = nullptr;  // the first non-empty run (where the runs start, end to end)

  explicit Runs(std::size_t bytes) : element_bytes(bytes) {}
  // The runs, now end to end from `base`: `elements` in all.
  void close_at(char* base, index_t elements) {
    at.assign(1, base);
    count.assign(1, elements);
    gapped = false;
    first = base;
  }

  void add(char* run, index_t elements) {
    if (elements > 0) {
      if (first == nullptr) first = run;
      else gapped = gapped || run != end_;
      end_ = run + static_cast<std::size_t>(elements) * element_bytes;
    }
    at.push_back(run);
    count.push_back(elements);
  }
  // Copies elements [first, first + n) of the runs, end to end, to `out`: one copy per run they touch.
  void copy(const kernels::Queue& queue, index_t from, index_t n, char* out) const {
    if (!gapped) {
      if (n > 0) kernels::copy_within_async(queue, out, first + static_cast<std::size_t>(from) * element_bytes,
                                            static_cast<std::size_t>(n) * element_bytes);
      return;
    }
    index_t run_first = 0;  // the run's first element, end to end
    for (std::size_t p = 0; p < at.size() && n > 0; ++p) {
      const index_t run_end = run_first + count[p];
      const index_t lo = std::max(from, run_first), hi = std::min(from + n, run_end);
      if (hi > lo) {
        kernels::copy_within_async(queue, out + static_cast<std::size_t>(lo - from) * element_bytes,
                                   at[p] + static_cast<std::size_t>(lo - run_first) * element_bytes,
                                   static_cast<std::size_t>(hi - lo) * element_bytes);
      }
      run_first = run_end;
    }
  }

 private:
  char* end_ = nullptr;
};

}  // namespace

SortedBlocks distributed_sort(const Context& ctx, const Partition& partition, const SortOrder& order, const void* keys,
                              std::size_t value_bytes, const void* values, bool index_values, bool want_keys,
                              const LocalSortFunction& local_sort, PhaseTimes* times, SortPhaseTimes* sort_times) {
  const trace::Range range({"sort", partition.global_size()}, ctx);
  const kernels::Queue& queue = ctx.queue();
  const Communicator& comm = ctx.comm();
  const int ranks = ctx.size();
  const int me = ctx.rank();
  const std::size_t key_bytes = order.key_bytes;
  const SampleOrder samples_order{order};
  const bool radix = samples_order.radix();
  const std::size_t sample_bytes = samples_order.sample_bytes();
  const index_t global_size = partition.global_size();
  const index_t n = partition.local_size(me);
  const Partition target = Partition::block(global_size, ranks);
  const index_t share = target.local_size(me);
  const bool has_values = value_bytes > 0;
  PhaseClock clock(queue, times != nullptr || sort_times != nullptr);
  SortPhaseTimes steps;
  auto finish = [&] {
    clock.finish();
    if (times) {
      times->local += steps.local_sort;
      times->communication += steps.splitters + steps.exchange;
      times->fixup += steps.merge;
    }
    if (sort_times) *sort_times += steps;
  };
  SortedBlocks result;
  if (global_size == 0) {
    finish();
    return result;
  }

  // ---- local sort --------------------------------------------------------------------------------
  trace::Phases phase({"sort"});
  phase.next("local sort");
  if (ranks == 1) {
    // One rank: the local sort is the result, straight into the result's blocks.
    Block out_keys(queue, n * key_bytes), out_values(queue, n * value_bytes);
    Block made_indices(queue, index_values ? n * sizeof(index_t) : 0);
    if (index_values) kernels::iota(queue, reinterpret_cast<index_t*>(made_indices.data()), n, index_t(0));
    local_sort(keys, out_keys.data(), index_values ? made_indices.data() : values, out_values.data(), n);
    clock.end_phase(&steps.local_sort);
    if (want_keys) result.keys = out_keys.release();
    if (has_values) result.values = out_values.release();
    finish();
    return result;
  }
  StepMemory local_memory(queue);
  char* sorted_keys = local_memory.add(n * key_bytes);
  char* sorted_values = has_values ? local_memory.add(n * value_bytes) : nullptr;
  char* indices = index_values ? local_memory.add(n * sizeof(index_t)) : nullptr;
  const bool local_failed = local_memory.failed();
  if (!local_failed && n > 0) {
    if (index_values) kernels::iota(queue, reinterpret_cast<index_t*>(indices), n, partition.offset(me));
    local_sort(keys, sorted_keys, index_values ? indices : values, sorted_values, n);
  }
  clock.end_phase(&steps.local_sort);

  // ---- splitters ----------------------------------------------------------------------------------
  phase.next("splitters");
  // The keys at `count` positions of the sorted block as samples (bytes on the host).
  auto samples_at = [&](const std::vector<index_t>& positions, unsigned char* out) {
    if (positions.empty()) return;
    kernels::ScratchBuffer picked(queue, positions.size() * key_bytes);
    for (std::size_t j = 0; j < positions.size(); ++j)
      kernels::copy_within_async(queue, picked.as<char>() + j * key_bytes,
                                 sorted_keys + static_cast<std::size_t>(positions[j]) * key_bytes, key_bytes);
    std::vector<unsigned char> host(positions.size() * key_bytes);
    kernels::copy_to_host(queue, host.data(), picked.data(), host.size());
    for (std::size_t j = 0; j < positions.size(); ++j) {
      if (radix) {
        const std::uint64_t bits = load_radix(host.data() + j * key_bytes, order.radix);
        std::memcpy(out + j * sample_bytes, &bits, sizeof bits);
      } else {
        std::memcpy(out + j * sample_bytes, host.data() + j * key_bytes, key_bytes);
      }
    }
  };
  // Every rank's samples, after a word that says whether the rank's local sort ran.
  const index_t samples = samples_per_rank(ranks);
  const std::size_t header_bytes = sizeof(std::uint64_t);
  const std::size_t contribution = header_bytes + static_cast<std::size_t>(samples) * sample_bytes;
  std::vector<unsigned char> mine(contribution, 0);
  mine[0] = local_failed ? 1 : 0;
  const SampleGrid my_grid(n, samples);
  if (!local_failed && my_grid.count > 0) {
    kernels::ScratchBuffer picked(queue, my_grid.count * key_bytes);
    kernels::copy_2d(queue, picked.data(), 1, sorted_keys + my_grid.first * key_bytes, my_grid.stride, my_grid.count,
                     1, key_bytes);
    std::vector<unsigned char> host(static_cast<std::size_t>(my_grid.count) * key_bytes);
    kernels::copy_to_host(queue, host.data(), picked.data(), host.size());
    for (index_t k = 0; k < my_grid.count; ++k) {
      unsigned char* sample = mine.data() + header_bytes + static_cast<std::size_t>(k) * sample_bytes;
      if (radix) {
        const std::uint64_t bits = load_radix(host.data() + k * key_bytes, order.radix);
        std::memcpy(sample, &bits, sizeof bits);
      } else {
        std::memcpy(sample, host.data() + k * key_bytes, key_bytes);
      }
    }
  }
  std::vector<unsigned char> gathered(static_cast<std::size_t>(ranks) * contribution);
  comm.allgather(mine.data(), static_cast<index_t>(contribution), gathered.data());
  for (int r = 0; r < ranks; ++r)
    if (gathered[static_cast<std::size_t>(r) * contribution]) {
      local_memory.agree(comm, "the local sort");  // throws OutOfMemory on every rank
    }

  // Key order of two samples, and their order as elements (key, then global position).
  auto key_less = [&](const unsigned char* a, const unsigned char* b) {
    if (radix) {
      std::uint64_t x, y;
      std::memcpy(&x, a, sizeof x);
      std::memcpy(&y, b, sizeof y);
      return x < y;
    }
    return order.less(a, b);
  };
  auto element_less = [&](const Sample& a, const Sample& b) {
    if (key_less(a.key, b.key)) return true;
    if (key_less(b.key, a.key)) return false;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.k < b.k;
  };

  // Bounds on every sample's global rank G (elements before it), from the samples alone: rank r
  // with a of its samples before the sample v has between p(a - 1) + 1 and p(a) elements before v
  // (p(-1) = -1, p(count) = size), and exactly p(k) when v is its own k-th sample. Swept in order,
  // both bounds only grow.
  std::vector<SampleGrid> grids;
  std::vector<Sample> all;
  for (int r = 0; r < ranks; ++r) {
    grids.emplace_back(partition.local_size(r), samples);
    for (index_t k = 0; k < grids.back().count; ++k)
      all.push_back({gathered.data() + static_cast<std::size_t>(r) * contribution + header_bytes +
                         static_cast<std::size_t>(k) * sample_bytes,
                     r, k});
  }
  if (radix) {
    // The radix bits once per sample, rather than once per comparison.
    std::vector<std::pair<std::uint64_t, std::size_t>> keyed(all.size());
    for (std::size_t j = 0; j < all.size(); ++j) {
      std::memcpy(&keyed[j].first, all[j].key, sizeof(std::uint64_t));
      keyed[j].second = j;
    }
    std::sort(keyed.begin(), keyed.end());  // ties: by index in `all`, which is (rank, k) order
    std::vector<Sample> sorted_samples(all.size());
    for (std::size_t j = 0; j < keyed.size(); ++j) sorted_samples[j] = all[keyed[j].second];
    all.swap(sorted_samples);
  } else {
    std::stable_sort(all.begin(), all.end(), element_less);
  }
  auto lower = [&](int r, index_t a) { return a == 0 ? index_t(0) : grids[r].position(a - 1) + 1; };
  auto upper = [&](int r, index_t a) { return a < grids[r].count ? grids[r].position(a) : partition.local_size(r); };
  std::vector<index_t> rank_lo(all.size()), rank_hi(all.size());
  {
    index_t sum_lo = 0, sum_hi = 0;
    for (int r = 0; r < ranks; ++r) sum_hi += upper(r, 0);
    for (std::size_t j = 0; j < all.size(); ++j) {
      const int r = all[j].rank;
      const index_t k = all[j].k;
      const index_t p = grids[r].position(k);
      rank_lo[j] = sum_lo - lower(r, k) + p;
      rank_hi[j] = sum_hi;
      sum_lo += lower(r, k + 1) - lower(r, k);
      sum_hi += upper(r, k + 1) - upper(r, k);
    }
  }
  // Boundary q (1 .. ranks-1) lies at target.offset(q): below it the last sample surely at or
  // before it, above it the first sample surely at or after it. Rank q receives [below(q), above(q+1)).
  auto below = [&](int q) -> Splitter {
    if (q == 0) return {};
    const index_t boundary = target.offset(q);
    const auto it = std::upper_bound(rank_hi.begin(), rank_hi.end(), boundary);  // first with rank_hi > boundary
    if (it == rank_hi.begin()) return {};
    return {Splitter::sample, all[static_cast<std::size_t>(it - rank_hi.begin()) - 1]};
  };
  auto above = [&](int q) -> Splitter {
    if (q == ranks) return {Splitter::after_all, {}};
    const index_t boundary = target.offset(q);
    const auto it = std::lower_bound(rank_lo.begin(), rank_lo.end(), boundary);  // first with rank_lo >= boundary
    if (it == rank_lo.end()) return {Splitter::after_all, {}};
    return {Splitter::sample, all[static_cast<std::size_t>(it - rank_lo.begin())]};
  };

  // Where each splitter falls in this rank's sorted block: its own samples' positions are known;
  // another rank's sample of key k comes after this rank's elements of key k when that rank is
  // higher (upper bound of k), before them when it is lower (lower bound).
  std::vector<Splitter> splitters;
  for (int q = 0; q < ranks; ++q) {
    splitters.push_back(below(q));
    splitters.push_back(above(q + 1));
  }
  std::vector<index_t> position(splitters.size(), 0);
  {
    std::vector<unsigned char> lower_needles, upper_needles;
    std::vector<std::size_t> lower_slots, upper_slots;
    for (std::size_t i = 0; i < splitters.size(); ++i) {
      const Splitter& s = splitters[i];
      if (s.kind == Splitter::before_all) {
        position[i] = 0;
      } else if (s.kind == Splitter::after_all) {
        position[i] = n;
      } else if (s.at.rank == me) {
        position[i] = my_grid.position(s.at.k);
      } else {
        auto& needles = s.at.rank < me ? lower_needles : upper_needles;
        (s.at.rank < me ? lower_slots : upper_slots).push_back(i);
        needles.resize(needles.size() + key_bytes);
        if (radix) {
          std::uint64_t bits;
          std::memcpy(&bits, s.at.key, sizeof bits);
          store_key(bits, order.radix, needles.data() + needles.size() - key_bytes);
        } else {
          std::memcpy(needles.data() + needles.size() - key_bytes, s.at.key, key_bytes);
        }
      }
    }
    for (const bool upper_bound : {false, true}) {
      const auto& needles = upper_bound ? upper_needles : lower_needles;
      const auto& slots = upper_bound ? upper_slots : lower_slots;
      const auto m = static_cast<index_t>(slots.size());
      if (m == 0) continue;
      kernels::ScratchBuffer device_needles(queue, needles.size());
      kernels::ScratchBuffer device_positions(queue, m * sizeof(index_t));
      kernels::copy_from_host(queue, device_needles.data(), needles.data(), needles.size());
      if (radix) {
        kernels::detail::sorted_search_precompiled(queue, order.radix.bytes, order.radix.sign_mask,
                                                   order.radix.float_mask, sorted_keys, n, device_needles.data(), m,
                                                   upper_bound, device_positions.as<index_t>());
      } else {
        order.bound(sorted_keys, n, device_needles.data(), m, upper_bound, device_positions.as<index_t>());
      }
      std::vector<index_t> found(slots.size());
      kernels::copy_to_host(queue, found.data(), device_positions.data(), found.size() * sizeof(index_t));
      for (std::size_t j = 0; j < slots.size(); ++j) position[slots[j]] = found[j];
    }
  }
  std::vector<PeerRange> send(static_cast<std::size_t>(ranks)), recv(static_cast<std::size_t>(ranks));
  for (int q = 0; q < ranks; ++q) {
    const index_t start = position[2 * static_cast<std::size_t>(q)];
    const index_t end = position[2 * static_cast<std::size_t>(q) + 1];
    TESSERA_ASSERT(start <= end, "sort: a splitter above the next one");
    // A rank whose share is empty needs nothing.
    send[static_cast<std::size_t>(q)] = target.local_size(q) == 0 ? PeerRange{0, 0} : PeerRange{start, end - start};
  }
  // Each peer's range, with the samples of its first and last key, so that a receiver can tell
  // whether its runs arrive in order already (sorted input, equal keys): two elements per peer.
  const std::size_t record = record_bytes(sample_bytes);
  std::vector<unsigned char> send_records(static_cast<std::size_t>(ranks) * record, 0);
  std::vector<unsigned char> recv_records(send_records.size());
  {
    std::vector<index_t> ends;
    for (const PeerRange& r : send)
      if (r.count > 0) {
        ends.push_back(r.start);
        ends.push_back(r.start + r.count - 1);
      }
    std::vector<unsigned char> end_samples(ends.size() * sample_bytes);
    samples_at(ends, end_samples.data());
    std::size_t j = 0;
    for (std::size_t q = 0; q < send.size(); ++q) {
      unsigned char* rec = send_records.data() + q * record;
      std::memcpy(rec, &send[q], sizeof(PeerRange));
      if (send[q].count > 0) {
        std::memcpy(rec + sizeof(PeerRange), end_samples.data() + j++ * sample_bytes, sample_bytes);
        std::memcpy(rec + sizeof(PeerRange) + sample_bytes, end_samples.data() + j++ * sample_bytes, sample_bytes);
      }
    }
  }
  static_assert(sizeof(PeerRange) == 2 * sizeof(std::int64_t) && std::is_trivially_copyable_v<PeerRange>);
  comm.alltoall(send_records.data(), static_cast<index_t>(record), recv_records.data());
  index_t received = 0, first_rank = 0;  // elements received; global rank of the first of them
  // The received runs need a merge unless each starts at or above where the one before ended.
  bool in_order = true;
  const unsigned char* previous_last = nullptr;
  for (std::size_t q = 0; q < recv.size(); ++q) {
    const unsigned char* rec = recv_records.data() + q * record;
    std::memcpy(&recv[q], rec, sizeof(PeerRange));
    const PeerRange& r = recv[q];
    received += r.count;
    first_rank += r.start;
    if (r.count == 0) continue;
    if (previous_last && key_less(rec + sizeof(PeerRange), previous_last)) in_order = false;
    previous_last = rec + sizeof(PeerRange) + sample_bytes;
  }
  const index_t window = target.offset(me) - first_rank;
  TESSERA_ASSERT(share == 0 || (window >= 0 && window + share <= received),
                 "sort: the received range does not hold this rank's share");
  clock.end_phase(&steps.splitters);

  // ---- exchange and merge -------------------------------------------------------------------------
  phase.close();  // the exchange's own ranges follow
  // Each peer's keys, and values, go as messages straight from the sorted block into the exchange's
  // slots, one run per sender in source-rank order (Exchange: from the 16-byte boundary before each
  // run, landing on one, where the path copies faster from there): one exchange, nothing packed.
  // The keys' slots follow one another on the keys' own alignment, then the values', so that runs
  // that bring no lead (this rank's own; every run where the path takes no remedy) land end to
  // end. The merge then reads the runs where they landed.
  PhaseTimes exchanged;
  const bool timed = times != nullptr || sort_times != nullptr;
  std::vector<std::size_t> key_piece(static_cast<std::size_t>(ranks), SIZE_MAX), value_piece = key_piece;
  StepMemory exchange_memory(queue);
  char* out_keys = nullptr;
  char* out_values = nullptr;
  char* closed_keys = nullptr;
  char* closed_values = nullptr;
  exchange_phases(
      {"sort: exchange", target.global_size()}, ctx, timed ? &exchanged : nullptr,
      [&] {
        Exchange exchange(ctx, ExchangePattern::all_to_all);
        for (int p = 0; p < ranks; ++p) {
          const auto q = static_cast<std::size_t>(p);
          const PeerRange& out = send[q];
          const PeerRange& in = recv[q];
          if (p != me)
            steps.exchange_bytes += static_cast<double>((out.count + in.count) * static_cast<index_t>(key_bytes + value_bytes));
          if (out.count > 0) {
            exchange.send(p, sorted_keys + out.start * key_bytes, static_cast<std::size_t>(out.count) * key_bytes,
                          lead_of(static_cast<std::size_t>(out.start) * key_bytes));
            if (has_values)
              exchange.send(p, sorted_values + out.start * value_bytes, static_cast<std::size_t>(out.count) * value_bytes,
                            lead_of(static_cast<std::size_t>(out.start) * value_bytes));
          }
          if (in.count > 0)
            key_piece[q] = exchange.receive_packed(p, static_cast<std::size_t>(in.count) * key_bytes,
                                                   lead_of(static_cast<std::size_t>(in.start) * key_bytes),
                                                   element_alignment(key_bytes));
        }
        // The values' runs after all the keys' (each peer's key before its value, as sent), so that
        // the runs of each land end to end wherever no lead separates them.
        for (int p = 0; p < ranks && has_values; ++p) {
          const PeerRange& in = recv[static_cast<std::size_t>(p)];
          if (in.count > 0)
            value_piece[static_cast<std::size_t>(p)] =
                exchange.receive_packed(p, static_cast<std::size_t>(in.count) * value_bytes,
                                        lead_of(static_cast<std::size_t>(in.start) * value_bytes),
                                        element_alignment(value_bytes));
        }
        // The slots, and the merge's buffers, agreed on before the exchange: a rank without the
        // memory must not leave the others waiting in it.
        try {
          exchange.prepare();
        } catch (const OutOfMemory& e) {
          exchange_memory.note_failure(e.bytes());
        }
        // A merge sorts the runs end to end: a buffer to close the gaps in, where they may have any
        // (not known before the slots are laid out, so always kept where a merge will sort).
        if (!in_order) {
          closed_keys = exchange_memory.add(received * key_bytes);
          if (has_values) closed_values = exchange_memory.add(received * value_bytes);
        }
        out_keys = want_keys ? exchange_memory.add(share * key_bytes) : nullptr;
        out_values = has_values ? exchange_memory.add(share * value_bytes) : nullptr;
        exchange_memory.agree(comm, "the exchange");
        return exchange;
      },
      no_pack, no_overlap,
      // ---- merge -------------------------------------------------------------------------------------
      // The runs arrive in source-rank order, each sorted; a stable sort of their concatenation
      // orders equal keys by source rank, then by position: by global position. Runs already in
      // order (equal keys across a border are: the lower rank's come first) are the sorted sequence
      // as they stand. Before a sort, gaps between the runs are closed: the runs, end to end, in the
      // buffer kept for it (the exchange's slots freed at once).
      [&](Exchange& exchange) {
        Runs key_runs(key_bytes), value_runs(value_bytes);
        for (std::size_t q = 0; q < key_piece.size(); ++q) {
          const bool has = key_piece[q] != SIZE_MAX;
          key_runs.add(has ? static_cast<char*>(const_cast<void*>(exchange.received_slot(key_piece[q]))) : nullptr,
                       has ? recv[q].count : 0);
          if (has_values)
            value_runs.add(has ? static_cast<char*>(const_cast<void*>(exchange.received_slot(value_piece[q]))) : nullptr,
                           has ? recv[q].count : 0);
        }
        char* merged_keys = key_runs.first;
        char* merged_values = value_runs.first;
        if (!in_order && received > 0) {
          // The local sort reads its arrays from 16-byte boundaries (as every block starts on one):
          // runs end to end but off a boundary are moved too.
          if (key_runs.gapped || lead_of(reinterpret_cast<std::uintptr_t>(key_runs.first)) != 0) {
            key_runs.copy(queue, 0, received, closed_keys);
            key_runs.close_at(closed_keys, received);
          }
          if (has_values && (value_runs.gapped || lead_of(reinterpret_cast<std::uintptr_t>(value_runs.first)) != 0)) {
            value_runs.copy(queue, 0, received, closed_values);
            value_runs.close_at(closed_values, received);
          }
          merged_keys = key_runs.first;
          merged_values = value_runs.first;
          // The slots go before the sort where it no longer reads them (in stream order).
          if (merged_keys == closed_keys && (!has_values || merged_values == closed_values)) exchange.release_buffers();
          local_sort(merged_keys, merged_keys, merged_values, merged_values, received);
        }
        if (share > 0) {
          if (want_keys) key_runs.copy(queue, window, share, out_keys);
          if (has_values) value_runs.copy(queue, window, share, out_values);
        }
      });
  clock.end_phase(nullptr);  // timed by the exchange's own phases
  steps.exchange += exchanged.host + exchanged.local + exchanged.communication;
  steps.merge += exchanged.fixup;
  if (out_keys) result.keys = exchange_memory.release(out_keys);
  if (out_values) result.values = exchange_memory.release(out_values);
  finish();
  return result;
}

}  // namespace tessera::detail

namespace tessera {

namespace detail {

CollectivePlan sample_sort_plan(const Partition& partition, int rank, std::size_t sample_bytes,
                                std::size_t element_bytes) {
  const int ranks = partition.parts();
  if (ranks == 1 || partition.global_size() == 0) return {};
  const auto samples = static_cast<double>(samples_per_rank(ranks));
  return {{Collective::allgather, sizeof(std::uint64_t) + samples * static_cast<double>(sample_bytes)},
          {Collective::alltoallv, static_cast<double>(ranks) * static_cast<double>(record_bytes(sample_bytes))},
          {Collective::allreduce, sizeof(std::int64_t)},
          {Collective::alltoallv, static_cast<double>(partition.local_size(rank)) * static_cast<double>(element_bytes)}};
}

}  // namespace detail

CollectivePlan sort_plan(const Partition& partition, int rank, std::size_t key_bytes, std::size_t value_bytes) {
  return detail::sample_sort_plan(partition, rank, sizeof(std::uint64_t), key_bytes + value_bytes);
}

}  // namespace tessera
