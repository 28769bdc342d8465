// transpose: B = A^T (or, with --op redistribute, B = A) for a distributed matrix, from one layout
// of the ranks to another, with one all-to-all exchange: each rank packs what every other rank
// needs with the local transpose kernel, one alltoallv moves it, each rank unpacks. Elements of the
// four numeric dtypes, or complex64 and complex128 (h5py's compound {r, i} in the HDF5 files).
#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "app.hpp"
#include "perturb.hpp"
#include "tessera/framework/redistribute.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "verify_transpose.hpp"

namespace {

using namespace tessera;

// A layout as given on the command line: rows (P x 1), cols (1 x P), 2d (the --grid grid, or
// MPI_Dims_create's) or RxC.
struct Layout {
  enum class Kind { rows, cols, grid, explicit_grid } kind = Kind::rows;
  int grid_rows = 0, grid_cols = 0;  // explicit_grid
};

Layout parse_layout(std::string_view v, std::string_view flag) {
  if (v == "rows") return {Layout::Kind::rows};
  if (v == "cols" || v == "columns") return {Layout::Kind::cols};
  if (v == "2d") return {Layout::Kind::grid};
  const auto x = v.find('x');
  if (x != std::string_view::npos && x > 0 && x + 1 < v.size() &&
      v.find_first_not_of("0123456789x") == std::string_view::npos && v.find('x', x + 1) == std::string_view::npos) {
    Layout l{Layout::Kind::explicit_grid};
    l.grid_rows = static_cast<int>(apps::parse_integer(v.substr(0, x), flag, 1, 1 << 24));
    l.grid_cols = static_cast<int>(apps::parse_integer(v.substr(x + 1), flag, 1, 1 << 24));
    return l;
  }
  throw UsageError(std::string(flag) + ": unknown layout '" + std::string(v) +
                   "' (expected rows, cols, 2d or RxC, such as 2x3)");
}

std::string grid_text(const ProcessGrid& g) { return std::to_string(g.rows()) + "x" + std::to_string(g.cols()); }

// Element (i, j) of a generated complex matrix: the generator's values 2k and 2k + 1 of its
// component type, k = i * cols + j, whatever the grid (made on the host, block by block).
template <class F>
void generate_complex(DistMatrix<std::complex<F>>& a, std::uint64_t seed) {
  std::vector<std::complex<F>> block(static_cast<std::size_t>(a.local_rows() * a.local_cols()));
  for (index_t r = 0; r < a.local_rows(); ++r)
    for (index_t c = 0; c < a.local_cols(); ++c) {
      const auto k = static_cast<std::uint64_t>((a.row_offset() + r) * a.cols() + a.col_offset() + c);
      block[static_cast<std::size_t>(r * a.local_cols() + c)] = {counter_value<F>(seed, 2 * k), counter_value<F>(seed, 2 * k + 1)};
    }
  a.local_from_host(block);
}

std::string layout_text(const Layout& l, const ProcessGrid& g) {
  switch (l.kind) {
    case Layout::Kind::rows: return "row blocks (" + grid_text(g) + ")";
    case Layout::Kind::cols: return "column blocks (" + grid_text(g) + ")";
    default: return "2-D blocks (" + grid_text(g) + ")";
  }
}

// The grid of a layout; a grid that does not fit the ranks is a UsageError naming `flag`.
ProcessGrid make_grid(const Context& ctx, const Layout& l, int grid_rows, int grid_cols, std::string_view flag) {
  try {
    switch (l.kind) {
      case Layout::Kind::rows: return row_block_grid(ctx);
      case Layout::Kind::cols: return column_block_grid(ctx);
      case Layout::Kind::grid: return ProcessGrid::create(ctx, grid_rows, grid_cols);
      case Layout::Kind::explicit_grid: return ProcessGrid::create(ctx, l.grid_rows, l.grid_cols);
    }
  } catch (const UsageError& e) {
    throw UsageError(std::string(flag) + ": " + e.what());
  }
  throw UsageError(std::string(flag) + ": no layout");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::apps;
  App app(argc, argv, "tessera-transpose",
          "B = A^T for a distributed matrix, from one layout of the ranks to another, with one all-to-all exchange.",
          false);
  auto& parser = app.parser();
  index_t m = 4096, n = 4096;
  std::optional<io::DatasetPath> a_path;
  int grid_rows = 0, grid_cols = 0;
  Layout from, to;
  std::string from_text = "rows", to_text = "rows";
  bool transposed = true;
  parser.add_option("--m", "M", "rows of A (default 4096)", [&](std::string_view v) { m = parse_size(v, "--m"); });
  parser.add_option("--n", "N", "columns of A (default 4096)", [&](std::string_view v) { n = parse_size(v, "--n"); });
  parser.add_option("--a", "FILE.h5:/DSET", "read A (2-D, M x N) from an HDF5 dataset",
                    [&](std::string_view v) { a_path = parse_dataset_option(v, "--a"); });
  parser.add_option("--grid", "RxC", "the process grid of the 2d layout, R * C = ranks (default: MPI_Dims_create)",
                    [&](std::string_view v) {
                      const Layout l = parse_layout(v, "--grid");
                      if (l.kind != Layout::Kind::explicit_grid)
                        throw UsageError("--grid: expected RxC (e.g. 2x3), got '" + std::string(v) + "'");
                      grid_rows = l.grid_rows;
                      grid_cols = l.grid_cols;
                    });
  parser.add_option("--from", "LAYOUT",
                    "layout of A: rows (row blocks, P x 1), cols (column blocks, 1 x P), 2d (the --grid grid) or "
                    "RxC (default rows)",
                    [&](std::string_view v) {
                      from = parse_layout(v, "--from");
                      from_text = std::string(v);
                    });
  parser.add_option("--to", "LAYOUT", "layout of the result, as for --from (default rows)", [&](std::string_view v) {
    to = parse_layout(v, "--to");
    to_text = std::string(v);
  });
  // The common --dtype, widened to complex numbers.
  int complex_bytes = 0;  // 8 (complex64) or 16 (complex128) where --dtype names one
  parser.add_option("--dtype", "int32|int64|float32|float64|complex64|complex128",
                    "element type (default float32; with --a, the file's type)", [&](std::string_view v) {
                      complex_bytes = v == "complex64" ? 8 : v == "complex128" ? 16 : 0;
                      app.options().dtype = complex_bytes == 8    ? io::DType::float32
                                            : complex_bytes == 16 ? io::DType::float64
                                                                  : io::parse_dtype(v).value_or(io::DType::float32);
                      if (!complex_bytes && !io::parse_dtype(v))
                        throw UsageError("--dtype: unknown dtype '" + std::string(v) +
                                         "' (expected int32, int64, float32, float64, complex64 or complex128)");
                    });
  parser.add_option("--op", "transpose|redistribute", "B = A^T (default), or B = A in the new layout",
                    [&](std::string_view v) {
                      if (v == "transpose") transposed = true;
                      else if (v == "redistribute") transposed = false;
                      else throw UsageError("--op: unknown operation '" + std::string(v) + "' (expected transpose or redistribute)");
                    });

  return app.run([&](const Context& ctx) -> int {
    const CommonOptions& o = app.options();
    if (o.input) throw UsageError("--input: transpose reads its matrix with --a");
    const Perturbation perturbation = test_perturbation(app, ctx, {Perturbation::Kind::add, Perturbation::Kind::relative});
    io::DType dtype = o.dtype.value_or(io::DType::float32);
    std::string input = "generated from seed " + std::to_string(o.seed);
    if (a_path) {
      const io::DatasetInfo info = for_flag("--a", [&] { return io::probe_numeric_or_complex(ctx, *a_path); });
      if (info.shape.size() != 2) {
        std::string dims;
        for (std::size_t d = 0; d < info.shape.size(); ++d) dims += (d ? " x " : "") + std::to_string(info.shape[d]);
        throw UsageError("--a: dataset '" + a_path->dataset + "' in '" + a_path->file + "' is " +
                         (info.shape.empty() ? std::string("a scalar") : std::to_string(info.shape.size()) + "-D (" + dims + ")") +
                         "; a 2-D matrix is needed");
      }
      // --m and --n may restate the file's shape, never contradict it.
      for (auto [flag, given, actual, what] : {std::tuple{"--m", m, info.shape[0], "rows"}, std::tuple{"--n", n, info.shape[1], "columns"}})
        if (parser.given(flag) && given != actual)
          throw UsageError(std::string(flag) + ": " + std::to_string(given) + " does not match dataset '" + a_path->dataset +
                           "' in '" + a_path->file + "', which has " + std::to_string(actual) + " " + what);
      m = info.shape[0];
      n = info.shape[1];
      if (!o.dtype) {
        dtype = info.dtype;
        complex_bytes = info.is_complex ? 2 * static_cast<int>(io::size_of(info.dtype)) : 0;
      }
      input = a_path->str() + " (" + info.type_name + ")";
    }
    // A grid that does not fit the ranks: the flag that named it.
    auto grid_flag = [&](const Layout& l, const char* layout_flag) {
      return l.kind == Layout::Kind::grid && parser.given("--grid") ? "--grid" : layout_flag;
    };
    const ProcessGrid from_grid = make_grid(ctx, from, grid_rows, grid_cols, grid_flag(from, "--from"));
    const ProcessGrid to_grid = make_grid(ctx, to, grid_rows, grid_cols, grid_flag(to, "--to"));
    // The shape, then the memory it takes, before anything is made.
    const std::string shape_flag = a_path ? "--a" : "--m/--n";
    checked_elements(m, n, shape_flag + ": A (M x N)");

    const auto run = [&]<class T>() -> int {
      {
        // A's block, B's, and the exchange's packed send and receive buffers (as large as each).
        const long double a_block = static_cast<long double>(Partition::block(m, from_grid.rows()).local_size(from_grid.process_row())) *
                                    static_cast<long double>(Partition::block(n, from_grid.cols()).local_size(from_grid.process_col()));
        const index_t b_rows = transposed ? n : m, b_cols = transposed ? m : n;
        const long double b_block = static_cast<long double>(Partition::block(b_rows, to_grid.rows()).local_size(to_grid.process_row())) *
                                    static_cast<long double>(Partition::block(b_cols, to_grid.cols()).local_size(to_grid.process_col()));
        const long double bytes = 2 * (a_block + b_block) * sizeof(T);
        require_memory(ctx, bytes >= static_cast<long double>(SIZE_MAX) ? SIZE_MAX : static_cast<std::size_t>(bytes),
                       shape_flag + ": A and B (" + std::to_string(m) + " x " + std::to_string(n) + " " +
                           (complex_bytes == 8    ? std::string("complex64")
                            : complex_bytes == 16 ? std::string("complex128")
                                                  : std::string(io::to_string(dtype))) +
                           ") with the exchange's buffers");
      }
      DistMatrix<T> a;
      if (a_path) {
        a = for_flag("--a", [&] { return io::read_matrix<T>(from_grid, *a_path); });
      } else {
        a = make_collectively(ctx, shape_flag + ": the matrix A", [&] { return DistMatrix<T>(from_grid, m, n); });
        if constexpr (is_numeric_element_v<T>) {
          a.generate(o.seed);
        } else {
          generate_complex(a, o.seed);
        }
      }
      DistMatrix<T> b;
      const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) {
        b = transposed ? transpose(a, to_grid, times) : redistribute(a, to_grid, times);
      });
      if (perturbation) {
        if constexpr (is_numeric_element_v<T>) {
          perturb_element(perturbation, b);
        } else {
          // A complex result: its real parts, as a matrix of their own.
          using F = typename T::value_type;
          DistMatrix<F> real(b.grid(), b.rows(), b.cols());
          std::vector<T> block = b.local_to_host();
          std::vector<F> parts;
          for (const T& z : block) parts.push_back(z.real());
          real.local_from_host(parts);
          perturb_element(perturbation, real);
          parts = real.local_to_host();
          for (std::size_t k = 0; k < block.size(); ++k) block[k].real(parts[k]);
          b.local_from_host(block);
        }
      }
      const std::uint64_t checksum = verify::position_checksum(b, false);

      Report r;
      r.input = input;
      r.dtype = dtype;
      if (complex_bytes) r.dtype_name = complex_bytes == 8 ? "complex64" : "complex128";
      r.sizes["m"] = static_cast<long long>(m);
      r.sizes["n"] = static_cast<long long>(n);
      r.parameters["op"] = transposed ? "transpose" : "redistribute";
      r.parameters["from"] = from_text;
      r.parameters["to"] = to_text;
      r.parameters["from_grid"] = grid_text(from_grid);
      r.parameters["to_grid"] = grid_text(to_grid);
      Json phase_names = Json::object();
      phase_names["local"] = "pack";
      phase_names["communication"] = "exchange";
      phase_names["fixup"] = "unpack";
      phase_names["host"] = "plan";
      r.parameters["phase_names"] = phase_names;
      r.rows.emplace_back("layouts", layout_text(from, from_grid) + " -> " + layout_text(to, to_grid));
      r.rows.emplace_back("exchange", "pack " + format_seconds(timing.phases.local) + ", exchange " +
                                          format_seconds(timing.phases.communication) + ", unpack " +
                                          format_seconds(timing.phases.fixup) + ", plan " +
                                          format_seconds(timing.phases.host));
      r.result = verify::hex64(checksum);
      r.result_text = std::string(transposed ? "B = A^T" : "B = A") + " is " + std::to_string(transposed ? n : m) + " x " +
                      std::to_string(transposed ? m : n) + ", position checksum " + verify::hex64(checksum);
      if (o.verify) r.verdict = verify::check_transpose(a, b, transposed);
      r.timing = timing;
      const double bytes = 2.0 * static_cast<double>(m) * static_cast<double>(n) * sizeof(T);
      r.throughput = timing.total > 0 ? bytes / timing.total / 1e9 : 0;
      r.throughput_unit = "GB/s";
      r.throughput_basis = "each element read once and written once";

      const bool wrong = r.verdict && !r.verdict->ok;
      if (o.output && !wrong) {
        auto attributes = output_attributes(app, ctx, dtype);
        for (auto& [key, value] : attributes.extra)
          if (key == "dtype" && complex_bytes) value = r.dtype_name;
        attributes.extra.emplace_back("op", transposed ? "transpose" : "redistribute");
        attributes.extra.emplace_back("grid", grid_text(to_grid));
        for_flag("--output", [&] { io::write_matrix(b, *o.output, attributes); });
      }
      publish(app, ctx, r);
      return wrong ? kExitVerifyFailed : kExitOk;
    };
    if (complex_bytes == 8) return run.operator()<std::complex<float>>();
    if (complex_bytes == 16) return run.operator()<std::complex<double>>();
    switch (dtype) {
      case io::DType::int32: return run.operator()<std::int32_t>();
      case io::DType::int64: return run.operator()<std::int64_t>();
      case io::DType::float64: return run.operator()<double>();
      default: return run.operator()<float>();
    }
  });
}
