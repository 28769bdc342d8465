// Field<T, 3> and apply_stencil across every 3-D process grid of the pass's rank count, against
// serial reference loops written here: star and box stencils of radius 1, 2 and 4, Dirichlet and
// periodic axes, a variable coefficient read from a second field, a struct of two fields and
// complex numbers, on sizes no grid divides (blocks empty, and thinner than the ghost width). The
// results must be bitwise the reference's: every weight is a power of two, so that a product is
// exact and a fused multiply-add (nvcc contracts them in device code) rounds as a multiply then an
// add does. Compiled by nvcc where the build has CUDA: TESSERA_TEST_BACKEND=cuda runs the same
// cases on the device path. Bad input (a grid that is not the rank count, a radius over the ghost
// width, fields of different layouts, an offset outside the declared reach) is a UsageError on
// every rank.
// Built with TESSERA_STENCIL_CHECKS=1 (tests/generic/CMakeLists.txt): the cpu path checks offsets.
#include <array>
#include <cstdint>
#include <cstring>
#include <random>

#include "element_types.hpp"
#include "generic_test_util.hpp"
#include "tessera/framework/algorithms/apply_stencil.hpp"
#include "tessera/framework/field.hpp"

namespace tessera {
namespace {

using Extents = std::array<index_t, 3>;
using Boundaries = std::array<AxisBoundary, 3>;
constexpr AxisBoundary kDir = AxisBoundary::dirichlet;
constexpr AxisBoundary kPer = AxisBoundary::periodic;

// Every grid g0 x g1 x g2 of `ranks` processes.
std::vector<std::vector<int>> grids_of(int ranks) {
  std::vector<std::vector<int>> grids;
  for (int a = 1; a <= ranks; ++a)
    for (int b = 1; a * b <= ranks; ++b)
      if (ranks % (a * b) == 0) grids.push_back({a, b, ranks / (a * b)});
  return grids;
}

std::string text(const std::vector<int>& g, const Extents& n) {
  return "grid " + std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) + ", field " +
         std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]) + ", seed " +
         std::to_string(test::seed());
}

// ---- the serial reference -----------------------------------------------------------------------------

// u at global index (i0 + d0, ...) of the whole field u (row-major n0 x n1 x n2): wrapped along a
// periodic axis, boundary(index) where it lies outside along a Dirichlet axis.
template <class T, class B>
T reference_at(const std::vector<T>& u, const Extents& n, const Boundaries& bc, std::array<index_t, 3> i, B boundary) {
  bool outside = false;
  for (int a = 0; a < 3; ++a) {
    index_t& x = i[static_cast<std::size_t>(a)];
    const index_t m = n[static_cast<std::size_t>(a)];
    if (x >= 0 && x < m) continue;
    if (bc[static_cast<std::size_t>(a)] == kPer) x = ((x % m) + m) % m;
    else outside = true;
  }
  if (outside) return boundary(i);
  return u[static_cast<std::size_t>((i[0] * n[1] + i[1]) * n[2] + i[2])];
}

// ---- the stencils and their references, side by side ---------------------------------------------

// A power of two, signed by the offset: exact in every product.
TESSERA_HOST_DEVICE inline double weight(int d0, int d1, int d2) {
  const int a = (d0 < 0 ? -d0 : d0) + 2 * (d1 < 0 ? -d1 : d1) + 3 * (d2 < 0 ? -d2 : d2);
  const double w = 1.0 / static_cast<double>(1 << (a % 12));
  return ((d0 + 2 * d1 + 5 * d2) & 1) ? -w : w;
}
inline bool in_reach(int d0, int d1, int d2, StencilForm shape) {
  return shape == StencilForm::box || (d0 != 0) + (d1 != 0) + (d2 != 0) <= 1;
}

// sum over the reach of weight(d) u(i + d), offsets in lexicographic order, plus a term of the index.
template <int R, StencilForm S>
struct WeightedSum {
  static constexpr int radius = R;
  static constexpr StencilForm shape = S;
  template <class View>
  TESSERA_HOST_DEVICE double operator()(const View& u, const FieldIndex<3>& i) const {
    double acc = 0;
    for (int d0 = -R; d0 <= R; ++d0)
      for (int d1 = -R; d1 <= R; ++d1)
        for (int d2 = -R; d2 <= R; ++d2)
          if (S == StencilForm::box || (d0 != 0) + (d1 != 0) + (d2 != 0) <= 1) acc += weight(d0, d1, d2) * u(d0, d1, d2);
    return acc + 0.125 * static_cast<double>(i[0] + 2 * i[1] - 3 * i[2]);
  }
};
template <int R, StencilForm S, class B>
std::vector<double> reference_weighted_sum(const std::vector<double>& u, const Extents& n, const Boundaries& bc, B b) {
  std::vector<double> out(u.size());
  for (index_t i0 = 0; i0 < n[0]; ++i0)
    for (index_t i1 = 0; i1 < n[1]; ++i1)
      for (index_t i2 = 0; i2 < n[2]; ++i2) {
        double acc = 0;
        for (int d0 = -R; d0 <= R; ++d0)
          for (int d1 = -R; d1 <= R; ++d1)
            for (int d2 = -R; d2 <= R; ++d2)
              if (in_reach(d0, d1, d2, S)) acc += weight(d0, d1, d2) * reference_at(u, n, bc, {i0 + d0, i1 + d1, i2 + d2}, b);
        out[static_cast<std::size_t>((i0 * n[1] + i1) * n[2] + i2)] = acc + 0.125 * static_cast<double>(i0 + 2 * i1 - 3 * i2);
      }
  return out;
}

