// tessera_bench_histogram: the histogram kernels next to CUB's DeviceHistogram, in one process on one
// GPU, on the same samples:
//   even bins    kernels::histogram_even   vs cub::DeviceHistogram::HistogramEven
//   given edges  kernels::histogram_edges  vs cub::DeviceHistogram::HistogramRange   (--ranged)
// Samples: uniform (float in [0, 1), int32 in [0, 2^24)) or skewed (90% of them in one bin, bin
// bins / 3, the rest uniform). The bin counts are powers of two and the ranges [0, 1) and
// [0, 2^24), so that CUB's arithmetic and numpy's (ours) put every sample in the same bin: the
// counts are compared exactly before timing. Times are medians of per-call cudaEvent intervals, ours
// and CUB's alternating, after warm-up calls; both include what each call launches (our counts'
// memset, CUB's init kernel). "speedup" is CUB's time / ours; "%copy" is the time n * sizeof(T)
// bytes take at the measured device-to-device copy rate (read + write counted, so a histogram's
// floor, which only reads, is that rate) over our time. The plan column says which counters ran:
// 32- or 16-bit, copies per thread block, passes, thread blocks per SM.
//
// --variants times the same rows (float) with other tunings of the device pass, to choose the
// defaults (HistogramTuning in tuning/histogram.cuh).
//
// --user-binner adds, after each even-bins row, a row "binner": kernels::histogram_by with a binner
// of the caller's that computes numpy's binning (the precompiled path's EvenBinning, its slot turned
// into a bin or kBinBelow / kBinAbove), and a row "evenbinner": the same with kernels::EvenBinner,
// numpy's binning answering in bins and kBinBelow / kBinAbove itself; on the same samples and the
// same device pass; their notes give their time over the precompiled row's.
//
// Usage: tessera_bench_histogram [--n N | -b 1G -e 4G -f 2] [--bins 16,256,...] [--types float,int32]
//          [--dists uniform,skewed] [--ranged] [--variants] [--user-binner] [-n 20] [-w 3]
//          [--json FILE]   (the harness's flags, bench/common; --reps is -n's other name)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cub/cub.cuh>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "json.hpp"
#include "tessera/kernels/cuda/device_histogram.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/histogram_by.hpp"
#include "tessera/kernels/kernels.hpp"

