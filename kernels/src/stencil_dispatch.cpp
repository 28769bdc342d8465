// The stencil operations (tessera/kernels/stencil.hpp): argument checks, then the backend named by
// the queue.
#include <algorithm>
#include <string>

#include "backend_dispatch.hpp"
#include "memory_backends.hpp"
#include "stencil_backends.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/device_wait.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::kernels {
namespace {

template <class T>
void check_stencil(index_t in_ld, index_t out_ld, index_t rows, index_t cols) {
  TESSERA_ASSERT(rows >= 0 && cols >= 0, "stencil_2d: negative extent");
  TESSERA_ASSERT(rows == 0 || cols == 0 || (in_ld >= cols + 2 && out_ld >= cols),
                 "stencil_2d: leading dimension smaller than the row (input rows need a ghost column each side)");
}

template <class T>
void dispatch_stencil(const Queue& q, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                      const StencilWeights<T>& weights, T* max_change) {
  check_stencil<T>(in_ld, out_ld, rows, cols);
  TESSERA_DISPATCH(q, cpu::stencil_2d(in, in_ld, out, out_ld, rows, cols, weights, max_change),
                   cuda::stencil_2d(q, in, in_ld, out, out_ld, rows, cols, weights, max_change));
}

// The frame's parts one after the other (StencilFrame::parts).
template <class T>
void cpu_stencil_frame(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                       const StencilFrame& frame, const StencilWeights<T>& weights, T* max_change) {
  for (const StencilFrame::Part& p : frame.parts(rows, cols))
    if (p.rows > 0 && p.cols > 0)
      cpu::stencil_2d(in + p.row * in_ld + p.col, in_ld, out + p.row * out_ld + p.col, out_ld, p.rows, p.cols, weights,
                      max_change);
}

// Whether rectangle r (offset from the region's first cell, ld out_ld) lies within the region and
// meets none of its cells inside the frame (StencilFrame::parts clips the widths the same way).
bool within_frame(const Rectangle& r, index_t out_ld, index_t rows, index_t cols, const StencilFrame& frame) {
  if (r.rows <= 0 || r.cols <= 0) return true;
  if (r.offset < 0 || r.ld != out_ld) return false;
  const index_t row = r.offset / out_ld, col = r.offset % out_ld;
  if (row + r.rows > rows || col + r.cols > cols) return false;
  const index_t t = std::min(frame.top, rows), b = std::min(frame.bottom, rows - t);
  const index_t l = std::min(frame.left, cols), right = std::min(frame.right, cols - l);
  // A frame as wide as the region leaves no inside to meet (rows - b == t or cols - right == l).
  const bool has_inside = rows - b > t && cols - right > l;
  const bool meets_inside = has_inside && row < rows - b && row + r.rows > t && col < cols - right && col + r.cols > l;
  return !meets_inside;
}

// The frame and its copies (stencil_2d_frame, stencil_2d_frame_last: `operation`).
template <class T>
void check_frame(const char* operation, index_t in_ld, index_t out_ld, index_t rows, index_t cols,
                 const StencilFrame& frame, std::span<const FrameCopy<T>> copies) {
  check_stencil<T>(in_ld, out_ld, rows, cols);
  // The messages are made only when a check fails (TESSERA_ASSERT evaluates them there).
  TESSERA_ASSERT(frame.top >= 0 && frame.bottom >= 0 && frame.left >= 0 && frame.right >= 0,
                 std::string(operation) + ": negative frame width");
  for (const FrameCopy<T>& c : copies) {
    TESSERA_ASSERT(within_frame(c.from, out_ld, rows, cols, frame),
                   std::string(operation) + ": a rectangle to copy outside the frame");
    TESSERA_ASSERT(c.from.size() == 0 || (c.to != nullptr && c.to_ld >= c.from.cols),
                   std::string(operation) + ": a rectangle to copy without a destination, or a destination ld below its width");
  }
}

template <class T>
void dispatch_stencil_frame(const Queue& q, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows,
                            index_t cols, const StencilFrame& frame, const StencilWeights<T>& weights, T* max_change,
                            std::span<const FrameCopy<T>> copies) {
  check_frame("stencil_2d_frame", in_ld, out_ld, rows, cols, frame, copies);
  // Under cuda the first kMaxFramePacks rectangles in the launch, the rest copied after it, behind them.
  const std::span<const FrameCopy<T>> fused = copies.first(std::min(copies.size(), kMaxFramePacks));
  auto copy_after = [&](std::span<const FrameCopy<T>> rest, auto copy_2d) {
    for (const FrameCopy<T>& c : rest)
      if (c.from.size() > 0)
        copy_2d(c.to, static_cast<std::size_t>(c.to_ld) * sizeof(T), out + c.from.offset,
                static_cast<std::size_t>(out_ld) * sizeof(T), static_cast<std::size_t>(c.from.cols) * sizeof(T),
                static_cast<std::size_t>(c.from.rows));
  };
  TESSERA_DISPATCH(q,
                   {
                     cpu_stencil_frame(in, in_ld, out, out_ld, rows, cols, frame, weights, max_change);
                     copy_after(copies, cpu::copy_2d);
                   },
                   {
                     cuda::stencil_2d_frame(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, fused);
                     copy_after(copies.subspan(fused.size()), [&](auto... a) { cuda::copy_2d_async(q, a...); });
                   });
}

// The pack_to form: the destinations one after the other in `packed`.
template <class T>
void dispatch_stencil_frame(const Queue& q, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows,
                            index_t cols, const StencilFrame& frame, const StencilWeights<T>& weights, T* max_change,
                            std::span<const Rectangle> pack_to, T* packed) {
  TESSERA_ASSERT(packed != nullptr || std::all_of(pack_to.begin(), pack_to.end(), [](const Rectangle& r) { return r.size() == 0; }),
                 "stencil_2d_frame: rectangles to pack and no packed buffer");
  dispatch_stencil_frame<T>(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change,
                            packed_copies(pack_to, packed));
}

// Under cpu nothing is queued (a build without CUDA reads neither the arrays nor the weights).
template <class T>
bool dispatch_stencil_frame_last(const Queue& q, [[maybe_unused]] const T* in, index_t in_ld, [[maybe_unused]] T* out,
                                 index_t out_ld, index_t rows, index_t cols, const StencilFrame& frame,
                                 [[maybe_unused]] const StencilWeights<T>& weights, [[maybe_unused]] T* max_change,
                                 std::span<const FrameCopy<T>> copies, const FrameFlags& flags) {
  check_frame("stencil_2d_frame_last", in_ld, out_ld, rows, cols, frame, copies);
  TESSERA_ASSERT(flags.waits >= 0 && flags.sets >= 0, "stencil_2d_frame_last: a negative flag count");
  bool queued = false;
  TESSERA_DISPATCH(q, queued = false,
                   queued = cuda::stencil_2d_frame_last(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change,
                                                        copies, flags));
  return queued;
}

template <class T>
bool dispatch_stencil_stored_frame(const Queue& q, const Queue& frame_queue, const T* in, index_t in_ld, T* out,
                                   index_t out_ld, index_t rows, index_t cols, const StencilFrame& frame,
                                   const StencilWeights<T>& weights, T* max_change, std::span<const FrameCopy<T>> copies,
                                   const FrameFlags& flags, bool flags_polled) {
  if (q.backend != Backend::cuda || frame_queue.backend != Backend::cuda || frame_queue.device != q.device)
    throw UsageError("stencil_2d_stored_frame: both queues under cuda, on one device");
  // A region with no interior is all frame. (The frame and its copies are checked by the launch
  // that takes them: stencil_2d_frame_last's, or stencil_2d_frame's below.)
  const bool interior = rows > frame.top + frame.bottom && cols > frame.left + frame.right;
  const StencilFrame swept = interior ? frame : StencilFrame{rows, rows, cols, cols};
  TESSERA_ASSERT(flags.waits >= 0 && flags.waits <= FrameFlags::kMax && flags.sets >= 0 && flags.sets <= FrameFlags::kMax,
                 "stencil_2d_stored_frame: a flag count outside 0 .. FrameFlags::kMax");
  if (interior && flags_polled &&
      dispatch_stencil_frame_last(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, copies, flags))
    return true;
  // The frame's queue waits for what came before (the last sweep read what this one overwrites).
  queue_wait(frame_queue, q);
  if (interior) {
    const index_t in_at = frame.top * in_ld + frame.left, out_at = frame.top * out_ld + frame.left;
    dispatch_stencil(q, in + in_at, in_ld, out + out_at, out_ld, rows - frame.top - frame.bottom,
                     cols - frame.left - frame.right, weights, max_change);
  }
  if (flags.wait_value > 0)
    for (int k = 0; k < flags.waits; ++k)
      wait_flag(frame_queue, flags.wait[k], flags.wait_value, flags.limit, flags.wait_peer[k]);
  dispatch_stencil_frame(frame_queue, in, in_ld, out, out_ld, rows, cols, swept, weights, max_change, copies);
  for (int k = 0; k < flags.sets; ++k) write_flag(frame_queue, flags.set[k], flags.wait_value + kFrameFlagStep);
  queue_wait(q, frame_queue);
  return false;
}

template <class T>
void dispatch_convolve(const Queue& q, const T* in, index_t n, std::span<const T> weights, T* out) {
  TESSERA_ASSERT(n >= 0, "convolve_1d: negative element count");
  if (weights.size() % 2 != 1)
    throw UsageError("convolve_1d: " + std::to_string(weights.size()) +
                     " weights; a kernel of radius r has 2 r + 1 weights (an odd count)");
  TESSERA_DISPATCH(q, cpu::convolve_1d(in, n, weights, out), cuda::convolve_1d(q, in, n, weights, out));
}

void check_rectangles(std::span<const Rectangle> rectangles, const char* operation) {
  for (const Rectangle& r : rectangles)
    if (r.rows < 0 || r.cols < 0 || r.planes < 0 || (r.rows > 1 && r.ld < r.cols) ||
        (r.planes > 1 && r.rows > 0 && r.plane_stride < (r.rows - 1) * r.ld + r.cols))
      TESSERA_FATAL(operation, "bad rectangle");
}

}  // namespace

void stencil_2d(const Queue& q, const float* in, index_t in_ld, float* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<float>& weights, float* max_change) {
  dispatch_stencil(q, in, in_ld, out, out_ld, rows, cols, weights, max_change);
}

void stencil_2d(const Queue& q, const double* in, index_t in_ld, double* out, index_t out_ld, index_t rows,
                index_t cols, const StencilWeights<double>& weights, double* max_change) {
  dispatch_stencil(q, in, in_ld, out, out_ld, rows, cols, weights, max_change);
}

void stencil_2d_frame(const Queue& q, const float* in, index_t in_ld, float* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<float>& weights, float* max_change,
                      std::span<const Rectangle> pack_to, float* packed) {
  dispatch_stencil_frame(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, pack_to, packed);
}

void stencil_2d_frame(const Queue& q, const double* in, index_t in_ld, double* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<double>& weights,
                      double* max_change, std::span<const Rectangle> pack_to, double* packed) {
  dispatch_stencil_frame(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, pack_to, packed);
}

bool stencil_2d_frame_last(const Queue& q, const float* in, index_t in_ld, float* out, index_t out_ld, index_t rows,
                           index_t cols, const StencilFrame& frame, const StencilWeights<float>& weights,
                           float* max_change, std::span<const FrameCopy<float>> copies, const FrameFlags& flags) {
  return dispatch_stencil_frame_last(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, copies, flags);
}

