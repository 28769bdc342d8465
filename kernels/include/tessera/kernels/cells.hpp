// A local pass over a box of cells of a 3-D array with the caller's functor:
//
//   for_each_cell(queue, box, body)   body(i0, i1, i2) for every cell of `box`, in no particular order
//
// The coordinates are whatever the caller counts in (the user stencil passes local coordinates of
// a field's block); axis 2 varies fastest between neighbouring threads, so a body that reads and
// writes row-major arrays at (i0, i1, i2) touches consecutive addresses. The body must be callable
// where the backend runs it, as for kernels::transform (detail/dispatch.hpp): any host functor on a
// cpu queue; under cuda, a TESSERA_HOST_DEVICE functor in a translation unit compiled by nvcc.
//
//   cpu   OpenMP over the rows (i0, i1) of the box (cpu::parallel_for), the row's cells in order.
//   cuda  one thread per cell: thread blocks of 32 x 4 cells of an (i2, i1) tile, one plane i0 per
//         grid layer (grid-stride loops where an extent passes the grid's limits); for a body that
//         reads a neighbourhood of one array (cuda::TiledCellBody, the user stencil's cell) on a wide
//         box, thread blocks that stage a tile of it in shared memory and march along axis 0 (axis 1
//         in 2-D), for a 3-D star wider than one cell with its column along axis 0 in registers
//         (cuda::ColumnCellBody), or that march along axis 0 reading it where it lies
//         (cuda/device_cells.cuh says when each order runs; bench_stencil_3d times them).
//         Stream-ordered.
#pragma once

#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/parallel.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/queue.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/device_cells.cuh"
#endif

namespace tessera::kernels {

// The cells [begin[a], end[a]) along each axis a; empty where any end <= begin.
struct CellBox {
  index_t begin[3] = {0, 0, 0};
  index_t end[3] = {0, 0, 0};
  index_t extent(int axis) const { return end[axis] > begin[axis] ? end[axis] - begin[axis] : 0; }
  index_t cells() const { return extent(0) * extent(1) * extent(2); }
  bool empty() const { return cells() == 0; }
};

namespace cpu {
template <class Body>
void for_each_cell(const CellBox& box, Body& body) {
  const index_t n1 = box.extent(1), n2 = box.extent(2), rows = box.extent(0) * n1;
  if (rows == 0 || n2 == 0) return;
  // Threads by cells, not rows: a box of few long rows still spreads.
  const int threads = threads_for(box.cells());
  parallel_for_chunks(rows, static_cast<int>(std::min<index_t>(threads, rows)), [&](int, Chunk chunk) {
    for (index_t r = chunk.begin; r < chunk.end; ++r) {
      const index_t i0 = box.begin[0] + r / n1, i1 = box.begin[1] + r % n1;
      for (index_t i2 = box.begin[2]; i2 < box.end[2]; ++i2) body(i0, i1, i2);
    }
  });
}
}  // namespace cpu

template <class Body>
void for_each_cell(const Queue& queue, const CellBox& box, Body body) {
  if (box.empty()) return;
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Body>) {
      cpu::for_each_cell(box, body);
    } else {
      detail::throw_device_only_functor_on_cpu("for_each_cell");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<Body>()) {
      cuda::for_each_cell(queue, box.begin, box.end, body);
    }
#else
    detail::throw_needs_cuda_compiler("for_each_cell (a user stencil or a field's generate)");
#endif
  }
}

}  // namespace tessera::kernels
