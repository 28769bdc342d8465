// kernels::cuda::for_each_cell's orders (cuda/device_cells.cuh) on a star of radius 1 to 4 over
// float, double and a two-field struct: the planes and march orders, the tiled and column passes
// launched directly (each must launch where its ring fits the device's shared memory), and the
// automatic choice, against the host's loop of the same arithmetic. Boxes that the tiles do not
// divide and one that holds a whole tile, offset inside a larger array (the box's reach lies in the
// array, as a field's ghosts do), deep enough for several layers of thread blocks along axis 0;
// rows padded past the reach by a 16-byte piece or not (the passes then copy the pieces at a row's
// ends cell by cell). Inputs are small integers and weights powers of two times small integers,
// different for each offset, so every order gives the same bits and a mirrored or transposed read
// does not. Cells outside the box keep the poison the output was filled with. Then the rows order
// (the ring of rows filled by bulk copies, sm_90) on 2-D bodies of reach 1 over cells of 4 and 8
// bytes, against the same host loop, beside the tiled and automatic orders.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu_test_support.hpp"
#include "tessera/kernels/cuda/device_cells.cuh"

namespace tessera::gpu_test {
namespace {

namespace kc = kernels::cuda;

struct Pair {
  double a;
  float b;
};

// The star's arithmetic, reading the input through at(d0, d1, d2), for the cell at global indices
// (i0, i1, i2): u + sum_r 2^-(r+2) (u(-r,0,0) + 2 u(r,0,0) + 3 u(0,-r,0) + 5 u(0,r,0) + 7 u(0,0,-r)
// + 9 u(0,0,r)) + (i0 + 2 i1 - 3 i2) / 8.
template <int R, class At>
__host__ __device__ float star_of(const At& at, float, index_t i0, index_t i1, index_t i2) {
  float acc = at(0, 0, 0) + 0.125f * static_cast<float>(i0 + 2 * i1 - 3 * i2);
#pragma unroll
  for (int r = 1; r <= R; ++r) {
    const float w = 1.0f / static_cast<float>(1 << (r + 2));
    acc += w * (at(-r, 0, 0) + 2.0f * at(r, 0, 0) + 3.0f * at(0, -r, 0) + 5.0f * at(0, r, 0) + 7.0f * at(0, 0, -r) +
                9.0f * at(0, 0, r));
  }
  return acc;
}
template <int R, class At>
__host__ __device__ double star_of(const At& at, double, index_t i0, index_t i1, index_t i2) {
  double acc = at(0, 0, 0) - 0.125 * static_cast<double>(i0 - i1 + 5 * i2);
#pragma unroll
  for (int r = 1; r <= R; ++r) {
    const double w = 1.0 / static_cast<double>(1 << r);
    acc += w * (at(-r, 0, 0) - at(r, 0, 0) + at(0, -r, 0) + at(0, r, 0) - at(0, 0, -r) + at(0, 0, r));
  }
  return acc;
}
// Two fields: a a star of a; b mixes b along axis 0 with a along axis 2.
template <int R, class At>
__host__ __device__ Pair star_of(const At& at, Pair, index_t i0, index_t i1, index_t i2) {
  Pair p{at(0, 0, 0).a + 0.25 * static_cast<double>(i1), at(0, 0, 0).b - 0.5f * static_cast<float>(i0 + i2)};
#pragma unroll
  for (int r = 1; r <= R; ++r) {
    p.a += 0.5 * (at(-r, 0, 0).a + at(0, r, 0).a + at(0, 0, -r).a);
    p.b += 0.25f * (at(r, 0, 0).b - at(-r, 0, 0).b) + static_cast<float>(at(0, 0, r).a);
  }
  return p;
}

// The body: a star of radius R reading `in` around the cell and writing `out` at it; the column
// order's value_column reads axis 0 from the thread's registers. Padded: each row holds a 16-byte
// piece past the last cell within reach (a Field's rows do), so whole pieces may be copied.
template <class T, int R, bool Padded = true>
struct StarBody {
  using tile_type = T;
  using value_type = T;
  static constexpr int kReach0 = R, kReach1 = R, kReach2 = R;
  static constexpr bool kTileRowsPadded = Padded;
  static constexpr bool kColumnReads = true;
  const T* in;
  T* out;
  index_t s0, s1;
  __host__ __device__ const T* tile_origin() const { return in; }
  __host__ __device__ index_t tile_stride0() const { return s0; }
  __host__ __device__ index_t tile_stride1() const { return s1; }
  __host__ __device__ T value(const T* center, index_t t0, index_t t1, index_t i0, index_t i1, index_t i2) const {
    return star_of<R>([&](int d0, int d1, int d2) -> const T& { return center[d0 * t0 + d1 * t1 + d2]; }, T{}, i0, i1, i2);
  }
  __host__ __device__ T value_column(const T* center, index_t t1, const T* column, index_t i0, index_t i1, index_t i2) const {
    return star_of<R>([&](int d0, int d1, int d2) -> const T& { return d0 != 0 ? column[d0] : center[d1 * t1 + d2]; }, T{},
                      i0, i1, i2);
  }
  __host__ __device__ void operator()(index_t i0, index_t i1, index_t i2) const {
    store(i0, i1, i2, value(in + i0 * s0 + i1 * s1 + i2, s0, s1, i0, i1, i2));
  }
  __host__ __device__ void store(index_t i0, index_t i1, index_t i2, const T& v) const { out[i0 * s0 + i1 * s1 + i2] = v; }
};

template <class T>
T small_value(std::uint64_t h) {
  if constexpr (std::is_same_v<T, Pair>)
    return Pair{static_cast<double>(h % 16), static_cast<float>((h >> 8) % 8)};
  else
    return static_cast<T>(h % 16);
}

// The same bits, field by field (a Pair's padding is not compared).
template <class T>
bool same_bits(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, Pair>)
    return same_bits(a.a, b.a) && same_bits(a.b, b.b);
  else
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

const char* order_name(kc::CellOrder o) {
  switch (o) {
    case kc::CellOrder::planes: return "planes";
    case kc::CellOrder::march: return "march";
    case kc::CellOrder::tiled: return "tiled";
    case kc::CellOrder::column: return "column";
    default: return "automatic";
  }
}

// The box n at `begin` of an array whose rows hold begin2 + n2 + R cells (and a 16-byte piece more
// where Padded), rounded up to 16 bytes, and whose planes and rows reach R past the box.
template <class T, int R, bool Padded>
void check_orders(const index_t (&begin)[3], const index_t (&n)[3]) {
  using Body = StarBody<T, R, Padded>;
  static_assert(kc::ColumnCellBody<Body> && Body::kColumnReads, "the test's body takes the column order");
  constexpr index_t kPiece = sizeof(T) < 16 ? 16 / sizeof(T) : 1;
  const index_t m0 = begin[0] + n[0] + R, m1 = begin[1] + n[1] + R;
  const index_t s1 = (begin[2] + n[2] + R + (Padded ? kPiece : 0) + kPiece - 1) / kPiece * kPiece, s0 = m1 * s1;
  const index_t size = m0 * s0;
  std::vector<T> input(static_cast<std::size_t>(size));
  std::uint64_t h = test_seed() * 0x9E3779B97F4A7C15ull + R;
  for (T& x : input) {
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    x = small_value<T>(h);
  }
  // The host's loop; cells outside the box hold the poison's bytes.
  std::vector<T> want(static_cast<std::size_t>(size));
  std::memset(want.data(), DeviceArray<T>::poison_byte(), sizeof(T) * want.size());
  const Body host{input.data(), want.data(), s0, s1};
  for (index_t i0 = begin[0]; i0 < begin[0] + n[0]; ++i0)
    for (index_t i1 = begin[1]; i1 < begin[1] + n[1]; ++i1)
      for (index_t i2 = begin[2]; i2 < begin[2] + n[2]; ++i2) host(i0, i1, i2);

  DeviceArray<T> in(size), out(size);
  in.upload(input);
  const Body body{in.data(), out.data(), s0, s1};
  const index_t end[3] = {begin[0] + n[0], begin[1] + n[1], begin[2] + n[2]};
  const kc::detail::CellRange range{begin[0], begin[1], begin[2], n[0], n[1], n[2]};
  const auto optin = static_cast<std::size_t>(kc::detail::current_device_info().max_smem_optin);
  for (kc::CellOrder order : {kc::CellOrder::planes, kc::CellOrder::march, kc::CellOrder::tiled, kc::CellOrder::column,
                              kc::CellOrder::automatic}) {
    out.poison();
    if (order == kc::CellOrder::tiled) {
      if (kc::detail::CellRing<Body, false>::kBytes > optin) continue;  // its ring does not fit (radius 3 and more)
      ASSERT_TRUE(kc::detail::for_each_cell_tiled(cuda_queue(), range, body)) << "the tiled pass did not launch";
    } else if (order == kc::CellOrder::column) {
      if (kc::detail::CellColumn<Body>::kBytes > optin) continue;
      ASSERT_TRUE(kc::detail::for_each_cell_column(cuda_queue(), range, body)) << "the column pass did not launch";
    } else {
      kc::for_each_cell(cuda_queue(), begin, end, body, order);
    }
    TESSERA_CUDA_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(cuda_queue().stream)));
    const std::vector<T> got = out.download();
    index_t differ = 0, first = -1;
    for (index_t k = 0; k < size; ++k)
      if (!same_bits(got[static_cast<std::size_t>(k)], want[static_cast<std::size_t>(k)])) {
        if (first < 0) first = k;
        ++differ;
      }
    EXPECT_EQ(differ, 0) << order_name(order) << " radius " << R << ", " << sizeof(T) << "-byte cells, box " << n[0] << "x"
                         << n[1] << "x" << n[2] << " at " << begin[0] << "," << begin[1] << "," << begin[2]
                         << ": first differing element " << first << " (plane " << (first >= 0 ? first / s0 : -1)
                         << ", row " << (first >= 0 ? first % s0 / s1 : -1) << ", cell " << (first >= 0 ? first % s1 : -1)
                         << ")";
    EXPECT_TRUE(out.untouched_outside(size));
  }
}

