// The library's stencil kernels instantiated in this program as well: the same kernel template
// instance then lives in two loaded modules (libtessera_kernels and this binary), while the host
// functions that guard it (cell_rows_available, for_each_cell_tiled) keep their statics once for
// the process. Each launch must lift the shared memory limit of the module it reaches, whichever
// module's call came first; both modules' sweeps are checked bitwise against the cpu backend.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "tessera/kernels/cuda/device_stencil.cuh"
#include "tessera/kernels/kernels.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera::gpu_test {
namespace {

namespace detail = kernels::cuda::detail;

// A rows x cols region at (1, 16 bytes) of a frame of rows + 2 rows: input and output on 16-byte
// boundaries, rows that keep them; deep and wide enough for the bulk ring and the tiled pass.
template <class T>
struct Region {
  static constexpr index_t kLead = 16 / sizeof(T);
  index_t rows, cols, ld;
  std::vector<T> input;
  T* in = nullptr;
  T* out = nullptr;
  Region(index_t r, index_t c, std::uint64_t seed) : rows(r), cols(c), ld((c + 2 * kLead + kLead - 1) / kLead * kLead) {
    input = host_generate<T>(size(), seed);
    in = static_cast<T*>(kernels::allocate(cuda_queue(), bytes()));
    out = static_cast<T*>(kernels::allocate(cuda_queue(), bytes()));
    kernels::copy_from_host(cuda_queue(), in, input.data(), bytes());
  }
  ~Region() {
    kernels::deallocate(cuda_queue(), in);
    kernels::deallocate(cuda_queue(), out);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  index_t size() const { return (rows + 2) * ld; }
  std::size_t bytes() const { return static_cast<std::size_t>(size()) * sizeof(T); }
  index_t origin() const { return ld + kLead; }

  // The cpu backend's sweep of the region, and the device's output region after `sweep` wrote it.
  std::vector<T> want(const StencilWeights<T>& w) const {
    std::vector<T> all(static_cast<std::size_t>(size()), T(0));
    kernels::stencil_2d(cpu_queue(), input.data() + origin(), ld, all.data() + origin(), ld, rows, cols, w);
    return region_of(all);
  }
  std::vector<T> got() const {
    std::vector<T> all(static_cast<std::size_t>(size()));
    kernels::copy_to_host(cuda_queue(), all.data(), out, bytes());
    return region_of(all);
  }
  std::vector<T> region_of(const std::vector<T>& all) const {
    std::vector<T> cells;
    for (index_t r = 0; r < rows; ++r)
      for (index_t c = 0; c < cols; ++c) cells.push_back(all[static_cast<std::size_t>(origin() + r * ld + c)]);
    return cells;
  }
  void clear() const { poison_bytes(out, bytes(), 0xFF); }
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The float sweep's ring of rows (stencil_2d's path for aligned float regions on sm_90): this
// program's guard runs first, then the library's sweep, then this program's own launch.
TEST(StencilModules, TheRingOfRowsLaunchesFromTheLibraryAndFromTheProgram) {
  using T = float;
  using Bulk = detail::Stencil2dBulkTuning;
  Region<T> region(300, 517, test_seed());
  const StencilWeights<T> w = StencilWeights<T>::jacobi5();
  const std::vector<T> want = region.want(w);
  using Cell = detail::StencilSweepCell<T, false>;
  const bool ring = detail::cell_rows_available<Cell, Bulk>();  // this module's call first
  region.clear();
  kernels::stencil_2d(cuda_queue(), region.in + region.origin(), region.ld, region.out + region.origin(), region.ld,
                      region.rows, region.cols, w);
  EXPECT_TRUE(same_bits(region.got(), want)) << "the library's sweep";
  if (!ring) GTEST_SKIP() << "the ring of rows does not run on this device (sm_90 and later)";
  region.clear();
  ASSERT_TRUE((detail::cell_rows_available<Cell, Bulk>()));
  ASSERT_TRUE((detail::stencil_2d_rows<T, false, Bulk>(cuda_queue(), region.in + region.origin(), region.ld,
                                                       region.out + region.origin(), region.ld, region.rows,
                                                       region.cols, w, nullptr)))
      << "the ring of rows took the region";
  EXPECT_TRUE(same_bits(region.got(), want)) << "this program's launch of the ring";
}

// The double sweep's tiled pass (stencil_2d's path for aligned double regions): the library's
// sweep first, then this program's launch of the same instance of the pass.
TEST(StencilModules, TheTiledPassLaunchesFromTheLibraryAndFromTheProgram) {
  using T = double;
  using Shape = detail::Stencil2dTiledTuning<T>;
  Region<T> region(301, 1030, test_seed() + 1);
  const StencilWeights<T> w = StencilWeights<T>::jacobi9();
  const std::vector<T> want = region.want(w);
  region.clear();
  kernels::stencil_2d(cuda_queue(), region.in + region.origin(), region.ld, region.out + region.origin(), region.ld,
                      region.rows, region.cols, w);
  EXPECT_TRUE(same_bits(region.got(), want)) << "the library's sweep";
  region.clear();
  const detail::CellRange r{0, 0, 0, 1, region.rows, region.cols};
  const detail::StencilSweepCell<T, true> cell{region.in + region.origin(), region.ld, region.out + region.origin(),
                                               region.ld, w};
  ASSERT_TRUE((detail::for_each_cell_tiled<detail::StencilSweepCell<T, true>, Shape>(cuda_queue(), r, cell)));
  EXPECT_TRUE(same_bits(region.got(), want)) << "this program's launch of the tiled pass";
}

}  // namespace
}  // namespace tessera::gpu_test
