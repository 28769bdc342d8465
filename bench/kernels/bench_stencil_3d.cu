// The user stencil (apply_stencil on a Field<float, D>) on one GPU against the device-to-device copy
// rate: one read and one write of each cell counted, as the copy moves them.
//
//   tessera_bench_stencil_3d [--shapes 512x512x512,1024x1024x512] [--stencils star1,box27,star2,star4] [--n2d 16384]
//                            [--variants] [-n ITERS] [-w WARMUP] [--json FILE]
//
// Rows per 3-D shape: the 7-point star (radius 1), the 27-point box (radius 1), the 13-point star
// (radius 2) and the 25-point star (radius 4) (--stencils picks), each as apply_stencil on one rank
// with Dirichlet boundaries (no face exchanged: the whole block is the interior), as apply_stencil
// with periodic boundaries (the exchange writes every ghost, then one sweep covers the block), then the sweep alone in the tiled and the marching orders of
// kernels::cuda::for_each_cell and, for the stars, the column order (cuda/device_cells.cuh;
// apply_stencil's 3-D choice is tiled for radius 1, column for wider stars, march for wider boxes);
// --variants adds the column order with two and three planes in flight (F = 2, 3) for the stars of
// radius 2 and 4, and other shapes for the radius-4 star. Then the 2-D 5- and 9-point
// Jacobi sweeps of kernels::stencil_2d on a Field2D (the Jacobi solver's) beside the same
// arithmetic as user stencils on a Field<float, 2>: apply_stencil, and the sweep alone in the rows
// order (the ring of rows the Jacobi sweep of floats runs in), tiled and one thread per cell (planes). Each row is timed over 10 calls queued back to back. %copy: the same
// bytes at the measured copy rate / our time. Each row is checked on 4096 cells spread over the
// field against the host's evaluation (inputs are small integers and the 3-D weights powers of two:
// those results are exact).
//
// On several ranks (one GPU each, or sharing one), the overlapped step instead: per rank a block of
// each shape, the ranks along axis 0 (grid Px1x1, Dirichlet: each rank exchanges its faces along
// axis 0 with its neighbours), the 7-point star and the 27-point box. Rows: the step (apply_stencil:
// exchange started, interior swept, exchange finished, shell swept), the exchange alone
// (Field::exchange_halo), the sweep alone (the block in apply_stencil's order), and the step's
// interior and shell sweeps alone; each the slowest rank's time; and rank 0's host time to queue
// one call of each. hidden = (sweep + exchange - step) / exchange: the share of the exchange the step
// hides behind its sweep (1: all of it).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/framework.hpp"

