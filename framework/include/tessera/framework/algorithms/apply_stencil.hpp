// The user stencil over a Field<T, D> (field.hpp):
//
//   apply_stencil(out, f, in, coefficient...)          on the fields' context's queue
//   apply_stencil(ctx, out, f, in, coefficient...)     on ctx's queue (the fields' ranks)
//
// out(i) = f(view of in at i, view of each coefficient field at i..., FieldIndex<D>{i}) for every
// owned cell i. The functor declares how far it reads, as two static members:
//
//   struct Heat {
//     static constexpr int radius = 1;                          // |offset| <= 1 along each axis
//     static constexpr tessera::StencilForm shape = tessera::StencilForm::star;  // or ::box
//     double c;
//     TESSERA_HOST_DEVICE double operator()(const tessera::StencilView<double, 3, 1, tessera::StencilForm::star>& u,
//                                           const tessera::FieldIndex<3>&) const {
//       return u(0, 0, 0) + c * (u(-1, 0, 0) + u(1, 0, 0) + u(0, -1, 0) + u(0, 1, 0) + u(0, 0, -1) + u(0, 0, 1) - 6 * u(0, 0, 0));
//     }
//   };
//
// or, for a lambda, through make_stencil<radius, shape>(lambda). A view v gives the cell at offset
// (d0, ..., d(D-1)) from the current one: v(d0, d1, d2) for D = 3 (read-only); a star allows one
// non-zero offset, a box any, each within the radius. A translation unit compiled with
// TESSERA_STENCIL_CHECKS=1 (the default where NDEBUG is not defined) checks every offset on the cpu
// backend and throws UsageError for one outside the declared reach; the device path never checks
// (there an offset outside the reach reads some cell of the block or its ghosts, not necessarily the
// one it names: a star's view takes any offset with d0 != 0 as (d0, 0, 0)).
//
// Element types: any trivially copyable ones (float, double, std::complex<double>, a struct of
// several fields), different between out, in and the coefficient fields; f's result converts to
// out's. Every field has the same layout (extents, process grid, ghost widths, boundaries), the
// ghost width of every axis is at least the radius, and out is none of the inputs: UsageError
// otherwise, naming the fields, on every rank.
//
// One step: the halo exchange of in and of every coefficient field (the shape's cells: faces for a
// star, faces, edges and corners for a box; Dirichlet outer ghosts are read as they are), started
// first (a coefficient passed as halo_current(field), whose ghosts the caller keeps current, is
// read as it is and not exchanged: constant coefficients need one exchange_halo, not one a call);
// the interior (the cells at least `radius` from the block's faces whose ghosts the exchange
// writes, which read no such ghost; the whole block where no face is exchanged) is swept while it
// travels; then the exchange is finished and the shell of the block (the rest) is swept (under
// cuda on the exchange's own queue of the highest priority, right after the unpack, beside the
// interior's sweep if that is still running). On one rank, where nothing travels for the interior
// to hide (periodic faces are the rank's own), the exchange runs first and one sweep covers the
// whole block (one H200, 512^3 float, periodic, 2026-12-03: 346-349 us a step of the 7-point
// star and 457-458 us of the radius-4 star, against 524 and 739 us with the interior and shell
// swept apart; the exchange's pack and unpack are most of the rest). The inputs' ghost cells are overwritten by the
// exchange: they are a cache of the neighbours' cells, which is why the inputs are const.
// Stream-ordered; collective over the fields' ranks. The exchange's path (peer copies between GPUs
// of one node, or the context's device path) is field.hpp's exchange_halos's. The kernels are
// kernels::for_each_cell's (cells.hpp): OpenMP over the rows on cpu; under cuda, in a translation
// unit compiled by nvcc (a TESSERA_HOST_DEVICE functor), as kernels::transform dispatches, thread
// blocks that stage a tile of `in` with its reach in shared memory and march along the slowest axis
// (a 3-D stencil of radius 1, and 2-D ones along the rows; a wider 3-D star keeps the reach along
// the slowest axis in registers, which wants a functor whose offsets are constants once its loops
// are unrolled), or that march reading `in` where it lies (a wider 3-D box), and one thread per
// cell for the shell's thin boxes; cuda/device_cells.cuh says when.
//
// The collectives of one call: stencil_plan(in, shape, coefficient...) (collective_plan.hpp), one
// neighbour exchange of the bytes sent to other ranks.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/field.hpp"
#include "tessera/kernels/cells.hpp"

#if !defined(TESSERA_STENCIL_CHECKS)
#if defined(NDEBUG)
#define TESSERA_STENCIL_CHECKS 0
#else
#define TESSERA_STENCIL_CHECKS 1
#endif
#endif

