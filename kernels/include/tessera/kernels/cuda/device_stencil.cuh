// CUDA stencils (the contract is in tessera/kernels/stencil.hpp), in four layers: warp_stencil.cuh
// (a lane's slice of a row, rounding), block_stencil.cuh (flags, the ring's mbarriers and bulk
// copies, the convolution's tile), agent_stencil.cuh (the kernels) and this file, the dispatch
// (grids from the device, launches) of
//
//   stencil_2d   the 5- and 9-point sweep. A region of doubles at least kDeepPlanes rows deep and
//                wider than kNarrowCols whose input rows start on 16-byte boundaries is swept by the
//                user stencil's tiled pass (device_cells.cuh, the pass apply_stencil runs) with the
//                cell StencilSweepCell, the residual folded into it: thread blocks of 1024 columns
//                stage the rows in a ring of shared memory by asynchronous 16-byte copies and march
//                down the rows, four a step (floats measure faster in the bulk ring below:
//                Stencil2dTiledTuning).
//                Other regions by register-blocked column marching: each lane owns one
//                16-byte vector of a row (4 floats, 2 doubles) and walks down a segment of rows,
//                keeping the north, centre and south vectors in registers, so that every row is read
//                from memory once per segment; the neighbours in x come from the next lanes by
//                shuffles (the two lanes at a warp's edges load one element each). Rows are loaded
//                kPrefetchRows ahead of the one computed. Aligned regions on sm_90 take the same
//                march with the rows in a ring of shared-memory slots instead, the rows order of
//                the cell passes (device_cells.cuh, for_each_cell_rows) with the cell
//                StencilSweepCell: one thread of a block fills each slot with a bulk copy of the
//                block's strip of the row and its halo, so kDepth rows per block are in flight at
//                no register cost. The strips of columns are
//                cut into segments of near-equal length that make one wave of the resident thread
//                blocks, walked in row-major order, so that the blocks resident at one time share
//                the rows at their segments' edges through L2.
//   convolve_1d  radius <= 8, by lanes: each lane owns two 16-byte vectors of consecutive outputs,
//                loads its inputs as whole aligned vectors (realigned to the outputs by one shuffle
//                where the input and output are off by part of a vector) and takes the radius's
//                inputs on either side from the neighbouring lanes by shuffles; one kernel per
//                radius, the weights in its parameters, so that only that radius's taps are issued.
//                Wider kernels, by register blocks: tiles of kThreads x kItems outputs through shared
//                memory, the next tile's inputs and taps copied (cp.async, two buffers) while a tile
//                is computed; each thread owns kItems consecutive outputs (an odd kItems puts a
//                warp's reads on 32 banks) and takes kTaps taps at a time from registers, kItems +
//                kTaps - 1 inputs and kTaps weights loaded for kItems x kTaps multiply-adds.
//   pack / unpack of rectangles: one launch for up to kMaxRectangles rectangles (grid y = rectangle),
//                each a stack of planes or one plane.
//
// Every product and sum of the sweeps is rounded on its own (__fmul_rn / __fadd_rn, which nvcc never
// contracts into a fused multiply-add) and each tap of the convolution is one fused multiply-add, in
// the order of the contract, so results match the cpu backend bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/agent_stencil.cuh"
#include "tessera/kernels/cuda/device_cells.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/tuning/stencil.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera::kernels::cuda::detail {

// ---- stencil_2d --------------------------------------------------------------------------------------