bool stencil_2d_frame_last(const Queue& q, const double* in, index_t in_ld, double* out, index_t out_ld, index_t rows,
                           index_t cols, const StencilFrame& frame, const StencilWeights<double>& weights,
                           double* max_change, std::span<const FrameCopy<double>> copies, const FrameFlags& flags) {
  return dispatch_stencil_frame_last(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, copies, flags);
}

bool stencil_2d_stored_frame(const Queue& q, const Queue& frame_queue, const float* in, index_t in_ld, float* out,
                             index_t out_ld, index_t rows, index_t cols, const StencilFrame& frame,
                             const StencilWeights<float>& weights, float* max_change,
                             std::span<const FrameCopy<float>> copies, const FrameFlags& flags, bool flags_polled) {
  return dispatch_stencil_stored_frame(q, frame_queue, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change,
                                       copies, flags, flags_polled);
}

bool stencil_2d_stored_frame(const Queue& q, const Queue& frame_queue, const double* in, index_t in_ld, double* out,
                             index_t out_ld, index_t rows, index_t cols, const StencilFrame& frame,
                             const StencilWeights<double>& weights, double* max_change,
                             std::span<const FrameCopy<double>> copies, const FrameFlags& flags, bool flags_polled) {
  return dispatch_stencil_stored_frame(q, frame_queue, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change,
                                       copies, flags, flags_polled);
}