// A variable coefficient: u + c(0) (u(1,0,0) - 2u + u(-1,0,0)) + c(0,1,0) (u(0,1,0) - u) - c(0,0,-1) u(0,0,-1),
// with c a power of two in every cell (read at offsets too: its halo is exchanged).
struct VariableCoefficient {
  static constexpr int radius = 1;
  static constexpr StencilForm shape = StencilForm::star;
  template <class U, class C>
  TESSERA_HOST_DEVICE double operator()(const U& u, const C& c, const FieldIndex<3>&) const {
    const double centre = u(0, 0, 0);
    return centre + c(0, 0, 0) * (u(1, 0, 0) - 2.0 * centre + u(-1, 0, 0)) + c(0, 1, 0) * (u(0, 1, 0) - centre) -
           c(0, 0, -1) * u(0, 0, -1);
  }
};

// Radius 2: u + c(0) (u(2,0,0) - u(-1,0,0)) + c(-2,0,0) (u(1,0,0) - u) - c(0,0,2) u(0,-2,0)
// + c(0,1,0) u(-2,0,0), c a power of two (each product exact, so a fused multiply-add rounds alike).
// Under cuda a wide block's interior takes the column order (axis 0 of u in registers, c read
// where it lies).
struct VariableCoefficientRadiusTwo {
  static constexpr int radius = 2;
  static constexpr StencilForm shape = StencilForm::star;
  template <class U, class C>
  TESSERA_HOST_DEVICE double operator()(const U& u, const C& c, const FieldIndex<3>&) const {
    const double centre = u(0, 0, 0);
    return centre + c(0, 0, 0) * (u(2, 0, 0) - u(-1, 0, 0)) + c(-2, 0, 0) * (u(1, 0, 0) - centre) -
           c(0, 0, 2) * u(0, -2, 0) + c(0, 1, 0) * u(-2, 0, 0);
  }
};

// Two fields per cell: a is a 7-point Laplacian step of a, b mixes b and a. 6 a is written 4 a + 2 a:
// two exact products, so that a contracted multiply-add rounds as the reference does.
struct Pair {
  double a;
  float b;
};
struct PairStep {
  static constexpr int radius = 1;
  static constexpr StencilForm shape = StencilForm::star;
  template <class V>
  TESSERA_HOST_DEVICE Pair operator()(const V& p, const FieldIndex<3>&) const {
    const Pair c = p(0, 0, 0);
    Pair r;
    r.a = c.a + 0.125 * (p(-1, 0, 0).a + p(1, 0, 0).a + p(0, -1, 0).a + p(0, 1, 0).a + p(0, 0, -1).a + p(0, 0, 1).a -
                         (4.0 * c.a + 2.0 * c.a));
    r.b = 0.5f * c.b - 0.25f * p(0, 0, 1).b + static_cast<float>(c.a);
    return r;
  }
};

// Complex: z(-2,0,0) + i z(0,2,0) - 0.5 z(0,0,1) + 2 z, by parts.
struct ComplexStep {
  static constexpr int radius = 2;
  static constexpr StencilForm shape = StencilForm::star;
  template <class V>
  TESSERA_HOST_DEVICE test::Complex operator()(const V& z, const FieldIndex<3>&) const {
    using test::part;
    const test::Complex a = z(-2, 0, 0), b = z(0, 2, 0), c = z(0, 0, 1), d = z(0, 0, 0);
    return test::make_complex(part(a, 0) - part(b, 1) - 0.5 * part(c, 0) + 2.0 * part(d, 0),
                              part(a, 1) + part(b, 0) - 0.5 * part(c, 1) + 2.0 * part(d, 1));
  }
};

// A 2-D stencil without declared reach (make_stencil gives it).
struct TwoD {
  template <class V>
  TESSERA_HOST_DEVICE float operator()(const V& v, const FieldIndex<2>&) const {
    return v(-1, 0) + 2.0f * v(0, 1) - v(0, -1);
  }
};

// Reads one offset, whatever reach it is declared with.
struct ReadAt {
  int d0, d1, d2;
  template <class V>
  TESSERA_HOST_DEVICE double operator()(const V& v, const FieldIndex<3>&) const { return v(d0, d1, d2); }
};

// ---- helpers ---------------------------------------------------------------------------------------

std::vector<double> random_doubles(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = dist(gen);
  return v;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Rank 0 compares the gathered field with the reference, cell by cell, bitwise.
template <class T, class Same>
void expect_field(const Field<T, 3>& f, const std::vector<T>& want, Same same, const std::string& what) {
  const std::vector<T> got = f.gather(0);
  if (test::world().rank() != 0) return;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!same(got[i], want[i])) {
      ADD_FAILURE() << what << ": first difference at cell " << i << " of " << got.size();
      return;
    }
}

double boundary_value(const std::array<index_t, 3>& i) { return 1000.0 + 7.0 * i[0] - 3.0 * i[1] + 0.5 * i[2]; }