namespace {

using tessera::index_t;
using tessera::kernels::EvenBins;
using tessera::kernels::Queue;
using namespace tessera::bench;
namespace apps = tessera::apps;
namespace kd = tessera::kernels::cuda::detail;

struct Options {
  std::vector<index_t> sizes = {index_t(1) << 28};
  index_t n = 0;  // the size being run
  std::vector<int> bins = {16, 256, 1024, 4096, 16384, 65536};
  std::vector<std::string> types = {"float", "int32"};
  std::vector<std::string> dists = {"uniform", "skewed"};
  bool ranged = false;
  bool variants = false;
  bool user_binner = false;
  int reps = 20;  // from the harness
  int warmup = 3;
};

// The harness's flags (-b/-e: bytes of 4-byte samples, default 1 GiB: 2^28 samples; -n timed calls,
// alias --reps; -w; --json) and this benchmark's own (--n: one sample count instead of -b/-e).
Options parse(Harness& h, int argc, char** argv) {
  Options o;
  h.add_alias("--iters", "--reps");
  h.add_option({"--n"}, "N", "samples (2^k, K/M/G) instead of -b/-e", [&o](std::string_view v) {
    o.sizes = {parse_counts(v, "--n").at(0)};
  });
  h.add_option({"--bins"}, "16,256,...", "bin counts, powers of two up to 2^24 (default 16 to 65536)", [&o](std::string_view v) {
    o.bins.clear();
    for (const auto& b : split(std::string(v))) {
      const long long c = parse_count(b, "--bins", 1);
      if (c > (1 << 24) || (c & (c - 1))) usage_error("--bins: " + b + " is not a power of two up to 2^24");
      o.bins.push_back(static_cast<int>(c));
    }
  });
  h.add_option({"--types"}, "float,int32", "sample types (default both)", [&o](std::string_view v) {
    o.types = split(std::string(v));
    for (const auto& t : o.types)
      if (t != "float" && t != "int32") usage_error("--types: unknown type '" + t + "' (float, int32)");
  });
  h.add_option({"--dists"}, "uniform,skewed", "sample distributions (default both)", [&o](std::string_view v) {
    o.dists = split(std::string(v));
    for (const auto& d : o.dists)
      if (d != "uniform" && d != "skewed") usage_error("--dists: unknown distribution '" + d + "' (uniform, skewed)");
  });
  h.add_switch({"--ranged"}, "also the given-edges histogram against HistogramRange", &o.ranged);
  h.add_switch({"--variants"}, "also other tunings of the device pass (float)", &o.variants);
  h.add_switch({"--user-binner"}, "also kernels::histogram_by with a binner of the caller's", &o.user_binner);
  parse_command_line(h, argc, argv);
  if (h.sizes_given() && h.given("--n")) usage_error("--n and -b/-e: give one or the other");
  if (h.sizes_given()) o.sizes = h.sizes(4);
  for (index_t n : o.sizes)
    if (n > 0x7fffffff) usage_error("--n: CUB's int sample count holds at most 2^31 - 1");
  o.reps = h.iters();
  o.warmup = h.warmup();
  return o;
}

// ---------------------------------------------------------------------------------------------
// Samples.

constexpr int kIntRangeBits = 24;  // int32 samples in [0, 2^24)

template <class T>
__global__ void make_samples(T* out, index_t n, int bins, bool skewed, std::uint64_t seed) {
  const int hot_bin = bins / 3;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t bits = tessera::counter_bits(seed, static_cast<std::uint64_t>(i));
    const bool hot = skewed && (bits & 0xFFFFu) < 58982u;  // 90% of 65536
    if constexpr (std::is_same_v<T, float>) {
      out[i] = hot ? (static_cast<float>(hot_bin) + 0.5f) / static_cast<float>(bins)
                   : static_cast<float>(bits >> 40) * 0x1p-24f;  // [0, 1), multiples of 2^-24
    } else {
      const std::int64_t width = (std::int64_t(1) << kIntRangeBits) / bins;
      out[i] = hot ? static_cast<T>(hot_bin * width + width / 2)
                   : static_cast<T>((bits >> 40) & ((std::uint64_t(1) << kIntRangeBits) - 1));
    }
  }
}

template <class T>
EvenBins range_of(int bins) {
  if constexpr (std::is_same_v<T, float>) return EvenBins{0.0, 1.0, bins};
  else return EvenBins{0.0, static_cast<double>(std::int64_t(1) << kIntRangeBits), bins};
}

// ---------------------------------------------------------------------------------------------
// Rows.

struct Row {
  std::string op, type, dist, variant, plan;
  int bins = 0;
  index_t n = 0;
  Timing ours_ms;
  double cub_ms = 0, speedup = 0, percent_copy = 0;
  bool agree = false;
  std::string note;
};

std::vector<Row> g_rows;
Harness* g_harness = nullptr;

void print_header(double copy_gbs, index_t n) {
  std::printf("\nspeedup = CUB time / our time (> 1: ours is faster); %%copy = n * sizeof(T) bytes at the measured\n"
              "device-to-device copy rate (%.0f GB/s, read + write) / our time. n = %lld.\n\n",
              copy_gbs, static_cast<long long>(n));
  std::printf("%-6s %-6s %-8s %-8s %7s %9s %9s %8s %7s %6s  %s\n", "op", "type", "dist", "variant", "bins", "ours ms",
              "cub ms", "speedup", "%copy", "agree", "plan");
}