// stencil_2d's cell as a body of the tiled cell pass (TiledCellBody, device_cells.cuh): cell
// (i1, i2) of the region (axis 0 is one plane) from the tile of `in` that the pass stages in shared
// memory, stencil_point's arithmetic. The pass reads `in` within the contract's ghost ring only
// (the rows are not declared padded).
template <class T, bool kNine>
struct StencilSweepCell {
  using tile_type = T;
  using value_type = T;
  static constexpr int kReach0 = 0, kReach1 = 1, kReach2 = 1;
  static constexpr bool kReadsCorners = kNine;
  static constexpr bool kValueAnywhere = true;  // the rows order: reads the tile only, rounded arithmetic
  const T* in;
  index_t in_ld;
  T* out;
  index_t out_ld;
  StencilWeights<T> w;
  __host__ __device__ const T* tile_origin() const { return in; }
  __host__ __device__ index_t tile_stride0() const { return 0; }
  __host__ __device__ index_t tile_stride1() const { return in_ld; }
  __device__ T value(const T* c, index_t, index_t s1, index_t, index_t, index_t) const {
    return stencil_point<T, kNine>(w, c[0], c[-s1], c[s1], c[-1], c[1], c[-s1 - 1], c[-s1 + 1], c[s1 - 1], c[s1 + 1]);
  }
  __device__ void store(index_t, index_t i1, index_t i2, const T& v) const { out[i1 * out_ld + i2] = v; }
  __host__ __device__ T* store_row(index_t, index_t i1) const { return out + i1 * out_ld; }
};

// The same cell with the residual folded in (FoldingCellBody): max |new - old| as change bits,
// one atomic max into max_change per warp.
template <class T, bool kNine>
struct StencilSweepChangeCell : StencilSweepCell<T, kNine> {
  using fold_type = ChangeBits<T>;
  T* max_change;
  __device__ fold_type fold(const T* c, const T& v) const { return change_bits(v, *c); }
  __device__ static fold_type combine(fold_type a, fold_type b) { return a > b ? a : b; }
  __device__ void fold_result(fold_type f) const {
    if (f != 0) atomicMax(reinterpret_cast<fold_type*>(max_change), f);
  }
};

// stencil_2d by the tiled cell pass in Stencil2dTiledTuning's shape; false, and nothing queued,
// where the pass does not take the region (device_cells.cuh: the input rows are off 16-byte
// boundaries, its ring does not fit, or the grid would pass its limits).
template <class T, bool kNine>
bool stencil_2d_tiled(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilWeights<T>& w, T* max_change) {
  using Shape = Stencil2dTiledTuning<T>;
  const CellRange r{0, 0, 0, 1, rows, cols};
  const StencilSweepCell<T, kNine> cell{in, in_ld, out, out_ld, w};
  if (max_change == nullptr) return for_each_cell_tiled<StencilSweepCell<T, kNine>, Shape>(queue, r, cell);
  return for_each_cell_tiled<StencilSweepChangeCell<T, kNine>, Shape>(queue, r, {cell, max_change});
}

template <class T, class Tuning = Stencil2dTuning>
void launch_stencil_2d_cells(const T* in, index_t in_ld, T* out, index_t out_ld, const CellRegions& regions,
                             const StencilWeights<T>& w, T* max_change, StreamHandle stream,
                             const CellPacks& packs = {}) {
  if (regions.cells() == 0) return;
  constexpr int kThreads = Tuning::kNarrowThreads;
  auto launch = [&]<auto kKernel>() {
    const index_t resident = static_cast<index_t>(current_device_info().sm_count) * blocks_per_sm<kKernel>(kThreads);
    const auto grid = static_cast<unsigned>(std::clamp<index_t>(ceil_div<index_t>(regions.cells(), kThreads), 1, resident));
    kKernel<<<grid, kThreads, 0, to_cuda(stream)>>>(in, in_ld, out, out_ld, regions, w, max_change, packs);
    TESSERA_CUDA_CHECK_LAUNCH();
  };
  if (w.shape == StencilShape::nine_point) launch.template operator()<stencil_2d_cells_kernel<T, true, Tuning>>();
  else launch.template operator()<stencil_2d_cells_kernel<T, false, Tuning>>();
}

// The frame's parts as cell regions, and its copies (at most CellPacks::kMax) as packs.
inline CellRegions frame_regions(const StencilFrame& frame, index_t rows, index_t cols) {
  CellRegions regions;
  for (const StencilFrame::Part& p : frame.parts(rows, cols)) regions.add(p.row, p.col, p.rows, p.cols);
  return regions;
}
template <class T>
CellPacks frame_packs(std::span<const FrameCopy<T>> copies, index_t out_ld) {
  CellPacks packs;
  for (const FrameCopy<T>& copy : copies) {
    const Rectangle& r = copy.from;
    if (r.size() == 0) continue;
    packs.row[packs.count] = r.offset / out_ld;
    packs.col[packs.count] = r.offset % out_ld;
    packs.rows[packs.count] = r.rows;
    packs.cols[packs.count] = r.cols;
    packs.to[packs.count] = copy.to;
    packs.to_ld[packs.count] = copy.to_ld;
    ++packs.count;
  }
  return packs;
}

