// Timing helpers shared by the kernel benchmarks: device-event timing of one call, medians (with
// every sample, for the harness's statistics), ours and the vendor's timed in alternation, the
// device-to-device copy rate every memory-bound row is measured against, and the environment block
// of a one-GPU benchmark.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::bench {

using kernels::Queue;

inline cudaStream_t stream_of(const Queue& q) { return reinterpret_cast<cudaStream_t>(q.stream); }

// Median of `reps` timed calls after `warmup` untimed ones, each timed by its own event pair.
inline double time_once_ms(const Queue& q, cudaEvent_t start, cudaEvent_t stop, const std::function<void()>& call) {
  TESSERA_CUDA_CHECK(cudaEventRecord(start, stream_of(q)));
  call();
  TESSERA_CUDA_CHECK(cudaEventRecord(stop, stream_of(q)));
  TESSERA_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  TESSERA_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms;
}

inline double median(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The median of timed calls in milliseconds (what the tables print; a double where one is wanted)
// and every sample in the order timed (the harness's statistics: seconds(timing)).
struct Timing {
  double median = 0;
  std::vector<double> samples_ms;
  Timing() = default;
  explicit Timing(std::vector<double> samples) : median(bench::median(samples)), samples_ms(std::move(samples)) {}
  operator double() const { return median; }
};

inline std::vector<double> seconds(const Timing& t) {
  std::vector<double> s;
  for (double ms : t.samples_ms) s.push_back(ms * 1e-3);
  return s;
}

inline Timing median_ms(const Queue& q, int warmup, int reps, const std::function<void()>& call) {
  for (int i = 0; i < warmup; ++i) call();
  cudaEvent_t start, stop;
  TESSERA_CUDA_CHECK(cudaEventCreate(&start));
  TESSERA_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) times.push_back(time_once_ms(q, start, stop, call));
  TESSERA_CUDA_CHECK(cudaEventDestroy(start));
  TESSERA_CUDA_CHECK(cudaEventDestroy(stop));
  return Timing(std::move(times));
}

// Ours and the vendor's, timed in alternation (ours first on even repetitions, theirs on odd
// ones) so that both see the same clocks: one timed after the other drifted with the power cap
// (SGEMM 5000x3001x4097 measured 0.80x alone and 0.73-0.76x right after the 8192^3 DGEMM rows).
inline std::pair<Timing, Timing> median_pair_ms(const Queue& q, int warmup, int reps, const std::function<void()>& ours,
                                         const std::function<void()>& vendor) {
  for (int i = 0; i < warmup; ++i) {
    ours();
    vendor();
  }
  cudaEvent_t start, stop;
  TESSERA_CUDA_CHECK(cudaEventCreate(&start));
  TESSERA_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ours_times, vendor_times;
  for (int i = 0; i < reps; ++i) {
    if (i % 2 == 0) {
      ours_times.push_back(time_once_ms(q, start, stop, ours));
      vendor_times.push_back(time_once_ms(q, start, stop, vendor));
    } else {
      vendor_times.push_back(time_once_ms(q, start, stop, vendor));
      ours_times.push_back(time_once_ms(q, start, stop, ours));
    }
  }
  TESSERA_CUDA_CHECK(cudaEventDestroy(start));
  TESSERA_CUDA_CHECK(cudaEventDestroy(stop));
  return {Timing(std::move(ours_times)), Timing(std::move(vendor_times))};
}


// The device-to-device copy rate in GB/s, counting bytes read plus bytes written (1 GiB copies).
inline double measure_copy_gbs(const Queue& q) {
  const std::size_t bytes = std::size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&a, bytes));
  TESSERA_CUDA_CHECK(cudaMalloc(&b, bytes));
  TESSERA_CUDA_CHECK(cudaMemsetAsync(a, 1, bytes, stream_of(q)));
  const double ms = median_ms(q, 3, 10, [&] {
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream_of(q)));
  });
  TESSERA_CUDA_CHECK(cudaFree(a));
  TESSERA_CUDA_CHECK(cudaFree(b));
  return 2.0 * static_cast<double>(bytes) / (ms * 1e6);
}

// The environment block of a benchmark that drives `q`'s device alone (no MPI runtime); the NCCL
// version where the benchmark uses NCCL.
inline void set_local_environment(Harness& h, const Queue& q, const std::string& nccl = "") {
  h.set_environment(environment_json(local_environment(kernels::describe_device(q), nccl)));
}

}  // namespace tessera::bench
