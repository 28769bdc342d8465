// tessera_bench_transpose: the local transpose (kernels::transpose) next to cuBLAS geam (C = A^T:
// cublasSgeam for float, Dgeam for double, Zgeam for 16-byte elements; there is no geam of 1- or
// 2-byte integers) in one process on one GPU, on the same inputs, and against the device-to-device
// copy rate, which moves the same bytes (each element read once and written once) without
// reordering them. Every result is checked before it is timed: bit for bit against geam where
// there is one, else at 2^20 random positions against the input. Times are medians of per-call
// cudaEvent intervals, ours and geam's in alternation.
//
//   ratio   geam time / our time (> 1: ours is faster)
//   %copy   the time of the same bytes at the measured copy rate / our time
//
// --variants also times tuning alternatives, for the record of how the default tuning was chosen:
// on rows off 16-byte boundaries the scalar tiles and other shapes of the skewed tiles (their word
// form for 1- and 2-byte elements); on aligned rows other unit shapes of the vector tiles (float,
// double) and the skewed word tiles (int8, int16: what the misalignment itself costs them).
//
// Usage: tessera_bench_transpose [--types float,double,int8,int16,b16] [--shapes RxC,... | -b 64M -e 1G -f 4]
//          [-n 20] [-w 3] [--variants] [--json FILE]   (the harness's flags, bench/common; --reps: -n)
#include <cublas_v2.h>
#include <cuComplex.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "tessera/kernels/cuda/device_transpose.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/kernels.hpp"

