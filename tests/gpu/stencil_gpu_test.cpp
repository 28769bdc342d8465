// The CUDA stencils against the CPU backend, bit for bit (the sweeps round each product and sum on
// its own, the convolution takes each tap as one fused multiply-add, in the same order on both): the
// 5- and 9-point sweep with Laplace and random weights on regions of odd shapes, at every
// misalignment of the input and output rows (the 16-byte path and the element path), with the
// residual (max |out - in|); the 1-D convolution at radii on both sides of the kernel by lanes'
// limit and beyond one pass of taps, at tile edges and misaligned pointers; the packing of
// rectangles (more than one launch's worth, elements of 2, 4, 8 and 12 bytes); the frame of a region
// alone. Outputs are poisoned first: cells outside the region must keep the poison.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu_test_support.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera::gpu_test {
namespace {

template <class T>
class StencilGpu : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(StencilGpu, FloatTypes);

// Bytes of host memory that the device copies hold too: an array on both backends.
template <class T>
struct Mirrored {
  std::vector<T> host;
  T* device = nullptr;
  explicit Mirrored(const std::vector<T>& values) : host(values) {
    device = static_cast<T*>(kernels::allocate(cuda_queue(), host.size() * sizeof(T)));
    kernels::copy_from_host(cuda_queue(), device, host.data(), host.size() * sizeof(T));
  }
  ~Mirrored() { kernels::deallocate(cuda_queue(), device); }
  Mirrored(const Mirrored&) = delete;
  Mirrored& operator=(const Mirrored&) = delete;
  std::vector<T> device_to_host() const {
    std::vector<T> back(host.size());
    kernels::copy_to_host(cuda_queue(), back.data(), device, back.size() * sizeof(T));
    return back;
  }
};

template <class T>
std::vector<T> poisoned(std::size_t n) {
  std::vector<T> v(n);
  std::memset(v.data(), DeviceArray<T>::poison_byte(), n * sizeof(T));
  return v;
}

// Index of the first element whose bytes differ, or -1.
template <class T>
index_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<index_t>(i);
  return -1;
}

template <class T>
StencilWeights<T> random_weights(StencilShape shape, std::uint64_t seed) {
  const auto v = host_generate<T>(9, seed);
  StencilWeights<T> w;
  w.shape = shape;
  T* all[] = {&w.centre, &w.north, &w.south, &w.west, &w.east, &w.north_west, &w.north_east, &w.south_west, &w.south_east};
  for (int k = 0; k < 9; ++k) *all[k] = v[static_cast<std::size_t>(k)] / T(2);
  return w;
}

// One sweep of a rows x cols region whose input frame row starts `in_shift` elements past a
// 16-byte boundary (the region one further), with leading dimensions in_ld and out_ld. tight: the
// input ends at the last cell the sweep may read (row rows, column cols of the region), so that
// memcheck sees any read past it.
template <class T>
void check_sweep(index_t rows, index_t cols, index_t in_ld, index_t out_ld, index_t in_shift, index_t out_shift,
                 const StencilWeights<T>& w, std::uint64_t seed, bool tight = false) {
  const std::string where = "region " + std::to_string(rows) + "x" + std::to_string(cols) + " ld " + std::to_string(in_ld) +
                            "/" + std::to_string(out_ld) + " shift " + std::to_string(in_shift) + "/" +
                            std::to_string(out_shift) + " " + to_string(w.shape) + (tight ? " tight" : "") +
                            " seed=" + std::to_string(seed);
  // Frames of rows + 2 rows; the region at (1, 1).
  const index_t in_size = tight ? in_shift + (rows + 1) * in_ld + cols + 2 : in_shift + (rows + 2) * in_ld;
  const auto in_frame = host_generate<T>(in_size, seed);
  Mirrored<T> in(in_frame);
  Mirrored<T> out(poisoned<T>(static_cast<std::size_t>(out_shift + (rows + 2) * out_ld)));
  const index_t in_origin = in_shift + in_ld + 1, out_origin = out_shift + out_ld + 1;
  std::vector<T> want = out.host;
  T want_change = T(0);
  kernels::stencil_2d(cpu_queue(), in.host.data() + in_origin, in_ld, want.data() + out_origin, out_ld, rows, cols, w,
                      &want_change);
  const T zero = T(0);
  Mirrored<T> change(std::vector<T>{zero});
  kernels::stencil_2d(cuda_queue(), in.device + in_origin, in_ld, out.device + out_origin, out_ld, rows, cols, w,
                      change.device);
  const index_t differs = first_difference(out.device_to_host(), want);
  ASSERT_EQ(differs, -1) << where << ": element " << differs << " of the output frame (row " << (differs - out_shift) / out_ld
                         << ", col " << (differs - out_shift) % out_ld << " of the frame; the region is at 1, 1)";
  const T got_change = change.device_to_host()[0];
  EXPECT_EQ(std::memcmp(&got_change, &want_change, sizeof(T)), 0)
      << where << ": max change " << got_change << ", cpu " << want_change;
}

