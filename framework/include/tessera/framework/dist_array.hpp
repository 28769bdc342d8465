// DistArray<T>: a global array of T cut into one block per rank of a context. Each rank owns its
// block in the backend's memory (device memory under cuda) and knows the partition.
//
// T: any trivially copyable type, default constructible (int8..int64, uint8..uint64, float, double,
// or a struct of them). Blocks travel between ranks as bytes (mpi_type.hpp); HDF5 reads and writes
// the arithmetic types (io.hpp). iota() and generate() are for arithmetic types.
//
// An array owns its blocks and is moved, not copied: copy() (or clone()) makes a new array with the
// same partition and contents. view(first, last) is an array that does not own its blocks: the
// elements [first, last) of this one, which every algorithm takes (and writes through, where it
// writes); it must not outlive this array. at(i) reads element i on every rank (collective).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <new>
#include <optional>
#include <string>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/kernels/element_traits.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {

namespace detail {
// True for the element types whose fill, iota and generate the kernels library precompiles: the
// integer and floating-point ElementTraits types.
template <class T>
inline constexpr bool is_generated_type = is_numeric_element_v<T>;
}  // namespace detail

template <class T>
class DistArray {
  static_assert(std::is_trivially_copyable_v<T>,
                "DistArray<T>: T must be trivially copyable (blocks travel between ranks and devices as bytes): no "
                "std::string, std::vector or class with a copy constructor, assignment or destructor of its own");
  static_assert(std::is_default_constructible_v<T>, "DistArray<T>: T must be default constructible");

 public:
  using value_type = T;

