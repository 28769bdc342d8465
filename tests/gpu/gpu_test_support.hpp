// Helpers of the GPU tests: the cuda queue, device buffers with poisoned guard zones, the sizes
// to try, and tolerances for floating-point comparisons.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/kernels.hpp"

namespace tessera::gpu_test {

using kernels::Queue;

// One cuda queue for the whole binary (made on first use, on device 0).
inline const Queue& cuda_queue() {
  static Queue q = kernels::make_cuda_queue(0);
  return q;
}
inline const Queue& cpu_queue() {
  static Queue q{};
  return q;
}

// Fills device memory with `byte` on the cuda queue's stream and waits for it: the legacy default
// stream (cudaMemset) is not ordered with the queue's non-blocking stream, so a poison there could
// land after the kernel under test.
inline void poison_bytes(void* device_ptr, std::size_t bytes, unsigned char byte) {
  const auto stream = reinterpret_cast<cudaStream_t>(cuda_queue().stream);
  TESSERA_CUDA_CHECK(cudaMemsetAsync(device_ptr, byte, bytes, stream));
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// TESSERA_GPU_TEST_SMALL=1: only sizes up to a few tiles, for compute-sanitizer runs.
inline bool small_mode() {
  const char* v = std::getenv("TESSERA_GPU_TEST_SMALL");
  return v && *v && std::strcmp(v, "0") != 0;
}

inline std::uint64_t test_seed() {
  const char* v = std::getenv("TESSERA_TEST_SEED");
  return v ? std::strtoull(v, nullptr, 0) : 20240601u;
}

// 0, 1, warp edges, vector and tile edges of the kernels (scan tiles of 10240 4-byte / 4096 8-byte
// elements, select tiles of 8192 / 4096), primes, 2^k +- 1. The 2^28 + 3 and > 2^31 sizes have
// tests of their own (suites *Large* and *Huge*).
inline std::vector<index_t> odd_sizes() {
  std::vector<index_t> sizes = {0,    1,    2,    3,    5,    31,    32,    33,    127,   1023,  1024, 1025,
                                4095, 4096, 4097, 4099, 8191, 8192,  8193,  10239, 10240, 10241, 20483, 40009};
  if (!small_mode()) {
    for (index_t n : {index_t(65537), index_t(1000003), (index_t(1) << 20) - 1, (index_t(1) << 20) + 1}) sizes.push_back(n);
  }
  return sizes;
}

inline std::string where(index_t n, const char* what = "") {
  return std::string(what) + " n=" + std::to_string(n) + " seed=" + std::to_string(test_seed());
}

// Device memory of n elements plus a guard zone on each side, all poisoned before a run; the
// guards must still hold the poison afterwards (nothing written outside [0, n)).
template <class T>
class DeviceArray {
 public:
  static constexpr index_t kGuard = 64;

  explicit DeviceArray(index_t n, index_t offset_elements = 0) : n_(n), offset_(offset_elements) {
    bytes_ = sizeof(T) * static_cast<std::size_t>(n + 2 * kGuard + offset_);
    base_ = static_cast<T*>(kernels::allocate(cuda_queue(), bytes_));
  }
  ~DeviceArray() { kernels::deallocate(cuda_queue(), base_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() const { return base_ + kGuard + offset_; }
  index_t size() const { return n_; }

  // Floating point: all-ones bytes (a NaN); integers: 0xA5 bytes (an unlikely large value).
  static unsigned char poison_byte() { return std::is_floating_point_v<T> ? 0xFF : 0xA5; }
  void poison() { poison_bytes(base_, bytes_, poison_byte()); }

  void upload(const std::vector<T>& host) {
    ASSERT_EQ(static_cast<index_t>(host.size()), n_);
    kernels::copy_from_host(cuda_queue(), data(), host.data(), sizeof(T) * host.size());
  }
  std::vector<T> download(index_t count) const {
    std::vector<T> host(static_cast<std::size_t>(count));
    kernels::copy_to_host(cuda_queue(), host.data(), data(), sizeof(T) * host.size());
    return host;
  }
  std::vector<T> download() const { return download(n_); }

  // True where the guard zones and [from, n) still hold the poison. Only those bytes cross to the
  // host: the leading guard, then everything from element `from` to the end of the trailing guard.
  ::testing::AssertionResult untouched_outside(index_t from) const {
    const std::size_t lead = sizeof(T) * static_cast<std::size_t>(kGuard + offset_);
    const std::size_t tail_begin = lead + sizeof(T) * static_cast<std::size_t>(from);
    std::vector<unsigned char> head(lead), tail(bytes_ - tail_begin);
    kernels::copy_to_host(cuda_queue(), head.data(), base_, head.size());
    kernels::copy_to_host(cuda_queue(), tail.data(), reinterpret_cast<const unsigned char*>(base_) + tail_begin,
                          tail.size());
    for (std::size_t b = 0; b < head.size(); ++b)
      if (head[b] != poison_byte())
        return ::testing::AssertionFailure() << "byte " << b << " before the data (of " << lead << ") was written";
    for (std::size_t b = 0; b < tail.size(); ++b)
      if (tail[b] != poison_byte())
        return ::testing::AssertionFailure() << "byte " << b << " past element " << from << " was written (data ends "
                                             << sizeof(T) * static_cast<std::size_t>(n_ - from) << " bytes past it)";
    return ::testing::AssertionSuccess();
  }

 private:
  index_t n_;
  index_t offset_;
  std::size_t bytes_ = 0;
  T* base_ = nullptr;
};

template <class T>
std::vector<T> host_generate(index_t n, std::uint64_t seed) {
  std::vector<T> v(static_cast<std::size_t>(n));
  kernels::generate(cpu_queue(), v.data(), n, seed, 0);
  return v;
}

// |a - b| <= tol, with NaN == NaN; integers must be equal (tol ignored).
template <class T>
::testing::AssertionResult close(T got, T want, double tol) {
  if (got == want) return ::testing::AssertionSuccess();  // also equal infinities
  if constexpr (std::is_integral_v<T>) {
    return ::testing::AssertionFailure() << "got " << got << ", want " << want;
  } else {
    if (std::isnan(got) && std::isnan(want)) return ::testing::AssertionSuccess();
    if (std::isnan(got) || std::isnan(want) || !(std::fabs(static_cast<double>(got) - static_cast<double>(want)) <= tol))
      return ::testing::AssertionFailure() << "got " << got << ", want " << want << " (tolerance " << tol << ")";
    return ::testing::AssertionSuccess();
  }
}

// Rounding bound of a sum whose terms have absolute sum `abs_sum`, combined in at most about
// log2(n) levels after short sequential runs: eps * abs_sum * (2 + log2(n)). Both backends round,
// so the comparison allows twice that.
template <class T>
double sum_tolerance(double abs_sum, index_t n) {
  if constexpr (std::is_integral_v<T>) {
    return 0.0;
  } else {
    const double eps = std::numeric_limits<T>::epsilon();
    return 2.0 * eps * abs_sum * (2.0 + std::log2(static_cast<double>(n) + 1.0)) + std::numeric_limits<T>::min();
  }
}

}  // namespace tessera::gpu_test
