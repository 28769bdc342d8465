// tessera_bench_kernels: each local kernel of the CUDA backend next to its vendor baseline, in one
// process on one GPU, on the same random inputs (the counter-based generator, never zeros):
//   reduce  (sum, min, max)            vs cub::DeviceReduce::Sum / Min / Max
//   scan    (exclusive, inclusive)     vs cub::DeviceScan::ExclusiveSum / InclusiveSum
//           scan-variants: each of the single-pass scan's two kernels forced (the one-tile-per-block
//           kernel and the pipelined one, device_scan.cuh) against the same CUB scans
//   select  (x > 0: about half kept)   vs cub::DeviceSelect::If
//   gemm    (tiled engine)             vs cublasSgemm / cublasDgemm, default math (no TF32)
// Every pair is checked to agree before it is timed. Times are medians of per-call cudaEvent
// intervals after warm-up calls. "speedup" is CUB (or cuBLAS) time / our time: above 1 we are
// faster. "%floor" is the time the bytes moved would take at the device-to-device copy rate that
// this program measures first (read + write counted), over our time; for GEMM it is our rate as a
// percentage of cuBLAS's.
//
// Usage: tessera_bench_kernels [--sizes 268435456,1073741824 | -b 1G -e 4G -f 4] [--gemm 4096x4096x4096,...]
//          [--ops reduce,scan,scan-variants,select,exact,gemm] [-n 20] [-w 3] [--gemm-reps 10] [--json FILE]
// (the harness's flags, bench/common; --reps is -n's other name). Exit status 3 when a row is INVALID.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/cub.cuh>
#include <stdexcept>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "json.hpp"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/exact_sum.hpp"
#include "tessera/kernels/kernels.hpp"

namespace {

using tessera::GemmEngine;
using tessera::index_t;
using tessera::Predicate;
using tessera::ReduceOp;
using tessera::ScanKind;
using tessera::kernels::Queue;
using namespace tessera::bench;
using Row_ = tessera::bench::Row;
namespace apps = tessera::apps;

#define BENCH_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                             \
    const cublasStatus_t status_ = (call);                                                         \
    if (status_ != CUBLAS_STATUS_SUCCESS) TESSERA_FATAL(#call, cublasGetStatusString(status_));     \
  } while (0)

struct Options {
  std::vector<index_t> sizes = {index_t(1) << 28, index_t(1) << 30};
  std::vector<std::array<index_t, 3>> gemm_shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {5000, 3001, 4097}};
  std::vector<std::string> ops = {"reduce", "scan", "select", "exact", "gemm"};
  int reps = 20;  // from the harness
  int warmup = 3;
  int gemm_reps = 10;
};

// The harness's flags (-b/-e: bytes of 4-byte elements per size, the default 1 GiB to 4 GiB by 4,
// that is 2^28 and 2^30 elements of every type; -n timed calls, alias --reps; -w; --json) and this
// benchmark's own.
Options parse(Harness& h, int argc, char** argv) {
  Options o;
  h.add_alias("--iters", "--reps");
  h.add_option({"--sizes"}, "N,...", "element counts instead of -b/-e (2^k, K/M/G)", [&o](std::string_view v) {
    o.sizes.clear();
    for (long long n : parse_counts(v, "--sizes")) o.sizes.push_back(n);
  });
  h.add_option({"--gemm"}, "MxNxK,...", "GEMM shapes (default 4096^3, 8192^3, 5000x3001x4097)", [&o](std::string_view v) {
    o.gemm_shapes.clear();
    for (const auto& s : split(std::string(v), ',')) {
      const auto dims = split(s, 'x');
      if (dims.size() != 3) throw tessera::UsageError("--gemm: shape '" + s + "' is not MxNxK");
      o.gemm_shapes.push_back({parse_count(dims[0], "--gemm", 1), parse_count(dims[1], "--gemm", 1), parse_count(dims[2], "--gemm", 1)});
    }
  });
  h.add_option({"--ops"}, "LIST", "of reduce,scan,scan-variants,select,exact,gemm (default all but scan-variants)", [&o](std::string_view v) {
    o.ops = split(std::string(v), ',');
    for (const auto& op : o.ops)
      if (op != "reduce" && op != "scan" && op != "scan-variants" && op != "select" && op != "exact" && op != "gemm")
        throw tessera::UsageError("--ops: unknown operation '" + op + "'");
  });
  h.add_option({"--gemm-reps"}, "R", "timed calls of each GEMM (default 10)",
               [&o](std::string_view v) { o.gemm_reps = static_cast<int>(parse_count(std::string(v), "--gemm-reps", 1)); });
  parse_command_line(h, argc, argv);
  if (h.sizes_given() && h.given("--sizes")) usage_error("--sizes and -b/-e: give one or the other");
  if (!h.given("--sizes")) o.sizes = h.sizes(4);
  o.reps = h.iters();
  o.warmup = h.warmup();
  return o;
}