namespace {

using tessera::index_t;
using namespace tessera::bench;
using Row_ = tessera::bench::Row;
namespace detail = tessera::kernels::cuda::detail;

#define BENCH_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                             \
    const cublasStatus_t status_ = (call);                                                         \
    if (status_ != CUBLAS_STATUS_SUCCESS) TESSERA_FATAL(#call, cublasGetStatusString(status_));     \
  } while (0)

struct Shape {
  index_t rows, cols;
};

struct Options {
  std::vector<std::string> types = {"float", "double", "int8", "int16", "b16"};
  std::vector<Shape> shapes;  // empty: each type's default shapes
  int reps = 20;  // from the harness
  int warmup = 3;
  bool variants = false;
};

// The harness's flags (-b/-e: bytes of square matrices of each type, instead of --shapes or each
// type's default shapes; -n timed calls, alias --reps; -w; --json) and this benchmark's own.
Options parse(Harness& h, int argc, char** argv) {
  Options o;
  h.add_alias("--iters", "--reps");
  h.add_option({"--types"}, "LIST", "of float,double,int8,int16,b16 (default all)", [&o](std::string_view v) {
    o.types = split(std::string(v), ',');
    for (const auto& t : o.types)
      if (t != "float" && t != "double" && t != "int8" && t != "int16" && t != "b16") usage_error("--types: unknown type '" + t + "'");
  });
  h.add_option({"--shapes"}, "RxC,...", "shapes instead of each type's default ones", [&o](std::string_view v) {
    o.shapes.clear();
    for (const auto& s : split(std::string(v), ',')) {
      const auto dims = split(s, 'x');
      if (dims.size() != 2) usage_error("--shapes: '" + s + "' is not RxC");
      o.shapes.push_back({parse_count(dims[0], "--shapes"), parse_count(dims[1], "--shapes")});
    }
  });
  h.add_switch({"--variants"}, "also tuning alternatives of the tiles (shapes of at least 1024 x 1024)", &o.variants);
  parse_command_line(h, argc, argv);
  if (h.sizes_given() && h.given("--shapes")) usage_error("--shapes and -b/-e: give one or the other");
  o.reps = h.iters();
  o.warmup = h.warmup();
  return o;
}

struct Bench {
  Queue q;
  cublasHandle_t cublas = nullptr;
  double copy_gbs = 0;
  const Options* opt = nullptr;
  bool all_ok = true;
  Harness* harness = nullptr;
};

// geam: C (rows x cols, column-major, ldc = rows) = A^T, A (cols x rows column-major, lda = cols):
// the row-major rows x cols input transposed into the row-major cols x rows output.
bool vendor_transpose(Bench& b, const char* type, const void* in, index_t rows, index_t cols, void* out) {
  const int m = static_cast<int>(rows), n = static_cast<int>(cols);
  const std::string t = type;
  if (t == "float") {
    const float one = 1, zero = 0;
    BENCH_CUBLAS_CHECK(cublasSgeam(b.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, static_cast<const float*>(in), n, &zero,
                                   static_cast<const float*>(out), m, static_cast<float*>(out), m));
    return true;
  }
  if (t == "double") {
    const double one = 1, zero = 0;
    BENCH_CUBLAS_CHECK(cublasDgeam(b.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, static_cast<const double*>(in), n,
                                   &zero, static_cast<const double*>(out), m, static_cast<double*>(out), m));
    return true;
  }
  if (t == "b16") {
    const cuDoubleComplex one = make_cuDoubleComplex(1, 0), zero = make_cuDoubleComplex(0, 0);
    BENCH_CUBLAS_CHECK(cublasZgeam(b.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, static_cast<const cuDoubleComplex*>(in),
                                   n, &zero, static_cast<const cuDoubleComplex*>(out), m, static_cast<cuDoubleComplex*>(out), m));
    return true;
  }
  return false;
}

std::size_t element_size(const std::string& type) {
  if (type == "int8") return 1;
  if (type == "int16") return 2;
  if (type == "float") return 4;
  if (type == "double") return 8;
  return 16;
}

std::vector<Shape> default_shapes(const std::string& type) {
  if (type == "float") return {{16384, 16384}, {16383, 16385}, {8192, 8192}, {30000000, 7}, {7, 30000000}, {1000, 1000}};
  if (type == "double") return {{16384, 8192}, {8191, 16385}};
  if (type == "int8") return {{32768, 32768}, {32767, 32769}};
  if (type == "int16") return {{32768, 16384}, {32767, 16385}};
  return {{8192, 8192}, {8191, 8193}};
}

// Our output at 2^20 random positions against the input (an independent check: host index math).
bool spot_check(const void* in, const void* out, index_t rows, index_t cols, std::size_t bytes) {
  if (rows == 0 || cols == 0) return true;
  std::mt19937_64 gen(2024);
  unsigned char a[16], c[16];
  const int checks = 1 << 20;
  // Gather on the host in batches: one copy per element would take seconds.
  std::vector<index_t> is(static_cast<std::size_t>(checks)), js(static_cast<std::size_t>(checks));
  for (int k = 0; k < checks; ++k) {
    is[static_cast<std::size_t>(k)] = static_cast<index_t>(gen() % static_cast<std::uint64_t>(rows));
    js[static_cast<std::size_t>(k)] = static_cast<index_t>(gen() % static_cast<std::uint64_t>(cols));
  }
  const std::size_t total = static_cast<std::size_t>(rows * cols) * bytes;
  std::vector<unsigned char> host_in(total), host_out(total);
  TESSERA_CUDA_CHECK(cudaMemcpy(host_in.data(), in, total, cudaMemcpyDeviceToHost));
  TESSERA_CUDA_CHECK(cudaMemcpy(host_out.data(), out, total, cudaMemcpyDeviceToHost));
  for (int k = 0; k < checks; ++k) {
    const index_t i = is[static_cast<std::size_t>(k)], j = js[static_cast<std::size_t>(k)];
    std::memcpy(a, host_in.data() + static_cast<std::size_t>(i * cols + j) * bytes, bytes);
    std::memcpy(c, host_out.data() + static_cast<std::size_t>(j * rows + i) * bytes, bytes);
    if (std::memcmp(a, c, bytes) != 0) {
      std::printf("  MISMATCH at input (%lld, %lld)\n", static_cast<long long>(i), static_cast<long long>(j));
      return false;
    }
  }
  return true;
}

bool same_bytes(const void* x, const void* y, std::size_t bytes) {
  std::vector<unsigned char> hx(bytes), hy(bytes);
  TESSERA_CUDA_CHECK(cudaMemcpy(hx.data(), x, bytes, cudaMemcpyDeviceToHost));
  TESSERA_CUDA_CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
  return hx == hy;
}

void print_header(double copy_gbs) {
  std::printf("\nratio = geam time / our time (> 1: ours is faster); %%copy = the same bytes (read + write) at the\n"
              "measured device-to-device copy rate (%.1f GB/s) / our time.\n\n", copy_gbs);
  std::printf("%-7s %-17s %-26s %9s %9s %7s %9s %7s %s\n", "type", "shape", "kernel", "ours ms", "geam ms", "ratio",
              "GB/s", "%copy", "check");
}

// A table line and the harness's row: shares of copy and of cuBLAS geam (its time over ours) where
// the type has one; VALID when the result is the reference's.
void print_row(const Bench& b, const char* type, Shape s, const std::string& kernel, const Timing& ms, double vendor_ms,
               std::size_t bytes_moved, const char* check, bool ok) {
  char shape[40], vendor[16], ratio[16];
  std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(s.rows), static_cast<long long>(s.cols));
  std::snprintf(vendor, sizeof vendor, vendor_ms > 0 ? "%.3f" : "-", vendor_ms);
  std::snprintf(ratio, sizeof ratio, vendor_ms > 0 ? "%.3f" : "-", vendor_ms / ms);
  const double gbs = static_cast<double>(bytes_moved) / (ms * 1e6);
  std::printf("%-7s %-17s %-26s %9.3f %9s %7s %9.1f %6.1f%% %s\n", type, shape, kernel.c_str(), ms.median, vendor, ratio, gbs,
              100.0 * gbs / b.copy_gbs, check);
  std::fflush(stdout);
  Row_& row = b.harness->row(std::string(type) + " " + shape + " " + kernel);
  row.set("type", type)
      .set("rows", s.rows)
      .set("cols", s.cols)
      .set("kernel", kernel)
      .set("ms", ms.median)
      .set("vendor_ms", vendor_ms > 0 ? tessera::apps::Json(vendor_ms) : tessera::apps::Json())
      .set("gbs", gbs)
      .set("check", check)
      .time(seconds(ms))
      .share("copy", gbs / b.copy_gbs);
  if (vendor_ms > 0) row.share("vendor", vendor_ms / ms);
  row.verdict(ok, check);
  b.harness->print_pending();
}

