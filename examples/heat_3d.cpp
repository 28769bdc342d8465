// The 3-D heat equation u_t = u_xx + u_yy + u_zz on the unit cube with u = 0 on its faces: explicit
// Euler steps of the 7-point Laplacian, a user stencil (apply_stencil) on a Field<double, 3> over a
// 3-D process grid, checked against the exact solution of the discrete problem.
//
//   mpiexec -n 3 ./heat_3d [NX NY NZ [STEPS]]      (default 33 29 31, 20 steps)
//
// Cell (i, j, k) sits at ((i + 1) hx, (j + 1) hy, (k + 1) hz), h = 1 / (n + 1) per axis, and the
// outer ghost cells hold the boundary's 0. u0 = sin(pi x) sin(pi y) sin(pi z) is an eigenvector of
// the discrete Laplacian, with eigenvalue -sum_a (4 / ha^2) sin^2(pi ha / 2); each step multiplies
// it by g = 1 - dt sum_a (4 / ha^2) sin^2(pi ha / 2) (the continuous solution decays as
// exp(-3 pi^2 t)). After m steps u = g^m u0 up to rounding: the program prints the largest
// difference relative to max |u0| and fails (exit 1) where it passes 1e-12.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tessera/framework/framework.hpp"

namespace {

constexpr double kPi = 3.14159265358979323846;

// One explicit Euler step of the 7-point Laplacian: c[a] = dt / ha^2.
struct HeatStep {
  static constexpr int radius = 1;
  static constexpr tessera::StencilForm shape = tessera::StencilForm::star;
  double c[3];
  template <class View>
  TESSERA_HOST_DEVICE double operator()(const View& u, const tessera::FieldIndex<3>&) const {
    const double centre = u(0, 0, 0);
    return centre + c[0] * (u(-1, 0, 0) - 2.0 * centre + u(1, 0, 0)) + c[1] * (u(0, -1, 0) - 2.0 * centre + u(0, 1, 0)) +
           c[2] * (u(0, 0, -1) - 2.0 * centre + u(0, 0, 1));
  }
};

struct Initial {
  double h[3];
  TESSERA_HOST_DEVICE double operator()(const tessera::FieldIndex<3>& i) const {
    return sin(kPi * (i[0] + 1) * h[0]) * sin(kPi * (i[1] + 1) * h[1]) * sin(kPi * (i[2] + 1) * h[2]);
  }
};

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  const tessera::Context ctx = runtime.start(tessera::BackendChoice::automatic);
  std::array<tessera::index_t, 3> n{33, 29, 31};
  int steps = 20;
  if (argc >= 4)
    for (int a = 0; a < 3; ++a) n[static_cast<std::size_t>(a)] = std::atoll(argv[a + 1]);
  if (argc >= 5) steps = std::atoi(argv[4]);
  if (argc == 2 || argc == 3 || argc > 5 || n[0] < 1 || n[1] < 1 || n[2] < 1 || steps < 0) {
    if (ctx.is_root()) std::fprintf(stderr, "heat_3d: usage: heat_3d [NX NY NZ [STEPS]], extents >= 1, steps >= 0\n");
    return 2;
  }

  Initial initial{};
  HeatStep step{};
  double inverse_h2 = 0, rate = 0;
  for (int a = 0; a < 3; ++a) {
    initial.h[a] = 1.0 / static_cast<double>(n[static_cast<std::size_t>(a)] + 1);
    inverse_h2 += 1.0 / (initial.h[a] * initial.h[a]);
  }
  const double dt = 0.9 / (2.0 * inverse_h2);  // stable: dt sum_a 4 / ha^2 < 2
  for (int a = 0; a < 3; ++a) {
    step.c[a] = dt / (initial.h[a] * initial.h[a]);
    const double s = std::sin(kPi * initial.h[a] / 2);
    rate += 4.0 * step.c[a] * s * s;
  }
  const double g = 1.0 - rate;

  tessera::Field<double, 3> u(ctx, n, 1), v(ctx, n, 1);  // a grid MPI_Dims_create chooses
  u.set_outer_ghosts(0.0);
  v.set_outer_ghosts(0.0);
  u.generate(initial);
  for (int s = 0; s < steps; ++s) tessera::apply_stencil(s % 2 ? u : v, step, s % 2 ? v : u);
  const tessera::Field<double, 3>& last = steps % 2 ? v : u;

  // Each rank compares its own cells with g^m u0.
  const std::vector<double> mine = last.local_to_host();
  const double decay = std::pow(g, steps);
  double worst = 0;
  std::size_t k = 0;
  for (tessera::index_t i = 0; i < last.local_extent(0); ++i)
    for (tessera::index_t j = 0; j < last.local_extent(1); ++j)
      for (tessera::index_t l = 0; l < last.local_extent(2); ++l, ++k) {
        const tessera::FieldIndex<3> at{{last.offset(0) + i, last.offset(1) + j, last.offset(2) + l}};
        worst = std::max(worst, std::abs(mine[k] - decay * initial(at)));
      }
  worst = ctx.comm().allreduce(worst, tessera::ReduceOp::max);
  const double bound = 1e-12;
  if (ctx.is_root())
    std::printf("heat_3d: %lldx%lldx%lld cells on the grid %s of %d ranks (%s), %d steps of dt %.6g: decay %.15g, "
                "largest difference from g^m u0 %.3g (bound %.0e)\n",
                static_cast<long long>(n[0]), static_cast<long long>(n[1]), static_cast<long long>(n[2]),
                u.grid().text().c_str(), ctx.size(), tessera::to_string(ctx.backend()), steps, dt, decay, worst, bound);
  return worst <= bound ? 0 : 1;
}
