// tessera-stencil's user-stencil ops on Field<T, D> (apply_stencil): a star or a box of radius 1 to 4
// with one weight per distance, and PRK's Stencil kernel (a star with the weights 1/(2 j R)).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/framework/algorithms/apply_stencil.hpp"
#include "tessera/framework/field.hpp"

namespace tessera::apps::stencil {

inline constexpr int kMaxFieldRadius = 4;

// --op star:R, box:R, prk-star:R.
struct FieldOp {
  enum class Kind { star, box, prk_star } kind = Kind::star;
  int radius = 1;
  StencilForm form() const { return kind == Kind::box ? StencilForm::box : StencilForm::star; }
  std::string name() const {
    return std::string(kind == Kind::star ? "star" : kind == Kind::box ? "box" : "prk-star") + ":" + std::to_string(radius);
  }
};

// The cell at distance j along axis a of a view of a D-dimensional field.
template <int D, class View>
TESSERA_HOST_DEVICE auto along(const View& u, int a, int j) {
  if constexpr (D == 3) return a == 0 ? u(j, 0, 0) : a == 1 ? u(0, j, 0) : u(0, 0, j);
  else return a == 0 ? u(j, 0) : u(0, j);
}

// out = w[0] u + sum_{j=1..R} w[j] (sum over the axes of u(+j) + u(-j))                  (star)
// out = sum over every offset d, |d_a| <= R, of w[max_a |d_a|] u(d)                      (box)
// The sums run in the order written (axes in order, -j before +j; offsets row-major), in T.
template <int R, StencilForm S, int D>
struct WeightedStencil {
  static constexpr int radius = R;
  static constexpr StencilForm shape = S;
  double w[R + 1];
  template <class View>
  TESSERA_HOST_DEVICE auto operator()(const View& u, const FieldIndex<D>&) const {
    using T = std::remove_cv_t<std::remove_reference_t<decltype(u.center())>>;
    T sum = static_cast<T>(w[0]) * u.center();
    if constexpr (S == StencilForm::star) {
      for (int j = 1; j <= R; ++j) {
        T s = T(0);
        for (int a = 0; a < D; ++a) s += along<D>(u, a, -j) + along<D>(u, a, j);
        sum += static_cast<T>(w[j]) * s;
      }
    } else if constexpr (D == 3) {
      for (int d0 = -R; d0 <= R; ++d0)
        for (int d1 = -R; d1 <= R; ++d1)
          for (int d2 = -R; d2 <= R; ++d2) {
            const int k = d0 < 0 ? -d0 : d0, l = d1 < 0 ? -d1 : d1, m = d2 < 0 ? -d2 : d2;
            const int shell = k > l ? (k > m ? k : m) : (l > m ? l : m);
            if (shell > 0) sum += static_cast<T>(w[shell]) * u(d0, d1, d2);
          }
    } else {
      for (int d0 = -R; d0 <= R; ++d0)
        for (int d1 = -R; d1 <= R; ++d1) {
          const int k = d0 < 0 ? -d0 : d0, l = d1 < 0 ? -d1 : d1;
          const int shell = k > l ? k : l;
          if (shell > 0) sum += static_cast<T>(w[shell]) * u(d0, d1);
        }
    }
    return sum;
  }
};

// PRK's Stencil kernel, one iteration's update of OUT: out(i) = previous(i) + sum_{j=1..R}
// (u(+j) - u(-j)) / (2 j R) along each axis, on the cells at least R from every face (PRK's
// interior); out(i) = previous(i) elsewhere. `previous` is the second view (a coefficient field).
template <int R, int D>
struct PrkStar {
  static constexpr int radius = R;
  static constexpr StencilForm shape = StencilForm::star;
  index_t extent[D];
  template <class View, class Previous>
  TESSERA_HOST_DEVICE auto operator()(const View& u, const Previous& previous, const FieldIndex<D>& i) const {
    using T = std::remove_cv_t<std::remove_reference_t<decltype(u.center())>>;
    T out = previous.center();
    for (int a = 0; a < D; ++a)
      if (i[a] < R || i[a] >= extent[a] - R) return out;
    for (int a = 0; a < D; ++a)
      for (int j = 1; j <= R; ++j) {
        const T w = static_cast<T>(1.0 / (2.0 * j * R));
        out += w * along<D>(u, a, j) - w * along<D>(u, a, -j);
      }
    return out;
  }
};

// u(i) + 1 (PRK's refresh of its input after each iteration).
struct AddOne {
  static constexpr int radius = 0;
  static constexpr StencilForm shape = StencilForm::star;
  template <class View, int D>
  TESSERA_HOST_DEVICE auto operator()(const View& u, const FieldIndex<D>&) const {
    using T = std::remove_cv_t<std::remove_reference_t<decltype(u.center())>>;
    return u.center() + T(1);
  }
};

// The initial field: prod_a sin(pi (i_a + 1) / (n_a + 1)), the slowest mode of the Dirichlet-zero box.
template <int D>
struct SineMode {
  double h[D];
  TESSERA_HOST_DEVICE double operator()(const FieldIndex<D>& i) const {
    double v = 1;
    for (int a = 0; a < D; ++a) v *= sin(3.14159265358979323846 * static_cast<double>(i[a] + 1) * h[a]);
    return v;
  }
};

// PRK's input: in(i) = sum_a i_a (COEFX = COEFY = 1).
template <int D>
struct PrkInput {
  TESSERA_HOST_DEVICE double operator()(const FieldIndex<D>& i) const {
    double v = 0;
    for (int a = 0; a < D; ++a) v += static_cast<double>(i[a]);
    return v;
  }
};

// f's value as the element type T (a generate functor).
template <class T, class F>
struct AsElement {
  F f;
  template <class Index>
  TESSERA_HOST_DEVICE T operator()(const Index& i) const {
    return static_cast<T>(f(i));
  }
};

// Calls f.template operator()<R>() for the radius r (1 to kMaxFieldRadius).
template <class F>
decltype(auto) with_radius(int r, F&& f) {
  switch (r) {
    case 1: return f.template operator()<1>();
    case 2: return f.template operator()<2>();
    case 3: return f.template operator()<3>();
    default: break;
  }
  return f.template operator()<4>();
}

}  // namespace tessera::apps::stencil
