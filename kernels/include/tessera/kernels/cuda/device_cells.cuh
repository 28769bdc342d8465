// The device pass of kernels::for_each_cell (cells.hpp): one thread per cell of a 3-D box.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/device_guard.hpp"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::cuda {
namespace detail {

inline constexpr int kCellTileX = 32;  // cells along axis 2 (the fastest) per thread block
inline constexpr int kCellTileY = 8;   // rows along axis 1

struct CellRange {
  index_t begin0, begin1, begin2;
  index_t n0, n1, n2;
};

// Thread (x, y) of block (bx, by, bz) takes cell (bz, by * 8 + y, bx * 32 + x) of the box, and the
// cells a grid's extent further along each axis where the box passes the grid.
template <class Body>
__global__ void __launch_bounds__(kCellTileX* kCellTileY) for_each_cell_kernel(CellRange r, Body body) {
  const index_t step1 = static_cast<index_t>(gridDim.y) * kCellTileY;
  const index_t step2 = static_cast<index_t>(gridDim.x) * kCellTileX;
  for (index_t i0 = blockIdx.z; i0 < r.n0; i0 += gridDim.z)
    for (index_t i1 = static_cast<index_t>(blockIdx.y) * kCellTileY + threadIdx.y; i1 < r.n1; i1 += step1)
      for (index_t i2 = static_cast<index_t>(blockIdx.x) * kCellTileX + threadIdx.x; i2 < r.n2; i2 += step2)
        body(r.begin0 + i0, r.begin1 + i1, r.begin2 + i2);
}

// The marching order: thread (x, y) of block (bx, by, bz) takes cell (i0, by * 8 + y, bx * 32 + x)
// for `planes` consecutive planes i0 from bz * planes, one after the other, so that the planes a
// stencil reads around i0 were just read by the same thread block (L1 reuse). The grid covers axes 1
// and 2 whole (the caller checks they fit).
template <class Body>
__global__ void __launch_bounds__(kCellTileX* kCellTileY) for_each_cell_march_kernel(CellRange r, index_t planes, Body body) {
  const index_t i1 = static_cast<index_t>(blockIdx.y) * kCellTileY + threadIdx.y;
  const index_t i2 = static_cast<index_t>(blockIdx.x) * kCellTileX + threadIdx.x;
  if (i1 >= r.n1 || i2 >= r.n2) return;
  const index_t first = static_cast<index_t>(blockIdx.z) * planes;
  const index_t last = first + planes < r.n0 ? first + planes : r.n0;
  for (index_t i0 = first; i0 < last; ++i0) body(r.begin0 + i0, r.begin1 + i1, r.begin2 + i2);
}

}  // namespace detail

// How the device pass walks a box: one plane per grid layer (the default), or thread blocks that
// march along axis 0 through several planes each (for_each_cell_march_kernel).
enum class CellOrder { planes, march };

template <class Body>
void for_each_cell(const Queue& queue, const index_t (&begin)[3], const index_t (&end)[3], Body body,
                   CellOrder order = CellOrder::planes) {
  const detail::CellRange r{begin[0], begin[1], begin[2], end[0] - begin[0], end[1] - begin[1], end[2] - begin[2]};
  if (r.n0 <= 0 || r.n1 <= 0 || r.n2 <= 0) return;
  const kernels::cuda::detail::ScopedDevice on_queue_device(queue.device);
  const index_t tiles_x = detail::ceil_div<index_t>(r.n2, detail::kCellTileX);
  const index_t tiles_y = detail::ceil_div<index_t>(r.n1, detail::kCellTileY);
  if (order == CellOrder::march && tiles_x <= 0x7fffffff && tiles_y <= 65535) {
    // Up to 32 planes per thread block, fewer where the grid would then be under 4 waves of 8
    // resident blocks per SM.
    const index_t waves = 4 * 8 * static_cast<index_t>(detail::current_device_info().sm_count);
    index_t planes = std::clamp<index_t>(r.n0 * tiles_x * tiles_y / waves, 1, 32);
    if (detail::ceil_div<index_t>(r.n0, planes) > 65535) planes = detail::ceil_div<index_t>(r.n0, 65535);
    const dim3 grid(static_cast<unsigned>(tiles_x), static_cast<unsigned>(tiles_y),
                    static_cast<unsigned>(detail::ceil_div<index_t>(r.n0, planes)));
    detail::for_each_cell_march_kernel<<<grid, dim3(detail::kCellTileX, detail::kCellTileY, 1), 0,
                                         detail::to_cuda(queue.stream)>>>(r, planes, body);
    TESSERA_CUDA_CHECK_LAUNCH();
    return;
  }
  const dim3 block(detail::kCellTileX, detail::kCellTileY, 1);
  const dim3 grid(static_cast<unsigned>(std::min<index_t>(detail::ceil_div<index_t>(r.n2, detail::kCellTileX), 0x7fffffff)),
                  static_cast<unsigned>(std::min<index_t>(detail::ceil_div<index_t>(r.n1, detail::kCellTileY), 65535)),
                  static_cast<unsigned>(std::min<index_t>(r.n0, 65535)));
  detail::for_each_cell_kernel<<<grid, block, 0, detail::to_cuda(queue.stream)>>>(r, body);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda
