// apply_stencil's parts that need no element type: the checks of its fields, and the interior and
// shell of a block.
#include "tessera/framework/algorithms/apply_stencil.hpp"

#include <algorithm>
#include <string>

namespace tessera::detail {

void throw_stencil_offset(int dims, int d0, int d1, int d2, int radius, StencilForm shape) {
  const int d[3] = {d0, d1, d2};
  std::string offset;
  for (int a = 3 - dims; a < 3; ++a) {
    if (a > 3 - dims) offset += ", ";
    offset += std::to_string(d[a]);
  }
  throw UsageError("stencil view: the offset (" + offset + ") is outside the functor's declared reach (a " +
                   to_string(shape) + " of radius " + std::to_string(radius) + ")");
}

void check_stencil_fields(const Context& ctx, const BlockStorage& out, const BlockStorage& in,
                          std::span<const BlockStorage* const> coefficients, int radius) {
  if (ctx.is_null() || ctx.size() != in.context().size() || ctx.rank() != in.context().rank())
    throw UsageError("apply_stencil: the context is not the fields' ranks");
  check_same_layout(in, out, "apply_stencil: the output field");
  for (std::size_t c = 0; c < coefficients.size(); ++c)
    check_same_layout(in, *coefficients[c], "apply_stencil: the coefficient field " + std::to_string(c));
  const BlockLayout& l = in.layout();
  for (int a = 3 - l.dims; a < 3; ++a)
    if (l.ghost[static_cast<std::size_t>(a)] < radius)
      throw UsageError("apply_stencil: the stencil's radius " + std::to_string(radius) + " passes the ghost width " +
                       std::to_string(l.ghost[static_cast<std::size_t>(a)]) + " of axis " +
                       std::to_string(a - (3 - l.dims)) + " of the fields (" + l.text() + ")");
  const bool overlaps = out.begin() != nullptr &&
                        (out.begin() == in.begin() ||
                         std::any_of(coefficients.begin(), coefficients.end(),
                                     [&](const BlockStorage* c) { return c->begin() == out.begin(); }));
  if (overlaps) throw UsageError("apply_stencil: the output field is also an input (the sweep would read cells it has written)");
}

namespace {
// [begin, end) of axis a's interior: `radius` cells in from each face of the block whose ghosts
// the exchange writes (a neighbour's face, or a periodic boundary), along the field's axes. A
// Dirichlet outer face's ghosts are read as they are, so the cells beside it need not wait.
void interior_range(const BlockLayout& l, int radius, int a, index_t& begin, index_t& end) {
  const auto u = static_cast<std::size_t>(a);
  const bool periodic = l.boundary[u] == AxisBoundary::periodic;
  const bool field_axis = a >= 3 - l.dims;
  const index_t n = l.local(a);
  const index_t low = field_axis && (periodic || l.coord[u] > 0) ? radius : 0;
  const index_t high = field_axis && (periodic || l.coord[u] < l.grid[u] - 1) ? radius : 0;
  begin = std::min(low, n);
  end = std::max(begin, n - high);
}
}  // namespace

kernels::CellBox stencil_interior(const BlockLayout& l, int radius) {
  kernels::CellBox box;
  for (int a = 0; a < 3; ++a) interior_range(l, radius, a, box.begin[a], box.end[a]);
  return box;
}

std::vector<kernels::CellBox> stencil_shell(const BlockLayout& l, int radius) {
  index_t ib[3], ie[3];
  for (int a = 0; a < 3; ++a) interior_range(l, radius, a, ib[a], ie[a]);
  std::vector<kernels::CellBox> shell;
  // Axis a's two slabs: the axes before it within the interior, those after it whole.
  for (int a = 0; a < 3; ++a)
    for (int side = 0; side < 2; ++side) {
      kernels::CellBox box;
      for (int b = 0; b < 3; ++b) {
        if (b < a) {
          box.begin[b] = ib[b];
          box.end[b] = ie[b];
        } else if (b > a) {
          box.begin[b] = 0;
          box.end[b] = l.local(b);
        } else {
          box.begin[b] = side == 0 ? 0 : ie[b];
          box.end[b] = side == 0 ? ib[b] : l.local(b);
        }
      }
      if (!box.empty()) shell.push_back(box);
    }
  return shell;
}

}  // namespace tessera::detail