// The frame of a region (StencilFrame::parts), all its parts in one launch, writing the cells of
// each copy (at most CellPacks::kMax, offsets >= 0 with ld out_ld) to its destination too.
template <class T, class Tuning = Stencil2dTuning>
void stencil_2d_frame(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                      const StencilFrame& frame, const StencilWeights<T>& w, T* max_change,
                      std::span<const FrameCopy<T>> copies, StreamHandle stream) {
  launch_stencil_2d_cells<T, Tuning>(in, in_ld, out, out_ld, frame_regions(frame, rows, cols), w, max_change, stream,
                                     frame_packs(copies, out_ld));
}

// stencil_2d's sweep of an aligned region (in and out on 16-byte boundaries at column 0, rows
// keeping them) in the rows order of the cell passes (for_each_cell_rows: the ring of rows filled
// by bulk copies, sm_90; "the bulk kernel" below), cell_rows_kernel's instance for the cell
// StencilSweepCell (StencilSweepChangeCell with the residual), with `after` run after the tiles
// (the frame-last sweep); false, and nothing queued, where for_each_cell_rows does not take it.
template <class T, bool kNine, class Tuning = Stencil2dBulkTuning, class Last = NoFrameLast>
bool stencil_2d_rows(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                     const StencilWeights<T>& w, T* max_change, const Last& after = {}) {
  const CellRange r{0, 0, 0, 1, rows, cols};
  const StencilSweepCell<T, kNine> cell{in, in_ld, out, out_ld, w};
  if (max_change == nullptr) return for_each_cell_rows<StencilSweepCell<T, kNine>, Tuning>(queue, r, cell, after);
  return for_each_cell_rows<StencilSweepChangeCell<T, kNine>, Tuning>(queue, r, {cell, max_change}, after);
}

template <class T, class Tuning = Stencil2dTuning>
void stencil_2d(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<T>& w, T* max_change) {
  if (rows <= 0 || cols <= 0) return;
  const StreamHandle stream = queue.stream;
  static_assert(kVectorizable<T>, "stencil_2d: element types of 1, 2, 4, 8 or 16 bytes");
  constexpr int kVectorItems = Vector<T>::kItems;
  constexpr index_t kVectorBytesT = kVectorBytes;
  const index_t in_shift = static_cast<index_t>(reinterpret_cast<std::uintptr_t>(in) % kVectorBytesT) / sizeof(T);
  const index_t out_shift = static_cast<index_t>(reinterpret_cast<std::uintptr_t>(out) % kVectorBytesT) / sizeof(T);
  // 16-byte slices where the input and output rows reach a 16-byte boundary at the same column.
  const bool vector = in_shift == out_shift && in_ld % kVectorItems == 0 && out_ld % kVectorItems == 0;
  constexpr int kThreads = Tuning::kWarps * kWarpThreads;
  auto launch = [&]<auto kKernel, bool kVector>() {
    const index_t resident = static_cast<index_t>(current_device_info().sm_count) * blocks_per_sm<kKernel>(kThreads);
    const Stencil2dShape shape = stencil_2d_shape<T, kVector, Tuning>(rows, cols, kVector ? in_shift : 0, resident);
    const auto grid = static_cast<unsigned>(std::min<index_t>(shape.tiles, resident));
    kKernel<<<grid, kThreads, 0, to_cuda(stream)>>>(in, in_ld, out, out_ld, shape, w, max_change);
    TESSERA_CUDA_CHECK_LAUNCH();
  };
  const bool nine = w.shape == StencilShape::nine_point;
  if (cols <= Tuning::kNarrowCols) {
    CellRegions whole;
    whole.add(0, 0, rows, cols);
    return launch_stencil_2d_cells<T, Tuning>(in, in_ld, out, out_ld, whole, w, max_change, stream);
  }
  // The tiled cell pass where Stencil2dTiledTuning takes the type and the region is deep enough for
  // its ring; the pass itself refuses input rows off 16-byte boundaries (its copies are aligned
  // 16-byte pieces).
  if constexpr (Stencil2dTiledTuning<T>::kTiled) {
    if (rows >= kDeepPlanes &&
        (nine ? stencil_2d_tiled<T, true>(queue, in, in_ld, out, out_ld, rows, cols, w, max_change)
              : stencil_2d_tiled<T, false>(queue, in, in_ld, out, out_ld, rows, cols, w, max_change)))
      return;
  }
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    // The rows order of the cell passes (the ring of rows filled by bulk copies): aligned regions on
    // sm_90, 5- and 9-point sweeps (the 9-point sweep of doubles with a looser register bound:
    // kMinBlocksPerSmNineDouble).
    if (vector && in_shift == 0 &&
        (nine ? stencil_2d_rows<T, true>(queue, in, in_ld, out, out_ld, rows, cols, w, max_change)
              : stencil_2d_rows<T, false>(queue, in, in_ld, out, out_ld, rows, cols, w, max_change)))
      return;
  }
  if (nine && vector) launch.template operator()<stencil_2d_kernel<T, true, true, Tuning>, true>();
  else if (nine) launch.template operator()<stencil_2d_kernel<T, true, false, Tuning>, false>();
  else if (vector) launch.template operator()<stencil_2d_kernel<T, false, true, Tuning>, true>();
  else launch.template operator()<stencil_2d_kernel<T, false, false, Tuning>, false>();
}