template <class T, int R, bool Padded = true>
void check_shapes() {
  // Boxes the tiles (32 to 128 cells by 16 or 32 rows) mostly do not divide; the smallest that takes
  // a marching order (a warp wide, 8 rows, 16 planes deep); one that holds a whole tile of every
  // pass (12 x 33 x 129); deep ones that cut axis 0 into layers (65 x 9 x 33: two at radius 4);
  // offsets of the box's start that are no multiple of a 16-byte piece.
  const index_t shapes[][3] = {{16, 8, 32}, {37, 19, 67}, {12, 33, 129}, {65, 9, 33}, {70, 33, 129}, {131, 17, 41}};
  const index_t starts[][3] = {{R, R, R}, {R + 1, R + 2, R + 3}};
  for (const auto& n : shapes) {
    if (small_mode() && n[0] * n[1] * n[2] > 60000) continue;
    for (const auto& b : starts) check_orders<T, R, Padded>(b, n);
  }
}

TEST(CellOrdersGpu, StarsOfRadiusOneToFourMatchTheHostInEveryOrder) {
  check_shapes<float, 1>();
  check_shapes<float, 2>();
  check_shapes<float, 3>();
  check_shapes<float, 4>();
  check_shapes<double, 1>();
  check_shapes<double, 4>();
}

