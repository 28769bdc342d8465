// Local stencils on a rank's block: the 5- and 9-point sweep of a row-major 2-D array with the
// caller's weights, the 1-D convolution with a kernel of any radius, and the packing of rectangles of
// a 2-D array into contiguous buffers (the halo exchange moves those).
//
// The sweeps round every product and every sum on its own (no fused multiply-add); the convolution
// takes each term as one fused multiply-add (the product enters the sum unrounded). Both in the
// order written below, on both backends: a result is bitwise the same on cpu and cuda, and the same
// as a serial loop that does the same operations in the same order (for the sweeps, numpy on
// float32 arrays).
//
// Precompiled for float and double (the weights are data, not functors, so there is nothing for a
// user's compiler to instantiate). Arrays are backend memory; stream-ordered under cuda.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/device_wait.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera {

enum class StencilShape { five_point, nine_point };

inline const char* to_string(StencilShape s) { return s == StencilShape::five_point ? "5-point" : "9-point"; }

// The weights of a radius-1 stencil. out(i, j) is
//   centre * in(i, j) + north * in(i-1, j) + south * in(i+1, j) + west * in(i, j-1) + east * in(i, j+1)
// and, for nine_point, + north_west * in(i-1, j-1) + north_east * in(i-1, j+1)
//                      + south_west * in(i+1, j-1) + south_east * in(i+1, j+1),
// summed left to right (row i grows southwards, column j eastwards). The corner weights are ignored
// by five_point.
template <class T>
struct StencilWeights {
  StencilShape shape = StencilShape::five_point;
  T centre{}, north{}, south{}, west{}, east{};
  T north_west{}, north_east{}, south_west{}, south_east{};

  // One Jacobi step for the Laplace equation (the steady heat equation) with the 5-point Laplacian:
  // the mean of the four neighbours.
  static StencilWeights jacobi5() {
    StencilWeights w;
    w.north = w.south = w.west = w.east = T(0.25);
    return w;
  }
  // The same with the 9-point (Mehrstellen) Laplacian, (4 (N + S + W + E) + NW + NE + SW + SE) / 20.
  static StencilWeights jacobi9() {
    StencilWeights w;
    w.shape = StencilShape::nine_point;
    w.north = w.south = w.west = w.east = T(0.2);
    w.north_west = w.north_east = w.south_west = w.south_east = T(0.05);
    return w;
  }
};

namespace kernels {

// out[r * out_ld + c] = the stencil at in[r * in_ld + c], for 0 <= r < rows and 0 <= c < cols.
// `in` is read at rows -1 .. rows and columns -1 .. cols (a ghost ring around the region, at negative
// offsets from `in`); `out` is written in the region only and does not overlap `in`. The corners of
// the ring are read by nine_point only.
//
// max_change: null, or backend memory holding a T >= 0, which becomes the larger of itself and
// max |out - in| over the region (a NaN difference wins): several sweeps may add to one value. Set
// it to 0 before the first.
void stencil_2d(const Queue& queue, const float* in, index_t in_ld, float* out, index_t out_ld, index_t rows,
                index_t cols, const StencilWeights<float>& weights, float* max_change = nullptr);
void stencil_2d(const Queue& queue, const double* in, index_t in_ld, double* out, index_t out_ld, index_t rows,
                index_t cols, const StencilWeights<double>& weights, double* max_change = nullptr);

// The frame of a region of stencil_2d: the cells within `top` rows of its first row, `bottom` rows of
// its last, `left` columns of its first column and `right` columns of its last (a frame at least as
// wide as the region is the whole region).
struct StencilFrame {
  index_t top = 0, bottom = 0, left = 0, right = 0;