std::vector<std::pair<index_t, index_t>> regions() {
  std::vector<std::pair<index_t, index_t>> r = {{1, 1}, {1, 33}, {2, 130}, {37, 1}, {300, 16}, {300, 17},
                                                {33, 129}, {64, 64}, {65, 511}, {31, 1030}};
  if (!small_mode()) {
    r.push_back({1025, 2051});
    r.push_back({3001, 700});
  }
  return r;
}

TYPED_TEST(StencilGpu, SweepIsBitIdenticalToCpuAtEveryAlignment) {
  using T = TypeParam;
  constexpr index_t kV = 16 / sizeof(T);
  std::uint64_t seed = test_seed();
  for (auto [rows, cols] : regions())
    for (StencilShape shape : {StencilShape::five_point, StencilShape::nine_point}) {
      const StencilWeights<T> laplace = shape == StencilShape::five_point ? StencilWeights<T>::jacobi5() : StencilWeights<T>::jacobi9();
      const StencilWeights<T> random = random_weights<T>(shape, ++seed);
      const index_t aligned_ld = (cols + 2 + kV - 1) / kV * kV + kV;
      // The region starts kV - 1 elements past the frame row's start: shift kV - 1 puts it on a
      // 16-byte boundary (a Field2D's layout); shift 0 one element past one.
      for (index_t shift = 0; shift < kV; ++shift) check_sweep<T>(rows, cols, aligned_ld, aligned_ld, shift, shift, laplace, ++seed);
      check_sweep<T>(rows, cols, aligned_ld, aligned_ld, kV - 1, kV - 1, random, ++seed);
      check_sweep<T>(rows, cols, aligned_ld, aligned_ld, kV - 1, 0, random, ++seed, true);
      // Rows that do not keep a 16-byte boundary, or input and output at different shifts: the
      // element path.
      check_sweep<T>(rows, cols, cols + 2, cols + 3, 0, 0, random, ++seed);
      check_sweep<T>(rows, cols, aligned_ld, aligned_ld, 0, 1, laplace, ++seed);
    }
}

// The frame of a region (stencil_2d_frame): on the device as on the cpu, bit for bit, every frame
// cell as the whole region's sweep computes it, every other cell of the output untouched.
TYPED_TEST(StencilGpu, FrameSweepsTheFrameCellsOnly) {
  using T = TypeParam;
  const std::vector<std::pair<index_t, index_t>> shapes = {{1, 1}, {2, 9}, {9, 2}, {40, 70}, {301, 517}};
  const std::vector<kernels::StencilFrame> frames = {{1, 1, 1, 1}, {1, 1, 4, 1}, {3, 2, 1, 5}, {0, 0, 2, 0}, {1, 0, 0, 0}, {50, 50, 50, 50}};
  std::uint64_t seed = test_seed();
  for (auto [rows, cols] : shapes)
    for (const kernels::StencilFrame& f : frames)
      for (StencilShape shape : {StencilShape::five_point, StencilShape::nine_point}) {
        const std::string where = "region " + std::to_string(rows) + "x" + std::to_string(cols) + " frame " +
                                  std::to_string(f.top) + "/" + std::to_string(f.bottom) + "/" + std::to_string(f.left) + "/" +
                                  std::to_string(f.right) + " " + to_string(shape) + " seed=" + std::to_string(seed + 1);
        const StencilWeights<T> w = random_weights<T>(shape, ++seed);
        const index_t ld = cols + 5;
        const auto input = host_generate<T>((rows + 2) * ld, ++seed);
        const index_t origin = ld + 1;
        // The whole region's sweep on the cpu, and which cells of it the frame holds.
        std::vector<T> whole = poisoned<T>(input.size());
        kernels::stencil_2d(cpu_queue(), input.data() + origin, ld, whole.data() + origin, ld, rows, cols, w);
        std::vector<T> want = poisoned<T>(input.size());
        T want_change = T(0);
        for (index_t r = 0; r < rows; ++r)
          for (index_t c = 0; c < cols; ++c) {
            const bool in_frame = r < f.top || r >= rows - f.bottom || c < f.left || c >= cols - f.right;
            if (!in_frame) continue;
            const auto at = static_cast<std::size_t>(origin + r * ld + c);
            want[at] = whole[at];
            const T d = whole[at] > input[at] ? whole[at] - input[at] : input[at] - whole[at];
            want_change = std::max(want_change, d);
          }
        std::vector<T> cpu_out = poisoned<T>(input.size());
        T cpu_change = T(0);
        kernels::stencil_2d_frame(cpu_queue(), input.data() + origin, ld, cpu_out.data() + origin, ld, rows, cols, f, w,
                                  &cpu_change);
        ASSERT_EQ(first_difference(cpu_out, want), -1) << where << " (cpu)";
        EXPECT_EQ(cpu_change, want_change) << where << " (cpu)";
        Mirrored<T> in(input);
        Mirrored<T> out(poisoned<T>(input.size()));
        Mirrored<T> change(std::vector<T>{T(0)});
        kernels::stencil_2d_frame(cuda_queue(), in.device + origin, ld, out.device + origin, ld, rows, cols, f, w,
                                  change.device);
        const index_t differs = first_difference(out.device_to_host(), want);
        ASSERT_EQ(differs, -1) << where << ": element " << differs << " (row " << differs / ld - 1 << ", col "
                               << differs % ld - 1 << " of the region)";
        EXPECT_EQ(change.device_to_host()[0], want_change) << where;
      }
}

