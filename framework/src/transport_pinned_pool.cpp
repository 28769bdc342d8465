#include "transport_pinned_pool.hpp"

#include <algorithm>

#include "tessera/kernels/memory.hpp"

namespace tessera::detail {

PinnedPool& PinnedPool::instance() {
  static PinnedPool* pool = new PinnedPool;
  return *pool;
}

std::shared_ptr<char> PinnedPool::take(std::size_t bytes) {
  if (bytes == 0) return {};
  // Rounded up to a power of two (at least 64 KiB), so that sizes that vary a little reuse a buffer.
  std::size_t rounded = std::size_t(1) << 16;
  while (rounded < bytes && rounded <= kPooledBytes) rounded <<= 1;
  if (rounded > kPooledBytes)
    return std::shared_ptr<char>(static_cast<char*>(kernels::allocate_pinned_host(bytes)), kernels::deallocate_pinned_host);
  Buffer buffer{};
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
    if (best != free_.end()) {
      buffer = *best;
      pooled_ -= best->bytes;
      free_.erase(best);
    }
  }
  if (!buffer.data) buffer = {static_cast<char*>(kernels::allocate_pinned_host(rounded)), rounded};
  return std::shared_ptr<char>(buffer.data, [this, buffer](char*) { give_back(buffer); });
}

void PinnedPool::give_back(Buffer buffer) {
  std::vector<Buffer> evicted;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(buffer);
    pooled_ += buffer.bytes;
    while (pooled_ > kPooledBytes) {
      auto smallest = std::min_element(free_.begin(), free_.end(),
                                       [](const Buffer& a, const Buffer& b) { return a.bytes < b.bytes; });
      pooled_ -= smallest->bytes;
      evicted.push_back(*smallest);
      free_.erase(smallest);
    }
  }
  for (const Buffer& b : evicted) kernels::deallocate_pinned_host(b.data);
}

}  // namespace tessera::detail
