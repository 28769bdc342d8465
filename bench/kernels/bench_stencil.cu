// tessera_bench_stencil: the local stencil kernels against the bytes-moved floor, the device-to-device
// copy rate this program measures first (cudaMemcpy, one read and one write per byte), and against a
// plain kernel of each (one thread per output cell, every input read from global memory through the
// caches), in one process on one GPU:
//   sweep5 / sweep9   the 5- and 9-point sweep of an N x N float field (N = 16384 by default) and an
//                     N x N/2 double field: one read and one write per cell at the floor. Also the
//                     sweep that takes the residual (max |out - in|); with `variants`, the column
//                     march of each, the ring filled by bulk copies (the frame-last sweep's
//                     interior) at the library's tuning and others, and other column marches.
//   convolve          the 1-D convolution of N^2 floats at radii 1 .. 8 (the kernel by lanes) and 12,
//                     16, 32, 64 (register blocks): one read and one write per element at the floor.
// "%copy" is the floor's time over ours; "x plain" the plain kernel's time over ours. Every result is
// compared with the plain kernel's, bit for bit (the sweeps round each product and sum alone, the
// convolutions take each tap as one fused multiply-add, in the same order). Times are medians of per-call cudaEvent intervals, ours and plain timed in alternation.
//
// Usage: tessera_bench_stencil [--n 16384 | -b 1G -e 4G] [-n 20] [-w 3] [--only LIST] [--json FILE]
// (the harness's flags, bench/common; --reps is -n's other name)
//          [--only sweep5,sweep9,double,variants,convolve,convolve-skew,convolve-variants]   (default: all)
//   convolve-skew      the convolution with the input and the output off their 16-byte boundaries
//   convolve-variants  other tunings of the convolution (by lanes, and the register blocks)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "json.hpp"
#include "tessera/kernels/cuda/device_stencil.cuh"
#include "tessera/kernels/kernels.hpp"
#include "tessera/kernels/stencil.hpp"