// The stencil `steps` times (u -> v -> u ...) on every grid, against the reference (computed once,
// on rank 0).
template <int R, StencilForm S>
void weighted_sum_case(const std::vector<std::vector<int>>& grids, const Extents& n, int ghost, const Boundaries& bc,
                       int steps) {
  const std::vector<double> x = random_doubles(n[0] * n[1] * n[2], test::seed() + static_cast<std::uint64_t>(n[0] * 131 + n[2]));
  const auto b = [](const Extents& i) { return boundary_value(i); };
  std::vector<double> want = x;
  if (test::world().rank() == 0)
    for (int s = 0; s < steps; ++s) want = reference_weighted_sum<R, S>(want, n, bc, b);
  for (const auto& g : grids) {
    const CartesianGrid grid = CartesianGrid::create(test::world(), g);
    const std::string what = text(g, n) + ", " + to_string(S) + " radius " + std::to_string(R) + ", ghost " +
                             std::to_string(ghost) + ", boundaries " + to_string(bc[0]) + "," + to_string(bc[1]) + "," +
                             to_string(bc[2]);
    Field<double, 3> u(grid, n, {ghost, ghost, ghost}, bc), v(grid, n, {ghost, ghost, ghost}, bc);
    u.from_replicated(x);
    u.set_outer_ghosts(b);
    v.set_outer_ghosts(b);
    for (int s = 0; s < steps; ++s) apply_stencil(s % 2 ? u : v, WeightedSum<R, S>{}, s % 2 ? v : u);
    expect_field(steps % 2 ? v : u, want, [](double p, double q) { return same_bits(p, q); }, what);
  }
}

// ---- the tests -------------------------------------------------------------------------------------

void case_star_and_box_on_every_grid() {
  const auto grids = grids_of(test::world().size());
  for (const Extents& n : {Extents{7, 5, 3}, Extents{1, 1, 1}, Extents{31, 1, 33}, Extents{17, 13, 11}, Extents{2, 9, 4}}) {
    weighted_sum_case<1, StencilForm::star>(grids, n, 1, {kDir, kDir, kDir}, 2);
    weighted_sum_case<1, StencilForm::box>(grids, n, 2, {kDir, kDir, kDir}, 1);
    weighted_sum_case<2, StencilForm::box>(grids, n, 2, {kDir, kDir, kDir}, 1);
    weighted_sum_case<4, StencilForm::star>(grids, n, 4, {kDir, kDir, kDir}, 1);
  }
  // Periodic axes need at least the ghost width's cells.
  for (const Extents& n : {Extents{7, 5, 3}, Extents{4, 4, 4}, Extents{17, 13, 11}}) {
    weighted_sum_case<1, StencilForm::star>(grids, n, 1, {kPer, kPer, kPer}, 2);
    weighted_sum_case<1, StencilForm::box>(grids, n, 1, {kPer, kDir, kPer}, 2);
    weighted_sum_case<2, StencilForm::star>(grids, n, 3, {kDir, kPer, kPer}, 1);
    weighted_sum_case<2, StencilForm::box>(grids, n, 2, {kPer, kPer, kDir}, 1);
  }
  weighted_sum_case<4, StencilForm::star>(grids, {9, 5, 8}, 4, {kPer, kPer, kPer}, 1);
  // Blocks a warp wide along axis 2 and a tile's rows along axis 1 at 1 and 2 ranks on those axes,
  // and deeper than two batches of planes: the tiled device pass (cuda/device_cells.cuh) with its
  // planes moved down the tile and a last batch cut short.
  const Extents wide{37, 19, 67};
  weighted_sum_case<1, StencilForm::star>(grids, wide, 1, {kDir, kDir, kDir}, 2);
  weighted_sum_case<1, StencilForm::box>(grids, wide, 1, {kPer, kDir, kPer}, 2);
  weighted_sum_case<2, StencilForm::box>(grids, wide, 2, {kDir, kPer, kPer}, 1);
  weighted_sum_case<4, StencilForm::star>(grids, wide, 4, {kPer, kPer, kDir}, 1);
}

// Fills u with random doubles and coeff with powers of two (2^-((k c_mul + c_add) % c_mod) in cell
// k; outer ghosts c_low below axis 0, c_high elsewhere), and returns formula(U, C) evaluated by
// serial loops over the whole field (U, C: the replicated fields at offsets from the cell, with the
// fields' boundaries).
template <class Coefficient, class Formula>
std::vector<double> coefficient_case(Field<double, 3>& u, Field<Coefficient, 3>& coeff, const Extents& n,
                                     const Boundaries& bc, std::uint64_t seed, int c_mul, int c_add, int c_mod,
                                     double c_low, double c_high, Formula formula) {
  const index_t cells = n[0] * n[1] * n[2];
  const std::vector<double> x = random_doubles(cells, seed);
  std::vector<double> c(static_cast<std::size_t>(cells));
  for (std::size_t k = 0; k < c.size(); ++k)
    c[k] = static_cast<double>(static_cast<Coefficient>(
        1.0 / static_cast<double>(1 << ((k * static_cast<std::size_t>(c_mul) + static_cast<std::size_t>(c_add)) %
                                        static_cast<std::size_t>(c_mod)))));  // as the field holds it
  u.from_replicated(x);
  coeff.from_replicated(std::vector<Coefficient>(c.begin(), c.end()));  // powers of two: exact in float too
  const auto ub = [](const Extents& i) { return boundary_value(i); };
  const auto cb = [=](const Extents& i) { return i[0] < 0 ? c_low : c_high; };
  u.set_outer_ghosts(ub);
  coeff.set_outer_ghosts([&](const Extents& i) { return static_cast<Coefficient>(cb(i)); });
  std::vector<double> want(x.size());
  for (index_t i0 = 0; i0 < n[0]; ++i0)
    for (index_t i1 = 0; i1 < n[1]; ++i1)
      for (index_t i2 = 0; i2 < n[2]; ++i2) {
        auto U = [&](int d0, int d1, int d2) { return reference_at(x, n, bc, {i0 + d0, i1 + d1, i2 + d2}, ub); };
        auto C = [&](int d0, int d1, int d2) { return reference_at(c, n, bc, {i0 + d0, i1 + d1, i2 + d2}, cb); };
        want[static_cast<std::size_t>((i0 * n[1] + i1) * n[2] + i2)] = formula(U, C);
      }
  return want;
}