// Rectangles of a rows x cols region (ld) within the frame {2, 1, 4, 3} of the tests below: across
// two parts of the frame (the top rows and the left columns), within one, a single cell, an empty
// one; then the same and more than the launch takes (kMaxFramePacks).
std::array<std::vector<kernels::Rectangle>, 2> frame_rectangles(index_t rows, index_t cols, index_t ld) {
  auto rect = [&](index_t r, index_t c, index_t nr, index_t nc) { return kernels::Rectangle{r * ld + c, ld, nr, nc}; };
  std::vector<kernels::Rectangle> few = {rect(0, 0, rows, 2),     rect(rows - 1, 0, 1, cols), rect(0, cols - 3, rows, 3),
                                         rect(1, 1, 1, cols - 2), rect(rows / 2, 3, 1, 1),    rect(0, 0, 0, 5)};
  std::vector<kernels::Rectangle> many = few;
  for (index_t k = 0; k < 7; ++k) many.push_back(rect(k % 2, k, 1, 1 + k % 3));
  return {few, many};
}

// Each rectangle to its own rows of a destination of leading dimension to_ld, one row apart, from
// column 2: where each starts, and the destination as the copies of the whole sweep's cells (`whole`,
// the region at `origin`, ld) leave it (poison elsewhere).
template <class T>
struct CopyDestinations {
  std::vector<index_t> at;
  std::vector<T> want;
};
template <class T>
CopyDestinations<T> copy_destinations(const std::vector<kernels::Rectangle>& rectangles, index_t to_ld,
                                      const std::vector<T>& whole, index_t origin, index_t ld) {
  CopyDestinations<T> d;
  index_t dest_rows = 1;
  for (const kernels::Rectangle& r : rectangles) {
    d.at.push_back(dest_rows * to_ld + 2);
    dest_rows += r.rows + 1;
  }
  d.want = poisoned<T>(static_cast<std::size_t>(dest_rows * to_ld));
  for (std::size_t k = 0; k < rectangles.size(); ++k)
    for (index_t r = 0; r < rectangles[k].rows; ++r)
      for (index_t c = 0; c < rectangles[k].cols; ++c)
        d.want[static_cast<std::size_t>(d.at[k] + r * to_ld + c)] =
            whole[static_cast<std::size_t>(origin + rectangles[k].offset + r * ld + c)];
  return d;
}

// The frame's cells written to a packed buffer as they are computed (stencil_2d_frame's pack_to): the
// buffer as pack_rectangles of the whole sweep's output packs the same rectangles, on the device (in
// the launch for up to kMaxFramePacks rectangles, packed after it for more) as on the cpu.
TYPED_TEST(StencilGpu, FramePacksItsRectanglesAsItSweeps) {
  using T = TypeParam;
  const std::vector<std::pair<index_t, index_t>> shapes = {{9, 11}, {40, 70}, {301, 517}};
  const kernels::StencilFrame f{2, 1, 4, 3};
  std::uint64_t seed = test_seed();
  for (auto [rows, cols] : shapes)
    for (StencilShape shape : {StencilShape::five_point, StencilShape::nine_point}) {
      const index_t ld = cols + 7;
      for (const auto& rectangles : frame_rectangles(rows, cols, ld)) {
        const std::string where = "region " + std::to_string(rows) + "x" + std::to_string(cols) + " " + to_string(shape) +
                                  " " + std::to_string(rectangles.size()) + " rectangles seed=" + std::to_string(seed + 1);
        const StencilWeights<T> w = random_weights<T>(shape, ++seed);
        const auto input = host_generate<T>((rows + 2) * ld, ++seed);
        const index_t origin = ld + 1;
        index_t cells = 0;
        for (const kernels::Rectangle& r : rectangles) cells += r.size();
        std::vector<T> whole = poisoned<T>(input.size());
        kernels::stencil_2d(cpu_queue(), input.data() + origin, ld, whole.data() + origin, ld, rows, cols, w);
        std::vector<T> want = poisoned<T>(static_cast<std::size_t>(cells));
        kernels::pack_rectangles(cpu_queue(), whole.data() + origin, rectangles, want.data(), sizeof(T));

        std::vector<T> cpu_out = poisoned<T>(input.size()), cpu_packed = poisoned<T>(static_cast<std::size_t>(cells));
        kernels::stencil_2d_frame(cpu_queue(), input.data() + origin, ld, cpu_out.data() + origin, ld, rows, cols, f, w,
                                  nullptr, rectangles, cpu_packed.data());
        EXPECT_EQ(first_difference(cpu_packed, want), -1) << where << " (cpu)";
        Mirrored<T> in(input);
        Mirrored<T> out(poisoned<T>(input.size()));
        Mirrored<T> packed(poisoned<T>(static_cast<std::size_t>(cells)));
        kernels::stencil_2d_frame(cuda_queue(), in.device + origin, ld, out.device + origin, ld, rows, cols, f, w, nullptr,
                                  rectangles, packed.device);
        const index_t differs = first_difference(packed.device_to_host(), want);
        EXPECT_EQ(differs, -1) << where << ": packed element " << differs;
        EXPECT_EQ(first_difference(out.device_to_host(), cpu_out), -1) << where << ": the frame itself";
      }
    }
}