  // One part of the frame: rows x cols cells from (row, col) of the region (possibly empty).
  struct Part {
    index_t row = 0, col = 0, rows = 0, cols = 0;
  };
  // The frame of a rows x cols region as four disjoint parts, each width clipped to what is left:
  // the top rows, the bottom rows, then the left and right columns of the rows between.
  std::array<Part, 4> parts(index_t rows, index_t cols) const {
    if (rows <= 0 || cols <= 0) return {};
    const index_t t = std::min(top, rows), b = std::min(bottom, rows - t), middle = rows - t - b;
    const index_t l = std::min(left, cols), r = std::min(right, cols - l);
    return {Part{0, 0, t, cols}, Part{rows - b, 0, b, cols}, Part{t, 0, middle, l}, Part{t, cols - r, middle, r}};
  }
};

// A rectangle of a row-major 2-D array: the elements at base + offset + r * ld + c for r < rows and
// c < cols (offset may be negative: ghost cells before a block's first owned element); or a stack
// of `planes` such rectangles `plane_stride` elements apart (a box of a 3-D array), packed plane
// after plane, row after row.
struct Rectangle {
  index_t offset = 0;
  index_t ld = 0;
  index_t rows = 0;
  index_t cols = 0;
  index_t planes = 1;
  index_t plane_stride = 0;
  index_t size() const { return planes * rows * cols; }
};

// stencil_2d over the frame of the region only, as one launch under cuda: the cells a halo exchange
// sends, swept before the interior so that their exchange can run beside it.
//
// pack_to, packed: rectangles of the output region (offsets >= 0 from `out`, ld out_ld), each within
// the frame, whose cells are also written to `packed` as they are computed: afterwards `packed`
// holds what pack_rectangles(out, pack_to) would give (the halo's packed send buffer, with no pass
// of its own). Under cuda in the same launch for up to kMaxFramePacks rectangles, by a pack after it
// for more.
inline constexpr std::size_t kMaxFramePacks = 8;
void stencil_2d_frame(const Queue& queue, const float* in, index_t in_ld, float* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<float>& weights,
                      float* max_change = nullptr, std::span<const Rectangle> pack_to = {}, float* packed = nullptr);
void stencil_2d_frame(const Queue& queue, const double* in, index_t in_ld, double* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<double>& weights,
                      double* max_change = nullptr, std::span<const Rectangle> pack_to = {}, double* packed = nullptr);

// A rectangle of stencil_2d_frame's output region (offset >= 0 from `out`, ld out_ld, within the
// frame) whose cells the sweep also writes elsewhere as it computes them: cell (r, c) of the
// rectangle to to[r * to_ld + c]. `to` is memory of the queue's backend: under cuda the queue's
// device's, or another GPU's mapped into this process (CUDA IPC), so that the frame's cells go
// straight into a neighbour's ghost cells. The rectangles' destinations do not overlap each other
// or the region.
template <class T>
struct FrameCopy {
  Rectangle from;
  T* to = nullptr;
  index_t to_ld = 0;
};
// The rectangles with their destinations one after the other in `packed`, each row-major: the
// pack_to form of stencil_2d_frame as copies (a caller that sweeps the same frame often makes them
// once).
template <class T>
std::vector<FrameCopy<T>> packed_copies(std::span<const Rectangle> rectangles, T* packed) {
  std::vector<FrameCopy<T>> copies;
  index_t at = 0;
  for (const Rectangle& r : rectangles) {
    copies.push_back({r, packed + at, r.cols});
    at += r.size() > 0 ? r.size() : 0;
  }
  return copies;
}
// stencil_2d_frame whose rectangles go to their destinations: under cuda in the same launch for up to
// kMaxFramePacks rectangles, by copies after it for more. The pack_to form above is this with
// packed_copies(pack_to, packed).
void stencil_2d_frame(const Queue& queue, const float* in, index_t in_ld, float* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<float>& weights, float* max_change,
                      std::span<const FrameCopy<float>> copies);
void stencil_2d_frame(const Queue& queue, const double* in, index_t in_ld, double* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<double>& weights,
                      double* max_change, std::span<const FrameCopy<double>> copies);

// The flags around a frame swept by stencil_2d_frame_last (see kernels::write_flag for flags):
// its cells are read and written once each flag of `wait` (memory of the queue's device, set by
// work on other devices) is at least wait_value; each flag of `set` (memory of the queue's device
// or mapped) grows by kFrameFlagStep once every cell and copy is stored (into mapped memory too):
// the launch's thread blocks each add a share of the step after the part of the frame they store,
// so a flag's value is a whole number of steps only once every part is stored.
inline constexpr std::uint64_t kFrameFlagStep = std::uint64_t(1) << 32;
struct FrameFlags {
  static constexpr int kMax = 8;
  int waits = 0;
  const std::uint64_t* wait[kMax]{};
  int wait_peer[kMax]{};  // the rank that sets each flag of `wait`, for a limit that expires
  std::uint64_t wait_value = 0;
  DeviceWaitLimit limit;  // the polling thread gives up as wait_flag under a limit does
  int sets = 0;
  std::uint64_t* set[kMax]{};
};
// The whole region swept in one launch, the frame last: the interior (the region less the frame)
// as stencil_2d sweeps it, then, in the thread blocks that swept it, the frame's cells with their
// copies as stencil_2d_frame writes them, ordered by `flags`. For a frame that has no room on the
// SMs while the interior runs (a thread block of it would not fit beside as many of the interior's
// as an SM holds), which launched on its own would run only after it, behind a launch and a
// hand-off between queues. Under cuda where a frame launched on its own would not have that room,
// the interior takes the ring-of-rows sweep (sm_90, interior in and out on 16-byte boundaries, lds
// of whole 16-byte vectors, wider than 16 columns), the frame has cells, at most kMaxFramePacks
// copies, and takes at most a quarter of the launch's thread blocks (256 cells to a block; with
// more, the blocks that sweep it would lengthen the launch): returns true.
// Returns false and queues nothing otherwise (and under cpu); the caller sweeps the parts as it
// would without it (the frame on another queue beside the interior). The flags waited for must be set by work on other devices: a thread block
// polls them on an SM the device's other work cannot take meanwhile.
bool stencil_2d_frame_last(const Queue& queue, const float* in, index_t in_ld, float* out, index_t out_ld,
                           index_t rows, index_t cols, const StencilFrame& frame, const StencilWeights<float>& weights,
                           float* max_change, std::span<const FrameCopy<float>> copies, const FrameFlags& flags);
bool stencil_2d_frame_last(const Queue& queue, const double* in, index_t in_ld, double* out, index_t out_ld,
                           index_t rows, index_t cols, const StencilFrame& frame, const StencilWeights<double>& weights,
                           double* max_change, std::span<const FrameCopy<double>> copies, const FrameFlags& flags);

// One sweep of a region whose frame's cells also go into other devices' memory (copies: the
// neighbours' ghost cells, mapped through CUDA IPC), overlapped with the interior and ordered by
// flags (FrameFlags): the frame's cells are read and written once every flag of flags.wait is at
// least flags.wait_value (no wait where that is 0), and each flag of flags.set then holds
// flags.wait_value + kFrameFlagStep. The kernels choose how: one launch on `queue`, the frame last
// in the thread blocks that swept the interior, polling and setting the flags themselves
// (stencil_2d_frame_last), where `flags_polled` allows it (every flag waited for is set by work on
// another device) and the frame would find no room beside the interior; otherwise the interior on
// `queue` and the frame with its copies on `frame_queue` (a queue of higher priority on the same
// device) beside it, the flags as operations on frame_queue (write_flag, wait_flag under
// flags.limit); a region with no interior is swept whole as the frame. The work queued on `queue`
// before the call precedes all of it, and the work queued after follows it. Returns true where it
// took the one launch. Under cuda only (UsageError otherwise).
bool stencil_2d_stored_frame(const Queue& queue, const Queue& frame_queue, const float* in, index_t in_ld, float* out,
                             index_t out_ld, index_t rows, index_t cols, const StencilFrame& frame,
                             const StencilWeights<float>& weights, float* max_change,
                             std::span<const FrameCopy<float>> copies, const FrameFlags& flags, bool flags_polled);
bool stencil_2d_stored_frame(const Queue& queue, const Queue& frame_queue, const double* in, index_t in_ld, double* out,
                             index_t out_ld, index_t rows, index_t cols, const StencilFrame& frame,
                             const StencilWeights<double>& weights, double* max_change,
                             std::span<const FrameCopy<double>> copies, const FrameFlags& flags, bool flags_polled);

// The 1-D convolution with 2 radius + 1 weights, as numpy.convolve:
//   out[i] = weights[0] * in[i + radius] + weights[1] * in[i + radius - 1] + ... + weights[2 radius] * in[i - radius]
// accumulated left to right, acc = fma(weights[k], in[i + radius - k], acc) for k = 0 .. 2 radius from
// acc = -0 (so the first term is the product rounded once), for 0 <= i < n. `in` is read on [-radius,
// n + radius); out does not overlap it. `weights` is host memory. Any radius >= 0.
void convolve_1d(const Queue& queue, const float* in, index_t n, std::span<const float> weights, float* out);
void convolve_1d(const Queue& queue, const double* in, index_t n, std::span<const double> weights, double* out);

// Copies the rectangles of the array at `base`, one after the other and each row-major, into the
// contiguous `packed` (pack), or back (unpack). Elements of element_bytes bytes; one kernel for all
// rectangles under cuda. `packed` and the rectangles do not overlap; the rectangles of an unpack do
// not overlap each other.
void pack_rectangles(const Queue& queue, const void* base, std::span<const Rectangle> rectangles, void* packed,
                     std::size_t element_bytes);
void unpack_rectangles(const Queue& queue, const void* packed, std::span<const Rectangle> rectangles, void* base,
                       std::size_t element_bytes);
// pack_rectangles with a place of its own for each rectangle: rectangle i, row-major, at places[i]
// (places.size() == rectangles.size()), memory the queue's device can write, a neighbour's mapped
// through CUDA IPC included: the halo's pack straight into its receivers' buffers.
void pack_rectangles_to(const Queue& queue, const void* base, std::span<const Rectangle> rectangles,
                        std::span<void* const> places, std::size_t element_bytes);
// unpack_rectangles with a place of its own for each rectangle: rectangle i, row-major, from
// places[i] (the messages of a halo, each received on a 16-byte boundary of one buffer).
void unpack_rectangles_from(const Queue& queue, std::span<void* const> places, std::span<const Rectangle> rectangles,
                            void* base, std::size_t element_bytes);

}  // namespace kernels
}  // namespace tessera
