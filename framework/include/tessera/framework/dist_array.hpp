// DistArray<T>: a global array of T cut into one block per rank of a context. Each rank owns its
// block in the backend's memory (device memory under cuda) and knows the partition.
// T is one of int32_t, int64_t, float, double.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/framework/context.hpp"
#include "tessera/framework/partition.hpp"

namespace tessera {

template <class T>
class DistArray {
 public:
  DistArray() = default;
  // The block distribution of global_size elements over the context's ranks. Contents undefined.
  DistArray(const Context& ctx, index_t global_size);
  // Any partition with one part per rank of the context (ragged ones, after a filter).
  DistArray(const Context& ctx, Partition partition);
  ~DistArray();
  DistArray(DistArray&& other) noexcept;
  DistArray& operator=(DistArray&& other) noexcept;
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
  // Moves the block into storage of exactly local_size() elements, releasing the rest.
  void shrink_to_fit();

  // Backend memory (a device pointer under cuda).
  T* local_data() { return data_; }
  const T* local_data() const { return data_; }

  void fill(T value);
  // Element i (global index) = start + i.
  void iota(T start = T(0));
  // Element i = counter_value<T>(seed, i): the same global array whatever the number of ranks.
  void generate(std::uint64_t seed);

  // This rank's block, copied to host memory.
  std::vector<T> local_to_host() const;
  // Overwrites this rank's block from host memory of exactly local_size() elements.
  void local_from_host(std::span<const T> block);

  // The whole array on `root` (empty vector elsewhere). Collective; for checks and small outputs.
  std::vector<T> gather(int root = 0) const;

  // Every rank passes the same global data; each keeps its own block. Collective-free; for tests.
  static DistArray from_replicated(const Context& ctx, std::span<const T> global, Partition partition);
  static DistArray from_replicated(const Context& ctx, std::span<const T> global);
  // Takes ownership of `data`: backend memory from kernels::allocate on the context's queue, room
  // for `capacity` >= this rank's part of `partition` elements, holding that part.
  static DistArray adopt_local(const Context& ctx, Partition partition, T* data, index_t capacity);

 private:
  void release();

  Context ctx_;
  Partition partition_;
  index_t local_size_ = 0;
  index_t global_offset_ = 0;
  index_t capacity_ = 0;
  T* data_ = nullptr;
};

extern template class DistArray<std::int32_t>;
extern template class DistArray<std::int64_t>;
extern template class DistArray<float>;
extern template class DistArray<double>;

}  // namespace tessera