void print_row(const Row& r) {
  std::printf("%-6s %-6s %-8s %-8s %7d %9.3f %9.3f %8.2f %6.1f%% %6s  %s %s\n", r.op.c_str(), r.type.c_str(),
              r.dist.c_str(), r.variant.c_str(), r.bins, r.ours_ms.median, r.cub_ms, r.speedup, r.percent_copy,
              r.agree ? "yes" : "NO", r.plan.c_str(), r.note.c_str());
  std::fflush(stdout);
  g_rows.push_back(r);
  // The harness's row: shares of the vendor (CUB's time over ours) and of copy.
  g_harness->row(r.op + " " + r.type + " " + r.dist + " " + r.variant + " bins=" + std::to_string(r.bins) + " n=" +
                 std::to_string(r.n))
      .set("op", r.op)
      .set("type", r.type)
      .set("dist", r.dist)
      .set("variant", r.variant)
      .set("bins", r.bins)
      .set("n", r.n)
      .set("ours_ms", r.ours_ms.median)
      .set("cub_ms", r.cub_ms)
      .set("speedup", r.speedup)
      .set("percent_copy", r.percent_copy)
      .set("agree", r.agree)
      .set("plan", r.plan)
      .time(seconds(r.ours_ms))
      .share("vendor", r.speedup)
      .share("copy", r.percent_copy / 100.0)
      .verdict(r.agree, "counts differ from CUB's");
  g_harness->print_pending();
}

template <class T>
const char* type_name() {
  return std::is_same_v<T, float> ? "float" : "int32";
}

struct Bench {
  Queue q;
  double copy_gbs = 0;
  const Options* opt = nullptr;
};

// The plan the device pass makes for these bins with this tuning.
template <class Tuning, class T, class Binning>
std::string plan_text(const Binning& binning, int bins) {
  const auto [plan, resident] = kd::make_histogram_plan<Tuning, T, Binning>(binning, bins);
  const int threads = plan.counter_bits == 16 ? Tuning::kBlockThreads16 : Tuning::kBlockThreads;
  char text[160];
  std::snprintf(text, sizeof text, "%s x%d, %d pass%s, %d KiB, %d blk/SM, %d thr%s",
                plan.counter_bits ? (plan.counter_bits == 32 ? "32-bit" : "16-bit") : "global", plan.layout.copies,
                plan.layout.passes, plan.layout.passes == 1 ? "" : "es", static_cast<int>(plan.shared_bytes / 1024),
                resident, threads, plan.keys_shared ? ", keys shared" : "");
  return text;
}

// Ours against CUB's counts (int), exactly; "" when they agree.
std::string disagreement(const Queue& q, const index_t* ours, const int* theirs, int bins, index_t n) {
  std::vector<index_t> a(static_cast<std::size_t>(bins) + 3);
  std::vector<int> b(static_cast<std::size_t>(bins));
  tessera::kernels::copy_to_host(q, a.data(), ours, a.size() * sizeof(index_t));
  tessera::kernels::copy_to_host(q, b.data(), theirs, b.size() * sizeof(int));
  index_t differ = 0, total = 0;
  for (int i = 0; i < bins; ++i) {
    differ += a[static_cast<std::size_t>(i)] != b[static_cast<std::size_t>(i)];
    total += a[static_cast<std::size_t>(i)];
  }
  if (differ == 0 && total == n && a[bins] == 0 && a[bins + 1] == 0 && a[bins + 2] == 0) return "";
  return std::to_string(differ) + " bins differ; ours total " + std::to_string(total) + ", outside " +
         std::to_string(a[bins] + a[bins + 1] + a[bins + 2]);
}

// Other tunings of the device pass (--variants); kernel template arguments must be namespace-scope types.
struct MinBlocks3 : kd::HistogramTuning { static constexpr int kMinBlocksPerSm = 3; };
struct Threads256 : kd::HistogramTuning { static constexpr int kBlockThreads = 256; };
struct Threads16At512 : kd::HistogramTuning { static constexpr int kBlockThreads16 = 512; };
struct Only16Bit : kd::HistogramTuning { static constexpr int kMinBlocksPerSmFor32Bit = 1 << 20; };
struct TwoWaves : kd::HistogramTuning { static constexpr int kWaves = 2; };
struct CountRuns : kd::HistogramTuning { static constexpr int kCountRuns = 1; };
struct CountRunsWarp : kd::HistogramTuning { static constexpr int kCountRuns = 2; };
struct NoRuns : kd::HistogramTuning { static constexpr int kCountRuns = 0; };
struct DrainOneBit : kd::HistogramTuning { static constexpr int kDrainBits16 = 1; };

