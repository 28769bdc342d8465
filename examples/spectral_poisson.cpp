// A spectral Poisson solver on the distributed FFT: -lap(u) = f on the periodic box [0, 2 pi)^3,
// sampled on an N0 x N1 x N2 grid, solved by u^ = f^ / |k|^2 (the mean of u set to 0).
//
//   mpiexec -n 4 ./spectral_poisson [N0 N1 N2 [slab|pencil]]
//
// f is made from a manufactured solution u(x, y, z) = sin(x) cos(2y) sin(3z) + cos(x + y) / 2 +
// sin(z) / 4, whose -lap(u) = 14 sin(x) cos(2y) sin(3z) + cos(x + y) + sin(z) / 4 is exact, and every
// mode of u lies on the grid (N >= 7 on every axis), so the discrete solution is u to rounding.
// The program solves on all ranks, then on the first P - 1, ..., 1 of them, prints the largest
// error of each (it must stay within 8 epsilon of max |u| times log2 N: exit 1 otherwise).
//
// One forward r2c transform, one pointwise division in the spectral layout (the plan's output box
// names this rank's wave numbers), one inverse c2r transform: what a spectral solver of any
// elliptic constant-coefficient equation does.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tessera/framework/fft.hpp"
#include "tessera/framework/framework.hpp"
#include "tessera/kernels/memory.hpp"

namespace {

using tessera::index_t;
constexpr double kTwoPi = 6.283185307179586476925286766559;

double exact_u(double x, double y, double z) {
  return std::sin(x) * std::cos(2 * y) * std::sin(3 * z) + std::cos(x + y) / 2 + std::sin(z) / 4;
}
double source_f(double x, double y, double z) {
  return 14 * std::sin(x) * std::cos(2 * y) * std::sin(3 * z) + std::cos(x + y) + std::sin(z) / 4;
}

// The signed wave number of index i on an axis of n points (numpy.fft.fftfreq(n) * n).
double wave(index_t i, index_t n) { return static_cast<double>(i <= n / 2 ? i : i - n); }

// Solves on ctx; returns the largest error against exact_u over all ranks.
double solve(const tessera::Context& ctx, const std::vector<index_t>& n, tessera::fft::Decomposition decomposition) {
  tessera::fft::Options options;
  options.decomposition = decomposition;
  options.effort = tessera::fft::Effort::estimate;
  tessera::fft::Plan<double> plan(ctx, n, tessera::fft::Kind::r2c, options);
  const tessera::fft::Box in = plan.input_box(), out = plan.output_box();
  const tessera::kernels::Queue& q = ctx.queue();

  // f on this rank's block of the grid.
  std::vector<double> f(static_cast<std::size_t>(in.count()));
  auto at = [&](const tessera::fft::Box& b, index_t i, index_t j, index_t k) {
    return static_cast<std::size_t>((i * b.size[1] + j) * b.size[2] + k);
  };
  auto coord = [&](index_t i, int axis) { return kTwoPi * static_cast<double>(i) / static_cast<double>(n[axis]); };
  for (index_t i = 0; i < in.size[0]; ++i)
    for (index_t j = 0; j < in.size[1]; ++j)
      for (index_t k = 0; k < in.size[2]; ++k)
        f[at(in, i, j, k)] = source_f(coord(in.lo[0] + i, 0), coord(in.lo[1] + j, 1), coord(in.lo[2] + k, 2));

  const std::size_t real_bytes = std::max<std::size_t>(16, f.size() * sizeof(double));
  const std::size_t spec_bytes = std::max<std::size_t>(16, static_cast<std::size_t>(out.count()) * sizeof(std::complex<double>));
  auto* x = static_cast<double*>(tessera::kernels::allocate(q, real_bytes));
  auto* spectrum = static_cast<std::complex<double>*>(tessera::kernels::allocate(q, spec_bytes));
  if (!f.empty()) tessera::kernels::copy_from_host(q, x, f.data(), f.size() * sizeof(double));
  plan.forward(x, spectrum);

  // u^ = f^ / |k|^2 in the spectral layout (k = 0: the mean, set to 0). Through the host, so that the
  // example runs the same on both backends; a GPU program would divide with a kernel.
  std::vector<std::complex<double>> s(static_cast<std::size_t>(out.count()));
  if (!s.empty()) tessera::kernels::copy_to_host(q, s.data(), spectrum, s.size() * sizeof(s[0]));
  for (index_t i = 0; i < out.size[0]; ++i)
    for (index_t j = 0; j < out.size[1]; ++j)
      for (index_t k = 0; k < out.size[2]; ++k) {
        const double kx = wave(out.lo[0] + i, n[0]), ky = wave(out.lo[1] + j, n[1]);
        const double kz = static_cast<double>(out.lo[2] + k);  // the r2c axis holds 0 .. n2/2
        const double k2 = kx * kx + ky * ky + kz * kz;
        auto& v = s[at(out, i, j, k)];
        v = k2 > 0 ? v / k2 : 0.0;
      }
  if (!s.empty()) tessera::kernels::copy_from_host(q, spectrum, s.data(), s.size() * sizeof(s[0]));
  plan.inverse(spectrum, x);
  if (!f.empty()) tessera::kernels::copy_to_host(q, f.data(), x, f.size() * sizeof(double));
  tessera::kernels::deallocate(q, x);
  tessera::kernels::deallocate(q, spectrum);

  double err = 0;
  for (index_t i = 0; i < in.size[0]; ++i)
    for (index_t j = 0; j < in.size[1]; ++j)
      for (index_t k = 0; k < in.size[2]; ++k)
        err = std::max(err, std::abs(f[at(in, i, j, k)] - exact_u(coord(in.lo[0] + i, 0), coord(in.lo[1] + j, 1),
                                                                 coord(in.lo[2] + k, 2))));
  return ctx.comm().allreduce(err, tessera::ReduceOp::max);
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  const tessera::Context world = runtime.start(tessera::BackendChoice::automatic);
  std::vector<index_t> n = {33, 24, 19};
  if (argc >= 4) n = {std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3])};
  const bool pencil = argc >= 5 && std::strcmp(argv[4], "pencil") == 0;
  if (*std::min_element(n.begin(), n.end()) < 7) {
    if (world.is_root()) std::fprintf(stderr, "spectral_poisson: every axis needs at least 7 points (u has modes up to 3)\n");
    return 2;
  }
  // max |u| <= 1.75; rounding grows as log2 of the transform's length.
  const double bound = 8 * std::numeric_limits<double>::epsilon() * 1.75 * std::log2(static_cast<double>(n[0] * n[1] * n[2]));
  bool ok = true;
  for (int ranks = world.size(); ranks >= 1; --ranks) {
    const tessera::Context ctx = world.first(ranks);
    if (ctx.is_null()) continue;
    const double err = solve(ctx, n, pencil ? tessera::fft::Decomposition::pencil : tessera::fft::Decomposition::slab);
    ok = ok && err <= bound;
    if (ctx.is_root())
      std::printf("spectral_poisson: %lldx%lldx%lld %s on %d ranks (%s): max error %.3g (bound %.3g) %s\n",
                  static_cast<long long>(n[0]), static_cast<long long>(n[1]), static_cast<long long>(n[2]),
                  pencil ? "pencil" : "slab", ranks, tessera::to_string(ctx.backend()), err, bound,
                  err <= bound ? "ok" : "WRONG");
  }
  // Every rank learns whether every solve was right.
  const int all_ok = world.comm().allreduce(ok ? 1 : 0, tessera::ReduceOp::min);
  return all_ok ? 0 : 1;
}