namespace tessera {

namespace detail {
// UsageError: the offset (d0, d1, d2) (the last D given) is outside a stencil of `radius` and `shape`.
[[noreturn]] void throw_stencil_offset(int dims, int d0, int d1, int d2, int radius, StencilForm shape);
// Selects StencilView's constructor for a 3-D star whose cells along axis 0 lie apart.
struct ColumnReads {};
}  // namespace detail

// Read-only access to the cells within a stencil's reach of one cell of a field's block.
template <class T, int D, int Radius, StencilForm Shape>
class StencilView {
 public:
  TESSERA_HOST_DEVICE StencilView(const T* center, index_t stride0, index_t stride1)
      : at_(center), column_(center), stride0_(stride0), stride1_(stride1) {}
  // A 3-D star's view whose cells along axis 0 lie apart from the others: (d0, 0, 0) at column[d0]
  // (the device's column order keeps them in registers), the others at center with stride1.
  TESSERA_HOST_DEVICE StencilView(detail::ColumnReads, const T* center, index_t stride1, const T* column)
    requires(D == 3 && Shape == StencilForm::star)
      : at_(center), column_(column), stride0_(1), stride1_(stride1) {}

  TESSERA_HOST_DEVICE const T& operator()(int d0, int d1, int d2) const
    requires(D == 3)
  {
    check(d0, d1, d2);
    if constexpr (Shape == StencilForm::star)
      return d0 != 0 ? column_[d0 * stride0_] : at_[d1 * stride1_ + d2];
    else
      return at_[d0 * stride0_ + d1 * stride1_ + d2];
  }
  TESSERA_HOST_DEVICE const T& operator()(int d0, int d1) const
    requires(D == 2)
  {
    check(0, d0, d1);
    return at_[d0 * stride1_ + d1];
  }
  TESSERA_HOST_DEVICE const T& operator()(int d0) const
    requires(D == 1)
  {
    check(0, 0, d0);
    return at_[d0];
  }
  TESSERA_HOST_DEVICE const T& center() const { return *at_; }

  static constexpr int radius = Radius;
  static constexpr StencilForm shape = Shape;

 private:
  TESSERA_HOST_DEVICE static void check(int d0, int d1, int d2) {
#if TESSERA_STENCIL_CHECKS && !defined(__CUDA_ARCH__)
    const auto far = [](int d) { return d < -Radius || d > Radius; };
    const int moved = (d0 != 0) + (d1 != 0) + (d2 != 0);
    if (far(d0) || far(d1) || far(d2) || (Shape == StencilForm::star && moved > 1))
      detail::throw_stencil_offset(D, d0, d1, d2, Radius, Shape);
#else
    (void)d0;
    (void)d1;
    (void)d2;
#endif
  }

  const T* at_;
  const T* column_;            // a 3-D star's cells along axis 0: column_[d0 * stride0_]
  index_t stride0_, stride1_;  // of the block's axes 0 and 1 in three (a D < 3 field's lead axes)
};

// A functor F with its reach declared (the wrapper make_stencil gives a lambda).
template <int Radius, StencilForm Shape, class F>
struct StencilFunctor {
  using wrapped_functor = F;
  static constexpr int radius = Radius;
  static constexpr StencilForm shape = Shape;
  F f;
  template <class... A>
  TESSERA_HOST_DEVICE auto operator()(const A&... a) const {
    return f(a...);
  }
};

template <int Radius, StencilForm Shape, class F>
StencilFunctor<Radius, Shape, F> make_stencil(F f) {
  return {f};
}

template <class F>
concept DeclaresStencilReach = requires {
  { F::radius } -> std::convertible_to<int>;
  { F::shape } -> std::convertible_to<StencilForm>;
};

namespace detail {

template <class F, class Out, class In, int D, class... C>
struct StencilCell {
  using wrapped_functor = F;
  static constexpr int kRadius = F::radius;
  static constexpr StencilForm kShape = F::shape;
  static constexpr std::size_t kCoefficients = sizeof...(C);
  Out* out;
  const In* in;
  const void* coefficient[kCoefficients > 0 ? kCoefficients : 1];
  index_t stride0, stride1;
  index_t first[3];  // the block's global offsets
  F f;

