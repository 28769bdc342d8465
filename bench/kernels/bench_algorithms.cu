// tessera_bench_algorithms: the newer algorithms on one GPU (one rank, the cuda backend) against
// Thrust and CUB with the same functors, in the same run on the same data, timed alternately by
// events (median of -n calls; the harness's statistics of all of them). Rows of the framework's calls (tessera::gather, ...) include what a
// call on one rank does besides the kernels (its output's allocation from the block cache, the
// host waiting for a flag or a count); rows of the kernels (kernels::reduce_by_key, ...) are the
// local passes alone, as CUB's are.
//
//   gather            tessera::gather(values, indices)          vs thrust::gather      (float; int64 indices)
//   scatter           tessera::scatter(values, indices, out)    vs thrust::scatter
//   reduce_by_key     kernels::reduce_by_key, tessera::reduce_by_key  vs cub::DeviceReduce::ReduceByKey
//   unique            kernels::unique, tessera::unique           vs cub::DeviceSelect::Unique
//   sort, projection  tessera::sort(particles, less, x)           vs cub::DeviceRadixSort::SortPairs on the
//                     projected keys (made beforehand; and made by a thrust::transform in the timed call)
//   sort, comparator  tessera::sort(records, comp), kernels::merge_sort  vs thrust::sort(records, comp)
//
// Keys of the by-key rows are sorted runs of --run equal int32 keys; indices are a permutation
// i -> (a i + b) mod n with a coprime to n (every element once, neighbours far apart).
//
//   tessera_bench_algorithms [--sizes N,...] [-n R] [-w W] [--run L] [--json FILE]   (the harness's flags: --help)
#include <cuda_runtime.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/gather.h>
#include <thrust/scatter.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cub/cub.cuh>
#include <numeric>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/kernels/by_key.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/merge_sort.hpp"

namespace {

using tessera::Context;
using tessera::DistArray;
using tessera::index_t;
using tessera::kernels::Queue;
using namespace tessera::bench;

struct Options {
  std::vector<index_t> sizes = {index_t(1) << 24, index_t(1) << 26};
  int reps = 15;  // from the harness
  int warmup = 3;
  index_t run = 8;
};

// The harness's flags (-b/-e: bytes of float32 per size, the default 64 MiB to 256 MiB by 4, that
// is 2^24 and 2^26 elements; -n timed calls, alias --reps; -w), --sizes (element counts instead)
// and --run.
Options parse(Harness& h, int argc, char** argv) {
  Options o;
  h.add_alias("--iters", "--reps");
  h.add_option({"--sizes"}, "N,...", "element counts instead of -b/-e (2^k, K/M/G)", [&o](std::string_view v) {
    o.sizes.clear();
    for (long long n : parse_counts(v, "--sizes")) o.sizes.push_back(n);
  });
  h.add_option({"--run"}, "L", "equal keys per run in the by-key rows (default 8)",
               [&o](std::string_view v) { o.run = parse_counts(v, "--run").at(0); });
  parse_command_line(h, argc, argv);
  if (h.sizes_given() && h.given("--sizes")) usage_error("--sizes and -b/-e: give one or the other");
  if (!h.given("--sizes")) o.sizes = h.sizes(sizeof(float));
  o.reps = h.iters();
  o.warmup = h.warmup();
  return o;
}

// 16 bytes, sorted by x (a projection onto a radix key).
struct Particle {
  float x, y, z;
  std::int32_t id;
};
struct XOf {
  __host__ __device__ float operator()(const Particle& p) const { return p.x; }
};
struct SameParticle {
  __host__ __device__ bool operator()(const Particle& a, const Particle& b) const { return a.id == b.id; }
};
// 8 bytes, sorted by a comparator no radix sort takes: score descending.
struct Record {
  float score;
  std::int32_t id;
};
struct HigherScore {
  __host__ __device__ bool operator()(const Record& a, const Record& b) const { return a.score > b.score; }
};
struct SameRecord {
  __host__ __device__ bool operator()(const Record& a, const Record& b) const { return a.id == b.id && a.score == b.score; }
};
struct Plus {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};

__device__ std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

__global__ void fill_inputs(index_t n, index_t run, index_t stride, float* values, index_t* permutation,
                            std::int32_t* keys, Particle* particles, Record* records) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n; i += index_t(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix(static_cast<std::uint64_t>(i) + 1);
    values[i] = static_cast<float>(i % 17) - 8.0f;  // small integers: sums exact in any order
    permutation[i] = static_cast<index_t>((static_cast<unsigned __int128>(i) * stride + 12345) % n);
    keys[i] = static_cast<std::int32_t>(i / run);
    particles[i] = Particle{static_cast<float>(h % 1000003) * 0.001f, 1.0f, 2.0f, static_cast<std::int32_t>(i)};
    records[i] = Record{static_cast<float>((h >> 20) % 65536), static_cast<std::int32_t>(i)};
  }
}