  DistArray() = default;
  // The block distribution of global_size elements over the context's ranks. Contents undefined.
  DistArray(const Context& ctx, index_t global_size) : DistArray(ctx, Partition::block(global_size, ctx.size())) {}
  // Any partition with one part per rank of the context (ragged ones, after a filter).
  DistArray(const Context& ctx, Partition partition) : ctx_(ctx), partition_(std::move(partition)) {
    TESSERA_ASSERT(!ctx_.is_null(), "DistArray on a null context");
    TESSERA_ASSERT(partition_.parts() == ctx_.size(), "DistArray: partition has a part count other than the ranks");
    local_size_ = partition_.local_size(ctx_.rank());
    global_offset_ = partition_.offset(ctx_.rank());
    capacity_ = local_size_;
    // OutOfMemory (this rank only) when the block does not fit, or its byte count not in 64 bits.
    data_ = static_cast<T*>(kernels::allocate(ctx_.queue(), kernels::array_bytes(local_size_, sizeof(T), "a block")));
  }
  ~DistArray() { release(); }
  DistArray(DistArray&& other) noexcept
      : ctx_(std::move(other.ctx_)),
        partition_(std::move(other.partition_)),
        local_size_(std::exchange(other.local_size_, 0)),
        global_offset_(std::exchange(other.global_offset_, 0)),
        capacity_(std::exchange(other.capacity_, 0)),
        data_(std::exchange(other.data_, nullptr)),
        owns_(std::exchange(other.owns_, true)) {}
  DistArray& operator=(DistArray&& other) noexcept {
    if (this != &other) {
      release();
      ctx_ = std::move(other.ctx_);
      partition_ = std::move(other.partition_);
      local_size_ = std::exchange(other.local_size_, 0);
      global_offset_ = std::exchange(other.global_offset_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
      data_ = std::exchange(other.data_, nullptr);
      owns_ = std::exchange(other.owns_, true);
    }
    return *this;
  }
  DistArray(const DistArray&) = delete;
  DistArray& operator=(const DistArray&) = delete;

  const Context& context() const { return ctx_; }
  const Partition& partition() const { return partition_; }
  index_t global_size() const { return partition_.global_size(); }
  index_t local_size() const { return local_size_; }
  index_t global_offset() const { return global_offset_; }
  std::size_t local_bytes() const { return static_cast<std::size_t>(local_size_) * sizeof(T); }
  // Elements the local block has room for (>= local_size(); more after a filter, see filter()).
  index_t local_capacity() const { return capacity_; }
  // A new array with this one's context, partition and contents (stream-ordered copies of the
  // blocks; no collective). Where this is a view, the copy owns its blocks.
  DistArray copy() const {
    DistArray out(ctx_, partition_);
    if (local_size_ > 0) kernels::copy_within_async(ctx_.queue(), out.data_, data_, local_bytes());
    return out;
  }
  DistArray clone() const { return copy(); }

  // The elements [first, last) of this array as an array of last - first elements, in a partition
  // of its own (each rank's part is where its block meets the range; element i of the view is
  // element first + i of this array): it holds no storage and writes through to this array, which
  // must outlive it. A range outside [0, global_size()] or with last < first is a UsageError on
  // every rank (every rank knows the sizes). No collective.
  DistArray view(index_t first, index_t last) {
    DistArray v = make_view(first, last);
    return v;
  }
  const DistArray view(index_t first, index_t last) const { return const_cast<DistArray*>(this)->make_view(first, last); }
  // True when this array is a view of another (it owns no storage).
  bool is_view() const { return !owns_; }

  // Element i (global index) on every rank: the owner reads it, one broadcast gives it to the
  // others. Collective. An index outside [0, global_size()) is a UsageError on every rank.
  T at(index_t i) const {
    if (i < 0 || i >= global_size())
      throw UsageError("DistArray::at: index " + std::to_string(i) + " outside [0, " + std::to_string(global_size()) + ")");
    const int owner = partition_.owner(i);
    T value{};
    if (ctx_.rank() == owner) kernels::copy_to_host(ctx_.queue(), &value, data_ + (i - global_offset_), sizeof(T));
    ctx_.comm().bcast(reinterpret_cast<unsigned char*>(&value), static_cast<index_t>(sizeof(T)), owner);
    return value;
  }

  // Moves the block into storage of exactly local_size() elements, releasing the rest. Stream-ordered
  // (the copy, and the old storage's release after it, in the queue's order); the host does not wait.
  void shrink_to_fit() {
    if (capacity_ == local_size_ || !owns_) return;
    T* exact = static_cast<T*>(kernels::allocate(ctx_.queue(), local_bytes()));
    kernels::copy_within_async(ctx_.queue(), exact, data_, local_bytes());
    release();
    data_ = exact;
    capacity_ = local_size_;
  }

  // Hands the block's storage (room for local_capacity() elements, from kernels::allocate on the
  // context's queue) to the caller, who must free it or pass it to adopt_local; the array is left
  // empty (no storage, its partition unchanged). Only for an array that owns its storage.
  T* release_storage() {
    TESSERA_ASSERT(owns_, "DistArray::release_storage on a view (it owns no storage)");
    capacity_ = 0;
    return std::exchange(data_, nullptr);
  }

  // Backend memory (a device pointer under cuda).
  T* local_data() { return data_; }
  const T* local_data() const { return data_; }

  void fill(const T& value) {
    if constexpr (detail::is_generated_type<T>) {
      kernels::fill(ctx_.queue(), data_, local_size_, value);
    } else {
      kernels::fill_any(ctx_.queue(), data_, local_size_, value);
    }
  }
  // Element i (global index) = start + i (integers wrap; floats computed in double).
  void iota(T start = T(0)) {
    static_assert(detail::is_generated_type<T>, "DistArray::iota: arithmetic element types only");
    T local_start;
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      local_start = static_cast<T>(static_cast<U>(start) + static_cast<U>(global_offset_));
    } else {
      local_start = static_cast<T>(static_cast<double>(start) + static_cast<double>(global_offset_));
    }
    kernels::iota(ctx_.queue(), data_, local_size_, local_start);
  }
  // Element i = counter_value<T>(seed, i): the same global array whatever the number of ranks.
  void generate(std::uint64_t seed) {
    static_assert(detail::is_generated_type<T>, "DistArray::generate: arithmetic element types only");
    kernels::generate(ctx_.queue(), data_, local_size_, seed, global_offset_);
  }

