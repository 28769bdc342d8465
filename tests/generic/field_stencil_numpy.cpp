// The program half of test_field_stencil_numpy.py: reads the fields numpy wrote, applies two user
// stencils with apply_stencil on a 3-D process grid of the launch's ranks, and writes the results
// for numpy to compare with its own formulas, which the script writes beside copies of these
// functors.
//
//   mpiexec -n 3 field_stencil_numpy DIR N0 N1 N2
//
// DIR holds u.f64 and c.f64 (N0 x N1 x N2 doubles, row-major) and p.pair (the same cells of
// {double a; float b;}, 16 bytes each); the program writes out_u.f64 and out_p.pair there.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/framework/framework.hpp"

namespace {

using tessera::FieldIndex;
using tessera::StencilForm;

// Axis 0 Dirichlet (0 outside), axes 1 and 2 periodic; c is a second field of the same layout.
//   numpy: c * (U(-2,0,0) + U(2,0,0)) + 0.5 * (U(0,-1,0) + U(0,1,0)) - C(0,0,1) * U(0,0,-2) + U(0,0,0)
struct VariableStar {
  static constexpr int radius = 2;
  static constexpr StencilForm shape = StencilForm::star;
  template <class U, class C>
  TESSERA_HOST_DEVICE double operator()(const U& u, const C& c, const FieldIndex<3>&) const {
    return c(0, 0, 0) * (u(-2, 0, 0) + u(2, 0, 0)) + 0.5 * (u(0, -1, 0) + u(0, 1, 0)) - c(0, 0, 1) * u(0, 0, -2) +
           u(0, 0, 0);
  }
};

struct Pair {
  double a;
  float b;
};
static_assert(sizeof(Pair) == 16);

// Every axis periodic.
//   numpy: a = P(-1,0,0).a + 0.25 * P(0,0,1).a;  b = P(0,1,0).b - float32(P(0,0,0).a)
struct PairStar {
  static constexpr int radius = 1;
  static constexpr StencilForm shape = StencilForm::star;
  template <class V>
  TESSERA_HOST_DEVICE Pair operator()(const V& p, const FieldIndex<3>&) const {
    Pair r;
    r.a = p(-1, 0, 0).a + 0.25 * p(0, 0, 1).a;
    r.b = p(0, 1, 0).b - static_cast<float>(p(0, 0, 0).a);
    return r;
  }
};

template <class T>
std::vector<T> read_file(const std::string& path, std::size_t n) {
  std::vector<T> v(n);
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T))))
    throw tessera::UsageError(path + ": cannot read " + std::to_string(n * sizeof(T)) + " bytes");
  return v;
}

template <class T>
void write_file(const std::string& path, const std::vector<T>& v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  if (!out) throw tessera::UsageError(path + ": cannot write");
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  const tessera::Context ctx = runtime.start(tessera::BackendChoice::automatic);
  if (argc != 5) {
    if (ctx.is_root()) std::fprintf(stderr, "usage: field_stencil_numpy DIR N0 N1 N2\n");
    return 2;
  }
  try {
    const std::string dir = argv[1];
    const std::array<tessera::index_t, 3> n{std::atoll(argv[2]), std::atoll(argv[3]), std::atoll(argv[4])};
    const std::size_t cells = static_cast<std::size_t>(n[0] * n[1] * n[2]);
    const bool root = ctx.is_root();
    using tessera::AxisBoundary;
    constexpr AxisBoundary D = AxisBoundary::dirichlet, P = AxisBoundary::periodic;

    // Rank 0 reads the inputs; every rank learns whether it could before any collective.
    std::vector<double> u_all, c_all;
    std::vector<Pair> p_all;
    std::string failed;
    if (root) try {
        u_all = read_file<double>(dir + "/u.f64", cells);
        c_all = read_file<double>(dir + "/c.f64", cells);
        p_all = read_file<Pair>(dir + "/p.pair", cells);
      } catch (const tessera::UsageError& e) {
        failed = e.what();
      }
    if (ctx.comm().bcast_value(static_cast<int>(failed.empty()), 0) == 0)
      throw tessera::UsageError(root ? failed : "rank 0 could not read the inputs");

    tessera::Field<double, 3> u(ctx, n, 2, {D, P, P}), c(ctx, n, 2, {D, P, P}), out(ctx, n, 2, {D, P, P});
    u.scatter(u_all);
    c.scatter(c_all);
    u.set_outer_ghosts(0.0);
    c.set_outer_ghosts(0.0);
    tessera::apply_stencil(out, VariableStar{}, u, c);
    const std::vector<double> got_u = out.gather(0);

    tessera::Field<Pair, 3> p(ctx, n, 1, {P, P, P}), q(ctx, n, 1, {P, P, P});
    p.scatter(p_all);
    tessera::apply_stencil(q, PairStar{}, p);
    const std::vector<Pair> got_p = q.gather(0);

    if (root) {
      write_file(dir + "/out_u.f64", got_u);
      write_file(dir + "/out_p.pair", got_p);
      std::printf("field_stencil_numpy: %lldx%lldx%lld on the grid %s of %d ranks (%s)\n", static_cast<long long>(n[0]),
                  static_cast<long long>(n[1]), static_cast<long long>(n[2]), u.grid().text().c_str(), ctx.size(),
                  tessera::to_string(ctx.backend()));
    }
  } catch (const tessera::UsageError& e) {
    if (ctx.is_root()) std::fprintf(stderr, "field_stencil_numpy: %s\n", e.what());
    return 2;
  }
  return 0;
}