TEST(CellOrdersGpu, RowsWithoutPaddingMatchTheHostInEveryOrder) {
  check_shapes<float, 1, false>();
  check_shapes<float, 2, false>();
  check_shapes<float, 4, false>();
}

TEST(CellOrdersGpu, TwoFieldCellsMatchTheHostInEveryOrder) {
  check_shapes<Pair, 1>();
  check_shapes<Pair, 2>();
}

// ---- 2-D bodies of reach 1: the rows order (the ring of rows filled by bulk copies, sm_90) ----------

struct TwoFloats {  // 8 bytes, aligned to 4: read through 8-byte words
  float a, b;
};

// A 3 x 3 box (or the 5-point star) over In, with a coefficient read at the cell and the cell's
// indices, into Out. Weights powers of two times small integers, different for each offset, on
// small integers: every order gives the same bits, and a mirrored or transposed read does not.
template <class In, class Out, bool kBox>
__host__ __device__ Out plane_of(const In& c, const In& n, const In& s, const In& w, const In& e, const In& nw,
                                 const In& ne, const In& sw, const In& se, float k, index_t i1, index_t i2) {
  if constexpr (std::is_same_v<In, TwoFloats>) {
    Out r{c.a + 0.5f * n.b + 0.25f * s.a + 2.0f * w.b + 4.0f * e.a + k, c.b - 0.5f * n.a + 0.125f * (e.b - w.a)};
    if constexpr (kBox) {
      r.a += 8.0f * nw.a + 16.0f * ne.b;
      r.b += 0.0625f * sw.b - 32.0f * se.a;
    }
    return r;
  } else {
    Out r = static_cast<Out>(c) + static_cast<Out>(2 * n) + static_cast<Out>(3 * s) + static_cast<Out>(5 * w) +
            static_cast<Out>(7 * e) + static_cast<Out>(k) + static_cast<Out>(i1 - 2 * i2);
    if constexpr (kBox) r += static_cast<Out>(11 * nw) + static_cast<Out>(13 * ne) - static_cast<Out>(17 * sw) - static_cast<Out>(19 * se);
    return r;
  }
}