void case_variable_coefficient_radius_two() {
  const int ranks = test::world().size();
  for (const auto& g : grids_of(ranks))
    for (const Extents& n : {Extents{7, 5, 3}, Extents{37, 19, 67}}) {
      const CartesianGrid grid = CartesianGrid::create(test::world(), g);
      const Boundaries bc{kDir, kPer, kDir};
      Field<double, 3> u(grid, n, {2, 2, 2}, bc), out(grid, n, {2, 2, 2}, bc), coeff(grid, n, {2, 2, 2}, bc);
      const std::vector<double> want =
          coefficient_case(u, coeff, n, bc, test::seed() + 6, 5, 1, 7, 0.5, 2.0, [](const auto& U, const auto& C) {
            const double centre = U(0, 0, 0);
            return centre + C(0, 0, 0) * (U(2, 0, 0) - U(-1, 0, 0)) + C(-2, 0, 0) * (U(1, 0, 0) - centre) -
                   C(0, 0, 2) * U(0, -2, 0) + C(0, 1, 0) * U(-2, 0, 0);
          });
      apply_stencil(out, VariableCoefficientRadiusTwo{}, u, coeff);
      expect_field(out, want, [](double p, double q) { return same_bits(p, q); },
                   "variable coefficient, radius 2, " + text(g, n));
    }
}

void case_variable_coefficient() {
  const int ranks = test::world().size();
  for (const auto& g : grids_of(ranks))
    for (const Extents& n : {Extents{7, 5, 3}, Extents{17, 13, 11}, Extents{1, 8, 1}, Extents{21, 17, 40}}) {
      const CartesianGrid grid = CartesianGrid::create(test::world(), g);
      const Boundaries bc{kDir, kPer, kDir};
      Field<double, 3> u(grid, n, {1, 1, 1}, bc), out(grid, n, {1, 1, 1}, bc), coeff(grid, n, {1, 1, 1}, bc);
      // The reference: the same formula on the whole field.
      const std::vector<double> want =
          coefficient_case(u, coeff, n, bc, test::seed() + 5, 7, 3, 5, 0.25, 4.0, [](const auto& U, const auto& C) {
            const double centre = U(0, 0, 0);
            return centre + C(0, 0, 0) * (U(1, 0, 0) - 2.0 * centre + U(-1, 0, 0)) + C(0, 1, 0) * (U(0, 1, 0) - centre) -
                   C(0, 0, -1) * U(0, 0, -1);
          });
      apply_stencil(out, VariableCoefficient{}, u, coeff);
      expect_field(out, want, [](double p, double q) { return same_bits(p, q); }, "variable coefficient, " + text(g, n));
      // The coefficient's halo exchanged once by the caller, then read as it is (halo_current): the
      // same cells, and only u's halo in the call's exchange.
      coeff.exchange_halo(StencilForm::star);
      Field<double, 3> again(grid, n, {1, 1, 1}, bc);
      const CollectivePlan plan = stencil_plan(u, StencilForm::star, halo_current(coeff));
      const double bytes = detail::collective_bytes(Collective::neighbor_exchange);
      apply_stencil(again, VariableCoefficient{}, u, halo_current(coeff));
      ASSERT_EQ(plan.size(), 1u);
      EXPECT_EQ(plan[0].bytes, stencil_plan(u, StencilForm::star)[0].bytes) << text(g, n);
      EXPECT_EQ(detail::collective_bytes(Collective::neighbor_exchange) - bytes, plan[0].bytes) << text(g, n);
      expect_field(again, want, [](double p, double q) { return same_bits(p, q); },
                   "variable coefficient in halo_current, " + text(g, n));
    }
}

