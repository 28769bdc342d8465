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
//   tessera_bench_generic [--sizes N,...] [-n R] [-w W] [--json FILE]   (the harness's flags: --help)
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
  int reps = 20;  // from the harness
  int warmup = 3;
};

// The harness's flags (-b/-e: bytes of float32 per size, the default 256 MiB to 1 GiB by 4, that is
// 2^26 and 2^28 elements; -n timed calls, alias --reps; -w) and --sizes, element counts instead.
Options parse(Harness& h, int argc, char** argv) {
  Options o;
  h.add_alias("--iters", "--reps");
  h.add_option({"--sizes"}, "N,...", "element counts instead of -b/-e (2^k, K/M/G)", [&o](std::string_view v) {
    o.sizes.clear();
    for (long long n : parse_counts(v, "--sizes")) o.sizes.push_back(n);
  });
  parse_command_line(h, argc, argv);
  if (h.sizes_given() && h.given("--sizes")) usage_error("--sizes and -b/-e: give one or the other");
  if (!h.given("--sizes")) o.sizes = h.sizes(sizeof(float));
  o.reps = h.iters();
  o.warmup = h.warmup();
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
  Harness* harness;
  void header() const {
    std::printf("\nratio = the other's time / ours (> 1: ours is faster); %%copy = bytes moved at the measured\n"
                "device-to-device copy rate (%.0f GB/s, read + write) / our time.\n\n",
                copy_gbs);
    std::printf("%-18s %-44s %11s %10s %10s %8s %7s %s\n", "op", "ours vs", "n", "ours ms", "other ms", "ratio",
                "%copy", "agree");
  }
  // A table line and the harness's row: the share of the other (the vendor's where the other is
  // Thrust or CUB) is its time over ours, the share of copy our rate over the copy rate; VALID when
  // the results agree.
  void row(const char* op, const char* versus, index_t n, const Timing& ours_ms, const Timing& other_ms, double bytes,
           bool agree) const {
    const double copy_share = bytes / (copy_gbs * 1e6) / ours_ms;
    std::printf("%-18s %-44s %11lld %10.3f %10.3f %8.3f %6.1f%% %s\n", op, versus, static_cast<long long>(n),
                ours_ms.median, other_ms.median, other_ms / ours_ms, 100.0 * copy_share, agree ? "yes" : "NO");
    std::fflush(stdout);
    const std::string other(versus);
    const bool vendor = other.rfind("thrust", 0) == 0 || other.rfind("cub", 0) == 0;
    harness->row(std::string(op) + " vs " + other + " n=" + std::to_string(n))
        .set("op", op)
        .set("versus", other)
        .set("n", n)
        .set("ours_ms", ours_ms.median)
        .set("other_ms", other_ms.median)
        .set("bytes", bytes)
        .time(seconds(ours_ms))
        .share(vendor ? "vendor" : "precompiled", other_ms / ours_ms)
        .share("copy", copy_share)
        .verdict(agree, "differs from " + other);
    harness->print_pending();
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
      TESSERA_CUDA_CHECK(cudaMemsetAsync(y, 0, sizeof(float) * static_cast<std::size_t>(n), stream));
      const auto [variant, vendor] = median_pair_ms(
          q, o.warmup, o.reps, [&] { run_variant(); },
          [&] { thrust::transform(thrust::cuda::par_nosync.on(stream), x, x + n, z, Affine2x1{}); });
      float va = 0, vb = 0;
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(&va, y + n / 3, sizeof va, cudaMemcpyDeviceToHost, stream));
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(&vb, z + n / 3, sizeof vb, cudaMemcpyDeviceToHost, stream));
      q.synchronize();
      print.row("transform tile", name, n, variant, vendor, 2 * bytes_1, va == vb);
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
                user_c.median / pre.median, user_o.median / pre.median);
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
  Harness h("tessera_bench_generic",
            "The local operations with user functors against Thrust and CUB with the same functors, and the\n"
            "user-functor paths against the precompiled ones, on one GPU.",
            {.minbytes = index_t(256) << 20, .maxbytes = index_t(1) << 30, .stepfactor = 4, .iters = 20, .warmup = 3});
  const Options o = parse(h, argc, argv);
  if (tessera::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "tessera_bench_generic: no GPU\n");
    return 77;
  }
  const Queue q = tessera::kernels::make_cuda_queue(0);
  std::printf("tessera_bench_generic: %s\n", tessera::kernels::describe_device(q).c_str());
  set_local_environment(h, q);
  const Printer print{measure_copy_gbs(q), &h};
  h.configuration()["copy_gbs"] = print.copy_gbs;
  print.header();
  for (index_t n : o.sizes) run(q, o, n, print);
  return finish(h);
}