namespace {

using tessera::FieldIndex;
using tessera::index_t;
using tessera::StencilForm;
using tessera::bench::Harness;

template <int R>
struct Star {
  static constexpr int radius = R;
  static constexpr StencilForm shape = StencilForm::star;
  template <class V>
  TESSERA_HOST_DEVICE float operator()(const V& u, const FieldIndex<3>&) const {
    float acc = 0.5f * u(0, 0, 0);
#pragma unroll
    for (int r = 1; r <= R; ++r) {
      const float w = 1.0f / static_cast<float>(1 << (r + 3));
      acc += w * (u(-r, 0, 0) + u(r, 0, 0) + u(0, -r, 0) + u(0, r, 0) + u(0, 0, -r) + u(0, 0, r));
    }
    return acc;
  }
};

// Other shapes of the column order (--variants): F = 2 and 3 for the stars of radius 2 and more,
// the rest for the radius-4 star; kernel template arguments
// must be namespace-scope types. ColumnShape<TX, TY, CY, F, B>: tiles of TX x TY cells, CY rows a
// thread, F planes in flight, B thread blocks an SM for the register budget (0: the default's).
template <int X, int Y, int C, int Fl, int B = 0>
struct ColumnShape {
  static constexpr int TX = X, TY = Y, CY = C, F = Fl;
  static constexpr int kMinBlocks = B;
};
template <int X, int Y, int C, int Fl>
struct ColumnShape<X, Y, C, Fl, 0> {
  static constexpr int TX = X, TY = Y, CY = C, F = Fl;
};

struct Box27 {
  static constexpr int radius = 1;
  static constexpr StencilForm shape = StencilForm::box;
  template <class V>
  TESSERA_HOST_DEVICE float operator()(const V& u, const FieldIndex<3>&) const {
    float acc = 0;
#pragma unroll
    for (int a = -1; a <= 1; ++a)
#pragma unroll
      for (int b = -1; b <= 1; ++b)
#pragma unroll
        for (int c = -1; c <= 1; ++c) acc += (a == 0 && b == 0 && c == 0 ? 0.5f : 0.03125f) * u(a, b, c);
    return acc;
  }
};

struct Input {
  TESSERA_HOST_DEVICE float operator()(const FieldIndex<3>& i) const {
    return static_cast<float>((i[0] * 7 + i[1] * 3 + i[2]) % 16);
  }
};

struct Shape {
  index_t n[3];
};

// The input field seen from cell (i0, i1, i2), Dirichlet 0 or periodic outside: the host's view
// for the check.
struct HostView {
  const Shape* s;
  bool periodic;
  index_t i0, i1, i2;
  TESSERA_HOST_DEVICE float operator()(int a, int b, int c) const {
    index_t x = i0 + a, y = i1 + b, z = i2 + c;
    if (periodic) {
      x = (x + s->n[0]) % s->n[0];
      y = (y + s->n[1]) % s->n[1];
      z = (z + s->n[2]) % s->n[2];
    }
    if (x < 0 || y < 0 || z < 0 || x >= s->n[0] || y >= s->n[1] || z >= s->n[2]) return 0.0f;
    return Input{}(FieldIndex<3>{{x, y, z}});
  }
};

template <class F>
float host_value(const F& f, const Shape& s, bool periodic, index_t i0, index_t i1, index_t i2) {
  return f(HostView{&s, periodic, i0, i1, i2}, FieldIndex<3>{{i0, i1, i2}});
}

// `run` timed: 10 calls queued back to back per sample; the samples and the median per call.
template <class Run>
tessera::bench::Timing per_call_ms(Harness& h, const tessera::Context& ctx, Run run) {
  constexpr int kCalls = 10;
  tessera::bench::Timing ms = tessera::bench::median_ms(ctx.queue(), h.warmup(), h.iters(), [&] {
    for (int k = 0; k < kCalls; ++k) run();
  });
  for (double& sample : ms.samples_ms) sample /= kCalls;
  ms.median /= kCalls;
  return ms;
}

// Prints and records one row: `cells` cells each read and written once per call.
void report_row(Harness& h, const std::string& shape, const std::string& name, const std::string& how,
                const tessera::bench::Timing& ms, double cells, double copy_gbs, int wrong) {
  const double gbs = 2.0 * cells * sizeof(float) / (ms.median * 1e6);
  std::printf("%-16s %-20s %-14s %10.4f %9.1f %6.1f%% %s\n", shape.c_str(), name.c_str(), how.c_str(), ms.median, gbs,
              100.0 * gbs / copy_gbs, wrong ? "WRONG" : "ok");
  std::fflush(stdout);
  h.row(std::string("float ") + shape + " " + name + " " + how)
      .set("shape", shape)
      .set("stencil", name)
      .set("how", how)
      .set("ms", ms.median)
      .set("gbs", gbs)
      .time(tessera::bench::seconds(ms))
      .share("copy", gbs / copy_gbs)
      .verdict(wrong == 0, wrong ? std::to_string(wrong) + " of 4096 checked cells differ from the host's" : "");
  h.print_pending();
}

// One row: `run` timed (per_call_ms), then v checked on 4096 cells spread over the field (both faces
// of axis 2 among them) against the host.
template <class F, class Run>
void time_row(Harness& h, const Shape& s, const std::string& name, const std::string& how, double copy_gbs,
              const tessera::Context& ctx, tessera::Field<float, 3>& v, bool periodic, Run run) {
  v.fill(-1.0f);
  const tessera::bench::Timing ms = per_call_ms(h, ctx, run);
  const std::vector<float> got = v.gather(0);
  std::mt19937_64 gen(7);
  int wrong = 0;
  for (int k = 0; k < 4096; ++k) {
    const index_t i0 = static_cast<index_t>(gen() % static_cast<std::uint64_t>(s.n[0]));
    const index_t i1 = static_cast<index_t>(gen() % static_cast<std::uint64_t>(s.n[1]));
    const index_t i2 = k % 2 ? (k % 4 == 1 ? 0 : s.n[2] - 1) : static_cast<index_t>(gen() % static_cast<std::uint64_t>(s.n[2]));
    if (got[static_cast<std::size_t>((i0 * s.n[1] + i1) * s.n[2] + i2)] != host_value(F{}, s, periodic, i0, i1, i2)) ++wrong;
  }
  char shape[64];
  std::snprintf(shape, sizeof shape, "%lldx%lldx%lld", static_cast<long long>(s.n[0]), static_cast<long long>(s.n[1]),
                static_cast<long long>(s.n[2]));
  report_row(h, shape, name, how, ms, static_cast<double>(s.n[0]) * static_cast<double>(s.n[1]) * static_cast<double>(s.n[2]),
             copy_gbs, wrong);
}

// apply_stencil whole (Dirichlet: all interior; periodic: the exchange, then the whole block), then its sweep alone
// over the block in the tiled and the marching orders, and the column order for a star
// (kernels::cuda::for_each_cell).
template <class F>
void bench_stencil(Harness& h, const tessera::Context& ctx, const Shape& s, const char* name, double copy_gbs,
                   bool variants) {
  const int r = F::radius;
  const std::array<index_t, 3> n{s.n[0], s.n[1], s.n[2]};
  tessera::Field<float, 3> u(ctx, n, r), v(ctx, n, r);
  u.set_outer_ghosts(0.0f);
  u.generate(Input{});
  time_row<F>(h, s, name, "apply_stencil", copy_gbs, ctx, v, false, [&] { tessera::apply_stencil(v, F{}, u); });
  {
    const tessera::CartesianGrid grid = tessera::CartesianGrid::create(ctx, {0, 0, 0});
    const std::array<tessera::AxisBoundary, 3> periodic{tessera::AxisBoundary::periodic, tessera::AxisBoundary::periodic,
                                                        tessera::AxisBoundary::periodic};
    tessera::Field<float, 3> pu(grid, n, {r, r, r}, periodic), pv(grid, n, {r, r, r}, periodic);
    pu.generate(Input{});
    time_row<F>(h, s, name, "apply periodic", copy_gbs, ctx, pv, true, [&] { tessera::apply_stencil(pv, F{}, pu); });
  }
  const tessera::detail::BlockLayout& l = u.layout();
  const tessera::detail::StencilCell<F, float, float, 3> cell{
      v.origin(), u.origin(), {}, l.stride[0], l.stride[1], {l.offset(0), l.offset(1), l.offset(2)}, F{}};
  const index_t begin[3] = {0, 0, 0}, end[3] = {s.n[0], s.n[1], s.n[2]};
  namespace kc = tessera::kernels::cuda;
  time_row<F>(h, s, name, "sweep tiled", copy_gbs, ctx, v, false,
              [&] { kc::for_each_cell(ctx.queue(), begin, end, cell, kc::CellOrder::tiled); });
  time_row<F>(h, s, name, "sweep march", copy_gbs, ctx, v, false,
              [&] { kc::for_each_cell(ctx.queue(), begin, end, cell, kc::CellOrder::march); });
  if constexpr (F::shape == StencilForm::star) {
    time_row<F>(h, s, name, "sweep column", copy_gbs, ctx, v, false,
                [&] { kc::for_each_cell(ctx.queue(), begin, end, cell, kc::CellOrder::column); });
    if constexpr (F::radius >= 2) {
      if (!variants) return;
      const kc::detail::CellRange range{0, 0, 0, s.n[0], s.n[1], s.n[2]};
      const auto variant = [&]<class Shape>(const char* how, Shape) {
        time_row<F>(h, s, name, how, copy_gbs, ctx, v, false, [&] {
          if (!kc::detail::for_each_cell_column<decltype(cell), Shape>(ctx.queue(), range, cell))
            throw std::runtime_error(std::string(how) + ": not launched");
        });
      };
      variant("col 128x32/8 F2", ColumnShape<128, 32, 8, 2, 1>{});
      variant("col 128x32/8 F3", ColumnShape<128, 32, 8, 3, 1>{});
      if constexpr (F::radius != 4) return;
      variant("col 128x16/8", ColumnShape<128, 16, 8, 2, 1>{});
      variant("col 128x16/4 F3", ColumnShape<128, 16, 4, 3, 1>{});
      variant("col 128x16/4 2b", ColumnShape<128, 16, 4, 2, 2>{});
      variant("col 64x32/8 2b", ColumnShape<64, 32, 8, 2, 2>{});
      variant("col 256x8/4", ColumnShape<256, 8, 4, 2, 1>{});
    }
  }
}

// The overlapped step on `ctx`'s ranks along axis 0, a block of shape s per rank.
template <class F>
void bench_overlap(Harness& h, const tessera::Context& ctx, const Shape& s, const char* name) {
  const int r = F::radius, p = ctx.size();
  const tessera::CartesianGrid grid = tessera::CartesianGrid::create(ctx, {p, 1, 1});
  const std::array<index_t, 3> n{s.n[0] * p, s.n[1], s.n[2]};
  tessera::Field<float, 3> u(grid, n, {r, r, r}), v(grid, n, {r, r, r});
  u.set_outer_ghosts(0.0f);
  u.generate(Input{});
  const auto timed = [&](auto&& run) {  // seconds per call, the slowest rank's, per sample
    return tessera::bench::slowest_rank(ctx, tessera::bench::seconds(per_call_ms(h, ctx, run)));
  };
  const tessera::detail::BlockLayout& l = u.layout();
  const tessera::detail::StencilCell<F, float, float, 3> cell{
      v.origin(), u.origin(), {}, l.stride[0], l.stride[1], {l.offset(0), l.offset(1), l.offset(2)}, F{}};
  const index_t begin[3] = {0, 0, 0}, end[3] = {l.local(0), l.local(1), l.local(2)};
  namespace kc = tessera::kernels::cuda;
  const std::vector<double> step = timed([&] { tessera::apply_stencil(v, F{}, u); });
  // The step's result against the host on 4096 cells (rank 0 gathers).
  const std::vector<float> got = v.gather(0);
  int wrong = 0;
  if (ctx.rank() == 0) {
    const Shape whole{{n[0], n[1], n[2]}};
    std::mt19937_64 gen(5);
    for (int k = 0; k < 4096; ++k) {
      // half the cells on the planes beside the ranks' faces, where the exchanged ghosts are read
      index_t i0 = static_cast<index_t>(gen() % static_cast<std::uint64_t>(n[0]));
      if (k % 2) i0 = (i0 / s.n[0]) * s.n[0] + (k % 4 == 1 ? 0 : s.n[0] - 1);
      const index_t i1 = static_cast<index_t>(gen() % static_cast<std::uint64_t>(n[1]));
      const index_t i2 = static_cast<index_t>(gen() % static_cast<std::uint64_t>(n[2]));
      if (got[static_cast<std::size_t>((i0 * n[1] + i1) * n[2] + i2)] != host_value(F{}, whole, false, i0, i1, i2)) ++wrong;
    }
  }
  const std::vector<double> exchange = timed([&] { u.exchange_halo(F::shape); });
  const std::vector<double> sweep = timed([&] { kc::for_each_cell(ctx.queue(), begin, end, cell); });
  // The step's two sweeps alone: the interior, then the shell's boxes.
  const tessera::kernels::CellBox inner = tessera::detail::stencil_interior(l, r);
  const std::vector<tessera::kernels::CellBox> shell = tessera::detail::stencil_shell(l, r);
  const std::vector<double> interior = timed([&] { tessera::kernels::for_each_cell(ctx.queue(), inner, cell); });
  const std::vector<double> outer = timed([&] {
    for (const tessera::kernels::CellBox& box : shell) tessera::kernels::for_each_cell(ctx.queue(), box, cell);
  });
  // Host time to queue one call (10 queued back to back after the queue drained; median of 9).
  const auto host_us = [&](auto&& run) {
    std::vector<double> us;
    for (int k = 0; k < 9; ++k) {
      ctx.queue().synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < 10; ++c) run();
      const auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 10);
    }
    ctx.queue().synchronize();
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  const double host_step = host_us([&] { tessera::apply_stencil(v, F{}, u); });
  const double host_exchange = host_us([&] { u.exchange_halo(F::shape); });
  const double host_interior = host_us([&] { tessera::kernels::for_each_cell(ctx.queue(), inner, cell); });
  const double host_shell = host_us([&] {
    for (const tessera::kernels::CellBox& box : shell) tessera::kernels::for_each_cell(ctx.queue(), box, cell);
  });
  if (h.root())
    std::printf("host us per call: step %.1f  exchange %.1f  interior %.1f  shell %.1f\n", host_step, host_exchange,
                host_interior, host_shell);
  const double t_step = tessera::bench::median(step), t_exchange = tessera::bench::median(exchange),
               t_sweep = tessera::bench::median(sweep), t_interior = tessera::bench::median(interior),
               t_shell = tessera::bench::median(outer);
  const double hidden = t_exchange > 0 ? (t_sweep + t_exchange - t_step) / t_exchange : 0;
  char shape[64];
  std::snprintf(shape, sizeof shape, "%lldx%lldx%lld/rank", static_cast<long long>(s.n[0]), static_cast<long long>(s.n[1]),
                static_cast<long long>(s.n[2]));
  if (!h.root()) return;
  std::printf("%-20s %-20s step %8.1f us  exchange %7.1f us  sweep %8.1f us  (interior %8.1f + shell %6.1f us)  hidden %5.1f%% %s\n",
              shape, name, t_step * 1e6, t_exchange * 1e6, t_sweep * 1e6, t_interior * 1e6, t_shell * 1e6, 100.0 * hidden,
              wrong ? "WRONG" : "ok");
  std::fflush(stdout);
  h.row(std::string("float ") + shape + " " + name + " overlapped step on " + std::to_string(p) + " ranks")
      .set("shape", shape)
      .set("stencil", name)
      .set("ranks", p)
      .set("exchange_us", t_exchange * 1e6)
      .set("sweep_us", t_sweep * 1e6)
      .set("interior_us", t_interior * 1e6)
      .set("shell_us", t_shell * 1e6)
      .set("host_step_us", host_step)
      .set("host_exchange_us", host_exchange)
      .time(step)
      .share("hidden", hidden)
      .verdict(wrong == 0, wrong ? std::to_string(wrong) + " of 4096 checked cells differ from the host's" : "");
  h.print_pending();
}

