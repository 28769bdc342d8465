// tessera_bench_generic: the local operations with user functors against Thrust and CUB with the same
// functors, in the same run on the same data, and the user-functor paths against the precompiled
// ones. Memory-bound rows show the bytes moved at the measured device-to-device copy rate.
//
//   transform          out[i] = 2 x[i] + 1           ours vs thrust::transform (par_nosync)
//   transform_reduce   sum of x[i]^2, to the host     ours vs thrust::transform_reduce
//   reduce             sum: a user Plus (declared commutative; then not declared: the order-keeping
//                      pass) and the precompiled ReduceOp::sum, each vs cub::DeviceReduce::Sum
//   scan               running maximum (a user Max) vs cub::DeviceScan::InclusiveScan with Max;
//                      the sum with a user Plus vs the precompiled prefix sum
//
//   tessera_bench_generic [--sizes N,...] [--reps R] [--warmup W]
#include <cuda_runtime.h>
#include <thrust/execution_policy.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cub/cub.cuh>
#include <limits>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "tessera/kernels/cuda/device_reduce_ordered.cuh"
#include "tessera/kernels/cuda/device_transform.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/kernels.hpp"

namespace {

using tessera::index_t;
using tessera::ScanKind;
using tessera::kernels::Queue;
using namespace tessera::bench;

struct Options {
  std::vector<index_t> sizes = {index_t(1) << 26, index_t(1) << 28};
  int reps = 20;
  int warmup = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&] { return flag_value(argc, argv, i, flag); };
    auto count = [&](const std::string& text) {
      char* end = nullptr;
      const long long v = std::strtoll(text.c_str(), &end, 0);
      if (text.empty() || *end != '\0' || v < 1) usage_error(flag + ": not a positive integer: '" + text + "'");
      return static_cast<index_t>(v);
    };
    if (flag == "--sizes") {
      o.sizes.clear();
      std::string list = value();
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t comma = list.find(',', start);
        o.sizes.push_back(count(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (flag == "--reps") {
      o.reps = static_cast<int>(count(value()));
    } else if (flag == "--warmup") {
      o.warmup = static_cast<int>(count(value()));
    } else if (flag == "--help" || flag == "-h") {
      std::printf("usage: tessera_bench_generic [--sizes N,...] [--reps R] [--warmup W]\n");
      std::exit(0);
    } else {
      usage_error("unknown flag '" + flag + "' (see --help)");
    }
  }
  return o;
}

// The user's functors: plain structs, as a program of one's own would write them.
struct Affine2x1 {
  __host__ __device__ float operator()(float x) const { return 2.0f * x + 1.0f; }
};
struct Square {
  __host__ __device__ float operator()(float x) const { return x * x; }
};
struct Plus {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};
struct CommutativePlus {
  static constexpr bool commutative = true;
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __host__ __device__ float operator()(float a, float b) const { return a < b ? b : a; }
};

// Small integers (-8 .. 8 in a cycle of 17 that sums to 0): every partial sum of any grouping stays far
// below 2^24, so float sums are exact and every implementation must agree bit for bit.
__global__ void fill_kernel(float* x, index_t n) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n; i += index_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<float>(i % 17) - 8.0f;
}

struct Printer {
  double copy_gbs;
  void header() const {
    std::printf("\nratio = the other's time / ours (> 1: ours is faster); %%copy = bytes moved at the measured\n"
                "device-to-device copy rate (%.0f GB/s, read + write) / our time.\n\n",
                copy_gbs);
    std::printf("%-18s %-44s %11s %10s %10s %8s %7s %s\n", "op", "ours vs", "n", "ours ms", "other ms", "ratio",
                "%copy", "agree");
  }
  void row(const char* op, const char* versus, index_t n, double ours_ms, double other_ms, double bytes,
           bool agree) const {
    std::printf("%-18s %-44s %11lld %10.3f %10.3f %8.3f %6.1f%% %s\n", op, versus, static_cast<long long>(n), ours_ms,
                other_ms, other_ms / ours_ms, 100.0 * bytes / (copy_gbs * 1e6) / ours_ms, agree ? "yes" : "NO");
    std::fflush(stdout);
  }
};

bool close(double a, double b, double rel) { return std::fabs(a - b) <= rel * (std::fabs(a) + std::fabs(b) + 1e-30); }

// The order-keeping reduction at other tunings than OrderedReduceTuning (threads, rows in flight,
// vectors per lane, waves), for the record of why the default is what it is.
template <int Threads, int Rows, int VectorsPerLane, int Waves>
struct OrderedTuning {
  static constexpr int kBlockThreads = Threads;
  static constexpr int kRowsInFlight = Rows;
  static constexpr int kVectorsPerLane = VectorsPerLane;
  static constexpr int kWaves = Waves;
};

template <int Threads, int Unroll>
struct TransformShape {
  static constexpr int kBlockThreads = Threads;
  static constexpr int kUnroll = Unroll;
};

template <class Tuning>
void ordered_reduce_with(const Queue& q, const float* x, index_t n, float* out) {
  using Source = tessera::kernels::cuda::detail::PointerSource<float, tessera::identity_fn, float, Tuning::kVectorsPerLane>;
  const Source source{x, n, tessera::identity_fn{}, tessera::kernels::cuda::detail::unaligned_head(x, n),
                      tessera::kernels::cuda::detail::vector_aligned(x)};
  tessera::kernels::cuda::detail::device_reduce_ordered<Tuning>(q, source, Plus{}, 0.0f, out);
}

void run(const Queue& q, const Options& o, index_t n, const Printer& print) {
  const cudaStream_t stream = stream_of(q);
  float *x = nullptr, *y = nullptr, *z = nullptr, *d_sum = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&x, sizeof(float) * static_cast<std::size_t>(n)));
  TESSERA_CUDA_CHECK(cudaMalloc(&y, sizeof(float) * static_cast<std::size_t>(n)));
  TESSERA_CUDA_CHECK(cudaMalloc(&z, sizeof(float) * static_cast<std::size_t>(n)));
  TESSERA_CUDA_CHECK(cudaMalloc(&d_sum, 4 * sizeof(float)));
  fill_kernel<<<1024, 256, 0, stream>>>(x, n);
  TESSERA_CUDA_CHECK_LAUNCH();
  const double bytes_1 = 4.0 * static_cast<double>(n);

  // ---- transform -----------------------------------------------------------------------------------
  {
    const auto [ours, theirs] = median_pair_ms(
        q, o.warmup, o.reps, [&] { tessera::kernels::transform(q, x, n, y, Affine2x1{}); },
        [&] { thrust::transform(thrust::cuda::par_nosync.on(stream), x, x + n, z, Affine2x1{}); });
    float a = 0, b = 0;
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(&a, y + n / 3, sizeof a, cudaMemcpyDeviceToHost, stream));
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(&b, z + n / 3, sizeof b, cudaMemcpyDeviceToHost, stream));
    q.synchronize();
    print.row("transform", "thrust::transform", n, ours, theirs, 2 * bytes_1, a == b);
    // The tile at other shapes (threads x chunks per thread).
    auto sweep = [&](const char* name, auto run_variant) {
      const auto [variant, vendor] = median_pair_ms(
          q, o.warmup, o.reps, [&] { run_variant(); },
          [&] { thrust::transform(thrust::cuda::par_nosync.on(stream), x, x + n, z, Affine2x1{}); });
      print.row("transform tile", name, n, variant, vendor, 2 * bytes_1, true);
    };
    sweep("thrust; 256 thr x 2 chunks", [&] { tessera::kernels::cuda::detail::device_transform<TransformShape<256, 2>>(x, n, y, Affine2x1{}, q.stream); });
    sweep("thrust; 256 thr x 8 chunks", [&] { tessera::kernels::cuda::detail::device_transform<TransformShape<256, 8>>(x, n, y, Affine2x1{}, q.stream); });
    sweep("thrust; 512 thr x 4 chunks", [&] { tessera::kernels::cuda::detail::device_transform<TransformShape<512, 4>>(x, n, y, Affine2x1{}, q.stream); });
    sweep("thrust; 128 thr x 8 chunks", [&] { tessera::kernels::cuda::detail::device_transform<TransformShape<128, 8>>(x, n, y, Affine2x1{}, q.stream); });
  }
  // ---- transform_reduce ------------------------------------------------------------------------------
  {
    float ours_value = 0, thrust_value = 0;
    const auto [ours, theirs] = median_pair_ms(
        q, o.warmup, o.reps,
        [&] { ours_value = tessera::kernels::transform_reduce(q, x, n, Square{}, CommutativePlus{}, 0.0f); },
        [&] {
          thrust_value = thrust::transform_reduce(thrust::cuda::par.on(stream), x, x + n, Square{}, 0.0f, Plus{});
        });
    print.row("transform_reduce", "thrust::transform_reduce (value on host)", n, ours, theirs, bytes_1,
              close(ours_value, thrust_value, 1e-6));
  }
  // ---- reduce ----------------------------------------------------------------------------------------------
  {
    std::size_t temp_bytes = 0;
    TESSERA_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, x, d_sum + 3, n, stream));
    void* temp = nullptr;
    TESSERA_CUDA_CHECK(cudaMalloc(&temp, temp_bytes));
    auto cub_sum = [&] { TESSERA_CUDA_CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, x, d_sum + 3, n, stream)); };
    float values[4];
    auto read_sums = [&] {
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(values, d_sum, sizeof values, cudaMemcpyDeviceToHost, stream));
      q.synchronize();
    };
    const auto [user_c, cub_1] = median_pair_ms(
        q, o.warmup, o.reps, [&] { tessera::kernels::transform_reduce(q, x, n, tessera::identity_fn{}, CommutativePlus{}, 0.0f, d_sum); },
        cub_sum);
    const auto [user_o, cub_2] = median_pair_ms(
        q, o.warmup, o.reps, [&] { tessera::kernels::transform_reduce(q, x, n, tessera::identity_fn{}, Plus{}, 0.0f, d_sum + 1); },
        cub_sum);
    const auto [pre, cub_3] = median_pair_ms(
        q, o.warmup, o.reps, [&] { tessera::kernels::reduce(q, x, n, tessera::ReduceOp::sum, d_sum + 2); }, cub_sum);
    read_sums();
    print.row("reduce", "cub::DeviceReduce::Sum (user Plus, commutative)", n, user_c, cub_1, bytes_1,
              values[0] == values[3]);
    print.row("reduce", "cub::DeviceReduce::Sum (user Plus, ordered)", n, user_o, cub_2, bytes_1, values[1] == values[3]);
    print.row("reduce", "cub::DeviceReduce::Sum (precompiled sum)", n, pre, cub_3, bytes_1, values[2] == values[3]);
    std::printf("%-18s user Plus (commutative) / precompiled: %.3f; user Plus (ordered) / precompiled: %.3f\n", "",
                user_c / pre, user_o / pre);
    // The order-keeping pass at other tunings (threads x rows in flight x vectors per lane).
    auto sweep = [&](const char* name, auto run_variant) {
      const auto [variant, vendor] = median_pair_ms(q, o.warmup, o.reps, [&] { run_variant(); }, cub_sum);
      read_sums();
      print.row("reduce ordered", name, n, variant, vendor, bytes_1, values[1] == values[3]);
    };
    sweep("cub Sum; ordered 256 x 2 rows x 2 vec/lane", [&] { ordered_reduce_with<OrderedTuning<256, 2, 2, 4>>(q, x, n, d_sum + 1); });
    sweep("cub Sum; ordered 256 x 1 row x 4 vec/lane", [&] { ordered_reduce_with<OrderedTuning<256, 1, 4, 4>>(q, x, n, d_sum + 1); });
    sweep("cub Sum; ordered 256 x 2 rows x 4 vec/lane", [&] { ordered_reduce_with<OrderedTuning<256, 2, 4, 4>>(q, x, n, d_sum + 1); });
    sweep("cub Sum; ordered 512 x 4 rows x 1 vec/lane", [&] { ordered_reduce_with<OrderedTuning<512, 4, 1, 4>>(q, x, n, d_sum + 1); });
    TESSERA_CUDA_CHECK(cudaFree(temp));
  }
  // ---- scan ------------------------------------------------------------------------------------------------
  {
    std::size_t temp_bytes = 0;
    TESSERA_CUDA_CHECK(cub::DeviceScan::InclusiveScan(nullptr, temp_bytes, x, z, Max{}, n, stream));
    void* temp = nullptr;
    TESSERA_CUDA_CHECK(cudaMalloc(&temp, temp_bytes));
    const float lowest = -std::numeric_limits<float>::infinity();
    const auto [ours, theirs] = median_pair_ms(
        q, o.warmup, o.reps, [&] { tessera::kernels::scan(q, x, y, n, ScanKind::inclusive, Max{}, lowest); },
        [&] { TESSERA_CUDA_CHECK(cub::DeviceScan::InclusiveScan(temp, temp_bytes, x, z, Max{}, n, stream)); });
    float a[2] = {0, 0}, b[2] = {0, 0};
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(a, y + n / 2, 2 * sizeof(float), cudaMemcpyDeviceToHost, stream));
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(b, z + n / 2, 2 * sizeof(float), cudaMemcpyDeviceToHost, stream));
    q.synchronize();
    print.row("scan", "cub::DeviceScan::InclusiveScan (user Max)", n, ours, theirs, 2 * bytes_1, a[0] == b[0] && a[1] == b[1]);
    const auto [user, pre] = median_pair_ms(
        q, o.warmup, o.reps, [&] { tessera::kernels::scan(q, x, y, n, ScanKind::inclusive, Plus{}, 0.0f); },
        [&] { tessera::kernels::scan(q, x, z, n, ScanKind::inclusive, 0.0f); });
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(a, y + n - 2, 2 * sizeof(float), cudaMemcpyDeviceToHost, stream));
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(b, z + n - 2, 2 * sizeof(float), cudaMemcpyDeviceToHost, stream));
    q.synchronize();
    print.row("scan", "the precompiled prefix sum (user Plus)", n, user, pre, 2 * bytes_1, a[0] == b[0] && a[1] == b[1]);
    TESSERA_CUDA_CHECK(cudaFree(temp));
  }
  TESSERA_CUDA_CHECK(cudaFree(x));
  TESSERA_CUDA_CHECK(cudaFree(y));
  TESSERA_CUDA_CHECK(cudaFree(z));
  TESSERA_CUDA_CHECK(cudaFree(d_sum));
}

}  // namespace

int main(int argc, char** argv) {
  program_name() = "tessera_bench_generic";
  const Options o = parse(argc, argv);
  if (tessera::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "tessera_bench_generic: no GPU\n");
    return 77;
  }
  const Queue q = tessera::kernels::make_cuda_queue(0);
  std::printf("tessera_bench_generic: %s\n", tessera::kernels::describe_device(q).c_str());
  const Printer print{measure_copy_gbs(q)};
  print.header();
  for (index_t n : o.sizes) run(q, o, n, print);
  return 0;
}