bool wants(const Options& o, const char* op) { return std::find(o.ops.begin(), o.ops.end(), op) != o.ops.end(); }

// ---------------------------------------------------------------------------------------------
// Agreement checks on the device (copying gigabytes to the host would dominate the run).

struct Mismatch {
  unsigned long long count;
  double max_abs_diff;
};

__device__ void atomic_max_double(double* address, double value) {
  auto* bits = reinterpret_cast<unsigned long long*>(address);
  unsigned long long old = *bits;
  while (__longlong_as_double(old) < value) {
    const unsigned long long seen = atomicCAS(bits, old, __double_as_longlong(value));
    if (seen == old) break;
    old = seen;
  }
}

// Element i agrees where |a - b| <= abs_tol + per_index_tol * (i + 1) (0 and 0 for exact match).
template <class T>
__global__ void compare_kernel(const T* a, const T* b, index_t n, double abs_tol, double per_index_tol, Mismatch* result) {
  unsigned long long bad = 0;
  double worst = 0;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    worst = d > worst ? d : worst;
    if (!(d <= abs_tol + per_index_tol * static_cast<double>(i + 1))) ++bad;
  }
  if (bad) atomicAdd(&result->count, bad);
  if (worst > 0) atomic_max_double(&result->max_abs_diff, worst);
}

template <class T>
Mismatch compare(const Queue& q, const T* a, const T* b, index_t n, double abs_tol, double per_index_tol) {
  Mismatch* d = nullptr;
  TESSERA_CUDA_CHECK(cudaMallocAsync(&d, sizeof(Mismatch), stream_of(q)));
  TESSERA_CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(Mismatch), stream_of(q)));
  if (n > 0) {
    compare_kernel<<<1024, 256, 0, stream_of(q)>>>(a, b, n, abs_tol, per_index_tol, d);
    TESSERA_CUDA_CHECK_LAUNCH();
  }
  Mismatch h{};
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, stream_of(q)));
  TESSERA_CUDA_CHECK(cudaFreeAsync(d, stream_of(q)));
  q.synchronize();
  return h;
}

// ---------------------------------------------------------------------------------------------
// Results.

struct Row {
  std::string op, type, size, unit;
  Timing ours_ms, vendor_ms;
  double ours_rate = 0, vendor_rate = 0, speedup = 0, percent_floor = 0;
  bool agree = false;
  std::string note;
};

// Rates of a memory-bound row: `bytes` moved, against the measured device-to-device copy rate.
void set_memory_rates(Row& r, double bytes, double copy_gbs) {
  r.ours_rate = bytes / (r.ours_ms * 1e6);
  r.vendor_rate = bytes / (r.vendor_ms * 1e6);
  r.speedup = r.vendor_ms / r.ours_ms;
  r.percent_floor = 100.0 * (bytes / (copy_gbs * 1e6)) / r.ours_ms;
}

Harness* g_harness = nullptr;

void print_header(double copy_gbs) {
  std::printf("\nspeedup = vendor time / our time (> 1: ours is faster); %%floor = bytes moved at the measured\n"
              "device-to-device copy rate (%.0f GB/s, read + write) / our time; for gemm: our rate / cuBLAS rate.\n\n",
              copy_gbs);
  std::printf("%-16s %-7s %-18s %10s %10s %11s %11s %8s %7s %6s\n", "op", "type", "size", "ours ms", "vendor ms",
              "ours rate", "vendor", "speedup", "%floor", "agree");
}

void print_row(const Row& r) {
  std::printf("%-16s %-7s %-18s %10.3f %10.3f %8.1f %-2s %8.1f %-2s %8.3f %6.1f%% %6s %s\n", r.op.c_str(), r.type.c_str(),
              r.size.c_str(), r.ours_ms.median, r.vendor_ms.median, r.ours_rate, r.unit == "GB/s" ? "GB" : "GF", r.vendor_rate,
              r.unit == "GB/s" ? "GB" : "GF", r.speedup, r.percent_floor, r.agree ? "yes" : "NO", r.note.c_str());
  std::fflush(stdout);
  // The harness's row: shares of the vendor (its time over ours) and, for memory-bound rows, of copy.
  Row_& row = g_harness->row(r.op + " " + r.type + " " + r.size);
  row.set("op", r.op)
      .set("type", r.type)
      .set("size", r.size)
      .set("unit", r.unit)
      .set("ours_ms", r.ours_ms.median)
      .set("vendor_ms", r.vendor_ms.median)
      .set("ours_rate", r.ours_rate)
      .set("vendor_rate", r.vendor_rate)
      .set("speedup", r.speedup)
      .set("percent_floor", r.percent_floor)
      .set("agree", r.agree)
      .set("note", r.note)
      .time(seconds(r.ours_ms))
      .share("vendor", r.speedup);
  if (r.unit == "GB/s") row.share("copy", r.percent_floor / 100.0);
  row.verdict(r.agree, "disagrees with the vendor: " + r.note);
  g_harness->print_pending();
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  if constexpr (std::is_same_v<T, float>) return "float";
  return "double";
}

// ---------------------------------------------------------------------------------------------
// The operations.

struct Context {
  Queue q;
  double copy_gbs = 0;
  const Options* opt = nullptr;
};

// A memory-bound row: both sides timed alike (median after warm-up), rates from `bytes` moved.
template <class T>
Row memory_row(const Context& ctx, std::string op, index_t n, double bytes, const std::function<void()>& ours,
               const std::function<void()>& vendor) {
  Row r;
  r.op = std::move(op);
  r.type = type_name<T>();
  r.size = std::to_string(n);
  r.unit = "GB/s";
  std::tie(r.ours_ms, r.vendor_ms) = median_pair_ms(ctx.q, ctx.opt->warmup, ctx.opt->reps, ours, vendor);
  set_memory_rates(r, bytes, ctx.copy_gbs);
  return r;
}


template <class T>
struct GreaterThanZero {
  __host__ __device__ bool operator()(const T& x) const { return x > T(0); }
};

template <class T>
double sum_abs_tolerance(index_t n) {
  // Inputs lie in [-1, 1) (floats) or [-1000, 1000] (integers, compared exactly).
  if constexpr (std::is_integral_v<T>) return 0.0;
  return 4.0 * std::numeric_limits<T>::epsilon() * static_cast<double>(n) * (2.0 + std::log2(static_cast<double>(n) + 1));
}