// The Jacobi weights of StencilWeights<float>::jacobi5 / jacobi9 as user stencils.
struct Jacobi5 {
  static constexpr int radius = 1;
  static constexpr StencilForm shape = StencilForm::star;
  template <class V>
  TESSERA_HOST_DEVICE float operator()(const V& u, const FieldIndex<2>&) const {
    return 0.25f * u(-1, 0) + 0.25f * u(1, 0) + 0.25f * u(0, -1) + 0.25f * u(0, 1);
  }
};
struct Jacobi9 {
  static constexpr int radius = 1;
  static constexpr StencilForm shape = StencilForm::box;
  template <class V>
  TESSERA_HOST_DEVICE float operator()(const V& u, const FieldIndex<2>&) const {
    return 0.2f * u(-1, 0) + 0.2f * u(1, 0) + 0.2f * u(0, -1) + 0.2f * u(0, 1) + 0.05f * u(-1, -1) + 0.05f * u(-1, 1) +
           0.05f * u(1, -1) + 0.05f * u(1, 1);
  }
};

struct Input2 {
  TESSERA_HOST_DEVICE float operator()(const FieldIndex<2>& i) const { return static_cast<float>((i[0] * 3 + i[1]) % 16); }
};

// One 2-D row: `run` timed as time_row does, then `got` (the n x n owned cells) checked against
// the host's evaluation of F on 4096 cells (Dirichlet 0 outside), to 1.6e-5 (the inputs are below 16).
template <class F, class Run, class Gather>
void time_row_2d(Harness& h, index_t n, const std::string& name, const std::string& how, double copy_gbs,
                 const tessera::Context& ctx, Run run, Gather gather) {
  const tessera::bench::Timing ms = per_call_ms(h, ctx, run);
  const std::vector<float> got = gather();
  std::mt19937_64 gen(11);
  int wrong = 0;
  for (int k = 0; k < 4096; ++k) {
    const index_t i = static_cast<index_t>(gen() % static_cast<std::uint64_t>(n));
    const index_t j = k % 2 ? (k % 4 == 1 ? 0 : n - 1) : static_cast<index_t>(gen() % static_cast<std::uint64_t>(n));
    const auto at = [&](int a, int b) {
      const index_t y = i + a, x = j + b;
      return y < 0 || x < 0 || y >= n || x >= n ? 0.0f : Input2{}(FieldIndex<2>{{y, x}});
    };
    // The 9-point weights (0.2, 0.05) are not powers of two: a fused multiply-add (nvcc contracts
    // them in device code) may round the last bit differently from the host's products and sums.
    const float want = F{}(at, FieldIndex<2>{{i, j}}), have = got[static_cast<std::size_t>(i * n + j)];
    if (!(std::fabs(have - want) <= 1e-6f * 16)) ++wrong;
  }
  report_row(h, std::to_string(n) + "x" + std::to_string(n), name, how, ms, static_cast<double>(n) * static_cast<double>(n),
             copy_gbs, wrong);
}