// numpy's binning of equal bins as a binner of the caller's (kernels/histogram_by.hpp).
template <class T>
struct NumpyBinner {
  tessera::kernels::detail::EvenBinning<T> even;
  __host__ __device__ int operator()(T x) const {
    const int slot = even(x);
    if (slot < even.bins) return slot;
    return slot == even.bins + tessera::kernels::detail::kSlotBelow ? tessera::kernels::kBinBelow
                                                                    : tessera::kernels::kBinAbove;
  }
};

template <class T>
void bench_even(Bench& b, const T* samples, const std::string& dist, int bins, index_t* ours_counts, int* cub_counts,
                bool variants) {
  const Queue& q = b.q;
  const index_t n = b.opt->n;
  const EvenBins range = range_of<T>(bins);
  using Level = std::conditional_t<std::is_same_v<T, float>, float, int>;
  const Level lower = static_cast<Level>(range.lower), upper = static_cast<Level>(range.upper);
  std::size_t temp_bytes = 0;
  TESSERA_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(nullptr, temp_bytes, samples, cub_counts, bins + 1, lower,
                                                         upper, static_cast<int>(n), stream_of(q)));
  void* temp = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&temp, std::max<std::size_t>(temp_bytes, 1)));
  auto run_cub = [&] {
    std::size_t bytes = temp_bytes;
    TESSERA_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(temp, bytes, samples, cub_counts, bins + 1, lower, upper,
                                                           static_cast<int>(n), stream_of(q)));
  };
  double cub_ms = 0;  // the variants are compared with the default row's CUB time
  auto run_row = [&](const char* variant, const std::string& plan, const std::function<void()>& run_ours) {
    run_ours();
    run_cub();
    Row r;
    r.op = "even";
    r.type = type_name<T>();
    r.dist = dist;
    r.variant = variant;
    r.bins = bins;
    r.n = n;
    r.plan = plan;
    r.note = disagreement(q, ours_counts, cub_counts, bins, n);
    r.agree = r.note.empty();
    if (cub_ms == 0) {
      std::tie(r.ours_ms, r.cub_ms) = median_pair_ms(q, b.opt->warmup, b.opt->reps, run_ours, run_cub);
      cub_ms = r.cub_ms;
    } else {
      r.ours_ms = median_ms(q, b.opt->warmup, b.opt->reps, run_ours);
      r.cub_ms = cub_ms;
    }
    r.speedup = r.cub_ms / r.ours_ms;
    r.percent_copy = 100.0 * (static_cast<double>(n) * sizeof(T) / (b.copy_gbs * 1e6)) / r.ours_ms;
    print_row(r);
  };
  using Binning = kd::DeviceEvenBinning<T>;
  const Binning binning{tessera::kernels::detail::make_even_binning<T>(range.lower, range.upper, bins)};
  run_row("default", plan_text<kd::HistogramTuning, T, Binning>(binning, bins),
          [&] { tessera::kernels::histogram_even(q, samples, n, range, ours_counts); });
  if (b.opt->user_binner) {
    const double precompiled_ms = g_rows.back().ours_ms;
    const NumpyBinner<T> binner{binning.bins};
    using UserBinning = kd::DeviceUserBinning<NumpyBinner<T>>;
    const UserBinning user_binning{{binner, bins}};
    run_row("binner", plan_text<kd::HistogramTuning, T, UserBinning>(user_binning, bins),
            [&] { tessera::kernels::histogram_by(q, samples, n, binner, bins, ours_counts); });
    auto note_ratio = [&](const char* name) {
      Row& row = g_rows.back();
      char ratio[64];
      std::snprintf(ratio, sizeof ratio, "%s / precompiled %.3f", name, row.ours_ms / precompiled_ms);
      row.note += (row.note.empty() ? "" : "; ") + std::string(ratio);
      std::printf("  %s\n", ratio);
    };
    note_ratio("binner");
    const tessera::kernels::EvenBinner<T> even(range);
    using EvenUserBinning = kd::DeviceUserBinning<tessera::kernels::EvenBinner<T>>;
    const EvenUserBinning even_binning{{even, bins}};
    run_row("evenbinner", plan_text<kd::HistogramTuning, T, EvenUserBinning>(even_binning, bins),
            [&] { tessera::kernels::histogram_by(q, samples, n, even, bins, ours_counts); });
    note_ratio("evenbinner");
  }
  if (variants && std::is_same_v<T, float>) {
    auto variant = [&]<class Tuning>(const char* name) {
      run_row(name, plan_text<Tuning, T, Binning>(binning, bins), [&] {
        kd::device_histogram<Tuning>(samples, n, binning, bins, ours_counts, q.stream);
      });
    };
    variant.template operator()<MinBlocks3>("minblk3");
    variant.template operator()<Threads256>("thr256");
    variant.template operator()<Threads16At512>("t16at512");
    variant.template operator()<Only16Bit>("16bit");
    variant.template operator()<TwoWaves>("waves2");
    variant.template operator()<CountRuns>("runs");
    variant.template operator()<CountRunsWarp>("runswarp");
    variant.template operator()<NoRuns>("noruns");
    variant.template operator()<DrainOneBit>("drain1");
  }
  TESSERA_CUDA_CHECK(cudaFree(temp));
}

