// The cell bodies of the device cell passes (device_cells.cuh; the rows order's kernel in
// agent_stencil.cuh): what a body that reads a neighbourhood of one array declares, and which
// passes it fits.
#pragma once

#include <concepts>
#include <type_traits>

#include "tessera/kernels/config.hpp"

namespace tessera::kernels::cuda {

// A body whose cell reads one array around the cell (the tile) and possibly others at the cell:
//   using tile_type = ...;  using value_type = ...;   (value_type default constructible)
//   static constexpr int kReach0, kReach1, kReach2;   how far it reads the tile along each axis
//   const tile_type* tile_origin() const;             the tile array's cell (0, 0, 0)
//   index_t tile_stride0() const, tile_stride1() const;   its strides along axes 0 and 1
//   value_type value(const tile_type* center, index_t stride0, index_t stride1, i0, i1, i2) const;
//       the new value of cell (i0, i1, i2), reading the tile array through `center` (the cell in a
//       copy with those strides, the reach around it filled in)
//   void store(i0, i1, i2, const value_type&) const;
// The tiled order copies the tile in aligned 16-byte pieces where 16 bytes hold whole elements and
// the array's origin and strides keep 16-byte boundaries; the pieces at the ends of a row that hold
// cells beyond the reach are copied cell by cell, unless the body declares
//   static constexpr bool kTileRowsPadded = true;
// where the tile array's rows are a Field block's (field.hpp: rows padded to 32-byte boundaries),
// so that every aligned 16-byte piece holding a cell within reach lies inside the array.
template <class Body>
concept TiledCellBody = requires(const Body& b, const typename Body::tile_type* p, index_t i) {
  requires std::is_default_constructible_v<typename Body::value_type>;
  { Body::kReach0 } -> std::convertible_to<int>;
  { Body::kReach1 } -> std::convertible_to<int>;
  { Body::kReach2 } -> std::convertible_to<int>;
  { b.tile_origin() } -> std::convertible_to<const typename Body::tile_type*>;
  { b.tile_stride0() } -> std::convertible_to<index_t>;
  { b.tile_stride1() } -> std::convertible_to<index_t>;
  b.store(i, i, i, b.value(p, i, i, i, i, i));
};

// A TiledCellBody of a 3-D reach that reads along axis 0 only the cell's own column (a star's):
//   static constexpr bool kColumnReads = true;
//   value_type value_column(const tile_type* center, index_t stride1, const tile_type* column,
//                           i0, i1, i2) const;
//       value()'s result, reading the tile at offset (d, 0, 0), d != 0, as column[d] and the
//       others through `center` (row stride stride1)
// The column order (detail::for_each_cell_column) keeps those cells in registers.
template <class Body>
concept ColumnCellBody = TiledCellBody<Body> && requires(const Body& b, const typename Body::tile_type* p, index_t i) {
  requires Body::kColumnReads;
  requires Body::kReach0 > 0;
  b.store(i, i, i, b.value_column(p, i, p, i, i, i));
};

// A TiledCellBody that also folds its cells into one value (the Jacobi sweep's residual,
// max |new - old|):
//   using fold_type = ...;                                  a 4- or 8-byte value; fold_type{} is
//                                                           combine's identity
//   fold_type fold(const tile_type* center, const value_type& v) const;   a cell's share (center as
//                                                           value() reads it: the old cell in the tile)
//   static fold_type combine(fold_type, fold_type);         commutative and associative
//   void fold_result(fold_type) const;                      once per warp, with the fold of its cells
// Such a body runs in the tiled order only (detail::for_each_cell_tiled).
template <class Body>
concept FoldingCellBody = TiledCellBody<Body> && requires(const Body& b, const typename Body::tile_type* p,
                                                          const typename Body::value_type& v,
                                                          typename Body::fold_type f) {
  { b.fold(p, v) } -> std::convertible_to<typename Body::fold_type>;
  { Body::combine(f, f) } -> std::convertible_to<typename Body::fold_type>;
  b.fold_result(f);
};

namespace detail {

// A body's fold_type (a FoldingCellBody), or int for a body that folds nothing.
template <class Body, bool = FoldingCellBody<Body>>
struct FoldOf {
  using type = int;
};
template <class Body>
struct FoldOf<Body, true> {
  using type = typename Body::fold_type;
};

// A body the rows order takes: 2-D (no reach along axis 0), reach 1 along axes 1 and 2, cells of 4
// or 8 bytes.
template <class Body>
concept RowsCellBody = TiledCellBody<Body> && Body::kReach0 == 0 && Body::kReach1 == 1 && Body::kReach2 == 1 &&
                       (sizeof(typename Body::tile_type) == 4 || sizeof(typename Body::tile_type) == 8);

// A body that says where it stores a row's cells (store(i0, i1, i2, v) writes store_row(i0, i1)[i2],
// the rows of a plane evenly spaced: store_row(i0, i1 + 1) - store_row(i0, i1) the same for every
// i1): the rows order then stores whole 16-byte vectors where the rows keep 16-byte boundaries.
template <class Body>
concept StoresRows = requires(const Body& b, index_t i) {
  { b.store_row(i, i) } -> std::convertible_to<typename Body::value_type*>;
};

}  // namespace detail
}  // namespace tessera::kernels::cuda