template <class T>
void bench_reduce(Context& ctx, index_t n, const T* in) {
  const Queue& q = ctx.q;
  T *ours = nullptr, *theirs = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&ours, sizeof(T)));
  TESSERA_CUDA_CHECK(cudaMalloc(&theirs, sizeof(T)));
  std::size_t temp_bytes = 0;
  TESSERA_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, in, theirs, n, stream_of(q)));
  std::size_t more = 0;
  TESSERA_CUDA_CHECK(cub::DeviceReduce::Min(nullptr, more, in, theirs, n, stream_of(q)));
  temp_bytes = std::max(temp_bytes, more);
  TESSERA_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, more, in, theirs, n, stream_of(q)));
  temp_bytes = std::max(temp_bytes, more);
  void* temp = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&temp, std::max<std::size_t>(temp_bytes, 1)));

  for (ReduceOp op : {ReduceOp::sum, ReduceOp::min, ReduceOp::max}) {
    auto run_ours = [&] { tessera::kernels::reduce(q, in, n, op, ours); };
    auto run_cub = [&] {
      std::size_t bytes = temp_bytes;
      if (op == ReduceOp::sum) TESSERA_CUDA_CHECK(cub::DeviceReduce::Sum(temp, bytes, in, theirs, n, stream_of(q)));
      if (op == ReduceOp::min) TESSERA_CUDA_CHECK(cub::DeviceReduce::Min(temp, bytes, in, theirs, n, stream_of(q)));
      if (op == ReduceOp::max) TESSERA_CUDA_CHECK(cub::DeviceReduce::Max(temp, bytes, in, theirs, n, stream_of(q)));
    };
    run_ours();
    run_cub();
    const Mismatch m = compare(q, ours, theirs, 1, op == ReduceOp::sum ? sum_abs_tolerance<T>(n) : 0.0, 0.0);
    Row r = memory_row<T>(ctx, std::string("reduce_") + tessera::to_string(op), n,
                          static_cast<double>(sizeof(T)) * static_cast<double>(n), run_ours, run_cub);
    r.agree = m.count == 0;
    print_row(r);
  }
  TESSERA_CUDA_CHECK(cudaFree(temp));
  TESSERA_CUDA_CHECK(cudaFree(ours));
  TESSERA_CUDA_CHECK(cudaFree(theirs));
}