// kRowStores: the body says where its rows lie (store_row), so the rows order may store whole
// 16-byte vectors. Its results go to rows of their own stride (o1), and every call of value() for a
// cell outside the box [b1, e1) x [b2, e2) is counted.
template <class In, class Out, bool kBox, bool kRowStores>
struct PlaneBody {
  using tile_type = In;
  using value_type = Out;
  static constexpr int kReach0 = 0, kReach1 = 1, kReach2 = 1;
  static constexpr bool kReadsCorners = kBox;
  static constexpr bool kTileRowsPadded = true;
  const In* in;
  Out* out;
  const float* coefficient;
  index_t s1, o1;
  index_t b1, b2, e1, e2;
  unsigned* outside;
  __host__ __device__ const In* tile_origin() const { return in; }
  __host__ __device__ index_t tile_stride0() const { return 0; }
  __host__ __device__ index_t tile_stride1() const { return s1; }
  __host__ __device__ Out value(const In* c, index_t, index_t t1, index_t, index_t i1, index_t i2) const {
    if (i1 < b1 || i1 >= e1 || i2 < b2 || i2 >= e2) {
#if defined(__CUDA_ARCH__)
      atomicAdd(outside, 1u);
#else
      ++*outside;
#endif
    }
    return plane_of<In, Out, kBox>(c[0], c[-t1], c[t1], c[-1], c[1], c[-t1 - 1], c[-t1 + 1], c[t1 - 1], c[t1 + 1],
                                   coefficient[i1 * s1 + i2], i1, i2);
  }
  __host__ __device__ void operator()(index_t i0, index_t i1, index_t i2) const {
    store(i0, i1, i2, value(in + i1 * s1 + i2, 0, s1, i0, i1, i2));
  }
  __host__ __device__ void store(index_t, index_t i1, index_t i2, const Out& v) const { out[i1 * o1 + i2] = v; }
  __host__ __device__ Out* store_row(index_t, index_t i1) const
    requires kRowStores
  {
    return out + i1 * o1;
  }
};