// A multiplier coprime to n near n * 0.618, so that i -> a i + b mod n is a permutation.
index_t coprime_stride(index_t n) {
  index_t a = static_cast<index_t>(static_cast<double>(n) * 0.6180339887) | 1;
  while (std::gcd(a, n) != 1) a += 2;
  return a;
}

struct Printer {
  Harness* harness;
  void header(const char* device) const {
    std::printf("tessera_bench_algorithms on %s\nratio = the other's time / ours (> 1: ours is faster)\n\n", device);
    std::printf("%-18s %-52s %11s %10s %10s %8s %s\n", "op", "ours vs", "n", "ours ms", "other ms", "ratio", "agree");
  }
  // A table line and the harness's row: the vendor's share is its time over ours; VALID when the
  // results agree.
  void row(const char* op, const char* versus, index_t n, const Timing& ours_ms, const Timing& other_ms, bool agree) const {
    std::printf("%-18s %-52s %11lld %10.3f %10.3f %8.3f %s\n", op, versus, static_cast<long long>(n), ours_ms.median,
                other_ms.median, other_ms / ours_ms, agree ? "yes" : "NO");
    std::fflush(stdout);
    harness->row(std::string(op) + " vs " + versus + " n=" + std::to_string(n))
        .set("op", op)
        .set("versus", versus)
        .set("n", n)
        .set("ours_ms", ours_ms.median)
        .set("other_ms", other_ms.median)
        .time(seconds(ours_ms))
        .share("vendor", other_ms / ours_ms)
        .verdict(agree, std::string("differs from ") + versus);
    harness->print_pending();
  }
};

template <class T>
T* device_alloc(index_t n) {
  T* p = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&p, sizeof(T) * static_cast<std::size_t>(n > 0 ? n : 1)));
  return p;
}

template <class T, class Same>
bool same_on_device(const Queue& q, const T* a, const T* b, index_t n, Same same) {
  return thrust::equal(thrust::cuda::par.on(stream_of(q)), a, a + n, b, same);
}