void case_struct_of_two_fields_and_complex() {
  const int ranks = test::world().size();
  for (const auto& g : grids_of(ranks))
    for (const Extents& n : {Extents{7, 5, 3}, Extents{17, 13, 11}, Extents{3, 2, 9}, Extents{20, 9, 35}}) {
      const CartesianGrid grid = CartesianGrid::create(test::world(), g);
      const index_t cells = n[0] * n[1] * n[2];
      const std::vector<double> r = random_doubles(2 * cells, test::seed() + 11);
      {
        const Boundaries bc{kPer, kDir, kPer};
        std::vector<Pair> x(static_cast<std::size_t>(cells));
        for (std::size_t k = 0; k < x.size(); ++k) x[k] = {r[2 * k], static_cast<float>(r[2 * k + 1])};
        Field<Pair, 3> p(grid, n, {1, 1, 1}, bc), out(grid, n, {1, 1, 1}, bc);
        p.from_replicated(x);
        const auto b = [](const Extents& i) { return Pair{boundary_value(i), static_cast<float>(i[1])}; };
        p.set_outer_ghosts(b);
        apply_stencil(out, PairStep{}, p);
        std::vector<Pair> want(x.size());
        for (index_t i0 = 0; i0 < n[0]; ++i0)
          for (index_t i1 = 0; i1 < n[1]; ++i1)
            for (index_t i2 = 0; i2 < n[2]; ++i2) {
              auto P = [&](int d0, int d1, int d2) { return reference_at(x, n, bc, {i0 + d0, i1 + d1, i2 + d2}, b); };
              const Pair c = P(0, 0, 0);
              Pair w;
              w.a = c.a + 0.125 * (P(-1, 0, 0).a + P(1, 0, 0).a + P(0, -1, 0).a + P(0, 1, 0).a + P(0, 0, -1).a +
                                   P(0, 0, 1).a - (4.0 * c.a + 2.0 * c.a));
              w.b = 0.5f * c.b - 0.25f * P(0, 0, 1).b + static_cast<float>(c.a);
              want[static_cast<std::size_t>((i0 * n[1] + i1) * n[2] + i2)] = w;
            }
        expect_field(out, want, [](const Pair& s, const Pair& t) { return same_bits(s.a, t.a) && same_bits(s.b, t.b); },
                     "struct {double a; float b;}, " + text(g, n));
      }
      {
        const Boundaries bc{kDir, kPer, kDir};  // axis 1 periodic: n1 >= 2, the ghost width
        std::vector<test::Complex> z(static_cast<std::size_t>(cells));
        for (std::size_t k = 0; k < z.size(); ++k) z[k] = test::Complex(r[2 * k], r[2 * k + 1]);
        Field<test::Complex, 3> f(grid, n, {2, 2, 2}, bc), out(grid, n, {2, 2, 2}, bc);
        f.from_replicated(z);
        const auto b = [](const Extents& i) { return test::Complex(boundary_value(i), -1.0 * i[0]); };
        f.set_outer_ghosts(b);
        apply_stencil(out, ComplexStep{}, f);
        std::vector<test::Complex> want(z.size());
        for (index_t i0 = 0; i0 < n[0]; ++i0)
          for (index_t i1 = 0; i1 < n[1]; ++i1)
            for (index_t i2 = 0; i2 < n[2]; ++i2) {
              auto Z = [&](int d0, int d1, int d2) { return reference_at(z, n, bc, {i0 + d0, i1 + d1, i2 + d2}, b); };
              const test::Complex a = Z(-2, 0, 0), bb = Z(0, 2, 0), c = Z(0, 0, 1), d = Z(0, 0, 0);
              want[static_cast<std::size_t>((i0 * n[1] + i1) * n[2] + i2)] =
                  test::Complex(a.real() - bb.imag() - 0.5 * c.real() + 2.0 * d.real(),
                                a.imag() + bb.real() - 0.5 * c.imag() + 2.0 * d.imag());
            }
        expect_field(out, want,
                     [](const test::Complex& s, const test::Complex& t) {
                       return same_bits(s.real(), t.real()) && same_bits(s.imag(), t.imag());
                     },
                     "complex<double>, " + text(g, n));
      }
    }
}

// Layout, gather/scatter and generate: global order, every grid, empty blocks.
void case_layout_gather_scatter_generate() {
  const Context& world = test::world();
  for (const auto& g : grids_of(world.size()))
    for (const Extents& n : {Extents{0, 3, 2}, Extents{1, 1, 1}, Extents{5, 2, 9}, Extents{3, 3, 3}}) {
      const CartesianGrid grid = CartesianGrid::create(world, g);
      Field<double, 3> f(grid, n, {1, 0, 2});
      index_t mine = f.local_cells(), all = world.comm().allreduce(mine, ReduceOp::sum);
      EXPECT_EQ(all, n[0] * n[1] * n[2]) << text(g, n);
      f.generate([] TESSERA_HOST_DEVICE(const FieldIndex<3>& i) { return static_cast<double>((i[0] * 100 + i[1]) * 100 + i[2]); });
      std::vector<double> want;
      for (index_t i0 = 0; i0 < n[0]; ++i0)
        for (index_t i1 = 0; i1 < n[1]; ++i1)
          for (index_t i2 = 0; i2 < n[2]; ++i2) want.push_back(static_cast<double>((i0 * 100 + i1) * 100 + i2));
      expect_field(f, want, [](double p, double q) { return p == q; }, "generate, " + text(g, n));
      Field<double, 3> s(grid, n, {0, 0, 0});
      std::vector<double> back(want.rbegin(), want.rend());
      s.scatter(world.rank() == 0 ? std::span<const double>(back) : std::span<const double>());
      expect_field(s, back, [](double p, double q) { return p == q; }, "scatter, " + text(g, n));
    }
  // The default grid (MPI_Dims_create) and a 2-D field on the same code.
  Field<float, 3> d(world, {4, 5, 6}, 1);
  EXPECT_EQ(d.grid().extent(0) * d.grid().extent(1) * d.grid().extent(2), world.size());
  Field<float, 2> two(world, {9, 7}, 1, {kPer, kDir});
  std::vector<float> x(63);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k);
  two.from_replicated(x);
  two.set_outer_ghosts(-1.0f);
  Field<float, 2> out(world, {9, 7}, 1, {kPer, kDir});
  apply_stencil(out, make_stencil<1, StencilForm::star>(TwoD{}), two);
  std::vector<float> want(63);
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 7; ++j) {
      const float up = x[static_cast<std::size_t>(((i + 8) % 9) * 7 + j)];
      const float right = j + 1 < 7 ? x[static_cast<std::size_t>(i * 7 + j + 1)] : -1.0f;
      const float left = j > 0 ? x[static_cast<std::size_t>(i * 7 + j - 1)] : -1.0f;
      want[static_cast<std::size_t>(i * 7 + j)] = up + 2.0f * right - left;
    }
  const std::vector<float> got = out.gather(0);
  if (world.rank() == 0) {
    EXPECT_EQ(got, want) << "2-D field";
  }
  // The padded rows (field.hpp): every row and the owned cells of every row on a 32-byte boundary,
  // for element sizes that divide 32 and ones that do not (a 12-byte struct, a 16-byte Pair).
  struct Three {
    float x, y, z;
  };
  const auto expect_padded = [&](const auto& f, std::size_t bytes, const std::string& what) {
    constexpr int D = std::remove_cvref_t<decltype(f)>::dims;
    const auto origin = reinterpret_cast<std::uintptr_t>(f.origin());
    const int rows = D >= 2 ? D - 2 : 0, last = D - 1;
    if (f.local_cells() == 0) return;
    EXPECT_EQ(origin % 32, 0u) << what;
    if (D >= 2) {
      EXPECT_EQ(static_cast<std::size_t>(f.stride(rows)) * bytes % 32, 0u) << what;
      EXPECT_GE(f.stride(rows), f.local_extent(last) + 2 * f.ghost_width(last)) << what;
    }
  };
  for (const int w : {0, 1, 2, 3, 5}) {
    const CartesianGrid grid = CartesianGrid::create(world, {1, 1, world.size()});
    expect_padded(Field<float, 3>(grid, {3, 4, 37}, {w, w, w}), sizeof(float), "float, ghost " + std::to_string(w));
    expect_padded(Field<double, 3>(grid, {3, 4, 5}, {1, 0, w}), sizeof(double), "double, ghost " + std::to_string(w));
    expect_padded(Field<Three, 3>(grid, {2, 3, 11}, {w, 1, w}), sizeof(Three), "12 bytes, ghost " + std::to_string(w));
    expect_padded(Field<Pair, 3>(grid, {2, 3, 11}, {w, 1, w}), sizeof(Pair), "16 bytes, ghost " + std::to_string(w));
    expect_padded(Field<std::uint8_t, 2>(world, {5, 33}, w), 1, "1 byte, 2-D, ghost " + std::to_string(w));
  }
}

