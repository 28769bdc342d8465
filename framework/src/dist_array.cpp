#include "tessera/framework/dist_array.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "tessera/kernels/error.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {

template <class T>
DistArray<T>::DistArray(const Context& ctx, index_t global_size)
    : DistArray(ctx, Partition::block(global_size, ctx.size())) {}

template <class T>
DistArray<T>::DistArray(const Context& ctx, Partition partition) : ctx_(ctx), partition_(std::move(partition)) {
  TESSERA_ASSERT(!ctx_.is_null(), "DistArray on a null context");
  TESSERA_ASSERT(partition_.parts() == ctx_.size(), "DistArray: partition has a part count other than the ranks");
  local_size_ = partition_.local_size(ctx_.rank());
  global_offset_ = partition_.offset(ctx_.rank());
  capacity_ = local_size_;
  data_ = static_cast<T*>(kernels::allocate(ctx_.queue(), local_bytes()));
}

template <class T>
DistArray<T> DistArray<T>::adopt_local(const Context& ctx, Partition partition, T* data, index_t capacity) {
  TESSERA_ASSERT(!ctx.is_null(), "DistArray::adopt_local on a null context");
  TESSERA_ASSERT(partition.parts() == ctx.size(), "DistArray::adopt_local: partition has a part count other than the ranks");
  TESSERA_ASSERT(partition.local_size(ctx.rank()) <= capacity, "DistArray::adopt_local: block larger than its storage");
  DistArray out;
  out.ctx_ = ctx;
  out.partition_ = std::move(partition);
  out.local_size_ = out.partition_.local_size(ctx.rank());
  out.global_offset_ = out.partition_.offset(ctx.rank());
  out.capacity_ = capacity;
  out.data_ = data;
  return out;
}

template <class T>
void DistArray<T>::shrink_to_fit() {
  if (capacity_ == local_size_) return;
  T* exact = static_cast<T*>(kernels::allocate(ctx_.queue(), local_bytes()));
  kernels::copy_within(ctx_.queue(), exact, data_, local_bytes());
  release();
  data_ = exact;
  capacity_ = local_size_;
}

template <class T>
DistArray<T>::~DistArray() {
  release();
}

template <class T>
void DistArray<T>::release() {
  if (data_) kernels::deallocate(ctx_.queue(), data_);
  data_ = nullptr;
}

template <class T>
DistArray<T>::DistArray(DistArray&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      partition_(std::move(other.partition_)),
      local_size_(std::exchange(other.local_size_, 0)),
      global_offset_(std::exchange(other.global_offset_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      data_(std::exchange(other.data_, nullptr)) {}

template <class T>
DistArray<T>& DistArray<T>::operator=(DistArray&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    partition_ = std::move(other.partition_);
    local_size_ = std::exchange(other.local_size_, 0);
    global_offset_ = std::exchange(other.global_offset_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

template <class T>
void DistArray<T>::fill(T value) {
  kernels::fill(ctx_.queue(), data_, local_size_, value);
}

template <class T>
void DistArray<T>::iota(T start) {
  // Integers: start + offset wraps like the kernel's own start + i; floats: computed in double.
  T local_start;
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    local_start = static_cast<T>(static_cast<U>(start) + static_cast<U>(global_offset_));
  } else {
    local_start = static_cast<T>(static_cast<double>(start) + static_cast<double>(global_offset_));
  }
  kernels::iota(ctx_.queue(), data_, local_size_, local_start);
}

template <class T>
void DistArray<T>::generate(std::uint64_t seed) {
  kernels::generate(ctx_.queue(), data_, local_size_, seed, global_offset_);
}

template <class T>
std::vector<T> DistArray<T>::local_to_host() const {
  std::vector<T> host(static_cast<std::size_t>(local_size_));
  kernels::copy_to_host(ctx_.queue(), host.data(), data_, local_bytes());
  return host;
}

template <class T>
void DistArray<T>::local_from_host(std::span<const T> block) {
  TESSERA_ASSERT(static_cast<index_t>(block.size()) == local_size_, "local_from_host: size differs from the block");
  kernels::copy_from_host(ctx_.queue(), data_, block.data(), local_bytes());
}

template <class T>
std::vector<T> DistArray<T>::gather(int root) const {
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

template <class T>
DistArray<T> DistArray<T>::from_replicated(const Context& ctx, std::span<const T> global, Partition partition) {
  TESSERA_ASSERT(static_cast<index_t>(global.size()) == partition.global_size(),
                 "from_replicated: data size differs from the partition");
  DistArray<T> a(ctx, std::move(partition));
  a.local_from_host(global.subspan(static_cast<std::size_t>(a.global_offset()), static_cast<std::size_t>(a.local_size())));
  return a;
}

template <class T>
DistArray<T> DistArray<T>::from_replicated(const Context& ctx, std::span<const T> global) {
  return from_replicated(ctx, global, Partition::block(static_cast<index_t>(global.size()), ctx.size()));
}

template class DistArray<std::int32_t>;
template class DistArray<std::int64_t>;
template class DistArray<float>;
template class DistArray<double>;

}  // namespace tessera