namespace {

using tessera::index_t;
using tessera::StencilShape;
using tessera::StencilWeights;
using tessera::kernels::Queue;
using namespace tessera::bench;
using Row_ = tessera::bench::Row;
namespace apps = tessera::apps;
namespace detail = tessera::kernels::cuda::detail;

struct Options {
  std::vector<index_t> sides = {16384};
  index_t n = 0;  // the side being run
  int reps = 20;  // from the harness
  int warmup = 3;
  std::vector<std::string> only;  // empty: every case
  bool wants(const std::string& what) const {
    return only.empty() || std::find(only.begin(), only.end(), what) != only.end();
  }
};

// The harness's flags (-b/-e: bytes of a square float field, whose side is n; -n timed calls, alias
// --reps; -w; --json) and this benchmark's own (--n: the side, default 16384, instead of -b/-e).
Options parse(Harness& h, int argc, char** argv) {
  Options o;
  h.add_alias("--iters", "--reps");
  h.add_option({"--n"}, "N", "cells per side of the square field (default 16384; at least 64)",
               [&o](std::string_view v) { o.sides = {parse_counts(v, "--n").at(0)}; });
  h.add_option({"--only"}, "LIST", "of sweep5, sweep9, variants, double, convolve, convolve-skew (default all)",
               [&o](std::string_view v) { o.only = split(std::string(v)); });
  parse_command_line(h, argc, argv);
  if (h.sizes_given() && h.given("--n")) usage_error("--n and -b/-e: give one or the other");
  if (h.sizes_given()) o.sides = h.square_sides(sizeof(float));
  for (index_t n : o.sides)
    if (n < 64) usage_error("--n: at least 64");
  o.reps = h.iters();
  o.warmup = h.warmup();
  return o;
}

struct Row {
  std::string op, type, size;
  Timing ours_ms;
  double plain_ms = 0, cells = 0, bytes = 0, percent_copy = 0;
  bool agree = true;
};
double g_copy_gbs = 0;
Harness* g_harness = nullptr;

void print_header() {
  std::printf("%-34s %-7s %-13s %10s %10s %9s %9s %7s %8s %6s\n", "op", "type", "size", "ours ms", "plain ms", "Gcell/s",
              "GB/s", "%copy", "x plain", "agree");
}

void report(Row r) {
  const double gbs = r.bytes / (r.ours_ms * 1e6);
  r.percent_copy = 100.0 * gbs / g_copy_gbs;
  std::printf("%-34s %-7s %-13s %10.4f %10.4f %9.1f %9.1f %6.1f%% %8.3f %6s\n", r.op.c_str(), r.type.c_str(),
              r.size.c_str(), r.ours_ms.median, r.plain_ms, r.cells / (r.ours_ms * 1e6), gbs, r.percent_copy,
              r.plain_ms > 0 ? r.plain_ms / r.ours_ms : 0.0, r.agree ? "yes" : "NO");
  std::fflush(stdout);
  // The harness's row: shares of copy and of the plain kernel (its time over ours).
  Row_& row = g_harness->row(r.op + " " + r.type + " " + r.size);
  row.set("op", r.op)
      .set("type", r.type)
      .set("size", r.size)
      .set("ours_ms", r.ours_ms.median)
      .set("plain_ms", r.plain_ms)
      .set("gcells_per_s", r.cells / (r.ours_ms * 1e6))
      .set("percent_copy", r.percent_copy)
      .set("agree", r.agree)
      .time(seconds(r.ours_ms))
      .share("copy", r.percent_copy / 100.0);
  if (r.plain_ms > 0) row.share("plain", r.plain_ms / r.ours_ms);
  row.verdict(r.agree, "differs from the plain kernel's");
  g_harness->print_pending();
}

// ---- the plain kernels --------------------------------------------------------------------------------

template <class T, bool kNine>
__global__ void plain_sweep_kernel(const T* __restrict__ in, index_t ld, T* __restrict__ out, index_t rows, index_t cols,
                                   StencilWeights<T> w) {
  const index_t j = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = static_cast<index_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (i >= rows || j >= cols) return;
  const T* c = in + i * ld + j;
  T acc = detail::mul_rn(w.centre, c[0]);
  acc = detail::add_rn(acc, detail::mul_rn(w.north, c[-ld]));
  acc = detail::add_rn(acc, detail::mul_rn(w.south, c[ld]));
  acc = detail::add_rn(acc, detail::mul_rn(w.west, c[-1]));
  acc = detail::add_rn(acc, detail::mul_rn(w.east, c[1]));
  if constexpr (kNine) {
    acc = detail::add_rn(acc, detail::mul_rn(w.north_west, c[-ld - 1]));
    acc = detail::add_rn(acc, detail::mul_rn(w.north_east, c[-ld + 1]));
    acc = detail::add_rn(acc, detail::mul_rn(w.south_west, c[ld - 1]));
    acc = detail::add_rn(acc, detail::mul_rn(w.south_east, c[ld + 1]));
  }
  out[i * ld + j] = acc;
}

template <class T>
void plain_sweep(const Queue& q, const T* in, index_t ld, T* out, index_t rows, index_t cols, const StencilWeights<T>& w) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>((rows + 7) / 8));
  if (w.shape == StencilShape::nine_point) plain_sweep_kernel<T, true><<<grid, block, 0, stream_of(q)>>>(in, ld, out, rows, cols, w);
  else plain_sweep_kernel<T, false><<<grid, block, 0, stream_of(q)>>>(in, ld, out, rows, cols, w);
  TESSERA_CUDA_CHECK_LAUNCH();
}

template <class T>
__global__ void plain_convolve_kernel(const T* __restrict__ in, index_t n, const T* __restrict__ w, index_t radius,
                                      T* __restrict__ out) {
  const index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T acc = T(-0.0);
  for (index_t k = 0; k <= 2 * radius; ++k) acc = detail::fma_rn(__ldg(w + k), in[i + radius - k], acc);
  out[i] = acc;
}

// ---- other tunings of the 5-point march (the library's own is Stencil2dTuning) --------------------------

struct ThreeRowsAhead : detail::Stencil2dTuning {
  static constexpr int kPrefetchRows = 3;
};
struct OneVectorPerLane : detail::Stencil2dTuning {
  static constexpr int kVectorsPerLane = 1;
  static constexpr int kMinBlocksPerSm = 8;
};
struct TwoVectorsOneAhead : detail::Stencil2dTuning {
  static constexpr int kVectorsPerLane = 2;
  static constexpr int kPrefetchRows = 1;
};