template <class F>
void expect_usage_error(F f, const std::string& needle, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": " << e.what();
  }
}

void case_bad_input() {
  const Context& world = test::world();
  const int ranks = world.size();
  expect_usage_error([&] { CartesianGrid::create(world, {ranks + 1, 1, 1}); },
                     "needs " + std::to_string(ranks + 1) + " ranks, but the context has " + std::to_string(ranks),
                     "grid that is not the rank count");
  expect_usage_error([&] { CartesianGrid::create(world, {ranks, 2, 0}); }, "do not divide", "grid that does not divide");
  const CartesianGrid grid = CartesianGrid::create(world, {0, 0, 0});
  expect_usage_error([&] { Field<double, 3>(grid, {3, 2, 5}, {1, 3, 1}, {kDir, kPer, kDir}); }, "periodic axis 1",
                     "periodic ghost width over the extent");
  expect_usage_error([&] { Field<double, 2>(grid, {3, 2}, {1, 1}); }, "2-D field on the 3-D process grid", "2-D on 3-D");
  Field<double, 3> u(grid, {8, 8, 8}, {1, 1, 1}), out(grid, {8, 8, 8}, {1, 1, 1}), other(grid, {8, 8, 7}, {1, 1, 1});
  Field<double, 3> wide(grid, {8, 8, 8}, {2, 2, 2}), periodic(grid, {8, 8, 8}, {1, 1, 1}, {kPer, kDir, kDir});
  u.fill(1.0);
  expect_usage_error([&] { apply_stencil(out, WeightedSum<2, StencilForm::star>{}, u); },
                     "radius 2 passes the ghost width 1", "radius over the ghost width");
  expect_usage_error([&] { apply_stencil(other, WeightedSum<1, StencilForm::star>{}, u); }, "another layout",
                     "output of other extents");
  expect_usage_error([&] { apply_stencil(wide, WeightedSum<1, StencilForm::star>{}, u); }, "another layout",
                     "output of other ghost widths");
  expect_usage_error([&] { apply_stencil(out, VariableCoefficient{}, u, periodic); }, "coefficient field 0",
                     "coefficient of other boundaries");
  expect_usage_error([&] { apply_stencil(u, WeightedSum<1, StencilForm::star>{}, u); }, "also an input",
                     "output is the input");
  // An offset outside the declared reach: checked on the cpu backend (every rank owns cells here).
  if (world.backend() == Backend::cpu) {
    expect_usage_error([&] {
      apply_stencil(out, make_stencil<1, StencilForm::star>(ReadAt{1, 1, 0}), u);
    }, "outside the functor's declared reach", "box offset from a star");
    expect_usage_error([&] {
      apply_stencil(out, make_stencil<1, StencilForm::box>(ReadAt{0, 0, 2}), u);
    }, "offset (0, 0, 2)", "offset past the radius");
  }
  // Every rank is still in step.
  EXPECT_EQ(world.comm().allreduce(1, ReduceOp::sum), ranks);
}

// TESSERA_HALO chooses how a field's halo travels (exchange_halos, field.hpp), once per field and
// shape: every path gives the reference's result (fresh fields each time, on every grid, with
// messages of a rank to itself along periodic axes); peer-copy where a rank cannot take it (the cpu
// backend at more than one rank) and a value that names no path are a UsageError on every rank.
void case_halo_path_follows_tessera_halo() {
  const Context& world = test::world();
  const auto grids = grids_of(world.size());
  const bool peer_copy_refused = world.backend() == Backend::cpu && world.size() > 1;
  for (const char* path : {"auto", "device-comm", "peer-store", "peer-copy"}) {
    const test::ScopedEnv halo("TESSERA_HALO", path);
    if (std::string(path) == "peer-copy" && peer_copy_refused) {
      Field<double, 3> u(CartesianGrid::create(world, {0, 0, 0}), {7, 5, 3}, {1, 1, 1});
      expect_usage_error([&] { u.exchange_halo(StencilForm::star); }, "cuda backend", "TESSERA_HALO=peer-copy on cpu");
      continue;
    }
    weighted_sum_case<1, StencilForm::box>(grids, {7, 5, 3}, 1, {kPer, kDir, kPer}, 2);
    weighted_sum_case<2, StencilForm::star>(grids, {17, 13, 11}, 2, {kDir, kPer, kPer}, 1);
  }
  const test::ScopedEnv halo("TESSERA_HALO", "nccl");
  Field<double, 3> u(CartesianGrid::create(world, {0, 0, 0}), {7, 5, 3}, {1, 1, 1});
  expect_usage_error([&] { u.exchange_halo(StencilForm::box); }, "TESSERA_HALO: 'nccl'", "TESSERA_HALO naming no path");
  EXPECT_EQ(world.comm().allreduce(1, ReduceOp::sum), world.size());  // every rank still in step
}