template <int Bytes, int TileRows, int TileCols, int Threads>
struct ScalarVariant : detail::TransposeTuning<Bytes> {
  static constexpr int kScalarTileRows = TileRows;
  static constexpr int kScalarTileCols = TileCols;
  using Agent = detail::NoVectorTiles;
  static constexpr int kThreads = Threads;
  static constexpr int kBytes = Bytes;
  static std::string name() {
    return "scalar " + std::to_string(TileRows) + "x" + std::to_string(TileCols) + ", " + std::to_string(Threads) + " thr";
  }
};

// Skewed tiles in a two-dimensional grid (TransposeTuning::kSkewedTiles's path).
template <int Bytes, int Tile, int Threads, int MinBlocks = 1, bool Async = false>
struct SkewedVariant {
  static constexpr int kBytes = Bytes;
  using LaunchesItself = void;  // marks the variants that launch their own kernel
  static std::string name() {
    return "skewed " + std::to_string(Tile) + "x" + std::to_string(Tile) + ", " + std::to_string(Threads) + " thr" +
           (MinBlocks > 1 ? ", " + std::to_string(MinBlocks) + " blocks/SM" : "") + (Async ? ", cp.async" : "");
  }
  template <class E>
  static void launch(const detail::TransposeArgs& args, index_t rows, index_t cols, tessera::kernels::StreamHandle stream) {
    detail::launch_transpose_skewed<E, Tile, Threads, MinBlocks, Async>(args, rows, cols, stream);
  }
};