void run(const Context& ctx, const Options& o, index_t n, const Printer& print) {
  const Queue& q = ctx.queue();
  const cudaStream_t stream = stream_of(q);
  auto policy = thrust::cuda::par.on(stream);
  DistArray<float> values(ctx, n);
  DistArray<index_t> permutation(ctx, n);
  DistArray<std::int32_t> keys(ctx, n);
  DistArray<Particle> particles(ctx, n);
  DistArray<Record> records(ctx, n);
  fill_inputs<<<2048, 256, 0, stream>>>(n, o.run, coprime_stride(n), values.local_data(), permutation.local_data(),
                                        keys.local_data(), particles.local_data(), records.local_data());
  TESSERA_CUDA_CHECK_LAUNCH();
  float* theirs = device_alloc<float>(n);

  // ---- gather, scatter -------------------------------------------------------------------------------
  {
    DistArray<float> ours_out;
    const auto [ours, other] = median_pair_ms(
        q, o.warmup, o.reps, [&] { ours_out = tessera::gather(values, permutation); },
        [&] { thrust::gather(policy, permutation.local_data(), permutation.local_data() + n, values.local_data(), theirs); });
    print.row("gather", "thrust::gather (float, int64 permutation)", n, ours, other,
              same_on_device(q, ours_out.local_data(), theirs, n, thrust::equal_to<float>()));
    DistArray<float> scattered(ctx, n);
    const auto [ours_s, other_s] = median_pair_ms(
        q, o.warmup, o.reps, [&] { tessera::scatter(values, permutation, scattered); },
        [&] { thrust::scatter(policy, values.local_data(), values.local_data() + n, permutation.local_data(), theirs); });
    print.row("scatter", "thrust::scatter (float, int64 permutation)", n, ours_s, other_s,
              same_on_device(q, scattered.local_data(), theirs, n, thrust::equal_to<float>()));
  }
  // ---- reduce_by_key, unique ----------------------------------------------------------------------------
  {
    std::int32_t* unique_ours = device_alloc<std::int32_t>(n);
    std::int32_t* unique_cub = device_alloc<std::int32_t>(n);
    float* sums_ours = device_alloc<float>(n);
    index_t* counts = device_alloc<index_t>(2);
    std::size_t temp_bytes = 0, unique_temp_bytes = 0;
    TESSERA_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(nullptr, temp_bytes, keys.local_data(), unique_cub,
                                                      values.local_data(), theirs, counts + 1, Plus{}, n, stream));
    TESSERA_CUDA_CHECK(cub::DeviceSelect::Unique(nullptr, unique_temp_bytes, keys.local_data(), unique_cub, counts + 1,
                                                 n, stream));
    void* temp = nullptr;
    TESSERA_CUDA_CHECK(cudaMalloc(&temp, std::max(temp_bytes, unique_temp_bytes)));
    auto cub_reduce_by_key = [&] {
      TESSERA_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(temp, temp_bytes, keys.local_data(), unique_cub,
                                                        values.local_data(), theirs, counts + 1, Plus{}, n, stream));
    };
    auto runs_agree = [&](const std::int32_t* ours_keys, const float* ours_sums) {
      index_t c[2];
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(c, counts, sizeof c, cudaMemcpyDeviceToHost, stream));
      q.synchronize();
      return c[0] == c[1] && same_on_device(q, ours_keys, unique_cub, c[0], thrust::equal_to<std::int32_t>()) &&
             (ours_sums == nullptr || same_on_device(q, ours_sums, theirs, c[0], thrust::equal_to<float>()));
    };
    const auto [ours, other] = median_pair_ms(
        q, o.warmup, o.reps,
        [&] {
          tessera::kernels::reduce_by_key(q, keys.local_data(), values.local_data(), n, tessera::equal_to{}, Plus{},
                                          unique_ours, sums_ours, counts);
        },
        cub_reduce_by_key);
    const std::string run_text = "run " + std::to_string(o.run);
    print.row("reduce_by_key", ("cub::DeviceReduce::ReduceByKey (kernel; " + run_text + ")").c_str(), n, ours, other,
              runs_agree(unique_ours, sums_ours));
    tessera::KeyedArrays<std::int32_t, float> reduced;
    const auto [ours_f, other_f] = median_pair_ms(
        q, o.warmup, o.reps, [&] { reduced = tessera::reduce_by_key(keys, values, Plus{}); }, cub_reduce_by_key);
    const index_t framework_runs = reduced.keys.global_size();
    index_t cub_runs = 0;
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(&cub_runs, counts + 1, sizeof cub_runs, cudaMemcpyDeviceToHost, stream));
    q.synchronize();
    print.row("reduce_by_key", ("cub::DeviceReduce::ReduceByKey (tessera::; " + run_text + ")").c_str(), n, ours_f,
              other_f,
              framework_runs == cub_runs &&
                  same_on_device(q, reduced.values.local_data(), theirs, cub_runs, thrust::equal_to<float>()));
    auto cub_unique = [&] {
      TESSERA_CUDA_CHECK(cub::DeviceSelect::Unique(temp, unique_temp_bytes, keys.local_data(), unique_cub, counts + 1, n,
                                                   stream));
    };
    const auto [ours_u, other_u] = median_pair_ms(
        q, o.warmup, o.reps,
        [&] { tessera::kernels::unique(q, keys.local_data(), n, tessera::equal_to{}, unique_ours, counts); }, cub_unique);
    print.row("unique", ("cub::DeviceSelect::Unique (kernel; " + run_text + ")").c_str(), n, ours_u, other_u,
              runs_agree(unique_ours, nullptr));
    DistArray<std::int32_t> uniques;
    const auto [ours_uf, other_uf] =
        median_pair_ms(q, o.warmup, o.reps, [&] { uniques = tessera::unique(keys); }, cub_unique);
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(&cub_runs, counts + 1, sizeof cub_runs, cudaMemcpyDeviceToHost, stream));
    q.synchronize();
    print.row("unique", ("cub::DeviceSelect::Unique (tessera::; " + run_text + ")").c_str(), n, ours_uf, other_uf,
              uniques.global_size() == cub_runs &&
                  same_on_device(q, uniques.local_data(), unique_cub, cub_runs, thrust::equal_to<std::int32_t>()));
    TESSERA_CUDA_CHECK(cudaFree(temp));
    TESSERA_CUDA_CHECK(cudaFree(unique_ours));
    TESSERA_CUDA_CHECK(cudaFree(unique_cub));
    TESSERA_CUDA_CHECK(cudaFree(sums_ours));
    TESSERA_CUDA_CHECK(cudaFree(counts));
  }
  // ---- sort by a projection onto a radix key ----------------------------------------------------------------
  {
    float* keys_in = device_alloc<float>(n);
    float* keys_out = device_alloc<float>(n);
    Particle* sorted = device_alloc<Particle>(n);
    thrust::transform(policy, particles.local_data(), particles.local_data() + n, keys_in, XOf{});
    std::size_t temp_bytes = 0;
    TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, particles.local_data(),
                                                       sorted, n, 0, 32, stream));
    void* temp = nullptr;
    TESSERA_CUDA_CHECK(cudaMalloc(&temp, temp_bytes));
    auto cub_sort = [&] {
      TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, particles.local_data(),
                                                         sorted, n, 0, 32, stream));
    };
    DistArray<Particle> ours_sorted;
    const auto [ours, other] = median_pair_ms(
        q, o.warmup, o.reps, [&] { ours_sorted = tessera::sort(particles, tessera::less{}, XOf{}); }, cub_sort);
    print.row("sort, projection", "cub SortPairs on the keys made beforehand", n, ours, other,
              same_on_device(q, ours_sorted.local_data(), sorted, n, SameParticle{}));
    const auto [ours_2, other_2] = median_pair_ms(
        q, o.warmup, o.reps, [&] { ours_sorted = tessera::sort(particles, tessera::less{}, XOf{}); },
        [&] {
          thrust::transform(thrust::cuda::par_nosync.on(stream), particles.local_data(), particles.local_data() + n,
                            keys_in, XOf{});
          cub_sort();
        });
    print.row("sort, projection", "thrust::transform (the keys) + cub SortPairs", n, ours_2, other_2,
              same_on_device(q, ours_sorted.local_data(), sorted, n, SameParticle{}));
    TESSERA_CUDA_CHECK(cudaFree(temp));
    TESSERA_CUDA_CHECK(cudaFree(keys_in));
    TESSERA_CUDA_CHECK(cudaFree(keys_out));
    TESSERA_CUDA_CHECK(cudaFree(sorted));
  }
  // ---- sort by a comparator ------------------------------------------------------------------------------------
  {
    Record* theirs_sorted = device_alloc<Record>(n);
    Record* ours_kernel = device_alloc<Record>(n);
    DistArray<Record> ours_sorted;
    auto thrust_sort = [&] {
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(theirs_sorted, records.local_data(), sizeof(Record) * static_cast<std::size_t>(n),
                                         cudaMemcpyDeviceToDevice, stream));
      thrust::sort(policy, theirs_sorted, theirs_sorted + n, HigherScore{});
    };
    const auto [ours, other] = median_pair_ms(
        q, o.warmup, o.reps, [&] { ours_sorted = tessera::sort(records, HigherScore{}); }, thrust_sort);
    // thrust::sort is not stable: compare the scores only.
    auto scores_agree = [&](const Record* a) {
      return thrust::equal(policy, a, a + n, theirs_sorted,
                           [] __device__(const Record& x, const Record& y) { return x.score == y.score; });
    };
    print.row("sort, comparator", "thrust::sort(comp) (its copy of the input included)", n, ours, other,
              scores_agree(ours_sorted.local_data()));
    const auto [ours_k, other_k] = median_pair_ms(
        q, o.warmup, o.reps,
        [&] { tessera::kernels::merge_sort(q, records.local_data(), ours_kernel, n, HigherScore{}); }, thrust_sort);
    print.row("sort, comparator", "thrust::sort(comp) (kernels::merge_sort)", n, ours_k, other_k, scores_agree(ours_kernel));
    const auto [ours_st, other_st] = median_pair_ms(
        q, o.warmup, o.reps,
        [&] { tessera::kernels::merge_sort(q, records.local_data(), ours_kernel, n, HigherScore{}); },
        [&] {
          TESSERA_CUDA_CHECK(cudaMemcpyAsync(theirs_sorted, records.local_data(),
                                             sizeof(Record) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice, stream));
          thrust::stable_sort(policy, theirs_sorted, theirs_sorted + n, HigherScore{});
        });
    print.row("sort, comparator", "thrust::stable_sort(comp) (kernels::merge_sort)", n, ours_st, other_st,
              same_on_device(q, ours_kernel, theirs_sorted, n, SameRecord{}));
    TESSERA_CUDA_CHECK(cudaFree(theirs_sorted));
    TESSERA_CUDA_CHECK(cudaFree(ours_kernel));
  }
  TESSERA_CUDA_CHECK(cudaFree(theirs));
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  Harness h("tessera_bench_algorithms",
            "gather, scatter, reduce_by_key, unique and the sorts by projection and by comparator against\n"
            "Thrust and CUB, on one rank (one GPU).",
            {.minbytes = index_t(64) << 20, .maxbytes = index_t(256) << 20, .stepfactor = 4, .iters = 15, .warmup = 3});
  const Options options = parse(h, argc, argv);
  Context ctx;
  try {
    ctx = runtime.start(tessera::BackendChoice::cuda);
  } catch (const tessera::UsageError& e) {
    std::fprintf(stderr, "tessera_bench_algorithms: %s\n", e.what());
    return 2;
  }
  if (ctx.size() != 1) usage_error("runs on one rank (one GPU)");
  h.configuration()["run"] = options.run;
  h.set_environment(environment_json(tessera::describe_environment(ctx)));
  const Printer print{&h};
  print.header(tessera::kernels::describe_device(ctx.queue()).c_str());
  for (index_t n : options.sizes) run(ctx, options, n, print);
  return finish(h);
}