// Given edges: ours (double edges) against CUB's HistogramRange (float levels, the same values).
void bench_ranged(Bench& b, const float* samples, const std::string& dist, int bins, index_t* ours_counts, int* cub_counts) {
  const Queue& q = b.q;
  const index_t n = b.opt->n;
  const std::vector<double> edges = tessera::kernels::even_bin_edges(EvenBins{0.0, 1.0, bins});
  std::vector<float> levels(edges.begin(), edges.end());
  double* d_edges = nullptr;
  float* d_levels = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&d_edges, edges.size() * sizeof(double)));
  TESSERA_CUDA_CHECK(cudaMalloc(&d_levels, levels.size() * sizeof(float)));
  tessera::kernels::copy_from_host(q, d_edges, edges.data(), edges.size() * sizeof(double));
  tessera::kernels::copy_from_host(q, d_levels, levels.data(), levels.size() * sizeof(float));
  std::size_t temp_bytes = 0;
  TESSERA_CUDA_CHECK(cub::DeviceHistogram::HistogramRange(nullptr, temp_bytes, samples, cub_counts, bins + 1, d_levels,
                                                          static_cast<int>(n), stream_of(q)));
  void* temp = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&temp, std::max<std::size_t>(temp_bytes, 1)));
  auto run_ours = [&] { tessera::kernels::histogram_edges(q, samples, n, d_edges, bins, ours_counts); };
  auto run_cub = [&] {
    std::size_t bytes = temp_bytes;
    TESSERA_CUDA_CHECK(cub::DeviceHistogram::HistogramRange(temp, bytes, samples, cub_counts, bins + 1, d_levels,
                                                            static_cast<int>(n), stream_of(q)));
  };
  run_ours();
  run_cub();
  Row r;
  r.op = "edges";
  r.type = "float";
  r.dist = dist;
  r.variant = "default";
  r.bins = bins;
  r.n = n;
  kd::DeviceEdgesBinning<float> edges_binning{};
  edges_binning.edges = d_edges;
  edges_binning.bins = bins;
  r.plan = plan_text<kd::HistogramTuning, float, kd::DeviceEdgesBinning<float>>(edges_binning, bins);
  r.note = disagreement(q, ours_counts, cub_counts, bins, n);
  r.agree = r.note.empty();
  std::tie(r.ours_ms, r.cub_ms) = median_pair_ms(q, b.opt->warmup, b.opt->reps, run_ours, run_cub);
  r.speedup = r.cub_ms / r.ours_ms;
  r.percent_copy = 100.0 * (static_cast<double>(n) * sizeof(float) / (b.copy_gbs * 1e6)) / r.ours_ms;
  print_row(r);
  TESSERA_CUDA_CHECK(cudaFree(temp));
  TESSERA_CUDA_CHECK(cudaFree(d_edges));
  TESSERA_CUDA_CHECK(cudaFree(d_levels));
}