// The frame's rectangles written to destinations of their own leading dimension as they are computed
// (stencil_2d_frame's copies: the peer-store path's writes into a neighbour's ghost cells): each
// destination holds the whole sweep's cells of its rectangle and nothing around it changes, on the
// device (in the launch, and by copies after it past kMaxFramePacks rectangles) as on the cpu.
TYPED_TEST(StencilGpu, FrameCopiesReachDestinationsOfTheirOwnLeadingDimension) {
  using T = TypeParam;
  const kernels::StencilFrame f{2, 1, 4, 3};
  std::uint64_t seed = test_seed();
  for (auto [rows, cols] : std::vector<std::pair<index_t, index_t>>{{9, 11}, {301, 517}})
    for (StencilShape shape : {StencilShape::five_point, StencilShape::nine_point}) {
      const index_t ld = cols + 7, to_ld = cols + 5;
      for (const auto& rectangles : frame_rectangles(rows, cols, ld)) {
        const std::string where = "region " + std::to_string(rows) + "x" + std::to_string(cols) + " " + to_string(shape) +
                                  " " + std::to_string(rectangles.size()) + " rectangles seed=" + std::to_string(seed + 1);
        const StencilWeights<T> w = random_weights<T>(shape, ++seed);
        const auto input = host_generate<T>((rows + 2) * ld, ++seed);
        const index_t origin = ld + 1;
        std::vector<T> whole = poisoned<T>(input.size());
        kernels::stencil_2d(cpu_queue(), input.data() + origin, ld, whole.data() + origin, ld, rows, cols, w);
        const auto [at, want] = copy_destinations(rectangles, to_ld, whole, origin, ld);
        auto copies_to = [&](T* dest) {
          std::vector<kernels::FrameCopy<T>> copies;
          for (std::size_t k = 0; k < rectangles.size(); ++k) copies.push_back({rectangles[k], dest + at[k], to_ld});
          return copies;
        };
        std::vector<T> cpu_out = poisoned<T>(input.size()), cpu_dest = poisoned<T>(want.size());
        kernels::stencil_2d_frame(cpu_queue(), input.data() + origin, ld, cpu_out.data() + origin, ld, rows, cols, f, w,
                                  nullptr, std::span<const kernels::FrameCopy<T>>(copies_to(cpu_dest.data())));
        EXPECT_EQ(first_difference(cpu_dest, want), -1) << where << " (cpu)";
        Mirrored<T> in(input);
        Mirrored<T> out(poisoned<T>(input.size()));
        Mirrored<T> dest(poisoned<T>(want.size()));
        kernels::stencil_2d_frame(cuda_queue(), in.device + origin, ld, out.device + origin, ld, rows, cols, f, w, nullptr,
                                  std::span<const kernels::FrameCopy<T>>(copies_to(dest.device)));
        const index_t differs = first_difference(dest.device_to_host(), want);
        EXPECT_EQ(differs, -1) << where << ": destination element " << differs;
        EXPECT_EQ(first_difference(out.device_to_host(), cpu_out), -1) << where << ": the frame itself";
      }
    }
}