template <class T>
void bench_scan(Context& ctx, index_t n, const T* in) {
  const Queue& q = ctx.q;
  T *ours = nullptr, *theirs = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&ours, sizeof(T) * n));
  TESSERA_CUDA_CHECK(cudaMalloc(&theirs, sizeof(T) * n));
  std::size_t temp_bytes = 0, more = 0;
  TESSERA_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in, theirs, n, stream_of(q)));
  TESSERA_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, more, in, theirs, n, stream_of(q)));
  temp_bytes = std::max(temp_bytes, more);
  void* temp = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&temp, std::max<std::size_t>(temp_bytes, 1)));
  for (ScanKind kind : {ScanKind::exclusive, ScanKind::inclusive}) {
    auto run_ours = [&] { tessera::kernels::scan(q, in, ours, n, kind, T(0)); };
    auto run_cub = [&] {
      std::size_t bytes = temp_bytes;
      if (kind == ScanKind::exclusive)
        TESSERA_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, bytes, in, theirs, n, stream_of(q)));
      else
        TESSERA_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, theirs, n, stream_of(q)));
    };
    run_ours();
    run_cub();
    // Floating-point prefixes of values in [-1, 1): allow a rounding bound that grows with the index.
    const double per_index = std::is_integral_v<T> ? 0.0 : 4.0 * std::numeric_limits<T>::epsilon() * (2.0 + std::log2(static_cast<double>(n) + 1));
    const Mismatch m = compare(q, ours, theirs, n, 0.0, per_index);
    Row r = memory_row<T>(ctx, std::string("scan_") + tessera::to_string(kind), n,
                          2.0 * static_cast<double>(sizeof(T)) * static_cast<double>(n), run_ours, run_cub);
    r.agree = m.count == 0;
    if (!r.agree) r.note = std::to_string(m.count) + " mismatches, max diff " + std::to_string(m.max_abs_diff);
    print_row(r);
  }

  // Each kernel of the single-pass scan forced, against the same CUB scan: the one-tile-per-block
  // kernel, and the pipelined one in its tuning and in other ring shapes (slots x tile, blocks an SM).
  if (wants(*ctx.opt, "scan-variants")) {
    namespace d = tessera::kernels::cuda::detail;
    using P = tessera::plus;
    const std::vector<std::pair<std::string, std::function<bool(ScanKind)>>> variants = {
        {"one_pass", [&](ScanKind kind) { d::device_scan_one_pass(q, in, ours, n, kind, P{}, T(0)); return true; }},
        {"pipelined", [&](ScanKind kind) { return d::device_scan_pipelined(q, in, ours, n, kind, P{}, T(0)); }},
        {"pipe_6x32K", [&](ScanKind kind) { return d::device_scan_pipelined<T, P, d::ScanPipelineTuning<T, 6, 8, 1>>(q, in, ours, n, kind, P{}, T(0)); }},
        {"pipe_9x24K", [&](ScanKind kind) { return d::device_scan_pipelined<T, P, d::ScanPipelineTuning<T, 9, 6, 1>>(q, in, ours, n, kind, P{}, T(0)); }},
        {"pipe_7x16K_2b", [&](ScanKind kind) { return d::device_scan_pipelined<T, P, d::ScanPipelineTuning<T, 7, 4, 2>>(q, in, ours, n, kind, P{}, T(0)); }},
        {"pipe_7x32K_w16", [&](ScanKind kind) { return d::device_scan_pipelined<T, P, d::ScanPipelineTuning<T, 7, 4, 1, 16>>(q, in, ours, n, kind, P{}, T(0)); }},
    };
    for (ScanKind kind : {ScanKind::exclusive}) {
      for (const auto& [name, variant] : variants) {
        if (!variant(kind)) {
          std::printf("scan_%s_%s %s: does not run on this device\n", tessera::to_string(kind), name.c_str(), type_name<T>());
          continue;
        }
        auto run_ours = [&] {
          if (!variant(kind)) throw std::runtime_error("the pipelined scan does not run on this device");
        };
        auto run_cub = [&] {
          std::size_t bytes = temp_bytes;
          if (kind == ScanKind::exclusive)
            TESSERA_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, bytes, in, theirs, n, stream_of(q)));
          else
            TESSERA_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, theirs, n, stream_of(q)));
        };
        run_ours();
        run_cub();
        const double per_index = std::is_integral_v<T> ? 0.0 : 4.0 * std::numeric_limits<T>::epsilon() * (2.0 + std::log2(static_cast<double>(n) + 1));
        const Mismatch m = compare(q, ours, theirs, n, 0.0, per_index);
        Row r = memory_row<T>(ctx, std::string("scan_") + tessera::to_string(kind) + "_" + name, n,
                              2.0 * static_cast<double>(sizeof(T)) * static_cast<double>(n), run_ours, run_cub);
        r.agree = m.count == 0;
        if (!r.agree) r.note = std::to_string(m.count) + " mismatches, max diff " + std::to_string(m.max_abs_diff);
        print_row(r);
      }
    }
  }

  // The two-pass scan (scan_totals, then scan_from_totals: what the distributed scan runs) against
  // CUB's one-pass exclusive scan: 3N bytes against 2N, so %floor counts 3N; the note gives the
  // scan pass alone, the part that replaces a seeded single-pass scan.
  {
    const index_t segments = tessera::kernels::scan_segment_count<T>(q, n);
    T *prefix = nullptr, *total = nullptr;
    TESSERA_CUDA_CHECK(cudaMalloc(&prefix, sizeof(T) * std::max<index_t>(segments, 1)));
    TESSERA_CUDA_CHECK(cudaMalloc(&total, sizeof(T)));
    auto run_pass1 = [&] { tessera::kernels::scan_totals(q, in, n, prefix, total); };
    auto run_pass2 = [&] { tessera::kernels::scan_from_totals(q, in, ours, n, ScanKind::exclusive, T(0), prefix); };
    auto run_both = [&] { run_pass1(); run_pass2(); };
    auto run_cub = [&] {
      std::size_t bytes = temp_bytes;
      TESSERA_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, bytes, in, theirs, n, stream_of(q)));
    };
    run_both();
    run_cub();
    const double per_index = std::is_integral_v<T> ? 0.0 : 4.0 * std::numeric_limits<T>::epsilon() * (2.0 + std::log2(static_cast<double>(n) + 1));
    const Mismatch m = compare(q, ours, theirs, n, 0.0, per_index);
    Row r;
    r.op = "scan_two_pass_ex";
    r.type = type_name<T>();
    r.size = std::to_string(n);
    r.unit = "GB/s";
    std::tie(r.ours_ms, r.vendor_ms) = median_pair_ms(q, ctx.opt->warmup, ctx.opt->reps, run_both, run_cub);
    const double pass2_ms = median_ms(q, ctx.opt->warmup, ctx.opt->reps, run_pass2);
    set_memory_rates(r, 3.0 * static_cast<double>(sizeof(T)) * static_cast<double>(n), ctx.copy_gbs);
    r.agree = m.count == 0;
    char note[128];
    std::snprintf(note, sizeof note, "3N; scan pass alone %.3f ms = %.1f%% of copy", pass2_ms,
                  100.0 * (2.0 * sizeof(T) * static_cast<double>(n) / (ctx.copy_gbs * 1e6)) / pass2_ms);
    r.note = note;
    if (!r.agree) r.note += "; " + std::to_string(m.count) + " mismatches";
    print_row(r);
    TESSERA_CUDA_CHECK(cudaFree(prefix));
    TESSERA_CUDA_CHECK(cudaFree(total));
  }
  TESSERA_CUDA_CHECK(cudaFree(temp));
  TESSERA_CUDA_CHECK(cudaFree(ours));
  TESSERA_CUDA_CHECK(cudaFree(theirs));
}