// The box rows x cols at (b1, b2) of an array of rows of s1 cells (a 16-byte piece past the reach),
// the results in rows of another stride, `out_shift` cells past a 16-byte boundary (1: the rows
// order stores cell by cell); every order against the host's loop, the rows order launched directly
// where the box's first input cell lies on a 16-byte boundary.
template <class In, class Out, bool kBox, bool kRowStores>
void check_plane(index_t b1, index_t b2, index_t rows, index_t cols, index_t out_shift) {
  using Body = PlaneBody<In, Out, kBox, kRowStores>;
  static_assert(kc::detail::RowsCellBody<Body>, "the test's body takes the rows order");
  static_assert(kc::detail::StoresRows<Body> == kRowStores);
  constexpr index_t kPiece = 16 / sizeof(In), kOutPiece = 16 / sizeof(Out) > 0 ? 16 / sizeof(Out) : 1;
  const index_t s1 = (b2 + cols + 1 + kPiece + kPiece - 1) / kPiece * kPiece;  // a multiple of 16 bytes
  const index_t o1 = (b2 + cols + 3 * kOutPiece) / kOutPiece * kOutPiece;      // another
  const index_t size = (b1 + rows + 1) * s1, out_size = (b1 + rows + 1) * o1;
  std::vector<In> input(static_cast<std::size_t>(size));
  std::vector<float> coefficient(static_cast<std::size_t>(size));
  std::uint64_t h = test_seed() * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(rows * 7 + cols);
  auto next = [&] {
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return h;
  };
  for (In& x : input) {
    if constexpr (std::is_same_v<In, TwoFloats>) x = {static_cast<float>(next() % 16), static_cast<float>(next() % 8)};
    else x = static_cast<In>(next() % 16);
  }
  for (float& k : coefficient) k = static_cast<float>(next() % 4);
  std::vector<Out> want(static_cast<std::size_t>(out_size));
  std::memset(want.data(), DeviceArray<Out>::poison_byte(), sizeof(Out) * want.size());
  unsigned host_outside = 0;
  const Body host{input.data(), want.data(), coefficient.data(), s1, o1, b1, b2, b1 + rows, b2 + cols, &host_outside};
  for (index_t i1 = b1; i1 < b1 + rows; ++i1)
    for (index_t i2 = b2; i2 < b2 + cols; ++i2) host(0, i1, i2);

  DeviceArray<In> in(size);
  DeviceArray<Out> out(out_size, out_shift);
  DeviceArray<float> k(size);
  DeviceArray<unsigned> outside(1);
  in.upload(input);
  k.upload(coefficient);
  const Body body{in.data(), out.data(), k.data(), s1, o1, b1, b2, b1 + rows, b2 + cols, outside.data()};
  const index_t begin[3] = {0, b1, b2}, end[3] = {1, b1 + rows, b2 + cols};
  const kc::detail::CellRange range{0, b1, b2, 1, rows, cols};
  const bool aligned = reinterpret_cast<std::uintptr_t>(in.data() + b1 * s1 + b2) % 16 == 0;
  const bool ring = kc::detail::cell_rows_available<Body>();
  for (int how = 0; how < 4; ++how) {
    out.poison();
    outside.upload({0u});
    const char* name = how == 0 ? "rows (direct)" : how == 1 ? "rows" : how == 2 ? "tiled" : "automatic";
    if (how == 0) {
      const bool launched = kc::detail::for_each_cell_rows(cuda_queue(), range, body);
      ASSERT_EQ(launched, aligned && ring) << "the rows order takes aligned boxes on sm_90";
      if (!launched) continue;
    } else {
      kc::for_each_cell(cuda_queue(), begin, end, body,
                        how == 1 ? kc::CellOrder::rows : how == 2 ? kc::CellOrder::tiled : kc::CellOrder::automatic);
    }
    TESSERA_CUDA_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(cuda_queue().stream)));
    const std::vector<Out> got = out.download();
    index_t differ = 0, first = -1;
    for (index_t e = 0; e < out_size; ++e)
      if (!same_bits(got[static_cast<std::size_t>(e)], want[static_cast<std::size_t>(e)])) {
        if (first < 0) first = e;
        ++differ;
      }
    const std::string what = std::string(name) + ", " + std::to_string(sizeof(In)) + "-byte cells into " +
                             std::to_string(sizeof(Out)) + "-byte ones, " + (kBox ? "box" : "star") +
                             (kRowStores ? ", row stores" : ", cell stores") + ", box " + std::to_string(rows) + "x" +
                             std::to_string(cols) + " at " + std::to_string(b1) + "," + std::to_string(b2) +
                             ", results " + std::to_string(out_shift) + " past a boundary";
    EXPECT_EQ(differ, 0) << what << ": first differing element " << first << " (row " << (first >= 0 ? first / o1 : -1)
                         << ", cell " << (first >= 0 ? first % o1 : -1) << ")";
    EXPECT_EQ(outside.download()[0], 0u) << what << ": value() called for cells outside the box";
    EXPECT_TRUE(out.untouched_outside(out_size));
  }
}

template <class In, class Out, bool kBox, bool kRowStores>
void check_planes() {
  constexpr index_t kPiece = 16 / sizeof(In);
  // Widths about a vector, a warp, a thread block's strip (2048 4-byte or 1024 8-byte cells) and
  // several strips, none a multiple of them but some; rows from one to several segments; the box at
  // a 16-byte boundary (the rows order) and one cell past it (the tiled order instead); results on
  // a boundary and one cell past it.
  const index_t shapes[][2] = {{1, 1}, {2, 3}, {17, 31}, {5, 33}, {33, 127}, {19, 1023}, {41, 2049}, {300, 517}, {7, 4097}};
  for (const auto& n : shapes) {
    if (small_mode() && n[0] * n[1] > 60000) continue;
    check_plane<In, Out, kBox, kRowStores>(1, kPiece, n[0], n[1], 0);
    check_plane<In, Out, kBox, kRowStores>(1, kPiece, n[0], n[1], 1);
    check_plane<In, Out, kBox, kRowStores>(2, kPiece + 1, n[0], n[1], 0);
  }
  if (!small_mode()) check_plane<In, Out, kBox, kRowStores>(1, kPiece, 1031, 4099, 0);
}

TEST(CellOrdersGpu, PlanesOfReachOneMatchTheHostInTheRowsOrder) {
  check_planes<float, float, false, true>();
  check_planes<float, float, true, true>();
  check_planes<float, float, true, false>();
  check_planes<double, double, false, true>();
  check_planes<double, double, true, true>();
  check_planes<int, int, true, true>();
  check_planes<float, double, true, true>();  // results of another size: stored cell by cell
  check_planes<TwoFloats, TwoFloats, true, true>();
  check_planes<TwoFloats, TwoFloats, false, false>();
}

}  // namespace
}  // namespace tessera::gpu_test