// The region swept in one launch with its frame last (stencil_2d_frame_last): every cell as the
// cpu's whole sweep gives it, the copies in their destinations, the residual; each flag to set one
// step up once the launch is done (the shares of the frame's parts add up to it), the flags waited
// for (already at or past their value) unchanged, over two launches. It takes the sweep on sm_90
// where a frame launched on its own would find no room beside the interior: the 9-point float
// interior fills an SM's registers, so that one is taken there; a sweep it declines leaves the output
// untouched. Where the launch cannot take the sweep (more copies than it holds, an interior off the
// 16-byte boundary, a frame as large as the interior's launch, the cpu backend) it queues nothing.
TYPED_TEST(StencilGpu, FrameLastSweepsTheRegionCopiesItsFrameAndSetsItsFlags) {
  using T = TypeParam;
  const kernels::StencilFrame f{2, 1, 4, 3};
  int device = 0, major = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  std::uint64_t seed = test_seed();
  for (auto [rows, cols] : std::vector<std::pair<index_t, index_t>>{{301, 517}, {1030, 2051}, {2051, 1030}})
    for (StencilShape shape : {StencilShape::five_point, StencilShape::nine_point}) {
      const index_t ld = (cols + 8 + 3) / 4 * 4, to_ld = cols + 5;
      const index_t origin = ld + 4;  // the interior (column 4 of the region) on a 16-byte boundary
      const auto [few, many] = frame_rectangles(rows, cols, ld);
      const std::string where = "region " + std::to_string(rows) + "x" + std::to_string(cols) + " " + to_string(shape) +
                                " seed=" + std::to_string(seed + 1);
      const StencilWeights<T> w = random_weights<T>(shape, ++seed);
      const auto input = host_generate<T>((rows + 2) * ld, ++seed);
      std::vector<T> whole = poisoned<T>(input.size());
      T want_change = T(0);
      kernels::stencil_2d(cpu_queue(), input.data() + origin, ld, whole.data() + origin, ld, rows, cols, w, &want_change);
      const auto [at, want] = copy_destinations(few, to_ld, whole, origin, ld);

      Mirrored<T> in(input);
      Mirrored<T> out(poisoned<T>(input.size()));
      Mirrored<T> dest(poisoned<T>(want.size()));
      Mirrored<T> change(std::vector<T>{T(0)});
      // Flags 0-2 waited for (at or past 5), 3-4 set.
      constexpr std::uint64_t step = kernels::kFrameFlagStep;
      Mirrored<std::uint64_t> flags(std::vector<std::uint64_t>{5, 9, 5, 0, 3});
      std::vector<kernels::FrameCopy<T>> copies;
      for (std::size_t k = 0; k < few.size(); ++k) copies.push_back({few[k], dest.device + at[k], to_ld});
      kernels::FrameFlags ff;
      ff.waits = 3;
      for (int k = 0; k < 3; ++k) ff.wait[k] = flags.device + k;
      ff.wait_value = 5;
      ff.sets = 2;
      ff.set[0] = flags.device + 3;
      ff.set[1] = flags.device + 4;
      for (std::uint64_t launch = 0; launch < 2; ++launch) {
        const bool queued = kernels::stencil_2d_frame_last(cuda_queue(), in.device + origin, ld, out.device + origin, ld,
                                                           rows, cols, f, w, change.device, copies, ff);
        if (major < 9) {
          ASSERT_FALSE(queued) << where << ": the sweep takes sm_90 or later (and the library's sm_90 code)";
          return;
        }
        if (std::is_same_v<T, float> && shape == StencilShape::nine_point) {
          ASSERT_TRUE(queued) << where << ": the 9-point float interior leaves no room beside it for a frame launched on its own";
        }
        if (!queued) {
          EXPECT_EQ(first_difference(out.device_to_host(), poisoned<T>(input.size())), -1) << where << ": declined, yet written";
          break;
        }
        const index_t differs = first_difference(out.device_to_host(), whole);
        EXPECT_EQ(differs, -1) << where << " launch " << launch << ": output element " << differs;
        EXPECT_EQ(first_difference(dest.device_to_host(), want), -1) << where << " launch " << launch << ": the copies";
        EXPECT_EQ(change.device_to_host()[0], want_change) << where << " launch " << launch;
        EXPECT_EQ(flags.device_to_host(), (std::vector<std::uint64_t>{5, 9, 5, (launch + 1) * step, 3 + (launch + 1) * step}))
            << where << " launch " << launch << ": the flags";
      }

      // Nothing queued where the launch cannot take the sweep.
      Mirrored<T> untouched(poisoned<T>(input.size()));
      std::vector<kernels::FrameCopy<T>> too_many;
      for (const kernels::Rectangle& r : many) too_many.push_back({r, dest.device, to_ld});
      EXPECT_FALSE(kernels::stencil_2d_frame_last(cuda_queue(), in.device + origin, ld, untouched.device + origin, ld, rows,
                                                  cols, f, w, nullptr, too_many, ff))
          << where << ": " << many.size() << " copies";
      EXPECT_FALSE(kernels::stencil_2d_frame_last(cuda_queue(), in.device + origin + 1, ld, untouched.device + origin + 1,
                                                  ld, rows, cols - 1, f, w, nullptr, {}, ff))
          << where << ": an interior off the 16-byte boundary";
      EXPECT_FALSE(kernels::stencil_2d_frame_last(cuda_queue(), in.device + origin, ld, untouched.device + origin, ld, 9,
                                                  30, f, w, nullptr, {}, ff))
          << where << ": a 9 x 30 region, whose frame would take more than a quarter of the launch";
      std::vector<T> host_out = poisoned<T>(input.size());
      EXPECT_FALSE(kernels::stencil_2d_frame_last(cpu_queue(), input.data() + origin, ld, host_out.data() + origin, ld,
                                                  rows, cols, f, w, nullptr, {}, kernels::FrameFlags{}))
          << where << ": the cpu backend";
      EXPECT_EQ(first_difference(untouched.device_to_host(), poisoned<T>(input.size())), -1) << where;
      EXPECT_EQ(first_difference(host_out, poisoned<T>(input.size())), -1) << where;
    }
}