// The column march (stencil_2d_kernel) on an aligned region, with a tuning; segment_rows > 0
// replaces the segments the library would choose (one wave of the resident thread blocks) by
// segments of about that many rows.
template <class Tuning, class T = float, bool kNine = false>
void tuned_sweep(const Queue& q, const T* in, index_t ld, T* out, index_t rows, index_t cols, const StencilWeights<T>& w,
                 index_t segment_rows = 0) {
  constexpr auto kernel = detail::stencil_2d_kernel<T, kNine, true, Tuning>;
  constexpr int kThreads = Tuning::kWarps * 32;
  const index_t resident = static_cast<index_t>(detail::current_device_info().sm_count) * detail::blocks_per_sm<kernel>(kThreads);
  detail::Stencil2dShape shape = detail::stencil_2d_shape<T, true, Tuning>(rows, cols, 0, resident);
  if (segment_rows > 0) {
    shape.segments = (rows + segment_rows - 1) / segment_rows;
    shape.tiles = shape.tiles_x * shape.segments;
  }
  kernel<<<static_cast<unsigned>(std::min(shape.tiles, resident)), kThreads, 0, stream_of(q)>>>(in, ld, out, ld, shape, w,
                                                                                                 nullptr);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// Other tunings of the ring filled by bulk copies (the library's own is Stencil2dBulkTuning).
template <int kWarpsPerBlock, int kVectors, int kSlots>
struct BulkTuning : detail::Stencil2dBulkTuning {
  static constexpr int kWarps = kWarpsPerBlock;
  static constexpr int kVectorsPerLane = kVectors;
  static constexpr int kDepth = kSlots;
  static constexpr int kMinBlocksPerSm = kWarpsPerBlock >= 16 ? 2 : 4;  // up to 64 registers from 8 warps on
};

// An experiment: the column march with the rows in flight held in shared memory instead of
// registers. Each lane copies its own 16-byte vector of a row (and the edge lanes their element
// beside the warp) with cp.async into a ring of kDepth slots, and reads back only what it copied
// itself (no barrier); kDepth - 1 rows are in flight per lane at no register cost. Aligned float
// regions whose width is a multiple of 4 only.
template <int kDepth>
__global__ void __launch_bounds__(128, 8) march_smem_kernel(const float* __restrict__ in, index_t ld, float* __restrict__ out,
                                                            detail::Stencil2dShape shape, StencilWeights<float> w) {
  __shared__ alignas(16) float4 ring[kDepth][128];
  __shared__ float edge_ring[kDepth][128];
  const int lane = detail::lane_id();
  const int warp = static_cast<int>(threadIdx.x) / 32;
  float4* my = &ring[0][threadIdx.x];
  float* my_edge = &edge_ring[0][threadIdx.x];
  for (index_t tile = blockIdx.x; tile < shape.tiles; tile += gridDim.x) {
    const index_t tile_y = tile / shape.tiles_x;
    const index_t tile_x = tile - tile_y * shape.tiles_x;
    const index_t first_chunk = (tile_x * 4 + warp) * 32;
    if (first_chunk >= shape.chunks_per_row) continue;
    const index_t x0 = (first_chunk + lane) * 4;
    const bool active = x0 < shape.cols;
    const int edge = lane == 0 ? -1 : 4;
    const bool edge_lane = (lane == 0 || lane == 31) && x0 + edge >= -1 && x0 + edge <= shape.cols;
    const index_t row_begin = detail::segment_begin(shape, tile_y);
    const int rows_here = static_cast<int>(detail::segment_begin(shape, tile_y + 1) - row_begin);
    const float* src = in + (row_begin - 1) * ld + x0;
    // Rows row_begin - 1 .. row_begin + rows_here are read: rows_here + 2 of them.
    auto issue = [&](int k) {  // row row_begin - 1 + k into slot k % kDepth
      if (k < rows_here + 2 && active) {
        const float* row = src + static_cast<index_t>(k) * ld;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(my + (k % kDepth) * 128))),
                     "l"(row)
                     : "memory");
        if (edge_lane)
          asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(my_edge + (k % kDepth) * 128))),
                       "l"(row + edge)
                       : "memory");
      }
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    auto take = [&](int k) {  // the row of slot k % kDepth, once its copy has landed
      detail::RowSlice<float, 4> slice;
      const float4 v = active ? my[(k % kDepth) * 128] : make_float4(0, 0, 0, 0);
      slice.item[0] = v.x;
      slice.item[1] = v.y;
      slice.item[2] = v.z;
      slice.item[3] = v.w;
      slice.edge = edge_lane ? my_edge[(k % kDepth) * 128] : 0.f;
      return detail::resolve(slice, lane);
    };
    for (int k = 0; k < kDepth - 1; ++k) issue(k);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kDepth - 3) : "memory");  // rows 0 and 1 landed
    detail::RowNeighbourhood<float, 4> north = take(0), centre = take(1);
    issue(kDepth - 1);
    float* dst = out + row_begin * ld + x0;
    for (int i = 0; i < rows_here; ++i, dst += ld) {
      asm volatile("cp.async.wait_group %0;\n" ::"n"(kDepth - 3) : "memory");  // row i + 2 landed
      const detail::RowNeighbourhood<float, 4> south = take(i + 2);
      issue(i + kDepth);  // into the slot row i - 1 + ... (north's, no longer needed) -- see below
      float result[4];
      detail::apply_stencil<float, 4, false>(north, centre, south, w, result);
      if (active) *reinterpret_cast<float4*>(dst) = make_float4(result[0], result[1], result[2], result[3]);
      north = centre;
      centre = south;
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  }
}