// Whether a thread block of the frame launched on its own (the cells kernel) fits on an SM beside as
// many blocks of the interior's bulk sweep as the SM holds: registers (allocated 8 to a thread)
// and threads (it takes no shared memory). kChange: the sweeps with the residual (each a kernel of
// its own registers). The ring is the interior's sweep for floats; doubles deep enough for the
// tiled pass sweep their interior there when the frame runs beside it, and are judged against the
// ring all the same. Once per device; true where the bulk sweep is not available (the interior's
// other sweeps leave room).
template <class T, bool kNine, bool kChange, class Tuning = Stencil2dTuning>
bool frame_fits_beside_interior() {
  using Bulk = Stencil2dBulkTuning;
  using Interior = std::conditional_t<kChange, StencilSweepChangeCell<T, kNine>, StencilSweepCell<T, kNine>>;
  if (!cell_rows_available<Interior, Bulk>()) return true;
  constexpr auto bulk = kCellRowsKernel<Interior, Bulk, NoFrameLast, true>;
  constexpr auto cells = stencil_2d_cells_kernel<T, kNine, Tuning>;
  constexpr int kBulkThreads = Bulk::kWarps * kWarpThreads;
  constexpr int kMaxDevices = 64;
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<bool, kMaxDevices> fits{};
  const DeviceInfo& info = current_device_info();
  std::call_once(once[info.ordinal], [&] {
    cudaFuncAttributes bulk_attributes{}, cells_attributes{};
    TESSERA_CUDA_CHECK(cudaFuncGetAttributes(&bulk_attributes, bulk));
    TESSERA_CUDA_CHECK(cudaFuncGetAttributes(&cells_attributes, cells));
    int registers = 0, threads = 0;
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&registers, cudaDevAttrMaxRegistersPerMultiprocessor, info.ordinal));
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, info.ordinal));
    allow_dynamic_smem(bulk, kBulkSharedBytes<T, Bulk>);
    const int blocks = blocks_per_sm<bulk>(kBulkThreads, kBulkSharedBytes<T, Bulk>);
    auto block_registers = [](int per_thread, int block_threads) { return (per_thread + 7) / 8 * 8 * block_threads; };
    fits[info.ordinal] =
        registers - blocks * block_registers(bulk_attributes.numRegs, kBulkThreads) >=
            block_registers(cells_attributes.numRegs, Tuning::kNarrowThreads) &&
        threads - blocks * kBulkThreads >= Tuning::kNarrowThreads;
  });
  return fits[info.ordinal];
}