// The peer-store step's sweep (stencil_2d_stored_frame) on either of its paths: the frame on a
// second queue beside the interior with the flags as queue operations (flags not polled), or the
// kernels' choice where they may be polled (the frame-last launch for the 9-point float interior
// on sm_90): every cell as the cpu's whole sweep gives it, the copies in their destinations, the
// residual, and each flag to set at the waited-for value plus one step after each call; a region
// with no interior swept whole. The flags waited for are set beforehand (in a halo, by other GPUs).
TYPED_TEST(StencilGpu, StoredFrameSweepsTheRegionOnEitherPathAndSetsItsFlags) {
  using T = TypeParam;
  const kernels::StencilFrame f{2, 1, 4, 3};
  constexpr std::uint64_t step = kernels::kFrameFlagStep;
  kernels::Queue frame_queue = kernels::make_priority_queue(cuda_queue());
  std::uint64_t seed = test_seed() + 40;
  for (auto [rows, cols] : std::vector<std::pair<index_t, index_t>>{{301, 517}, {1030, 2051}, {3, 6}})
    for (StencilShape shape : {StencilShape::five_point, StencilShape::nine_point})
      for (const bool polled : {false, true}) {
        const index_t ld = (cols + 8 + 3) / 4 * 4, to_ld = cols + 5;
        const index_t origin = ld + 4;
        const std::vector<kernels::Rectangle> few = frame_rectangles(rows, cols, ld)[0];
        const std::string where = "region " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
                                  to_string(shape) + (polled ? " polled" : " queued") + " seed=" + std::to_string(seed + 1);
        const StencilWeights<T> w = random_weights<T>(shape, ++seed);
        const auto input = host_generate<T>((rows + 2) * ld, ++seed);
        std::vector<T> whole = poisoned<T>(input.size());
        T want_change = T(0);
        kernels::stencil_2d(cpu_queue(), input.data() + origin, ld, whole.data() + origin, ld, rows, cols, w, &want_change);
        const std::vector<kernels::Rectangle>& to_copy = few;
        const auto [at, want] = copy_destinations(to_copy, to_ld, whole, origin, ld);
        Mirrored<T> in(input);
        Mirrored<T> out(poisoned<T>(input.size()));
        Mirrored<T> dest(poisoned<T>(want.size()));
        Mirrored<T> change(std::vector<T>{T(0)});
        // Flags 0-2 waited for (at or past 5 steps, then 6), 3-4 set (at 5 steps: the value waited for).
        Mirrored<std::uint64_t> flags(std::vector<std::uint64_t>{6 * step, 9 * step, 6 * step + 1, 5 * step, 5 * step});
        std::vector<kernels::FrameCopy<T>> copies;
        for (std::size_t k = 0; k < to_copy.size(); ++k) copies.push_back({to_copy[k], dest.device + at[k], to_ld});
        kernels::FrameFlags ff;
        for (int k = 0; k < 3; ++k) ff.wait[ff.waits++] = flags.device + k;
        ff.set[ff.sets++] = flags.device + 3;
        ff.set[ff.sets++] = flags.device + 4;
        for (std::uint64_t call = 0; call < 2; ++call) {
          ff.wait_value = (5 + call) * step;
          const bool one_launch = kernels::stencil_2d_stored_frame(cuda_queue(), frame_queue, in.device + origin, ld,
                                                                   out.device + origin, ld, rows, cols, f, w, change.device,
                                                                   copies, ff, polled);
          if (!polled) {
            EXPECT_FALSE(one_launch) << where << ": the one launch without polled flags";
          }
          const index_t differs = first_difference(out.device_to_host(), whole);
          EXPECT_EQ(differs, -1) << where << " call " << call << ": output element " << differs;
          EXPECT_EQ(first_difference(dest.device_to_host(), want), -1) << where << " call " << call << ": the copies";
          EXPECT_EQ(change.device_to_host()[0], want_change) << where << " call " << call;
          const std::vector<std::uint64_t> now = flags.device_to_host();
          EXPECT_EQ(now[3], (6 + call) * step) << where << " call " << call << ": flag 3";
          EXPECT_EQ(now[4], (6 + call) * step) << where << " call " << call << ": flag 4";
        }
      }
  EXPECT_THROW(kernels::stencil_2d_stored_frame(cpu_queue(), cpu_queue(), static_cast<const T*>(nullptr), 8,
                                                static_cast<T*>(nullptr), 8, 0, 0, f, StencilWeights<T>::jacobi5(), nullptr,
                                                {}, kernels::FrameFlags{}, false),
               UsageError);
  kernels::destroy_queue(frame_queue);
}

TYPED_TEST(StencilGpu, ResidualAddsToTheValueGiven) {
  using T = TypeParam;
  constexpr index_t kV = 16 / sizeof(T);
  const index_t rows = 40, cols = 70, ld = 80;
  const auto frame = host_generate<T>((rows + 2) * ld, test_seed());
  Mirrored<T> in(frame);
  Mirrored<T> out(std::vector<T>(frame.size(), T(0)));
  // The region one element past a 16-byte boundary (the column march) and on one (the tiled pass).
  for (index_t lead : {index_t(1), kV}) {
    // A larger value already there stays: the sweep takes the maximum with it.
    Mirrored<T> change(std::vector<T>{T(1000)});
    kernels::stencil_2d(cuda_queue(), in.device + ld + lead, ld, out.device + ld + lead, ld, rows, cols,
                        StencilWeights<T>::jacobi5(), change.device);
    EXPECT_EQ(change.device_to_host()[0], T(1000)) << "region at column " << lead;
  }
}