template <int kDepth>
void march_smem(const Queue& q, const float* in, index_t ld, float* out, index_t rows, index_t cols,
                const StencilWeights<float>& w) {
  constexpr auto kernel = march_smem_kernel<kDepth>;
  const index_t resident = static_cast<index_t>(detail::current_device_info().sm_count) * detail::blocks_per_sm<kernel>(128);
  // One 16-byte vector per lane, as the kernel copies.
  detail::Stencil2dShape shape = detail::stencil_2d_shape<float, true, OneVectorPerLane>(rows, cols, 0, resident);
  kernel<<<static_cast<unsigned>(std::min(shape.tiles, resident)), 128, 0, stream_of(q)>>>(in, ld, out, shape, w);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// ---- the cases ------------------------------------------------------------------------------------------

// A rows x cols field with a ghost ring, the owned region's first cell on a 16-byte boundary.
template <class T>
struct Frame {
  index_t rows, cols, ld;
  T* base = nullptr;
  Frame(const Queue& q, index_t r, index_t c, std::uint64_t seed) : rows(r), cols(c), ld((c + 2 + 15) / 16 * 16 + 16) {
    const index_t elements = (rows + 2) * ld + 16;
    base = static_cast<T*>(tessera::kernels::allocate(q, static_cast<std::size_t>(elements) * sizeof(T)));
    tessera::kernels::generate(q, base, elements, seed, 0);
  }
  T* origin() const { return base + ld + 16 / sizeof(T); }  // row 1, column 16 bytes in: aligned, ghost at -1
};

template <class T>
bool same(const Queue& q, const Frame<T>& a, const Frame<T>& b) {
  std::vector<T> x(static_cast<std::size_t>((a.rows + 2) * a.ld)), y(x.size());
  tessera::kernels::copy_to_host(q, x.data(), a.base, x.size() * sizeof(T));
  tessera::kernels::copy_to_host(q, y.data(), b.base, y.size() * sizeof(T));
  for (index_t i = 0; i < a.rows; ++i)
    if (std::memcmp(&x[static_cast<std::size_t>((i + 1) * a.ld + 16 / sizeof(T))], &y[static_cast<std::size_t>((i + 1) * a.ld + 16 / sizeof(T))],
                    static_cast<std::size_t>(a.cols) * sizeof(T)) != 0)
      return false;
  return true;
}

// A shape of the tiled cell pass for a 2-D body (device_cells.cuh's CellRingShape): kX columns a
// thread block, kG rows a step.
template <int kX, int kG, int kBlocks>
struct SweepShape {
  static constexpr int TX = kX, TY = 1, CY = 1, G = kG;
  static constexpr int kBudget = 96 * 1024;
  static constexpr int kMinBlocks = kBlocks;  // thread blocks an SM holds: the register budget
};

template <class T>
void bench_sweep(const Queue& q, const Options& o, index_t rows, index_t cols, StencilShape shape, const char* type) {
  const StencilWeights<T> w = shape == StencilShape::five_point ? StencilWeights<T>::jacobi5() : StencilWeights<T>::jacobi9();
  Frame<T> in(q, rows, cols, 7), out(q, rows, cols, 8), plain_out(q, rows, cols, 9);
  const std::string size = std::to_string(rows) + "x" + std::to_string(cols);
  const double cells = static_cast<double>(rows) * static_cast<double>(cols);
  const double bytes = 2.0 * cells * sizeof(T);
  const char* name = shape == StencilShape::five_point ? "sweep5" : "sweep9";
  auto ours = [&] { tessera::kernels::stencil_2d(q, in.origin(), in.ld, out.origin(), out.ld, rows, cols, w); };
  auto plain = [&] { plain_sweep(q, in.origin(), in.ld, plain_out.origin(), rows, cols, w); };
  ours();
  plain();
  const bool agree = same(q, out, plain_out);
  const auto [ours_ms, plain_ms] = median_pair_ms(q, o.warmup, o.reps, ours, plain);
  report({name, type, size, ours_ms, plain_ms, cells, bytes, 0, agree});

  // With the residual: the same sweep, and one atomicMax per warp.
  T* change = static_cast<T*>(tessera::kernels::allocate(q, sizeof(T)));
  auto with_residual = [&] {
    TESSERA_CUDA_CHECK(cudaMemsetAsync(change, 0, sizeof(T), stream_of(q)));
    tessera::kernels::stencil_2d(q, in.origin(), in.ld, out.origin(), out.ld, rows, cols, w, change);
  };
  const Timing residual_ms = median_ms(q, o.warmup, o.reps, with_residual);
  report({std::string(name) + " +residual", type, size, residual_ms, plain_ms, cells, bytes, 0, same(q, out, plain_out)});

  if (o.wants("variants")) {
    auto variant = [&](const std::string& label, const std::function<void()>& sweep) {
      // The check sees only what this variant wrote: the result of the one before is wiped.
      TESSERA_CUDA_CHECK(cudaMemsetAsync(out.base, 0xff, static_cast<std::size_t>((rows + 2) * out.ld) * sizeof(T), stream_of(q)));
      sweep();
      const bool agree_variant = same(q, out, plain_out);
      report({label, type, size, median_ms(q, o.warmup, o.reps, sweep), plain_ms, cells, bytes, 0, agree_variant});
    };
    // The column march (the path of regions off 16-byte boundaries and of devices before sm_90).
    auto march = [&]<bool kNine>() {
      variant(std::string(name) + " (column march)",
              [&] { tuned_sweep<detail::Stencil2dTuning, T, kNine>(q, in.origin(), in.ld, out.origin(), rows, cols, w); });
    };
    if (shape == StencilShape::five_point) march.template operator()<false>();
    else march.template operator()<true>();
    // The ring filled by bulk copies at the library's tuning, without and with the residual, where
    // stencil_2d takes the tiled pass (for the other types it is stencil_2d's own path, timed above).
    auto library_bulk = [&]<bool kNine>() {
      using Bulk = detail::Stencil2dBulkTuning;
      if constexpr (detail::Stencil2dTiledTuning<T>::kTiled) {
        if (!detail::cell_rows_available<detail::StencilSweepCell<T, kNine>, Bulk>()) return;
        variant(std::string(name) + " (bulk ring)", [&] {
          detail::stencil_2d_rows<T, kNine, Bulk>(q, in.origin(), in.ld, out.origin(), out.ld, rows, cols, w, nullptr);
        });
        variant(std::string(name) + " (bulk ring) +residual", [&] {
          TESSERA_CUDA_CHECK(cudaMemsetAsync(change, 0, sizeof(T), stream_of(q)));
          detail::stencil_2d_rows<T, kNine, Bulk>(q, in.origin(), in.ld, out.origin(), out.ld, rows, cols, w, change);
        });
      }
    };
    if (shape == StencilShape::five_point) library_bulk.template operator()<false>();
    else library_bulk.template operator()<true>();
    // The tiled cell pass (stencil_2d's path) in other shapes: columns a block, rows a step; without
    // and with the residual.
    auto tiled = [&]<bool kNine, class Shape>(const std::string& label) {
      const detail::CellRange r{0, 0, 0, 1, rows, cols};
      const detail::StencilSweepCell<T, kNine> cell{in.origin(), in.ld, out.origin(), out.ld, w};
      variant(std::string(name) + " (tiled, " + label + ")", [&] {
        if (!detail::for_each_cell_tiled<detail::StencilSweepCell<T, kNine>, Shape>(q, r, cell))
          std::fprintf(stderr, "the tiled pass refused the shape %s\n", label.c_str());
      });
      const detail::StencilSweepChangeCell<T, kNine> change_cell{cell, change};
      variant(std::string(name) + " (tiled, " + label + ") +residual", [&] {
        TESSERA_CUDA_CHECK(cudaMemsetAsync(change, 0, sizeof(T), stream_of(q)));
        if (!detail::for_each_cell_tiled<detail::StencilSweepChangeCell<T, kNine>, Shape>(q, r, change_cell))
          std::fprintf(stderr, "the tiled pass refused the shape %s\n", label.c_str());
      });
    };
    auto tiled_shapes = [&]<bool kNine>() {
      tiled.template operator()<kNine, SweepShape<512, 4, 2>>("512 wide, 4 rows, 2 blocks");
      tiled.template operator()<kNine, SweepShape<1024, 4, 1>>("1024 wide, 4 rows, 1 block");
      tiled.template operator()<kNine, SweepShape<512, 8, 1>>("512 wide, 8 rows, 1 block");
      tiled.template operator()<kNine, SweepShape<512, 4, 1>>("512 wide, 4 rows, 1 block");
      tiled.template operator()<kNine, SweepShape<256, 8, 2>>("256 wide, 8 rows, 2 blocks");
    };
    if (shape == StencilShape::five_point) tiled_shapes.template operator()<false>();
    else tiled_shapes.template operator()<true>();
    // The ring filled by bulk copies at other tunings, where the device runs it.
    auto bulk = [&]<class Tuning>(const std::string& label) {
      if (!detail::cell_rows_available<detail::StencilSweepCell<T, false>, Tuning>()) return;
      variant(std::string(name) + " " + label, [&] {
        detail::stencil_2d_rows<T, false, Tuning>(q, in.origin(), in.ld, out.origin(), out.ld, rows, cols, w, nullptr);
      });
    };
    if (shape == StencilShape::five_point) {
      bulk.template operator()<BulkTuning<4, 2, 8>>("(bulk ring, 4 warps, 8)");
      bulk.template operator()<BulkTuning<4, 2, 12>>("(bulk ring, 4 warps, 12)");
      bulk.template operator()<BulkTuning<4, 1, 12>>("(bulk ring, 512-col, 12)");
      bulk.template operator()<BulkTuning<8, 2, 4>>("(bulk ring, 8 warps, 4)");
      bulk.template operator()<BulkTuning<8, 2, 8>>("(bulk ring, 8 warps, 8)");
      bulk.template operator()<BulkTuning<16, 2, 3>>("(bulk ring, 16 warps, 3)");
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    if (shape == StencilShape::five_point && o.wants("variants")) {
      auto variant = [&](const std::string& label, const std::function<void()>& sweep) {
        TESSERA_CUDA_CHECK(cudaMemsetAsync(out.base, 0xff, static_cast<std::size_t>((rows + 2) * out.ld) * sizeof(T), stream_of(q)));
        sweep();
        const bool agree_variant = same(q, out, plain_out);
        report({label, type, size, median_ms(q, o.warmup, o.reps, sweep), plain_ms, cells, bytes, 0, agree_variant});
      };
      variant("sweep5 (32-row segments)", [&] { tuned_sweep<detail::Stencil2dTuning>(q, in.origin(), in.ld, out.origin(), rows, cols, w, 32); });
      variant("sweep5 (3 rows ahead)", [&] { tuned_sweep<ThreeRowsAhead>(q, in.origin(), in.ld, out.origin(), rows, cols, w); });
      variant("sweep5 (1 vector/lane)", [&] { tuned_sweep<OneVectorPerLane>(q, in.origin(), in.ld, out.origin(), rows, cols, w); });
      variant("sweep5 (2 vectors/lane, 1 ahead)",
              [&] { tuned_sweep<TwoVectorsOneAhead>(q, in.origin(), in.ld, out.origin(), rows, cols, w); });
      if (cols % 4 == 0) {
        variant("sweep5 smem ring 6", [&] { march_smem<6>(q, in.origin(), in.ld, out.origin(), rows, cols, w); });
        variant("sweep5 smem ring 10", [&] { march_smem<10>(q, in.origin(), in.ld, out.origin(), rows, cols, w); });
      }
    }
  }
  tessera::kernels::deallocate(q, change);
  tessera::kernels::deallocate(q, in.base);
  tessera::kernels::deallocate(q, out.base);
  tessera::kernels::deallocate(q, plain_out.base);
  in.base = out.base = plain_out.base = nullptr;
}

// Other tunings of the convolution by lanes (the library's own is Convolve1dLanesTuning).
struct LanesThreeVectors : detail::Convolve1dLanesTuning {
  static constexpr int kVectorsPerLane = 3;
  static constexpr int kMinBlocksPerSm = 3;
};

// Other register blocks of the convolution of wider kernels (the library's own is Convolve1dTuning).
struct WideNineItems : detail::Convolve1dTuning {
  static constexpr int kItems = 9;
  static constexpr int kTaps = 8;
};
struct WideFifteenItemsEightTaps : detail::Convolve1dTuning {
  static constexpr int kItems = 15;
  static constexpr int kTaps = 8;
};
struct WideFifteenItems : detail::Convolve1dTuning {
  static constexpr int kItems = 15;
  static constexpr int kMinBlocksPerSm = 3;
};
struct WideTwentyThreeItems : detail::Convolve1dTuning {
  static constexpr int kThreads = 128;
  static constexpr int kItems = 23;
  static constexpr int kTaps = 8;
  static constexpr int kMinBlocksPerSm = 6;
};
struct WideThirtyOneItems : detail::Convolve1dTuning {
  static constexpr int kThreads = 128;
  static constexpr int kItems = 31;
  static constexpr int kTaps = 8;
  static constexpr int kMinBlocksPerSm = 6;
};

template <class Tuning>
void lanes_convolve(const Queue& q, const float* in, index_t n, const std::vector<float>& weights, float* out) {
  const auto radius = static_cast<int>((weights.size() - 1) / 2);
  detail::CentredTaps<float, Tuning::kMaxRadius> centred{};
  for (std::size_t k = 0; k < weights.size(); ++k) centred.tap[Tuning::kMaxRadius - radius + static_cast<int>(k)] = weights[k];
  detail::convolve_1d_lanes<float, Tuning>(in, n, centred, radius, out, stream_of(q));
}

// misalign: elements added to both the input's and the output's address (0: both on 16-byte
// boundaries; 1: the input 4 bytes past one, the output 4 bytes past one; 5 for the output puts the
// input and the output at different offsets).
void bench_convolve(const Queue& q, const Options& o, index_t n, index_t radius, int in_skew = 0, int out_skew = 0) {
  const index_t pad = 64;  // beyond the largest radius below: [-radius, n + radius) readable
  float* in = static_cast<float*>(tessera::kernels::allocate(q, static_cast<std::size_t>(n + 2 * pad + 8) * sizeof(float)));
  float* out_base = static_cast<float*>(tessera::kernels::allocate(q, static_cast<std::size_t>(n + 8) * sizeof(float)));
  float* plain_base = static_cast<float*>(tessera::kernels::allocate(q, static_cast<std::size_t>(n + 8) * sizeof(float)));
  float* out = out_base + out_skew;
  float* plain_out = plain_base + out_skew;
  const float* source = in + pad + in_skew;
  float* device_weights = static_cast<float*>(tessera::kernels::allocate(q, static_cast<std::size_t>(2 * radius + 1) * sizeof(float)));
  tessera::kernels::generate(q, in, n + 2 * pad + 8, 11, 0);
  std::vector<float> weights(static_cast<std::size_t>(2 * radius + 1));
  tessera::kernels::generate(Queue{}, weights.data(), 2 * radius + 1, 12, 0);
  tessera::kernels::copy_from_host(q, device_weights, weights.data(), weights.size() * sizeof(float));
  auto ours = [&] { tessera::kernels::convolve_1d(q, source, n, weights, out); };
  auto plain = [&] {
    plain_convolve_kernel<float><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream_of(q)>>>(source, n, device_weights,
                                                                                                      radius, plain_out);
    TESSERA_CUDA_CHECK_LAUNCH();
  };
  ours();
  plain();
  std::vector<float> a(static_cast<std::size_t>(n)), b(a.size());
  auto agrees = [&] {
    tessera::kernels::copy_to_host(q, a.data(), out, a.size() * sizeof(float));
    tessera::kernels::copy_to_host(q, b.data(), plain_out, b.size() * sizeof(float));
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  const bool agree = agrees();
  const auto [ours_ms, plain_ms] = median_pair_ms(q, o.warmup, o.reps, ours, plain);
  const double elements = static_cast<double>(n);
  const double bytes = 2.0 * elements * sizeof(float);
  const std::string label = "convolve r=" + std::to_string(radius) +
                            (radius > detail::Convolve1dLanesTuning::kMaxRadius ? " (blocks)" : "") +
                            (in_skew || out_skew ? " skew " + std::to_string(in_skew) + "/" + std::to_string(out_skew) : "");
  report({label, "float", std::to_string(n), ours_ms, plain_ms, elements, bytes, 0, agree});
  // Other tunings, each result checked against the plain kernel's as ours is.
  auto variant = [&](const std::string& name, const std::function<void()>& run) {
    TESSERA_CUDA_CHECK(cudaMemsetAsync(out_base, 0xff, static_cast<std::size_t>(n + 8) * sizeof(float), stream_of(q)));
    run();
    const bool agree_variant = agrees();
    report({label + " " + name, "float", std::to_string(n), median_ms(q, o.warmup, o.reps, run), plain_ms, elements, bytes, 0,
            agree_variant});
  };
  if (o.wants("convolve-variants") && radius <= detail::Convolve1dLanesTuning::kMaxRadius) {
    variant("(3 vectors/lane)", [&] { lanes_convolve<LanesThreeVectors>(q, source, n, weights, out); });
  } else if (o.wants("convolve-variants")) {
    const std::span<const float> taps(weights);
    variant("(9 outputs x 8 taps)", [&] { detail::convolve_1d<float, WideNineItems>(q, source, n, taps, out); });
    variant("(15 outputs x 8 taps)", [&] { detail::convolve_1d<float, WideFifteenItemsEightTaps>(q, source, n, taps, out); });
    variant("(15 outputs x 16 taps, 3 blocks/SM)", [&] { detail::convolve_1d<float, WideFifteenItems>(q, source, n, taps, out); });
    variant("(23 outputs x 8 taps, 128 threads)", [&] { detail::convolve_1d<float, WideTwentyThreeItems>(q, source, n, taps, out); });
    variant("(31 outputs x 8 taps, 128 threads)", [&] { detail::convolve_1d<float, WideThirtyOneItems>(q, source, n, taps, out); });
  }
  for (float* p : {in, out_base, plain_base, device_weights}) tessera::kernels::deallocate(q, p);
}

}  // namespace

int main(int argc, char** argv) {
  Harness h("tessera_bench_stencil",
            "The stencils (2-D sweeps, 1-D convolution) against the copy rate and plain kernels on one GPU.",
            {.minbytes = index_t(1) << 30, .maxbytes = index_t(1) << 30, .stepfactor = 4, .iters = 20, .warmup = 3});
  g_harness = &h;
  Options o = parse(h, argc, argv);
  if (tessera::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "tessera_bench_stencil: no usable CUDA device\n");
    return 1;
  }
  const Queue q = tessera::kernels::make_cuda_queue(0);
  const std::string device = tessera::kernels::describe_device(q);
  std::printf("tessera_bench_stencil on %s\n", device.c_str());
  set_local_environment(h, q);
  g_copy_gbs = measure_copy_gbs(q);
  h.configuration()["copy_gbs"] = g_copy_gbs;
  std::printf("device-to-device copy: %.1f GB/s (bytes read + written, 1 GiB copy, median of 10)\n", g_copy_gbs);
  for (const index_t side : o.sides) {
    o.n = side;
    print_header();
    if (o.wants("sweep5") || o.wants("variants")) bench_sweep<float>(q, o, o.n, o.n, StencilShape::five_point, "float");
    if (o.wants("sweep9")) bench_sweep<float>(q, o, o.n, o.n, StencilShape::nine_point, "float");
    if (o.wants("double")) bench_sweep<double>(q, o, o.n, o.n / 2, StencilShape::five_point, "double");
    if (o.wants("double")) bench_sweep<double>(q, o, o.n, o.n / 2, StencilShape::nine_point, "double");
    if (o.wants("convolve"))
      for (index_t radius : {1, 2, 4, 8, 12, 16, 32, 64}) bench_convolve(q, o, o.n * o.n, radius);
    if (o.wants("convolve-skew"))
      for (index_t radius : {1, 8}) {
        bench_convolve(q, o, o.n * o.n, radius, 1, 1);
        bench_convolve(q, o, o.n * o.n, radius, 1, 0);
        bench_convolve(q, o, o.n * o.n, radius, 3, 1);
      }
  }
  Queue owned = q;
  tessera::kernels::destroy_queue(owned);
  if (finish(h) != 0) {
    std::fprintf(stderr, "tessera_bench_stencil: some results differ from the plain kernel's (rows marked NO)\n");
    return 3;
  }
  return 0;
}