// The halo's bytes sent to other ranks, counted cell by cell: every ghost cell of every other
// rank's block (within the shape, inside the domain or wrapped along a periodic axis) whose owner
// is this rank.
double halo_bytes_brute_force(const std::vector<int>& g, const Extents& n, int w, const Boundaries& bc,
                              StencilForm form, int me, std::size_t element_bytes) {
  const int ranks = g[0] * g[1] * g[2];
  auto block = [&](int rank, int a, index_t& lo, index_t& hi) {
    const int c[3] = {rank / (g[1] * g[2]), (rank / g[2]) % g[1], rank % g[2]};
    const Partition p = Partition::block(n[static_cast<std::size_t>(a)], g[static_cast<std::size_t>(a)]);
    lo = p.offset(c[a]);
    hi = lo + p.local_size(c[a]);
  };
  double cells = 0;
  for (int r = 0; r < ranks; ++r) {
    if (r == me) continue;
    index_t lo[3], hi[3];
    for (int a = 0; a < 3; ++a) block(r, a, lo[a], hi[a]);
    if (hi[0] == lo[0] || hi[1] == lo[1] || hi[2] == lo[2]) continue;
    for (index_t x = lo[0] - w; x < hi[0] + w; ++x)
      for (index_t y = lo[1] - w; y < hi[1] + w; ++y)
        for (index_t z = lo[2] - w; z < hi[2] + w; ++z) {
          const index_t at[3] = {x, y, z};
          int outside_block = 0;
          bool outer = false;
          index_t wrapped[3];
          for (int a = 0; a < 3; ++a) {
            outside_block += at[a] < lo[a] || at[a] >= hi[a];
            const index_t m = n[static_cast<std::size_t>(a)];
            wrapped[a] = at[a];
            if (at[a] < 0 || at[a] >= m) {
              if (bc[static_cast<std::size_t>(a)] == kPer) wrapped[a] = (at[a] % m + m) % m;
              else outer = true;
            }
          }
          if (outside_block == 0 || outer || (form == StencilForm::star && outside_block > 1)) continue;
          index_t mlo[3], mhi[3];
          bool mine = true;
          for (int a = 0; a < 3; ++a) {
            block(me, a, mlo[a], mhi[a]);
            mine = mine && wrapped[a] >= mlo[a] && wrapped[a] < mhi[a];
          }
          if (mine) cells += 1;
        }
  }
  return cells * static_cast<double>(element_bytes);
}

// apply_stencil makes the one neighbour exchange stencil_plan declares, of the bytes counted above.
void case_collective_plan() {
  const Context& world = test::world();
  for (const auto& g : grids_of(world.size()))
    for (const Extents& n : {Extents{7, 5, 3}, Extents{4, 9, 2}}) {
      const CartesianGrid grid = CartesianGrid::create(world, g);
      const Boundaries bc{kPer, kDir, kPer};
      Field<double, 3> u(grid, n, {2, 2, 2}, bc), v(grid, n, {2, 2, 2}, bc);
      Field<float, 3> c(grid, n, {2, 2, 2}, bc);
      u.fill(1.0);
      c.fill(1.0f);
      const std::string what = text(g, n);
      const CollectivePlan star = stencil_plan(u, StencilForm::star);
      const CollectivePlan box = stencil_plan(u, StencilForm::box, c);
      ASSERT_EQ(star.size(), 1u) << what;
      EXPECT_EQ(star[0].kind, Collective::neighbor_exchange) << what;
      EXPECT_EQ(star[0].bytes, halo_bytes_brute_force(g, n, 2, bc, StencilForm::star, world.rank(), 8)) << what;
      EXPECT_EQ(box[0].bytes, halo_bytes_brute_force(g, n, 2, bc, StencilForm::box, world.rank(), 12)) << what;
      const std::uint64_t calls = detail::collective_calls(Collective::neighbor_exchange);
      const double bytes = detail::collective_bytes(Collective::neighbor_exchange);
      apply_stencil(v, WeightedSum<2, StencilForm::box>{}, u);
      EXPECT_EQ(detail::collective_calls(Collective::neighbor_exchange) - calls, 1u) << what;  // on one rank too, of 0 bytes
      EXPECT_EQ(detail::collective_bytes(Collective::neighbor_exchange) - bytes,
                halo_bytes_brute_force(g, n, 2, bc, StencilForm::box, world.rank(), 8))
          << what;
    }
}

// A 2-D field on every 2-D grid: a radius-2 star with a periodic axis 0 and a Dirichlet axis 1,
// against its serial loop.
struct Star2D {
  static constexpr int radius = 2;
  static constexpr StencilForm shape = StencilForm::star;
  template <class V>
  TESSERA_HOST_DEVICE double operator()(const V& v, const FieldIndex<2>& i) const {
    return v(-2, 0) - 0.5 * v(1, 0) + 0.25 * v(0, -1) + v(0, 2) - 2.0 * v(0, 0) + 0.125 * static_cast<double>(i[0] - i[1]);
  }
};

