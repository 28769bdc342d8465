// The user stencil (apply_stencil on a Field<float, 3>) on one GPU against the device-to-device copy
// rate: one read and one write of each cell counted, as the copy moves them.
//
//   tessera_bench_stencil_3d [--shapes 512x512x512,1024x1024x512] [-n ITERS] [-w WARMUP] [--json FILE]
//
// Rows per shape: the 7-point star (radius 1), the 27-point box (radius 1) and the 25-point star
// (radius 4), each as apply_stencil on one rank (its halo exchange has nothing to move; the interior
// and the shell are swept as in a distributed call), then its sweep alone in each order of the
// device pass (kernels::cuda::for_each_cell: a plane per grid layer, or thread blocks marching along
// axis 0), each timed over 10 calls queued back to back. %copy: the same bytes at the measured
// copy rate / our time. Each row is checked on 4096 cells spread over the field against the host's
// evaluation (inputs are small integers and the weights powers of two: the results are exact).
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
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

// The input field seen from cell (i0, i1, i2), Dirichlet 0 outside: the host's view for the check.
struct HostView {
  const Shape* s;
  index_t i0, i1, i2;
  TESSERA_HOST_DEVICE float operator()(int a, int b, int c) const {
    const index_t x = i0 + a, y = i1 + b, z = i2 + c;
    if (x < 0 || y < 0 || z < 0 || x >= s->n[0] || y >= s->n[1] || z >= s->n[2]) return 0.0f;
    return Input{}(FieldIndex<3>{{x, y, z}});
  }
};

template <class F>
float host_value(const F& f, const Shape& s, index_t i0, index_t i1, index_t i2) {
  return f(HostView{&s, i0, i1, i2}, FieldIndex<3>{{i0, i1, i2}});
}

// One row: `run` timed (kCalls calls queued back to back per sample, per call), then v checked on
// 4096 cells spread over the field (both faces of axis 2 among them) against the host.
template <class F, class Run>
void time_row(Harness& h, const Shape& s, const std::string& name, const std::string& how, double copy_gbs,
              const tessera::Context& ctx, tessera::Field<float, 3>& v, Run run) {
  constexpr int kCalls = 10;
  v.fill(-1.0f);
  tessera::bench::Timing ms = tessera::bench::median_ms(ctx.queue(), h.warmup(), h.iters(), [&] {
    for (int k = 0; k < kCalls; ++k) run();
  });
  for (double& sample : ms.samples_ms) sample /= kCalls;
  ms.median /= kCalls;
  const std::vector<float> got = v.gather(0);
  std::mt19937_64 gen(7);
  int wrong = 0;
  for (int k = 0; k < 4096; ++k) {
    const index_t i0 = static_cast<index_t>(gen() % static_cast<std::uint64_t>(s.n[0]));
    const index_t i1 = static_cast<index_t>(gen() % static_cast<std::uint64_t>(s.n[1]));
    const index_t i2 = k % 2 ? (k % 4 == 1 ? 0 : s.n[2] - 1) : static_cast<index_t>(gen() % static_cast<std::uint64_t>(s.n[2]));
    if (got[static_cast<std::size_t>((i0 * s.n[1] + i1) * s.n[2] + i2)] != host_value(F{}, s, i0, i1, i2)) ++wrong;
  }
  const double cells = static_cast<double>(s.n[0]) * static_cast<double>(s.n[1]) * static_cast<double>(s.n[2]);
  const double gbs = 2.0 * cells * sizeof(float) / (ms.median * 1e6);
  char shape[64];
  std::snprintf(shape, sizeof shape, "%lldx%lldx%lld", static_cast<long long>(s.n[0]), static_cast<long long>(s.n[1]),
                static_cast<long long>(s.n[2]));
  std::printf("%-16s %-20s %-14s %10.4f %9.1f %6.1f%% %s\n", shape, name.c_str(), how.c_str(), ms.median, gbs,
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

// apply_stencil whole, then its sweep alone over the block in each of the device pass's orders
// (kernels::cuda::for_each_cell; on one rank with Dirichlet 0 ghosts the sweep is the whole call's
// work, without the interior/shell split and the halo's planning).
template <class F>
void bench_stencil(Harness& h, const tessera::Context& ctx, const Shape& s, const char* name, double copy_gbs) {
  const int r = F::radius;
  tessera::Field<float, 3> u(ctx, {s.n[0], s.n[1], s.n[2]}, r), v(ctx, {s.n[0], s.n[1], s.n[2]}, r);
  u.set_outer_ghosts(0.0f);
  u.generate(Input{});
  time_row<F>(h, s, name, "apply_stencil", copy_gbs, ctx, v, [&] { tessera::apply_stencil(v, F{}, u); });
  const tessera::detail::BlockLayout& l = u.layout();
  const tessera::detail::StencilCell<F, float, float, 3> cell{
      v.origin(), u.origin(), {}, l.stride[0], l.stride[1], {l.offset(0), l.offset(1), l.offset(2)}, F{}};
  const index_t begin[3] = {0, 0, 0}, end[3] = {s.n[0], s.n[1], s.n[2]};
  namespace kc = tessera::kernels::cuda;
  time_row<F>(h, s, name, "sweep planes", copy_gbs, ctx, v,
              [&] { kc::for_each_cell(ctx.queue(), begin, end, cell, kc::CellOrder::planes); });
  time_row<F>(h, s, name, "sweep march", copy_gbs, ctx, v,
              [&] { kc::for_each_cell(ctx.queue(), begin, end, cell, kc::CellOrder::march); });
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  Harness h("tessera_bench_stencil_3d",
            "The user stencil (apply_stencil on a Field<float, 3>) on one GPU against the copy rate:\n"
            "7-point star, 27-point box, 25-point star (radius 4).",
            {.minbytes = index_t(1) << 20, .maxbytes = index_t(1) << 20, .stepfactor = 2, .iters = 20, .warmup = 3});
  std::vector<Shape> shapes = {{{512, 512, 512}}, {{1024, 1024, 512}}};
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
  tessera::bench::parse_command_line(h, argc, argv);
  tessera::Context ctx;
  try {
    ctx = runtime.start(tessera::BackendChoice::cuda);
  } catch (const tessera::UsageError& e) {
    std::fprintf(stderr, "tessera_bench_stencil_3d: %s\n", e.what());
    return 2;
  }
  if (ctx.size() != 1) tessera::bench::usage_error("runs on one rank (one GPU)");
  h.set_environment(tessera::bench::environment_json(tessera::describe_environment(ctx)));
  const double copy_gbs = tessera::bench::measure_copy_gbs(ctx.queue());
  h.configuration()["copy_gbs"] = copy_gbs;
  std::printf("tessera_bench_stencil_3d on %s\ndevice-to-device copy: %.1f GB/s (bytes read + written)\n\n",
              tessera::kernels::describe_device(ctx.queue()).c_str(), copy_gbs);
  std::printf("%-16s %-20s %-14s %10s %9s %7s %s\n", "shape", "stencil", "how", "ms", "GB/s", "%copy", "check");
  for (const Shape& s : shapes) {
    bench_stencil<Star<1>>(h, ctx, s, "star r1 (7-point)", copy_gbs);
    bench_stencil<Box27>(h, ctx, s, "box r1 (27-point)", copy_gbs);
    bench_stencil<Star<4>>(h, ctx, s, "star r4 (25-point)", copy_gbs);
  }
  return tessera::bench::finish(h);
}