template <class T>
void bench_type(Bench& b, bool variants) {
  const Options& o = *b.opt;
  T* samples = nullptr;
  index_t* ours_counts = nullptr;
  int* cub_counts = nullptr;
  const int max_bins = *std::max_element(o.bins.begin(), o.bins.end());
  TESSERA_CUDA_CHECK(cudaMalloc(&samples, static_cast<std::size_t>(o.n) * sizeof(T)));
  TESSERA_CUDA_CHECK(cudaMalloc(&ours_counts, (static_cast<std::size_t>(max_bins) + 3) * sizeof(index_t)));
  TESSERA_CUDA_CHECK(cudaMalloc(&cub_counts, static_cast<std::size_t>(max_bins) * sizeof(int)));
  {
    if (variants) std::printf("\nvariants of the tuning (float; CUB time from the default row):\n");
    for (const std::string& dist : o.dists) {
      for (int bins : o.bins) {
        make_samples<<<4096, 256, 0, stream_of(b.q)>>>(samples, o.n, bins, dist == "skewed", 20240611u);
        TESSERA_CUDA_CHECK_LAUNCH();
        bench_even<T>(b, samples, dist, bins, ours_counts, cub_counts, variants);
        if constexpr (std::is_same_v<T, float>) {
          if (o.ranged && !variants) bench_ranged(b, samples, dist, bins, ours_counts, cub_counts);
        }
      }
    }
  }
  TESSERA_CUDA_CHECK(cudaFree(samples));
  TESSERA_CUDA_CHECK(cudaFree(ours_counts));
  TESSERA_CUDA_CHECK(cudaFree(cub_counts));
}

}  // namespace

int main(int argc, char** argv) {
  Harness h("tessera_bench_histogram",
            "The histogram kernels next to CUB's DeviceHistogram (HistogramEven, HistogramRange) on one GPU.",
            {.minbytes = index_t(1) << 30, .maxbytes = index_t(1) << 30, .stepfactor = 4, .iters = 20, .warmup = 3});
  g_harness = &h;
  Options opt = parse(h, argc, argv);
  if (tessera::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "tessera_bench_histogram: no usable CUDA device\n");
    return 1;
  }
  Bench b;
  b.q = tessera::kernels::make_cuda_queue(0);
  b.opt = &opt;
  const std::string device = tessera::kernels::describe_device(b.q);
  std::printf("tessera_bench_histogram on %s\n", device.c_str());
  set_local_environment(h, b.q);
  b.copy_gbs = measure_copy_gbs(b.q);
  h.configuration()["copy_gbs"] = b.copy_gbs;
  std::printf("device-to-device copy: %.1f GB/s (bytes read + written, 1 GiB copy, median of 10)\n", b.copy_gbs);
  for (const index_t n : opt.sizes) {
    opt.n = n;
    print_header(b.copy_gbs, opt.n);
    // The default rows of every type first, then the variants (the least needed, last).
    for (const std::string& type : opt.types) {
      if (type == "float") bench_type<float>(b, false);
      else bench_type<std::int32_t>(b, false);
    }
    if (opt.variants) bench_type<float>(b, true);
  }
  tessera::kernels::destroy_queue(b.q);
  if (finish(h) != 0) {
    std::fprintf(stderr, "tessera_bench_histogram: some counts disagree with CUB's (rows marked NO)\n");
    return 3;
  }
  return 0;
}