// The interior by the bulk kernel with the frame after it in the same launch
// (kernels::stencil_2d_frame_last); false, and nothing queued, where a frame launched on its own
// has room beside the interior (frame_fits_beside_interior: it then runs beside it on another
// queue), the interior does not take the bulk sweep (not sm_90, not aligned, no wider than
// kNarrowCols), the frame has no cells, more than a quarter of the launch's blocks would take them,
// or it has more copies or flags than one launch holds.
template <class T, class Tuning = Stencil2dTuning>
bool stencil_2d_frame_last(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                           const StencilFrame& frame, const StencilWeights<T>& w, T* max_change,
                           std::span<const FrameCopy<T>> copies, const FrameFlags& flags, StreamHandle stream) {
  using Bulk = Stencil2dBulkTuning;
  if constexpr (sizeof(T) != 4 && sizeof(T) != 8) {
    return false;
  } else {
    const bool nine = w.shape == StencilShape::nine_point, change = max_change != nullptr;
    const bool beside = nine ? (change ? frame_fits_beside_interior<T, true, true, Tuning>()
                                       : frame_fits_beside_interior<T, true, false, Tuning>())
                             : (change ? frame_fits_beside_interior<T, false, true, Tuning>()
                                       : frame_fits_beside_interior<T, false, false, Tuning>());
    if (beside) return false;
    const index_t interior_rows = rows - frame.top - frame.bottom, interior_cols = cols - frame.left - frame.right;
    if (interior_rows <= 0 || interior_cols <= Tuning::kNarrowCols) return false;
    const CellRegions regions = frame_regions(frame, rows, cols);
    // No frame: nothing would set the flags. Past 2^32 cells: stencil_cell<T, kNine, true> divides in 32 bits.
    if (regions.cells() == 0 || regions.cells() >= (index_t(1) << 32)) return false;
    if (copies.size() > static_cast<std::size_t>(CellPacks::kMax) || flags.waits > FrameFlags::kMax ||
        flags.sets > FrameFlags::kMax)
      return false;
    const T* interior_in = in + frame.top * in_ld + frame.left;
    T* interior_out = out + frame.top * out_ld + frame.left;
    constexpr auto kBytes = static_cast<std::uintptr_t>(kVectorBytes);
    const bool aligned = reinterpret_cast<std::uintptr_t>(interior_in) % kBytes == 0 &&
                         reinterpret_cast<std::uintptr_t>(interior_out) % kBytes == 0 &&
                         in_ld % Vector<T>::kItems == 0 && out_ld % Vector<T>::kItems == 0;
    if (!aligned) return false;
    FrameLast<T> last;
    last.in = in;
    last.in_ld = in_ld;
    last.out = out;
    last.out_ld = out_ld;
    last.regions = regions;
    last.cells = regions.cells();
    last.packs = frame_packs(copies, out_ld);
    last.flags = flags;
    constexpr int kThreads = Bulk::kWarps * kWarpThreads;
    last.chunks = ceil_div<index_t>(last.cells, kThreads);
    last.share = kFrameFlagStep / static_cast<std::uint64_t>(last.chunks);
    last.first_share = kFrameFlagStep - last.share * static_cast<std::uint64_t>(last.chunks - 1);
    auto launch = [&]<bool kNine>() {
      const Queue queue{Backend::cuda, current_device_info().ordinal, stream};
      return stencil_2d_rows<T, kNine, Bulk>(queue, interior_in, in_ld, interior_out, out_ld, interior_rows,
                                             interior_cols, w, max_change, FrameLastSweep<T, kNine>{last, w});
    };
    return w.shape == StencilShape::nine_point ? launch.template operator()<true>() : launch.template operator()<false>();
  }
}

// ---- convolve_1d -------------------------------------------------------------------------------------