// ---- convolve_1d -------------------------------------------------------------------------------------

template <class T>
void check_convolve(index_t n, index_t radius, index_t in_offset, index_t out_offset, std::uint64_t seed) {
  const std::string where = "n=" + std::to_string(n) + " radius=" + std::to_string(radius) + " offsets " +
                            std::to_string(in_offset) + "/" + std::to_string(out_offset) + " seed=" + std::to_string(seed);
  const auto input = host_generate<T>(in_offset + n + 2 * radius, seed);
  const auto weights = host_generate<T>(2 * radius + 1, seed + 1);
  std::vector<T> want(static_cast<std::size_t>(n));
  kernels::convolve_1d(cpu_queue(), input.data() + in_offset + radius, n, weights, want.data());
  Mirrored<T> in(input);
  DeviceArray<T> out(n, out_offset);
  out.poison();
  kernels::convolve_1d(cuda_queue(), in.device + in_offset + radius, n, weights, out.data());
  ASSERT_TRUE(out.untouched_outside(n)) << where;
  const index_t differs = first_difference(out.download(), want);
  ASSERT_EQ(differs, -1) << where << ": element " << differs;
}

TYPED_TEST(StencilGpu, ConvolveIsBitIdenticalToCpu) {
  using T = TypeParam;
  std::uint64_t seed = test_seed() + 1000;
  // Around the register blocks' tiles (3328 floats, 1792 doubles) and the kernel by lanes' warp tiles.
  std::vector<index_t> sizes = {0, 1, 2, 3, 31, 33, 1791, 1792, 1793, 3327, 3328, 3329, 6657};
  if (!small_mode()) {
    sizes.push_back(40009);
    sizes.push_back(1000003);
  }
  for (index_t n : sizes)
    // Both sides of the kernel by lanes' limit (8); taps in whole register blocks and not; a pass of
    // 512 taps and more (255, 256, 300).
    for (index_t radius : {0, 1, 2, 5, 8, 9, 12, 16, 64, 255, 256, 300}) {
      check_convolve<T>(n, radius, 0, 0, ++seed);
      check_convolve<T>(n, radius, 1, 3, ++seed);
    }
}

// The kernel by lanes (radius <= 8) at every pair of input and output offsets within a 16-byte
// vector, at sizes around a warp's tile (32 lanes x 2 vectors), and radii that reach one and two
// lanes away for 8-byte elements.
TYPED_TEST(StencilGpu, ConvolveByLanesAtEveryMisalignment) {
  using T = TypeParam;
  std::uint64_t seed = test_seed() + 2000;
  for (index_t n : {1, 7, 127, 128, 129, 255, 256, 257, 1031})
    for (index_t radius : {1, 3, 4, 7, 8})
      for (index_t in_offset = 0; in_offset < 4; ++in_offset)
        for (index_t out_offset = 0; out_offset < 4; ++out_offset) check_convolve<T>(n, radius, in_offset, out_offset, ++seed);
}

// ---- pack / unpack -------------------------------------------------------------------------------------

template <int kBytes>
struct Bytes {
  unsigned char b[kBytes];
};