void stencil_2d_frame(const Queue& q, const float* in, index_t in_ld, float* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<float>& weights, float* max_change,
                      std::span<const FrameCopy<float>> copies) {
  dispatch_stencil_frame(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, copies);
}

void stencil_2d_frame(const Queue& q, const double* in, index_t in_ld, double* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<double>& weights,
                      double* max_change, std::span<const FrameCopy<double>> copies) {
  dispatch_stencil_frame(q, in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, copies);
}

void convolve_1d(const Queue& q, const float* in, index_t n, std::span<const float> weights, float* out) {
  dispatch_convolve(q, in, n, weights, out);
}

void convolve_1d(const Queue& q, const double* in, index_t n, std::span<const double> weights, double* out) {
  dispatch_convolve(q, in, n, weights, out);
}

void pack_rectangles(const Queue& q, const void* base, std::span<const Rectangle> rectangles, void* packed,
                     std::size_t element_bytes) {
  check_rectangles(rectangles, "pack_rectangles");
  TESSERA_DISPATCH(q, cpu::pack_rectangles(base, rectangles, packed, element_bytes),
                   cuda::pack_rectangles(q, base, rectangles, packed, element_bytes));
}

void pack_rectangles_to(const Queue& q, const void* base, std::span<const Rectangle> rectangles,
                        std::span<void* const> places, std::size_t element_bytes) {
  check_rectangles(rectangles, "pack_rectangles_to");
  if (places.size() != rectangles.size()) TESSERA_FATAL("pack_rectangles_to", "one place per rectangle");
  TESSERA_DISPATCH(q, cpu::pack_rectangles_to(base, rectangles, places, element_bytes),
                   cuda::pack_rectangles_to(q, base, rectangles, places, element_bytes));
}

void unpack_rectangles_from(const Queue& q, std::span<void* const> places, std::span<const Rectangle> rectangles,
                            void* base, std::size_t element_bytes) {
  check_rectangles(rectangles, "unpack_rectangles_from");
  if (places.size() != rectangles.size()) TESSERA_FATAL("unpack_rectangles_from", "one place per rectangle");
  TESSERA_DISPATCH(q, cpu::unpack_rectangles_from(places, rectangles, base, element_bytes),
                   cuda::unpack_rectangles_from(q, places, rectangles, base, element_bytes));
}

void unpack_rectangles(const Queue& q, const void* packed, std::span<const Rectangle> rectangles, void* base,
                       std::size_t element_bytes) {
  check_rectangles(rectangles, "unpack_rectangles");
  TESSERA_DISPATCH(q, cpu::unpack_rectangles(packed, rectangles, base, element_bytes),
                   cuda::unpack_rectangles(q, packed, rectangles, base, element_bytes));
}

}  // namespace tessera::kernels