// Skewed tiles of 1- and 2-byte elements moved as words (TransposeTuning::kSkewedTiles's path for
// them), transposed in registers on the way in, or fed by cp.async first (Staged).
template <int Bytes, int Threads, int MinBlocks, int InWords, int OutWords, bool Staged>
struct SkewedWordsVariant {
  static constexpr int kBytes = Bytes;
  using LaunchesItself = void;
  static std::string name() {
    return std::string(Staged ? "staged" : "register") + " words " + std::to_string(InWords) + "/" + std::to_string(OutWords) +
           ", " + std::to_string(Threads) + "x" + std::to_string(MinBlocks);
  }
  template <class E>
  static void launch(const detail::TransposeArgs& args, index_t rows, index_t cols, tessera::kernels::StreamHandle stream) {
    detail::launch_transpose_skewed_words<E, Threads, MinBlocks, InWords, OutWords, Staged>(args, rows, cols, stream);
  }
};

// Vector tiles of other unit shapes (rows on 16-byte boundaries).
template <int Bytes, int UnitRows, int UnitCols, int Threads>
struct VectorVariant : detail::TransposeTuning<Bytes> {
  using Agent = detail::VectorTileAgent<Bytes, 16, UnitRows, UnitCols, Threads>;
  static constexpr int kThreads = Threads;
  static constexpr int kBytes = Bytes;
  static std::string name() {
    return "vector " + std::to_string(UnitRows) + "x" + std::to_string(UnitCols) + " units, " + std::to_string(Threads) +
           " thr";
  }
};

// The tuning's own scalar tiles (the path of rows off 16-byte boundaries without skewed tiles).
template <int Bytes>
using DefaultScalar = ScalarVariant<Bytes, detail::TransposeTuning<Bytes>::kScalarTileRows,
                                    detail::TransposeTuning<Bytes>::kScalarTileCols, detail::TransposeTuning<Bytes>::kScalarThreads>;

template <class Variant>
void time_variant(Bench& b, const char* type, Shape s, const void* in, void* out, const void* reference,
                  std::size_t bytes) {
  using E = detail::word_t<Variant::kBytes>;
  const detail::TransposeArgs args{static_cast<const unsigned char*>(in), static_cast<unsigned char*>(out),
                                   static_cast<std::size_t>(s.cols) * sizeof(E), static_cast<std::size_t>(s.rows) * sizeof(E),
                                   static_cast<std::size_t>(s.cols) * sizeof(E)};
  auto call = [&] {
    if constexpr (requires { typename Variant::LaunchesItself; }) {
      Variant::template launch<E>(args, s.rows, s.cols, b.q.stream);
    } else {
      detail::launch_transpose_tiles<Variant, E, typename Variant::Agent, Variant::kThreads>(args, s.rows, s.cols, b.q.stream);
    }
  };
  call();
  const std::size_t total = static_cast<std::size_t>(s.rows * s.cols) * bytes;
  const bool ok = same_bytes(out, reference, total);
  b.all_ok = b.all_ok && ok;
  const Timing ms = median_ms(b.q, b.opt->warmup, b.opt->reps, call);
  print_row(b, type, s, Variant::name(), ms, 0, 2 * total, ok ? "same" : "DIFFERS", ok);
}