  TESSERA_HOST_DEVICE FieldIndex<D> global_index(index_t l0, index_t l1, index_t l2) const {
    const index_t g[3] = {first[0] + l0, first[1] + l1, first[2] + l2};
    FieldIndex<D> index;
    for (int a = 0; a < D; ++a) index.i[a] = g[3 - D + a];
    return index;
  }
  // Cell (l0, l1, l2) of the block: `in` read where it lies (the cpu pass and the device passes
  // that do not stage a tile).
  TESSERA_HOST_DEVICE void operator()(index_t l0, index_t l1, index_t l2) const {
    store(l0, l1, l2, value(in + (l0 * stride0 + l1 * stride1 + l2), stride0, stride1, l0, l1, l2));
  }

  // The tiled device pass (kernels::cuda::TiledCellBody, device_cells.cuh): `in` staged in shared
  // memory with its reach, the coefficient fields read where they are.
  using tile_type = In;
  using value_type = Out;
  static constexpr int kReach0 = D == 3 ? kRadius : 0;
  static constexpr int kReach1 = D >= 2 ? kRadius : 0;
  static constexpr int kReach2 = kRadius;
  static constexpr bool kTileRowsPadded = true;  // `in` is a Field's block
  TESSERA_HOST_DEVICE const In* tile_origin() const { return in; }
  TESSERA_HOST_DEVICE index_t tile_stride0() const { return stride0; }
  TESSERA_HOST_DEVICE index_t tile_stride1() const { return stride1; }
  template <std::size_t... I>
  TESSERA_HOST_DEVICE Out value(std::index_sequence<I...>, const StencilView<In, D, kRadius, kShape>& view,
                                [[maybe_unused]] index_t at, const FieldIndex<D>& index) const {  // unused without coefficients
    return static_cast<Out>(
        f(view, StencilView<C, D, kRadius, kShape>(static_cast<const C*>(coefficient[I]) + at, stride0, stride1)..., index));
  }
  TESSERA_HOST_DEVICE Out value(const In* center, index_t s0, index_t s1, index_t l0, index_t l1, index_t l2) const {
    return value(std::index_sequence_for<C...>{}, StencilView<In, D, kRadius, kShape>(center, s0, s1),
                 l0 * stride0 + l1 * stride1 + l2, global_index(l0, l1, l2));
  }
  // The column order (kernels::cuda::ColumnCellBody): a 3-D star's cells along axis 0 at column[d].
  static constexpr bool kColumnReads = D == 3 && kShape == StencilForm::star && kRadius > 0;
  TESSERA_HOST_DEVICE Out value_column(const In* center, index_t s1, const In* column, index_t l0, index_t l1,
                                       index_t l2) const
    requires kColumnReads
  {
    return value(std::index_sequence_for<C...>{}, StencilView<In, D, kRadius, kShape>(ColumnReads{}, center, s1, column),
                 l0 * stride0 + l1 * stride1 + l2, global_index(l0, l1, l2));
  }
  TESSERA_HOST_DEVICE void store(index_t l0, index_t l1, index_t l2, const Out& v) const {
    out[l0 * stride0 + l1 * stride1 + l2] = v;
  }
  // The rows order (kernels::cuda::detail::for_each_cell_rows): where a row's cells are stored, and
  // whether the functor may read a cell's corners (a box).
  TESSERA_HOST_DEVICE Out* store_row(index_t l0, index_t l1) const { return out + l0 * stride0 + l1 * stride1; }
  static constexpr bool kReadsCorners = kShape == StencilForm::box;
};

// The checks of apply_stencil that need no element type.
void check_stencil_fields(const Context& ctx, const BlockStorage& out, const BlockStorage& in,
                          std::span<const BlockStorage* const> coefficients, int radius);

// The interior (cells at least `radius` from the faces of the block whose ghosts the exchange
// writes: a neighbour's or a periodic face, along the field's axes) and the shell around it as at
// most six boxes.
kernels::CellBox stencil_interior(const BlockLayout& layout, int radius);
std::vector<kernels::CellBox> stencil_shell(const BlockLayout& layout, int radius);

}  // namespace detail

// A coefficient field whose ghost cells already hold its neighbours' cells, for the shape the
// stencil reads (the caller exchanged them, field.exchange_halo(shape), after the field last
// changed): apply_stencil reads them as they are and leaves the field out of its exchange, so that
// a field of constant coefficients costs one exchange, not one a call. apply_stencil(out, f, in,
// halo_current(kappa)).
template <class T, int D>
struct HaloCurrent {
  const Field<T, D>& field;
};
template <class T, int D>
HaloCurrent<T, D> halo_current(const Field<T, D>& field) {
  return {field};
}

namespace detail {
// A coefficient argument of apply_stencil (a Field, or one wrapped in HaloCurrent): its field, its
// element type, and whether apply_stencil exchanges its halo.
template <class T, int D>
const Field<T, D>& coefficient_field(const Field<T, D>& f) {
  return f;
}
template <class T, int D>
const Field<T, D>& coefficient_field(const HaloCurrent<T, D>& h) {
  return h.field;
}
template <class T, int D>
constexpr bool coefficient_exchanged(const Field<T, D>&) {
  return true;
}
template <class T, int D>
constexpr bool coefficient_exchanged(const HaloCurrent<T, D>&) {
  return false;
}
template <class A>
using CoefficientField = std::remove_cvref_t<decltype(coefficient_field(std::declval<const A&>()))>;
template <class A>
using CoefficientElement = typename CoefficientField<A>::value_type;

// Whether every coefficient argument is a Field of D dimensions, or one in halo_current().
template <int D, class... A>
inline constexpr bool coefficients_of_dims =
    (std::is_same_v<CoefficientField<A>, Field<CoefficientElement<A>, D>> && ...);

// The inputs whose halos a call exchanges: `in`, then each coefficient not wrapped in HaloCurrent.
template <class In, int D, class... A>
std::vector<BlockStorage*> exchanged_inputs(const Field<In, D>& in, const A&... coefficient) {
  std::vector<BlockStorage*> inputs{const_cast<BlockStorage*>(&in.storage())};
  (
      [&] {
        if (coefficient_exchanged(coefficient))
          inputs.push_back(const_cast<BlockStorage*>(&coefficient_field(coefficient).storage()));
      }(),
      ...);
  return inputs;
}
}  // namespace detail

template <class F, class Out, class In, int D, class... A>
void apply_stencil(const Context& ctx, Field<Out, D>& out, F f, const Field<In, D>& in, const A&... coefficient) {
  static_assert(DeclaresStencilReach<F>,
                "apply_stencil: the functor declares its reach: static constexpr int radius = ...; static constexpr "
                "tessera::StencilForm shape = ...; (or wrap a lambda: make_stencil<radius, shape>(lambda))");
  static_assert(F::radius >= 0, "apply_stencil: a negative radius");
  static_assert(detail::coefficients_of_dims<D, A...>,
                "apply_stencil: each coefficient is a Field of the input's dimensions, or one in halo_current()");
  const detail::BlockStorage* coefficients[sizeof...(A) + 1] = {&detail::coefficient_field(coefficient).storage()...,
                                                                 nullptr};
  detail::check_stencil_fields(ctx, out.storage(), in.storage(), std::span(coefficients, sizeof...(A)), F::radius);
  const detail::BlockLayout& l = in.layout();
  detail::StencilCell<F, Out, In, D, detail::CoefficientElement<A>...> cell{
      out.origin(),
      in.origin(),
      {static_cast<const void*>(detail::coefficient_field(coefficient).origin())...},
      l.stride[0],
      l.stride[1],
      {l.offset(0), l.offset(1), l.offset(2)},
      f};
  const std::vector<detail::BlockStorage*> inputs = detail::exchanged_inputs(in, coefficient...);
  const kernels::Queue& q = ctx.queue();
  if (ctx.size() == 1) {
    detail::exchange_halos(ctx, inputs, F::shape, [] {});
    kernels::for_each_cell(q, detail::stencil_interior(l, 0), cell);  // radius 0: the whole block
    return;
  }
  detail::exchange_halos(
      ctx, inputs, F::shape, [&] { kernels::for_each_cell(q, detail::stencil_interior(l, F::radius), cell); },
      [&](const kernels::Queue& after_unpack) {
        for (const kernels::CellBox& box : detail::stencil_shell(l, F::radius))
          kernels::for_each_cell(after_unpack, box, cell);
      });
}

template <class F, class Out, class In, int D, class... A>
void apply_stencil(Field<Out, D>& out, F f, const Field<In, D>& in, const A&... coefficient) {
  apply_stencil(out.context(), out, f, in, coefficient...);
}

// The collectives of one apply_stencil with these inputs (coefficients in halo_current() are not
// exchanged) and a functor of `shape`.
template <class In, int D, class... A>
CollectivePlan stencil_plan(const Field<In, D>& in, StencilForm shape, const A&... coefficient) {
  static_assert(detail::coefficients_of_dims<D, A...>,
                "stencil_plan: each coefficient is a Field of the input's dimensions, or one in halo_current()");
  const std::vector<detail::BlockStorage*> inputs = detail::exchanged_inputs(in, coefficient...);
  const std::vector<const detail::BlockStorage*> fields(inputs.begin(), inputs.end());
  return detail::halo_plan(fields, shape);
}

}  // namespace tessera