template <class T>
void bench_select(Context& ctx, index_t n, const T* in) {
  const Queue& q = ctx.q;
  T *ours = nullptr, *theirs = nullptr;
  index_t *ours_count = nullptr, *theirs_count = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&ours, sizeof(T) * n));
  TESSERA_CUDA_CHECK(cudaMalloc(&theirs, sizeof(T) * n));
  TESSERA_CUDA_CHECK(cudaMalloc(&ours_count, sizeof(index_t)));
  TESSERA_CUDA_CHECK(cudaMalloc(&theirs_count, sizeof(index_t)));
  std::size_t temp_bytes = 0;
  TESSERA_CUDA_CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, in, theirs, theirs_count, n, GreaterThanZero<T>{}, stream_of(q)));
  void* temp = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&temp, std::max<std::size_t>(temp_bytes, 1)));
  const Predicate<T> pred = tessera::greater_than<T>(T(0));
  auto run_ours = [&] { tessera::kernels::select(q, in, n, pred, ours, ours_count); };
  auto run_cub = [&] {
    std::size_t bytes = temp_bytes;
    TESSERA_CUDA_CHECK(cub::DeviceSelect::If(temp, bytes, in, theirs, theirs_count, n, GreaterThanZero<T>{}, stream_of(q)));
  };
  run_ours();
  run_cub();
  index_t counts[2] = {-1, -2};
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(&counts[0], ours_count, sizeof(index_t), cudaMemcpyDeviceToHost, stream_of(q)));
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(&counts[1], theirs_count, sizeof(index_t), cudaMemcpyDeviceToHost, stream_of(q)));
  q.synchronize();
  const Mismatch m = compare(q, ours, theirs, std::min(counts[0], counts[1]), 0.0, 0.0);
  Row r = memory_row<T>(ctx, "select_gt0", n, static_cast<double>(sizeof(T)) * static_cast<double>(n + counts[0]),
                        run_ours, run_cub);
  r.agree = counts[0] == counts[1] && m.count == 0;
  r.note = "kept " + std::to_string(counts[0]);
  if (counts[0] != counts[1]) r.note += " vs cub " + std::to_string(counts[1]);
  print_row(r);
  TESSERA_CUDA_CHECK(cudaFree(temp));
  TESSERA_CUDA_CHECK(cudaFree(ours));
  TESSERA_CUDA_CHECK(cudaFree(theirs));
  TESSERA_CUDA_CHECK(cudaFree(ours_count));
  TESSERA_CUDA_CHECK(cudaFree(theirs_count));
}

