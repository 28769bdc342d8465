// The problem tessera-stencil solves with --op jacobi5 | jacobi9, and what --verify checks.
//
// The steady heat equation (Laplace's equation) on the rectangle [0, 1] x [0, Ly]: cell (i, j) of the
// ny x nx field (row i, column j) sits at x = (j + 1) h, y = (i + 1) h with h = 1 / (nx + 1) and
// Ly = (ny + 1) h, and the ghost cells around the field hold the Dirichlet values of
//
//   u(x, y) = sin(pi x) sinh(pi (Ly - y)) / sinh(pi Ly)
//
// which is harmonic: the top edge (row -1, y = 0) is hot, sin(pi x), the other three are at 0. The
// iteration starts from 0 inside.
//
// --verify compares the field with u and accepts max |u_k - u| <= discretisation + iteration +
// rounding, three bounds that follow from the discretisation (the discrete maximum principle):
//
//   discretisation  The discrete solution u_h differs from u by at most max|tau| / 8, where tau =
//                   L_h u is the truncation error of the stencil's Laplacian L_h on u (L_h u_h = 0
//                   and L_h phi = -1 for phi = x (1 - x) / 2 >= 0, whose maximum is 1/8, for both
//                   stencils). For this u, E + W = 2 cos(a) u and N + S = 2 cosh(a) u with a = pi h,
//                   so tau is exactly
//                     5-point:  (2 cos a + 2 cosh a - 4) / h^2 u       = (4/h^2) sum_(k>=1) a^(4k) / (4k)!   u
//                     9-point:  (8 cos a + 8 cosh a + 4 cos a cosh a - 20) / (6 h^2) u
//                                                                      = (1/(6h^2)) sum_(k>=2) (16 + 4 (-4)^k) a^(4k) / (4k)!  u
//                   (the 9-point stencil is exact to a^6 on this u: its leading term is a^8 / 504).
//   iteration       u_k - u_h also obeys the principle: |u_k - u_h| <= max |L_h u_k| / 8. One Jacobi
//                   step is u + (h^2/4) L5 u (5-point) or u + (6 h^2/20) L9 u (9-point), so the last
//                   update delta = max |u_k - u_(k-1)| bounds L_h u_(k-1), and a step never increases
//                   the error: |u_k - u_h| <= K (delta + c eps) / h^2 with K = 1/2 (5-point) or
//                   20/48 (9-point), where c eps bounds the rounding of one step (c = 5 and 9 terms).
//   rounding        the boundary values rounded to the field's type: eps / 2.
#pragma once

#include <cmath>
#include <limits>
#include <numbers>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera::apps::stencil {

struct HeatProblem {
  index_t nx = 0, ny = 0;
  double h() const { return 1.0 / static_cast<double>(nx + 1); }
  double height() const { return static_cast<double>(ny + 1) * h(); }
  // The exact solution at cell (i, j); also the Dirichlet value of a ghost cell outside the field.
  // sinh(a) / sinh(b), with a = pi (Ly - y) and b = pi Ly, is evaluated as
  // e^(a - b) (1 - e^(-2a)) / (1 - e^(-2b)) (expm1 for the small differences), which neither
  // overflows for tall fields (sinh(b) alone does past b = 710, Ly > 226) nor loses the value
  // near the bottom edge. Outside [0, Ly] (ghost rows beyond the first) the formula still gives the
  // harmonic extension.
  double exact(index_t i, index_t j) const {
    const double x = static_cast<double>(j + 1) * h(), y = static_cast<double>(i + 1) * h();
    const double pi = std::numbers::pi;
    const double a = pi * (height() - y), b = pi * height();
    return std::sin(pi * x) * std::exp(a - b) * (std::expm1(-2 * a) / std::expm1(-2 * b));
  }
};

// max |tau| / 8 over the field: the discretisation bound.
inline double discretisation_bound(const HeatProblem& p, StencilShape shape) {
  const double h = p.h(), a = std::numbers::pi * h;
  const double a4 = a * a * a * a;
  double term = 1, sum = 0;  // term = a^(4k) / (4k)!
  for (int k = 1; k <= 12; ++k) {
    term *= a4 / static_cast<double>((4 * k) * (4 * k - 1) * (4 * k - 2) * (4 * k - 3));
    if (shape == StencilShape::five_point) {
      sum += 4 * term;
    } else if (k >= 2) {
      sum += (16 + 4 * std::pow(-4.0, k)) * term;
    }
  }
  const double tau = shape == StencilShape::five_point ? sum / (h * h) : sum / (6 * h * h);
  return std::fabs(tau) / 8;  // |u| <= 1 on the field
}

// The bound on |u_k - u_h| from the last update `delta` (max |u_k - u_(k-1)|) in a type of epsilon eps.
inline double iteration_bound(const HeatProblem& p, StencilShape shape, double delta, double eps) {
  const double h = p.h();
  const double k = shape == StencilShape::five_point ? 0.5 : 20.0 / 48.0;
  const double c = shape == StencilShape::five_point ? 5 : 9;
  return k * (delta + c * eps) / (h * h);
}

}  // namespace tessera::apps::stencil