void case_two_dimensional_fields() {
  const Context& world = test::world();
  const int ranks = world.size();
  for (const std::array<index_t, 2>& n : {std::array<index_t, 2>{7, 5}, {2, 9}, {13, 1}, {45, 70}}) {
    const std::vector<double> x = random_doubles(n[0] * n[1], test::seed() + 17);
    auto at = [&](index_t i, index_t j) {
      i = ((i % n[0]) + n[0]) % n[0];
      if (j < 0 || j >= n[1]) return 100.0 + static_cast<double>(i) - 3.0 * static_cast<double>(j);
      return x[static_cast<std::size_t>(i * n[1] + j)];
    };
    std::vector<double> want(x.size());
    for (index_t i = 0; i < n[0]; ++i)
      for (index_t j = 0; j < n[1]; ++j)
        want[static_cast<std::size_t>(i * n[1] + j)] = at(i - 2, j) - 0.5 * at(i + 1, j) + 0.25 * at(i, j - 1) +
                                                       at(i, j + 2) - 2.0 * at(i, j) +
                                                       0.125 * static_cast<double>(i - j);
    for (int g0 = 1; g0 <= ranks; ++g0) {
      if (ranks % g0) continue;
      const std::vector<int> g{g0, ranks / g0};
      const CartesianGrid grid = CartesianGrid::create(world, g);
      Field<double, 2> u(grid, n, {2, 2}, {kPer, kDir}), out(grid, n, {2, 2}, {kPer, kDir});
      u.from_replicated(x);
      u.set_outer_ghosts([](const std::array<index_t, 2>& i) { return 100.0 + static_cast<double>(i[0]) - 3.0 * static_cast<double>(i[1]); });
      apply_stencil(out, Star2D{}, u);
      const std::vector<double> got = out.gather(0);
      if (world.rank() != 0) continue;
      for (std::size_t k = 0; k < got.size(); ++k)
        if (!same_bits(got[k], want[k])) {
          ADD_FAILURE() << "2-D grid " << g0 << "x" << ranks / g0 << ", field " << n[0] << "x" << n[1]
                        << ": first difference at cell " << k;
          break;
        }
    }
  }
}

// Fields whose cells pad rows to another multiple than the input's are refused, on every rank and
// whatever the extents: a coefficient of floats beside doubles (rows of 9 + 2 ghosts: 12 doubles
// but 16 floats; of 13 + 2: 16 of either), and an output of floats for an input of doubles. A
// coefficient whose cells pad alike (int64_t beside doubles: 8 bytes each, rows of one stride) is
// read and exchanged with the input.
void case_coefficient_of_another_type() {
  const int ranks = test::world().size();
  for (const auto& g : grids_of(ranks))
    for (const Extents& n : {Extents{7, 5, 13}, Extents{7, 5, 9}, Extents{3, 11, 9}}) {
      const CartesianGrid grid = CartesianGrid::create(test::world(), g);
      const Boundaries bc{kDir, kPer, kPer};
      Field<double, 3> u(grid, n, {1, 1, 1}, bc), out(grid, n, {1, 1, 1}, bc);
      Field<float, 3> floats(grid, n, {1, 1, 1}, bc);
      floats.fill(1.0f);
      u.fill(1.0);
      expect_usage_error([&] { apply_stencil(out, VariableCoefficient{}, u, floats); }, "cells of 4 bytes",
                         "a coefficient of floats beside doubles, " + text(g, n));
      expect_usage_error([&] { apply_stencil(floats, VariableCoefficient{}, u, u); }, "cells of 4 bytes",
                         "an output of floats for doubles, " + text(g, n));
      Field<std::int64_t, 3> coeff(grid, n, {1, 1, 1}, bc);
      const std::vector<double> want =
          coefficient_case(u, coeff, n, bc, test::seed() + 7, 1, 0, 2, 3.0, 2.0, [](const auto& U, const auto& C) {
            const double centre = U(0, 0, 0);
            return centre + C(0, 0, 0) * (U(1, 0, 0) - 2.0 * centre + U(-1, 0, 0)) + C(0, 1, 0) * (U(0, 1, 0) - centre) -
                   C(0, 0, -1) * U(0, 0, -1);
          });
      const CollectivePlan plan = stencil_plan(u, StencilForm::star, coeff);
      const double bytes = detail::collective_bytes(Collective::neighbor_exchange);
      apply_stencil(out, VariableCoefficient{}, u, coeff);
      ASSERT_EQ(plan.size(), 1u);
      EXPECT_EQ(detail::collective_bytes(Collective::neighbor_exchange) - bytes, plan[0].bytes) << text(g, n);
      expect_field(out, want, [](double p, double q) { return same_bits(p, q); },
                   "a coefficient of int64_t cells, " + text(g, n));
    }
}

TEST(FieldStencil, StarAndBoxOnEveryGrid) { case_star_and_box_on_every_grid(); }
TEST(FieldStencil, VariableCoefficient) { case_variable_coefficient(); }
TEST(FieldStencil, VariableCoefficientRadiusTwo) { case_variable_coefficient_radius_two(); }
TEST(FieldStencil, CoefficientOfAnotherType) { case_coefficient_of_another_type(); }
TEST(FieldStencil, StructOfTwoFieldsAndComplex) { case_struct_of_two_fields_and_complex(); }
TEST(FieldStencil, LayoutGatherScatterGenerate) { case_layout_gather_scatter_generate(); }
TEST(FieldStencil, BadInput) { case_bad_input(); }
TEST(FieldStencil, HaloPathFollowsTesseraHalo) { case_halo_path_follows_tessera_halo(); }
TEST(FieldStencil, CollectivePlan) { case_collective_plan(); }
TEST(FieldStencil, TwoDimensionalFields) { case_two_dimensional_fields(); }

}  // namespace
}  // namespace tessera