  // This rank's block, copied to host memory.
  std::vector<T> local_to_host() const {
    std::vector<T> host(static_cast<std::size_t>(local_size_));
    kernels::copy_to_host(ctx_.queue(), host.data(), data_, local_bytes());
    return host;
  }
  // Overwrites this rank's block from host memory of exactly local_size() elements.
  void local_from_host(std::span<const T> block) {
    TESSERA_ASSERT(static_cast<index_t>(block.size()) == local_size_, "local_from_host: size differs from the block");
    kernels::copy_from_host(ctx_.queue(), data_, block.data(), local_bytes());
  }

  // The whole array on `root` (empty vector elsewhere). Collective; for checks and small outputs.
  std::vector<T> gather(int root = 0) const {
    const Communicator& comm = ctx_.comm();
    constexpr int kTag = 7101;
    std::vector<T> block = local_to_host();
    if (comm.rank() != root) {
      comm.send(block.data(), local_size_, root, kTag);
      return {};
    }
    std::vector<T> all(static_cast<std::size_t>(global_size()));
    for (int p = 0; p < comm.size(); ++p) {
      T* dst = all.data() + partition_.offset(p);
      if (p == root) {
        std::copy(block.begin(), block.end(), dst);
      } else {
        comm.recv(dst, partition_.local_size(p), p, kTag);
      }
    }
    return all;
  }

  // Every rank passes the same global data; each keeps its own block. Collective-free; for tests.
  static DistArray from_replicated(const Context& ctx, std::span<const T> global, Partition partition) {
    TESSERA_ASSERT(static_cast<index_t>(global.size()) == partition.global_size(),
                   "from_replicated: data size differs from the partition");
    DistArray a(ctx, std::move(partition));
    a.local_from_host(
        global.subspan(static_cast<std::size_t>(a.global_offset()), static_cast<std::size_t>(a.local_size())));
    return a;
  }
  static DistArray from_replicated(const Context& ctx, std::span<const T> global) {
    return from_replicated(ctx, global, Partition::block(static_cast<index_t>(global.size()), ctx.size()));
  }
  // Takes ownership of `data`: backend memory from kernels::allocate on the context's queue, room
  // for `capacity` >= this rank's part of `partition` elements, holding that part.
  static DistArray adopt_local(const Context& ctx, Partition partition, T* data, index_t capacity) {
    TESSERA_ASSERT(!ctx.is_null(), "DistArray::adopt_local on a null context");
    TESSERA_ASSERT(partition.parts() == ctx.size(),
                   "DistArray::adopt_local: partition has a part count other than the ranks");
    TESSERA_ASSERT(partition.local_size(ctx.rank()) <= capacity,
                   "DistArray::adopt_local: block larger than its storage");
    DistArray out;
    out.ctx_ = ctx;
    out.partition_ = std::move(partition);
    out.local_size_ = out.partition_.local_size(ctx.rank());
    out.global_offset_ = out.partition_.offset(ctx.rank());
    out.capacity_ = capacity;
    out.data_ = data;
    return out;
  }
  // Views `data` without owning it: backend memory (device memory of the context's device under
  // cuda) holding this rank's part of `partition`, aligned to alignof(T), which the caller keeps
  // alive, and does not free, while the array lives; the array never frees it. Hands a block made
  // elsewhere (a NumPy, CuPy or PyTorch array) to the algorithms without a copy. An algorithm's
  // result never views its input: results own their storage.
  static DistArray view_local(const Context& ctx, Partition partition, T* data) {
    TESSERA_ASSERT(!ctx.is_null(), "DistArray::view_local on a null context");
    TESSERA_ASSERT(partition.parts() == ctx.size(), "DistArray::view_local: partition has a part count other than the ranks");
    DistArray out;
    out.ctx_ = ctx;
    out.partition_ = std::move(partition);
    out.local_size_ = out.partition_.local_size(ctx.rank());
    out.global_offset_ = out.partition_.offset(ctx.rank());
    out.capacity_ = out.local_size_;
    out.data_ = data;
    out.owns_ = false;
    return out;
  }

