// Pinned host memory for the staged path, kept between calls: cudaMallocHost locks its pages one
// by one, which every staged exchange, broadcast and allreduce would otherwise pay (three ranks
// sharing an H100, the 8192^2 float transpose's exchange: 114 ms with a fresh buffer per call,
// 24-27 ms from the pool). Buffers go back to the pool when their last user lets go, and the next
// request that fits takes the smallest of them. The pool keeps at most kPooledBytes in all (the
// smallest buffers leave first); a request larger than that is allocated and freed per call. It
// lives until the process ends (never destroyed: the CUDA runtime may be gone by then).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace tessera::detail {

class PinnedPool {
 public:
  static constexpr std::size_t kPooledBytes = std::size_t(2) << 30;

  static PinnedPool& instance();

  // A pinned buffer of at least `bytes` bytes (none for 0), back to the pool when the last copy of
  // the pointer goes.
  std::shared_ptr<char> take(std::size_t bytes);

 private:
  struct Buffer {
    char* data = nullptr;
    std::size_t bytes = 0;
  };

  void give_back(Buffer buffer);

  std::mutex mutex_;
  std::vector<Buffer> free_;
  std::size_t pooled_ = 0;  // bytes of the buffers in free_
};

inline std::shared_ptr<char> pinned_buffer(std::size_t bytes) { return PinnedPool::instance().take(bytes); }

}  // namespace tessera::detail
