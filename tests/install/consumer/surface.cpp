// Uses one entity of each part of the public surface through tessera/framework/framework.hpp alone,
// so that the consumer stops compiling when that header misses one: the sort, the histogram, the
// transpose of a DistMatrix, the 1-D convolution and a Field2D, the HDF5 I/O's types, the collective
// plans and the two-level cost model. Returns the number of wrong results (the same on every rank).
#include <cstdint>
#include <span>
#include <vector>

#include "tessera/framework/framework.hpp"

namespace {
struct Reverse {
  std::int64_t last;
  TESSERA_HOST_DEVICE std::int64_t operator()(std::int64_t x) const { return last - x; }
};
}  // namespace

int public_surface_errors(const tessera::Context& ctx) {
  const tessera::index_t n = 1001;
  int errors = 0;

  // The keys n-1, n-2, ..., 0 sort into 0, 1, ..., n-1 (tessera::sort, algorithms/sort.hpp).
  tessera::DistArray<std::int64_t> descending(ctx, n);
  descending.iota(0);
  tessera::transform(descending, descending, Reverse{n - 1});
  const std::vector<std::int64_t> sorted = tessera::sort(descending).gather();
  if (ctx.is_root())
    for (tessera::index_t i = 0; i < n; ++i) errors += sorted[static_cast<std::size_t>(i)] != i;

  // One sample per value 0 .. n-1 in 10 bins: one in each, n - 10 above (algorithms/histogram.hpp).
  const tessera::Histogram counts = tessera::bincount(descending, 10);
  for (tessera::index_t c : counts.counts) errors += c != 1;
  errors += counts.counts.size() != 10 || counts.above != n - 10;

  // A 3 x 5 matrix transposed (redistribute.hpp): element (i, j) of A^T is A's (j, i).
  const tessera::ProcessGrid grid = tessera::ProcessGrid::create(ctx);
  std::vector<double> values(15);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<double>(k);
  const auto matrix = tessera::DistMatrix<double>::from_replicated(grid, 3, 5, values);
  const std::vector<double> transposed = tessera::transpose(matrix).gather();
  if (ctx.is_root())
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 3; ++j) errors += transposed[i * 3 + j] != values[j * 5 + i];

  // The identity stencil leaves an array as it is (algorithms/stencil.hpp); a Field2D's shape
  // (field_2d.hpp).
  tessera::DistArray<double> ramp(ctx, n);
  ramp.iota(0.0);
  const double identity[3] = {0.0, 1.0, 0.0};
  const tessera::DistArray<double> same = tessera::convolve(ramp, std::span<const double>(identity));
  errors += tessera::reduce(same, tessera::plus{}) != static_cast<double>(n * (n - 1) / 2);
  tessera::Field2D<double> field(grid, 4, 6, 1);
  field.fill(1.0);
  errors += field.rows() != 4 || field.cols() != 6;

  // The I/O's element types (io.hpp) and a collective plan (collective_plan.hpp).
  errors += tessera::io::parse_dtype("float64") != tessera::io::DType::float64;
  errors += tessera::reproducible_sum_plan<double>().size() != 1;
  return errors;
}