template <class E>
void check_pack(std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  const index_t rows = 37, ld = 53;
  std::vector<unsigned char> frame(static_cast<std::size_t>(rows * ld) * sizeof(E));
  for (auto& b : frame) b = static_cast<unsigned char>(gen());
  // 40 rectangles (two launches) of random places and shapes, empty ones included.
  std::vector<kernels::Rectangle> rectangles;
  index_t total = 0;
  for (int k = 0; k < 40; ++k) {
    const index_t row = k % rows, height = std::min<index_t>(1 + static_cast<index_t>(gen() % 3), rows - row);
    const index_t col = static_cast<index_t>(gen() % 40), width = static_cast<index_t>(gen() % 13);
    rectangles.push_back({row * ld + col, ld, height, width});
    total += height * width;
  }
  // Stacks of planes (the frame read as planes of 4 rows): a 3-D box's halo faces are such stacks.
  for (int k = 0; k < 6; ++k) {
    const index_t planes = 1 + static_cast<index_t>(gen() % 8), height = 1 + static_cast<index_t>(gen() % 3);
    const index_t width = static_cast<index_t>(gen() % 13), col = static_cast<index_t>(gen() % 40);
    rectangles.push_back({(k % 2) * ld + col, ld, height, width, planes, 4 * ld});
    total += planes * height * width;
  }
  std::vector<unsigned char> want(static_cast<std::size_t>(total) * sizeof(E));
  kernels::pack_rectangles(cpu_queue(), frame.data(), rectangles, want.data(), sizeof(E));
  Mirrored<unsigned char> device_frame(frame);
  Mirrored<unsigned char> packed(poisoned<unsigned char>(want.size() + 1));
  kernels::pack_rectangles(cuda_queue(), device_frame.device, rectangles, packed.device, sizeof(E));
  std::vector<unsigned char> got = packed.device_to_host();
  EXPECT_EQ(got.back(), DeviceArray<unsigned char>::poison_byte()) << "pack wrote past the packed data";
  got.pop_back();
  EXPECT_EQ(first_difference(got, want), -1) << "pack, elements of " << sizeof(E) << " bytes";
  // Each rectangle to a place of its own: in reverse order, one element apart (so that the word the
  // kernel moves follows the places' alignment too), against the CPU's.
  std::vector<void*> host_places(rectangles.size()), device_places(rectangles.size());
  std::vector<unsigned char> want_to = poisoned<unsigned char>(want.size() + (rectangles.size() + 1) * sizeof(E));
  Mirrored<unsigned char> packed_to(want_to);
  std::size_t at = sizeof(E);
  for (std::size_t k = rectangles.size(); k-- > 0;) {
    host_places[k] = want_to.data() + at;
    device_places[k] = packed_to.device + at;
    at += static_cast<std::size_t>(rectangles[k].size()) * sizeof(E) + sizeof(E);
  }
  kernels::pack_rectangles_to(cpu_queue(), frame.data(), rectangles, host_places, sizeof(E));
  kernels::pack_rectangles_to(cuda_queue(), device_frame.device, rectangles, device_places, sizeof(E));
  EXPECT_EQ(first_difference(packed_to.device_to_host(), want_to), -1)
      << "pack to places, elements of " << sizeof(E) << " bytes";
}

TEST(StencilGpu, PackMatchesCpuForEveryElementSize) {
  check_pack<std::uint16_t>(test_seed() + 1);
  check_pack<float>(test_seed() + 2);
  check_pack<double>(test_seed() + 3);
  check_pack<Bytes<12>>(test_seed() + 4);
}

TEST(StencilGpu, UnpackWritesTheRectanglesOnly) {
  const index_t rows = 20, ld = 24;
  std::vector<kernels::Rectangle> rectangles;
  for (index_t r = 0; r < rows; r += 2) rectangles.push_back({r * ld + (r % 5), ld, 2, 3 + r % 4});  // 10 blocks of 2 rows
  rectangles.push_back({-2, ld, 1, 2});  // before the origin (a ghost cell)
  index_t total = 0;
  for (const auto& r : rectangles) total += r.size();
  const auto values = host_generate<double>(total, test_seed() + 9);
  std::vector<double> want = poisoned<double>(static_cast<std::size_t>(rows * ld + 2));
  kernels::unpack_rectangles(cpu_queue(), values.data(), rectangles, want.data() + 2, sizeof(double));
  Mirrored<double> frame(poisoned<double>(want.size()));
  Mirrored<double> packed(values);
  kernels::unpack_rectangles(cuda_queue(), packed.device, rectangles, frame.device + 2, sizeof(double));
  EXPECT_EQ(first_difference(frame.device_to_host(), want), -1);
  // Each rectangle from a place of its own: the same values, the rectangles' runs in reverse order
  // with a gap of one element between them, against the CPU's.
  std::vector<double> scattered = poisoned<double>(static_cast<std::size_t>(total) + rectangles.size() + 1);
  std::vector<std::size_t> place_at(rectangles.size());
  std::size_t at = 1, from = 0;
  std::vector<std::size_t> starts;
  for (const auto& r : rectangles) {
    starts.push_back(from);
    from += static_cast<std::size_t>(r.size());
  }
  for (std::size_t k = rectangles.size(); k-- > 0;) {
    std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(starts[k]), rectangles[k].size(),
                scattered.begin() + static_cast<std::ptrdiff_t>(at));
    place_at[k] = at;
    at += static_cast<std::size_t>(rectangles[k].size()) + 1;
  }
  Mirrored<double> device_scattered(scattered);
  std::vector<void*> host_places(rectangles.size()), device_places(rectangles.size());
  for (std::size_t k = 0; k < rectangles.size(); ++k) {
    host_places[k] = scattered.data() + place_at[k];
    device_places[k] = device_scattered.device + place_at[k];
  }
  std::vector<double> want_from = poisoned<double>(want.size());
  kernels::unpack_rectangles_from(cpu_queue(), host_places, rectangles, want_from.data() + 2, sizeof(double));
  EXPECT_EQ(first_difference(want_from, want), -1) << "unpack from places on the CPU";
  Mirrored<double> frame_from(poisoned<double>(want.size()));
  kernels::unpack_rectangles_from(cuda_queue(), device_places, rectangles, frame_from.device + 2, sizeof(double));
  EXPECT_EQ(first_difference(frame_from.device_to_host(), want), -1) << "unpack from places";
}

}  // namespace
}  // namespace tessera::gpu_test