 private:
  void release() {
    if (data_ && owns_) kernels::deallocate(ctx_.queue(), data_);
    data_ = nullptr;
    owns_ = true;
  }

  DistArray make_view(index_t first, index_t last) {
    if (first < 0 || last < first || last > global_size())
      throw UsageError("DistArray::view: range [" + std::to_string(first) + ", " + std::to_string(last) +
                       ") outside [0, " + std::to_string(global_size()) + "]");
    std::vector<index_t> counts(static_cast<std::size_t>(partition_.parts()));
    for (int p = 0; p < partition_.parts(); ++p) {
      const index_t lo = std::max(first, partition_.offset(p));
      const index_t hi = std::min(last, partition_.offset(p) + partition_.local_size(p));
      counts[static_cast<std::size_t>(p)] = hi > lo ? hi - lo : 0;
    }
    DistArray v;
    v.ctx_ = ctx_;
    v.partition_ = Partition::from_counts(counts);
    v.local_size_ = v.partition_.local_size(ctx_.rank());
    v.global_offset_ = v.partition_.offset(ctx_.rank());
    v.capacity_ = v.local_size_;
    v.data_ = v.local_size_ > 0 ? data_ + (std::max(first, global_offset_) - global_offset_) : nullptr;
    v.owns_ = false;
    return v;
  }

  Context ctx_;
  Partition partition_;
  index_t local_size_ = 0;
  index_t global_offset_ = 0;
  index_t capacity_ = 0;
  T* data_ = nullptr;
  bool owns_ = true;  // false: a view (view(), view_local()), whose storage is not this array's
};

// The collectives of one DistArray<T>::at (collective_plan.hpp): one broadcast of the element.
// copy(), clone() and view() make none.
template <class T>
CollectivePlan at_plan() {
  return {{Collective::bcast, static_cast<double>(sizeof(T))}};
}

// Runs make() on every rank of ctx and agrees on the outcome: when some rank runs out of memory
// (OutOfMemory, or any std::bad_alloc), every rank throws UsageError("<what>: ... rank R: <its message>"), so that none is
// left waiting in a collective. Returns what make() returned. Collective.
template <class Make>
auto make_collectively(const Context& ctx, const std::string& what, Make&& make) -> decltype(make()) {
  std::optional<decltype(make())> made;
  std::string error;
  try {
    made.emplace(make());
  } catch (const std::bad_alloc& e) {
    error = dynamic_cast<const OutOfMemory*>(&e) ? e.what() : "cannot allocate host memory (std::bad_alloc)";
  }
  const int failed_rank = ctx.comm().allreduce<std::int32_t>(error.empty() ? ctx.size() : ctx.rank(), ReduceOp::min);
  if (failed_rank == ctx.size()) return std::move(*made);
  char message[512] = {};
  if (ctx.rank() == failed_rank) std::snprintf(message, sizeof message, "%s", error.c_str());
  ctx.comm().bcast(message, sizeof message, failed_rank);
  throw UsageError(what + ": out of memory on rank " + std::to_string(failed_rank) + ": " + message);
}

// Collective, before a run makes its arrays: `bytes`, what this rank will hold at once (its blocks,
// buffers and copies), against the memory of its backend (kernels::memory_capacity), the ranks that
// share that memory (one GPU, or one node's host memory under cpu) counted together. Where some
// memory would be overcommitted, every rank throws the same UsageError, so that a run too large for the machine stops in one line before any work rather than
// dying of a failed allocation on some rank later. The message: "<what>: out of memory: <bytes> per
// rank; rank R's <memory> of <capacity> cannot hold it" (or "is shared by K ranks, which need ...").
void require_memory(const Context& ctx, std::size_t bytes, const std::string& what);

// Precompiled in the framework library (the apps' element types).
extern template class DistArray<std::int32_t>;
extern template class DistArray<std::int64_t>;
extern template class DistArray<float>;
extern template class DistArray<double>;

}  // namespace tessera