void bench_shape(Bench& b, const std::string& type, Shape s) {
  const std::size_t bytes = element_size(type);
  const std::size_t total = static_cast<std::size_t>(s.rows * s.cols) * bytes;
  void* in = tessera::kernels::allocate(b.q, total);
  void* out = tessera::kernels::allocate(b.q, total);
  void* vendor_out = tessera::kernels::allocate(b.q, total);
  // Random words (for floating types: finite values from the generator, which geam's multiply
  // by one leaves unchanged).
  if (type == "float") {
    tessera::kernels::generate(b.q, static_cast<float*>(in), s.rows * s.cols, 11, 0);
  } else if (type == "double" || type == "b16") {
    tessera::kernels::generate(b.q, static_cast<double*>(in), static_cast<index_t>(total / 8), 12, 0);
  } else {
    tessera::kernels::generate(b.q, static_cast<std::int8_t*>(in), static_cast<index_t>(total), 13, 0);
  }
  auto ours = [&] { tessera::kernels::transpose_bytes(b.q, in, s.rows, s.cols, s.cols, out, s.rows, bytes); };
  auto vendor = [&] { vendor_transpose(b, type.c_str(), in, s.rows, s.cols, vendor_out); };
  ours();
  const bool has_vendor = vendor_transpose(b, type.c_str(), in, s.rows, s.cols, vendor_out);
  b.q.synchronize();
  // Against geam where there is one (an independent implementation), else at random positions.
  bool ok = false;
  std::string check;
  if (has_vendor) {
    ok = same_bytes(out, vendor_out, total);
    check = ok ? "= geam" : "DIFFERS from geam";
  } else {
    ok = spot_check(in, out, s.rows, s.cols, bytes);
    check = ok ? "spot" : "WRONG";
  }
  b.all_ok = b.all_ok && ok;
  Timing ms;
  double vendor_ms = 0;
  if (has_vendor) {
    std::tie(ms, vendor_ms) = median_pair_ms(b.q, b.opt->warmup, b.opt->reps, ours, vendor);
  } else {
    ms = median_ms(b.q, b.opt->warmup, b.opt->reps, ours);
  }
  print_row(b, type.c_str(), s, "transpose", ms, vendor_ms, 2 * total, check.c_str(), ok);
  const bool big = s.rows >= 1024 && s.cols >= 1024;
  const bool aligned = (s.rows * static_cast<index_t>(bytes)) % 16 == 0 && (s.cols * static_cast<index_t>(bytes)) % 16 == 0;
  if (b.opt->variants && aligned && (type == "float" || type == "double")) {
    // Rows on 16-byte boundaries: other unit shapes of the vector tiles.
    if (!has_vendor) TESSERA_CUDA_CHECK(cudaMemcpy(vendor_out, out, total, cudaMemcpyDeviceToDevice));
    if (type == "float") {
      time_variant<VectorVariant<4, 16, 16, 128>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<VectorVariant<4, 32, 16, 256>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<VectorVariant<4, 8, 8, 64>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    } else {
      time_variant<VectorVariant<8, 32, 32, 256>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<VectorVariant<8, 16, 16, 128>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<VectorVariant<8, 16, 16, 256>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<VectorVariant<8, 16, 8, 128>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    }
  }
  if (b.opt->variants && aligned && (type == "int8" || type == "int16")) {
    // The skewed word tiles on aligned rows: what the misalignment itself costs them.
    if (!has_vendor) TESSERA_CUDA_CHECK(cudaMemcpy(vendor_out, out, total, cudaMemcpyDeviceToDevice));
    if (type == "int8") {
      time_variant<SkewedWordsVariant<1, 512, 2, 64, 64, false>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    } else {
      time_variant<SkewedWordsVariant<2, 256, 4, 64, 32, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    }
  }
  if (b.opt->variants && big) {
    if (!has_vendor) TESSERA_CUDA_CHECK(cudaMemcpy(vendor_out, out, total, cudaMemcpyDeviceToDevice));  // ours is the reference
    // Rows off 16-byte boundaries (and, for 1- and 2-byte elements, off 4-byte ones): the scalar
    // tiles, then shapes of the skewed tiles (the default's first).
    const bool aligned4 = (s.rows * static_cast<index_t>(bytes)) % 4 == 0 && (s.cols * static_cast<index_t>(bytes)) % 4 == 0;
    const bool unaligned = !aligned && !(bytes < 4 && aligned4);
    if (type == "float" && unaligned) {
      time_variant<DefaultScalar<4>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<4, 32, 256, 4>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<4, 64, 256, 4, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<4, 64, 256, 6, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<4, 32, 256, 8, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    } else if (type == "double" && unaligned) {
      time_variant<DefaultScalar<8>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<8, 32, 256>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<8, 32, 128>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<8, 32, 256, 2>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<8, 32, 256, 4, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<8, 32, 256, 8, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<8, 32, 128, 8, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<8, 64, 256, 4, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedVariant<8, 64, 512, 2, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    } else if (type == "b16") {
      time_variant<SkewedVariant<16, 32, 256>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    } else if (type == "int8" && unaligned) {
      time_variant<DefaultScalar<1>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<1, 512, 2, 64, 64, false>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<1, 512, 2, 64, 32, false>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<1, 256, 4, 32, 32, false>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<1, 512, 2, 64, 32, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<1, 256, 4, 32, 32, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    } else if (type == "int16" && unaligned) {
      time_variant<DefaultScalar<2>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<2, 256, 4, 64, 32, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<2, 512, 2, 64, 64, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<2, 512, 2, 64, 64, false>>(b, type.c_str(), s, in, out, vendor_out, bytes);
      time_variant<SkewedWordsVariant<2, 256, 4, 32, 32, true>>(b, type.c_str(), s, in, out, vendor_out, bytes);
    }
  }
  tessera::kernels::deallocate(b.q, in);
  tessera::kernels::deallocate(b.q, out);
  tessera::kernels::deallocate(b.q, vendor_out);
  tessera::kernels::release_cached_memory();
}

}  // namespace