// The exact, correctly rounded sum (kernels::exact_sum_partial, then the rounding on the host)
// against the plain CUB sum: what reproducibility costs. speedup = CUB sum time / exact sum time,
// so 1 / speedup is the cost factor; %floor counts the bytes read, as for reduce.
template <class T>
void bench_exact(Context& ctx, index_t n, const T* in) {
  const Queue& q = ctx.q;
  T* theirs = nullptr;
  tessera::kernels::ExactAccumulator<T>* acc = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&theirs, sizeof(T)));
  TESSERA_CUDA_CHECK(cudaMalloc(&acc, sizeof(*acc)));
  std::size_t temp_bytes = 0;
  TESSERA_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, in, theirs, n, stream_of(q)));
  void* temp = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&temp, std::max<std::size_t>(temp_bytes, 1)));
  auto run_ours = [&] { tessera::kernels::exact_sum_partial(q, in, n, acc); };
  auto run_cub = [&] {
    std::size_t bytes = temp_bytes;
    TESSERA_CUDA_CHECK(cub::DeviceReduce::Sum(temp, bytes, in, theirs, n, stream_of(q)));
  };
  run_ours();
  run_cub();
  tessera::kernels::ExactAccumulator<T> host_acc{};
  T cub_sum{};
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(&host_acc, acc, sizeof host_acc, cudaMemcpyDeviceToHost, stream_of(q)));
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(&cub_sum, theirs, sizeof cub_sum, cudaMemcpyDeviceToHost, stream_of(q)));
  q.synchronize();
  const T exact = tessera::kernels::exact_sum_round(host_acc);
  Row r = memory_row<T>(ctx, "exact_sum", n, static_cast<double>(sizeof(T)) * static_cast<double>(n), run_ours, run_cub);
  // CUB's sum carries rounding error; the exact sum must lie within its error bound.
  r.agree = std::fabs(static_cast<double>(exact) - static_cast<double>(cub_sum)) <= sum_abs_tolerance<T>(n);
  char note[96];
  std::snprintf(note, sizeof note, "cost %.2fx CUB sum; exact %.9g, cub %.9g", r.ours_ms / r.vendor_ms,
                static_cast<double>(exact), static_cast<double>(cub_sum));
  r.note = note;
  print_row(r);
  TESSERA_CUDA_CHECK(cudaFree(temp));
  TESSERA_CUDA_CHECK(cudaFree(acc));
  TESSERA_CUDA_CHECK(cudaFree(theirs));
}

template <class T>
void bench_elementwise_ops(Context& ctx, index_t n) {
  T* in = nullptr;
  if (cudaMalloc(&in, sizeof(T) * n) != cudaSuccess) {
    (void)cudaGetLastError();
    std::printf("%-16s %-7s %-18s skipped: not enough device memory\n", "*", type_name<T>(), std::to_string(n).c_str());
    return;
  }
  tessera::kernels::generate(ctx.q, in, n, 12345, 0);
  if (wants(*ctx.opt, "reduce")) bench_reduce<T>(ctx, n, in);
  if (wants(*ctx.opt, "scan")) bench_scan<T>(ctx, n, in);
  if (wants(*ctx.opt, "select")) bench_select<T>(ctx, n, in);
  if constexpr (std::is_floating_point_v<T>)
    if (wants(*ctx.opt, "exact")) bench_exact<T>(ctx, n, in);
  TESSERA_CUDA_CHECK(cudaFree(in));
}

cublasHandle_t g_cublas = nullptr;

template <class T>
void bench_gemm(Context& ctx, index_t m, index_t n, index_t k) {
  const Queue& q = ctx.q;
  T *a = nullptr, *b = nullptr, *c_ours = nullptr, *c_theirs = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&a, sizeof(T) * m * k));
  TESSERA_CUDA_CHECK(cudaMalloc(&b, sizeof(T) * k * n));
  TESSERA_CUDA_CHECK(cudaMalloc(&c_ours, sizeof(T) * m * n));
  TESSERA_CUDA_CHECK(cudaMalloc(&c_theirs, sizeof(T) * m * n));
  tessera::kernels::generate(q, a, m * k, 777, 0);
  tessera::kernels::generate(q, b, k * n, 778, 0);
  const T alpha = 1, beta = 0;
  auto run_ours = [&] { tessera::kernels::gemm(q, GemmEngine::tiled, m, n, k, alpha, a, k, b, n, beta, c_ours, n); };
  // Row-major C = A B as column-major C^T = B^T A^T, called on cuBLAS directly.
  auto run_cublas = [&] {
    if constexpr (std::is_same_v<T, float>)
      BENCH_CUBLAS_CHECK(cublasSgemm_64(g_cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n, a, k, &beta, c_theirs, n));
    else
      BENCH_CUBLAS_CHECK(cublasDgemm_64(g_cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n, a, k, &beta, c_theirs, n));
  };
  run_ours();
  run_cublas();
  const double tol = 4.0 * std::numeric_limits<T>::epsilon() * static_cast<double>(k);
  const Mismatch mm = compare(q, c_ours, c_theirs, m * n, tol, 0.0);
  const int reps = ctx.opt->gemm_reps;
  Row r;
  r.op = "gemm_tiled";
  r.type = type_name<T>();
  r.size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  r.unit = "GFLOP/s";
  std::tie(r.ours_ms, r.vendor_ms) = median_pair_ms(q, 2, reps, run_ours, run_cublas);
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  r.ours_rate = flops / (r.ours_ms * 1e6);
  r.vendor_rate = flops / (r.vendor_ms * 1e6);
  r.speedup = r.vendor_ms / r.ours_ms;
  r.percent_floor = 100.0 * r.speedup;
  r.agree = mm.count == 0;
  char note[64];
  std::snprintf(note, sizeof note, "max diff %.2e", mm.max_abs_diff);
  r.note = note;
  print_row(r);
  for (T* p : {a, b, c_ours, c_theirs}) TESSERA_CUDA_CHECK(cudaFree(p));
}

}  // namespace