template <class T, class Tuning, int R>
void launch_convolve_1d_lanes(const T* in, index_t n, const CentredTaps<T, Tuning::kMaxRadius>& taps, T* out,
                              StreamHandle stream) {
  constexpr int kI = Tuning::kVectorsPerLane * Vector<T>::kItems;
  constexpr index_t kWarpTile = index_t(kWarpThreads) * kI;
  const auto out_lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(out) % kVectorBytes / sizeof(T));
  const auto shift = static_cast<int>(reinterpret_cast<std::uintptr_t>(in - out_lead) % kVectorBytes / sizeof(T));
  const index_t warp_tiles = ceil_div<index_t>(n + out_lead, kWarpTile);
  constexpr auto kernel = convolve_1d_lanes_kernel<T, Tuning, R>;
  constexpr int kWarpsPerBlock = Tuning::kThreads / kWarpThreads;
  const index_t sms = current_device_info().sm_count;
  const auto grid = static_cast<unsigned>(
      std::min<index_t>(ceil_div<index_t>(warp_tiles, kWarpsPerBlock), sms * blocks_per_sm<kernel>(Tuning::kThreads)));
  kernel<<<grid, Tuning::kThreads, 0, to_cuda(stream)>>>(in, n, out, taps, out_lead, shift, warp_tiles);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// The kernel by lanes for radius 0 .. kMaxRadius (taps centred as CentredTaps says).
template <class T, class Tuning = Convolve1dLanesTuning>
void convolve_1d_lanes(const T* in, index_t n, const CentredTaps<T, Tuning::kMaxRadius>& taps, int radius, T* out,
                       StreamHandle stream) {
  static_assert(Tuning::kMaxRadius == 8, "one case per radius below");
  switch (radius) {
    case 0: return launch_convolve_1d_lanes<T, Tuning, 0>(in, n, taps, out, stream);
    case 1: return launch_convolve_1d_lanes<T, Tuning, 1>(in, n, taps, out, stream);
    case 2: return launch_convolve_1d_lanes<T, Tuning, 2>(in, n, taps, out, stream);
    case 3: return launch_convolve_1d_lanes<T, Tuning, 3>(in, n, taps, out, stream);
    case 4: return launch_convolve_1d_lanes<T, Tuning, 4>(in, n, taps, out, stream);
    case 5: return launch_convolve_1d_lanes<T, Tuning, 5>(in, n, taps, out, stream);
    case 6: return launch_convolve_1d_lanes<T, Tuning, 6>(in, n, taps, out, stream);
    case 7: return launch_convolve_1d_lanes<T, Tuning, 7>(in, n, taps, out, stream);
    case 8: return launch_convolve_1d_lanes<T, Tuning, 8>(in, n, taps, out, stream);
    default: throw UsageError("convolve_1d: radius " + std::to_string(radius) + " is beyond the kernel by lanes");
  }
}

template <class T, class Tuning = Convolve1dTuning>
void convolve_1d(const Queue& queue, const T* in, index_t n, std::span<const T> weights, T* out) {
  const StreamHandle stream = queue.stream;
  if (n <= 0) return;
  const auto taps = static_cast<index_t>(weights.size());
  const index_t radius = (taps - 1) / 2;
  if (radius <= Convolve1dLanesTuning::kMaxRadius) {
    CentredTaps<T, Convolve1dLanesTuning::kMaxRadius> centred{};
    for (index_t k = 0; k < taps; ++k)
      centred.tap[Convolve1dLanesTuning::kMaxRadius - radius + k] = weights[static_cast<std::size_t>(k)];
    convolve_1d_lanes<T>(in, n, centred, static_cast<int>(radius), out, stream);
    return;
  }
  constexpr int kTile = Tuning::kThreads * kConvolveItems<T, Tuning>;
  const index_t tiles = ceil_div<index_t>(n, kTile);
  const index_t sms = current_device_info().sm_count;
  ScratchBuffer device_weights(queue, static_cast<std::size_t>(taps) * sizeof(T));
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(device_weights.data(), weights.data(), static_cast<std::size_t>(taps) * sizeof(T),
                                     cudaMemcpyHostToDevice, to_cuda(stream)));
  constexpr auto kernel = convolve_1d_blocks_kernel<T, Tuning>;
  const auto grid = static_cast<unsigned>(std::min<index_t>(tiles, sms * blocks_per_sm<kernel>(Tuning::kThreads)));
  kernel<<<grid, Tuning::kThreads, 0, to_cuda(stream)>>>(in, n, out, device_weights.as<T>(), radius, tiles);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// ---- pack / unpack of rectangles ---------------------------------------------------------------------