// The Jacobi solver's sweep (kernels::stencil_2d on a Field2D<float>) and the same weights as a user
// stencil (apply_stencil on a Field<float, 2>), n x n on one rank.
template <class F>
void bench_2d(Harness& h, const tessera::Context& ctx, index_t n, const char* name,
              const tessera::StencilWeights<float>& weights, double copy_gbs) {
  {
    tessera::Field2D<float> a(tessera::ProcessGrid::create(ctx, 1, 1), n, n, 1), b(tessera::ProcessGrid::create(ctx, 1, 1), n, n, 1);
    a.set_outer_ghosts([](index_t, index_t) { return 0.0f; });
    std::vector<float> cells(static_cast<std::size_t>(n * n));
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j) cells[static_cast<std::size_t>(i * n + j)] = Input2{}(FieldIndex<2>{{i, j}});
    a.local_from_host(cells);
    time_row_2d<F>(
        h, n, name, "Jacobi sweep", copy_gbs, ctx,
        [&] { tessera::kernels::stencil_2d(ctx.queue(), a.origin(), a.ld(), b.origin(), b.ld(), n, n, weights); },
        [&] { return b.gather(0); });
  }
  tessera::Field<float, 2> u(ctx, {n, n}, 1), v(ctx, {n, n}, 1);
  u.set_outer_ghosts(0.0f);
  u.generate(Input2{});
  time_row_2d<F>(h, n, name, "apply_stencil", copy_gbs, ctx, [&] { tessera::apply_stencil(v, F{}, u); },
                 [&] { return v.gather(0); });
  const tessera::detail::BlockLayout& l = u.layout();
  const tessera::detail::StencilCell<F, float, float, 2> cell{
      v.origin(), u.origin(), {}, l.stride[0], l.stride[1], {l.offset(0), l.offset(1), l.offset(2)}, F{}};
  const index_t begin[3] = {0, 0, 0}, end[3] = {1, n, n};
  namespace kc = tessera::kernels::cuda;
  for (const auto& [how, order] : {std::pair{"sweep rows", kc::CellOrder::rows}, std::pair{"sweep tiled", kc::CellOrder::tiled},
                                   std::pair{"sweep planes", kc::CellOrder::planes}})
    time_row_2d<F>(h, n, name, how, copy_gbs, ctx, [&] { kc::for_each_cell(ctx.queue(), begin, end, cell, order); },
                   [&] { return v.gather(0); });
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  Harness h("tessera_bench_stencil_3d",
            "The user stencil (apply_stencil on a Field<float, 3>) on one GPU against the copy rate:\n"
            "7-point star, 27-point box, 13-point star (radius 2), 25-point star (radius 4).",
            {.minbytes = index_t(1) << 20, .maxbytes = index_t(1) << 20, .stepfactor = 2, .iters = 20, .warmup = 3});
  std::vector<Shape> shapes = {{{512, 512, 512}}, {{1024, 1024, 512}}};
  index_t n2d = 16384;
  h.add_option({"--n2d"}, "N", "the 2-D fields' side (default 16384; 0: no 2-D rows)", [&](std::string_view text) {
    n2d = tessera::bench::parse_count(std::string(text), "--n2d");
  });
  h.add_option({"--shapes"}, "AxBxC,...", "the fields' shapes (default 512x512x512,1024x1024x512)",
               [&](std::string_view text) {
                 shapes.clear();
                 for (const std::string& item : tessera::bench::split(std::string(text))) {
                   Shape s{};
                   long long a = 0, b = 0, c = 0;
                   if (std::sscanf(item.c_str(), "%lldx%lldx%lld", &a, &b, &c) != 3 || a < 1 || b < 1 || c < 1)
                     throw tessera::UsageError("--shapes: '" + item + "' is not AxBxC of positive extents");
                   s.n[0] = a;
                   s.n[1] = b;
                   s.n[2] = c;
                   shapes.push_back(s);
                 }
               });
  std::vector<std::string> stencils = {"star1", "box27", "star2", "star4"};
  h.add_option({"--stencils"}, "NAME,...", "the 3-D stencils: star1, box27, star2, star4 (default all)",
               [&](std::string_view text) {
                 stencils = tessera::bench::split(std::string(text));
                 for (const std::string& name : stencils)
                   if (name != "star1" && name != "box27" && name != "star2" && name != "star4")
                     throw tessera::UsageError("--stencils: '" + name + "' is none of star1, box27, star2, star4");
               });
  bool variants = false;
  h.add_switch({"--variants"}, "also other shapes of the column order (the stars of radius 2 and 4)", &variants);
  tessera::bench::parse_command_line(h, argc, argv);
  tessera::Context ctx;
  try {
    ctx = runtime.start(tessera::BackendChoice::cuda);
  } catch (const tessera::UsageError& e) {
    std::fprintf(stderr, "tessera_bench_stencil_3d: %s\n", e.what());
    return 2;
  }
  h.set_root(ctx.rank() == 0);
  h.set_environment(tessera::bench::environment_json(tessera::describe_environment(ctx)));
  if (ctx.size() > 1) {
    if (h.root())
      std::printf("tessera_bench_stencil_3d: the overlapped step on %d ranks, rank 0 on %s\n\n", ctx.size(),
                  tessera::kernels::describe_device(ctx.queue()).c_str());
    for (const Shape& s : shapes) {
      bench_overlap<Star<1>>(h, ctx, s, "star r1 (7-point)");
      bench_overlap<Box27>(h, ctx, s, "box r1 (27-point)");
    }
    return tessera::bench::finish(h);
  }
  const double copy_gbs = tessera::bench::measure_copy_gbs(ctx.queue());
  h.configuration()["copy_gbs"] = copy_gbs;
  std::printf("tessera_bench_stencil_3d on %s\ndevice-to-device copy: %.1f GB/s (bytes read + written)\n\n",
              tessera::kernels::describe_device(ctx.queue()).c_str(), copy_gbs);
  std::printf("%-16s %-20s %-14s %10s %9s %7s %s\n", "shape", "stencil", "how", "ms", "GB/s", "%copy", "check");
  const auto chosen = [&](const char* key) { return std::find(stencils.begin(), stencils.end(), key) != stencils.end(); };
  for (const Shape& s : shapes) {
    if (chosen("star1")) bench_stencil<Star<1>>(h, ctx, s, "star r1 (7-point)", copy_gbs, variants);
    if (chosen("box27")) bench_stencil<Box27>(h, ctx, s, "box r1 (27-point)", copy_gbs, variants);
    if (chosen("star2")) bench_stencil<Star<2>>(h, ctx, s, "star r2 (13-point)", copy_gbs, variants);
    if (chosen("star4")) bench_stencil<Star<4>>(h, ctx, s, "star r4 (25-point)", copy_gbs, variants);
  }
  if (n2d > 0) {
    bench_2d<Jacobi5>(h, ctx, n2d, "2-D 5-point", tessera::StencilWeights<float>::jacobi5(), copy_gbs);
    bench_2d<Jacobi9>(h, ctx, n2d, "2-D 9-point", tessera::StencilWeights<float>::jacobi9(), copy_gbs);
  }
  return tessera::bench::finish(h);
}