int main(int argc, char** argv) {
  Harness h("tessera_bench_kernels",
            "Each local kernel against its vendor baseline (CUB, cuBLAS) on one GPU: reduce, scan, select,\n"
            "exact sum over sizes of every element type, and the tiled GEMM against cuBLAS.",
            {.minbytes = index_t(1) << 30, .maxbytes = index_t(4) << 30, .stepfactor = 4, .iters = 20, .warmup = 3});
  g_harness = &h;
  const Options opt = parse(h, argc, argv);
  if (tessera::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "tessera_bench_kernels: no usable CUDA device\n");
    return 1;
  }
  Context ctx;
  ctx.q = tessera::kernels::make_cuda_queue(0);
  ctx.opt = &opt;
  const std::string device = tessera::kernels::describe_device(ctx.q);
  std::printf("tessera_bench_kernels on %s\n", device.c_str());
  set_local_environment(h, ctx.q);
  ctx.copy_gbs = measure_copy_gbs(ctx.q);
  h.configuration()["copy_gbs"] = ctx.copy_gbs;
  h.configuration()["gemm_reps"] = opt.gemm_reps;
  std::printf("device-to-device copy: %.1f GB/s (bytes read + written, 1 GiB copy, median of 10)\n", ctx.copy_gbs);
  print_header(ctx.copy_gbs);

  for (index_t n : opt.sizes) {
    bench_elementwise_ops<std::int32_t>(ctx, n);
    bench_elementwise_ops<float>(ctx, n);
    if (wants(opt, "reduce") || wants(opt, "scan") || wants(opt, "exact")) {
      // 8-byte types: reduce, scan and exact (select of 8-byte types is covered by the tests).
      Options narrowed = opt;
      narrowed.ops.erase(std::remove(narrowed.ops.begin(), narrowed.ops.end(), std::string("select")), narrowed.ops.end());
      ctx.opt = &narrowed;
      bench_elementwise_ops<std::int64_t>(ctx, n);
      bench_elementwise_ops<double>(ctx, n);
      ctx.opt = &opt;
    }
  }
  if (wants(opt, "gemm")) {
    BENCH_CUBLAS_CHECK(cublasCreate(&g_cublas));
    BENCH_CUBLAS_CHECK(cublasSetMathMode(g_cublas, CUBLAS_DEFAULT_MATH));
    BENCH_CUBLAS_CHECK(cublasSetStream(g_cublas, stream_of(ctx.q)));
    for (const auto& s : opt.gemm_shapes) {
      bench_gemm<float>(ctx, s[0], s[1], s[2]);
      bench_gemm<double>(ctx, s[0], s[1], s[2]);
    }
    BENCH_CUBLAS_CHECK(cublasDestroy(g_cublas));
  }
  tessera::kernels::destroy_queue(ctx.q);
  if (finish(h) != 0) {
    std::fprintf(stderr, "tessera_bench_kernels: some results disagree with the vendor baseline (rows marked NO)\n");
    return 3;
  }
  return 0;
}