int main(int argc, char** argv) {
  Harness h("tessera_bench_transpose", "The local transpose against cuBLAS geam and the copy rate on one GPU.",
            {.minbytes = index_t(256) << 20, .maxbytes = index_t(256) << 20, .stepfactor = 4, .iters = 20, .warmup = 3});
  const Options opt = parse(h, argc, argv);
  if (tessera::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "tessera_bench_transpose: no CUDA device\n");
    return 77;
  }
  Bench b;
  b.q = tessera::kernels::make_cuda_queue(0);
  b.opt = &opt;
  b.harness = &h;
  BENCH_CUBLAS_CHECK(cublasCreate(&b.cublas));
  BENCH_CUBLAS_CHECK(cublasSetStream(b.cublas, stream_of(b.q)));
  std::printf("tessera_bench_transpose on %s\n", tessera::kernels::describe_device(b.q).c_str());
  set_local_environment(h, b.q);
  b.copy_gbs = measure_copy_gbs(b.q);
  h.configuration()["copy_gbs"] = b.copy_gbs;
  std::printf("device-to-device copy: %.1f GB/s (bytes read + written, 1 GiB copy, median of 10)\n", b.copy_gbs);
  print_header(b.copy_gbs);
  for (const std::string& type : opt.types) {
    std::vector<Shape> shapes = opt.shapes.empty() ? default_shapes(type) : opt.shapes;
    if (h.sizes_given()) {
      shapes.clear();
      for (index_t side : h.square_sides(element_size(type))) shapes.push_back({side, side});
    }
    for (Shape s : shapes) bench_shape(b, type, s);
  }
  BENCH_CUBLAS_CHECK(cublasDestroy(b.cublas));
  tessera::kernels::destroy_queue(b.q);
  if (finish(h) != 0 || !b.all_ok) {
    std::fprintf(stderr, "tessera_bench_transpose: some results are wrong (rows marked WRONG or DIFFERS)\n");
    return 3;
  }
  return 0;
}