// The rectangles' packed cells go to places[i] each, or, where places is empty, one after the
// other from `packed` (no list of places is made for that: the packs of a halo run every step).
template <class Word, bool kUnpack>
void launch_pack(void* base, std::span<const Rectangle> rectangles, void* packed, std::span<void* const> places,
                 index_t scale, StreamHandle stream) {
  const index_t sms = current_device_info().sm_count;
  index_t packed_words = 0;
  for (std::size_t first = 0; first < rectangles.size(); first += PackTuning::kMaxRectangles) {
    const std::size_t count = std::min<std::size_t>(PackTuning::kMaxRectangles, rectangles.size() - first);
    RectangleBatch batch{};
    index_t largest = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const Rectangle& r = rectangles[first + i];
      batch.rectangle[i] = Rectangle{r.offset * scale, r.ld * scale, r.rows, r.cols * scale, r.planes, r.plane_stride * scale};
      batch.packed[i] = places.empty() ? static_cast<void*>(static_cast<Word*>(packed) + packed_words) : places[first + i];
      packed_words += r.size() * scale;
      largest = std::max(largest, r.size() * scale);
    }
    if (largest == 0) continue;
    const auto blocks_x = static_cast<unsigned>(std::min<index_t>(ceil_div<index_t>(largest, PackTuning::kThreads), 4 * sms));
    pack_rectangles_kernel<Word, kUnpack><<<dim3(blocks_x, static_cast<unsigned>(count)), PackTuning::kThreads, 0, to_cuda(stream)>>>(
        static_cast<Word*>(base), batch);
    TESSERA_CUDA_CHECK_LAUNCH();
  }
}

// The widest word (8, 4, 2 or 1 bytes) that divides the element size and every address.
inline std::size_t pack_word_bytes(const void* base, const void* packed, std::span<void* const> places,
                                   std::size_t element_bytes) {
  for (std::size_t word : {std::size_t(8), std::size_t(4), std::size_t(2)})
    if (element_bytes % word == 0 && is_aligned(base, word) && (!places.empty() || is_aligned(packed, word)) &&
        std::all_of(places.begin(), places.end(), [&](const void* p) { return is_aligned(p, word); }))
      return word;
  return 1;
}

template <bool kUnpack>
void pack_rectangles_at(void* base, std::span<const Rectangle> rectangles, void* packed, std::span<void* const> places,
                        std::size_t element_bytes, StreamHandle stream) {
  if (rectangles.empty()) return;
  const std::size_t word = pack_word_bytes(base, packed, places, element_bytes);
  const auto scale = static_cast<index_t>(element_bytes / word);
  switch (word) {
    case 8: launch_pack<unsigned long long, kUnpack>(base, rectangles, packed, places, scale, stream); break;
    case 4: launch_pack<unsigned int, kUnpack>(base, rectangles, packed, places, scale, stream); break;
    case 2: launch_pack<unsigned short, kUnpack>(base, rectangles, packed, places, scale, stream); break;
    default: launch_pack<unsigned char, kUnpack>(base, rectangles, packed, places, scale, stream); break;
  }
}

// The rectangles one after the other in `packed` (or back from it, kUnpack).
template <bool kUnpack>
void pack_rectangles(void* base, void* packed, std::span<const Rectangle> rectangles, std::size_t element_bytes,
                     StreamHandle stream) {
  pack_rectangles_at<kUnpack>(base, rectangles, packed, {}, element_bytes, stream);
}

// Each rectangle to a place of its own.
inline void pack_rectangles_to(void* base, std::span<const Rectangle> rectangles, std::span<void* const> places,
                               std::size_t element_bytes, StreamHandle stream) {
  pack_rectangles_at<false>(base, rectangles, nullptr, places, element_bytes, stream);
}

}  // namespace tessera::kernels::cuda::detail
