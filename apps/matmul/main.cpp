// matmul: C = A B over a 2-D process grid by SUMMA: for each panel of K, A's panel travels along the
// process rows and B's along the process columns, and every rank accumulates the panel product
// with the local GEMM (ours, or the vendor library with --local vendor: cuBLAS or OpenBLAS).
#include "app.hpp"
#include "perturb.hpp"
#include "verify.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::apps;
  App app(argc, argv, "tessera-matmul", "C = A B for distributed matrices, by SUMMA on a 2-D process grid.", false);
  auto& parser = app.parser();
  index_t m = 512, k = 512, n = 512, size = 512;
  std::optional<io::DatasetPath> a_path, b_path;
  int grid_rows = 0, grid_cols = 0;
  MatmulOptions matmul_options;
  std::string engine_text = "tiled";
  parser.add_option("--m", "M", "rows of A and C (default 512)", [&](std::string_view v) { m = parse_size(v, "--m"); });
  parser.add_option("--k", "K", "columns of A, rows of B (default 512)", [&](std::string_view v) { k = parse_size(v, "--k"); });
  parser.add_option("--n", "N", "columns of B and C (default 512)", [&](std::string_view v) { n = parse_size(v, "--n"); });
  parser.add_option("--size", "S", "M = K = N = S", [&](std::string_view v) { size = parse_size(v, "--size"); });
  parser.add_option("--a", "FILE.h5:/DSET", "read A (2-D, M x K) from an HDF5 dataset",
                    [&](std::string_view v) { a_path = parse_dataset_option(v, "--a"); });
  parser.add_option("--b", "FILE.h5:/DSET", "read B (2-D, K x N) from an HDF5 dataset",
                    [&](std::string_view v) { b_path = parse_dataset_option(v, "--b"); });
  parser.add_option("--grid", "RxC", "process grid, R * C = ranks (default: MPI_Dims_create)", [&](std::string_view v) {
    const auto x = v.find('x');
    if (x == std::string_view::npos) throw UsageError("--grid: expected RxC (e.g. 2x3), got '" + std::string(v) + "'");
    grid_rows = static_cast<int>(parse_integer(v.substr(0, x), "--grid", 1, 1 << 24));
    grid_cols = static_cast<int>(parse_integer(v.substr(x + 1), "--grid", 1, 1 << 24));
  });
  parser.add_option("--panel", "B", "SUMMA panel width: columns of A / rows of B per step (default 512)",
                    [&](std::string_view v) {
                      matmul_options.panel_width = parse_size(v, "--panel");
                      if (matmul_options.panel_width < 1) throw UsageError("--panel: must be at least 1");
                    });
  parser.add_option("--local", "tiled|vendor",
                    "the local product: ours (tiled) or the vendor library (vendor: cuBLAS under cuda, OpenBLAS "
                    "under cpu where the build found it; cublas and openblas are taken for vendor)",
                    [&](std::string_view v) {
                      if (v == "tiled") matmul_options.engine = GemmEngine::tiled;
                      else if (v == "vendor" || v == "cublas" || v == "openblas") matmul_options.engine = GemmEngine::vendor;
                      else throw UsageError("--local: unknown engine '" + std::string(v) + "' (expected tiled or vendor)");
                      engine_text = std::string(v);
                    });

  return app.run([&](const Context& ctx) -> int {
    const CommonOptions& o = app.options();
    if (o.input) throw UsageError("--input: matmul reads its matrices with --a and --b");
    const Perturbation perturb = test_perturbation(app, ctx, {Perturbation::Kind::relative});
    const bool from_files = a_path || b_path;
    if (a_path && !b_path) throw UsageError("--a: needs --b as well");
    if (b_path && !a_path) throw UsageError("--b: needs --a as well");
    for (const char* flag : {"--m", "--k", "--n", "--size"})
      if (from_files && parser.given(flag))
        throw UsageError(std::string(flag) + ": cannot be combined with --a and --b (the shapes come from the files)");
    if (parser.given("--size")) {
      for (const char* flag : {"--m", "--k", "--n"})
        if (parser.given(flag)) throw UsageError(std::string("--size: cannot be combined with ") + flag);
      m = k = n = size;
    }

    io::DType dtype = o.dtype.value_or(io::DType::float32);
    std::string input = "generated, A from seed " + std::to_string(o.seed) + ", B from seed " + std::to_string(o.seed + 1);
    if (from_files) {
      const io::DatasetInfo a_info = for_flag("--a", [&] { return io::probe_dataset(ctx, *a_path); });
      const io::DatasetInfo b_info = for_flag("--b", [&] { return io::probe_dataset(ctx, *b_path); });
      auto shape = [](const io::DatasetInfo& info) {
        std::string s;
        for (std::size_t d = 0; d < info.shape.size(); ++d) s += (d ? " x " : "") + std::to_string(info.shape[d]);
        return info.shape.empty() ? std::string("a scalar") : std::to_string(info.shape.size()) + "-D (" + s + ")";
      };
      if (a_info.shape.size() != 2)
        throw UsageError("--a: dataset '" + a_path->dataset + "' in '" + a_path->file + "' is " + shape(a_info) +
                         "; a 2-D matrix is needed");
      if (b_info.shape.size() != 2)
        throw UsageError("--b: dataset '" + b_path->dataset + "' in '" + b_path->file + "' is " + shape(b_info) +
                         "; a 2-D matrix is needed");
      if (a_info.shape[1] != b_info.shape[0])
        throw UsageError("--a/--b: shapes do not multiply: A is " + std::to_string(a_info.shape[0]) + " x " +
                         std::to_string(a_info.shape[1]) + ", B is " + std::to_string(b_info.shape[0]) + " x " +
                         std::to_string(b_info.shape[1]) + " (A's columns must equal B's rows)");
      m = a_info.shape[0];
      k = a_info.shape[1];
      n = b_info.shape[1];
      if (!o.dtype) {
        // The product is computed in floating point (matmul has no integer kernels): integer files
        // read as float64, which holds every int32 and every int64 up to 2^53 exactly.
        const bool both_float32 = a_info.dtype == io::DType::float32 && b_info.dtype == io::DType::float32;
        dtype = both_float32 ? io::DType::float32 : io::DType::float64;
      }
      input = "A " + a_path->str() + " (" + a_info.type_name + "), B " + b_path->str() + " (" + b_info.type_name + ")";
    }
    if (dtype == io::DType::int32 || dtype == io::DType::int64)
      throw UsageError(std::string("--dtype: matmul computes in float32 or float64, not ") + io::to_string(dtype));
    const ProcessGrid grid = [&] {
      try {
        return ProcessGrid::create(ctx, grid_rows, grid_cols);
      } catch (const UsageError& e) {  // a given grid that does not match the ranks: name the flag
        if (!parser.given("--grid")) throw;
        throw UsageError(std::string("--grid: ") + e.what());
      }
    }();
    // The shapes, then the memory they take, before anything is made: one line on every rank for a
    // product too large to number or to hold.
    const std::string shape_flag = from_files ? "--a/--b" : parser.given("--size") ? "--size" : "--m/--k/--n";
    checked_elements(m, k, shape_flag + ": A (M x K)");
    checked_elements(k, n, shape_flag + ": B (K x N)");
    checked_elements(m, n, shape_flag + ": C (M x N)");

    const auto run = [&]<class T>() -> int {
      {
        const Partition rows = Partition::block(m, grid.rows()), inner_rows = Partition::block(k, grid.rows());
        const Partition cols = Partition::block(n, grid.cols()), inner_cols = Partition::block(k, grid.cols());
        const long double my_rows = static_cast<long double>(rows.local_size(grid.process_row()));
        const long double my_cols = static_cast<long double>(cols.local_size(grid.process_col()));
        const long double panel = static_cast<long double>(std::min(matmul_options.panel_width, std::max<index_t>(k, 1)));
        // A, B and C's blocks, and two A and two B panels (SUMMA's broadcast of the next beside the
        // product of this one).
        const long double elements = my_rows * static_cast<long double>(inner_cols.local_size(grid.process_col())) +
                                     static_cast<long double>(inner_rows.local_size(grid.process_row())) * my_cols +
                                     my_rows * my_cols + 2 * panel * (my_rows + my_cols);
        const long double bytes = elements * sizeof(T);
        require_memory(ctx, bytes >= static_cast<long double>(SIZE_MAX) ? SIZE_MAX : static_cast<std::size_t>(bytes),
                       shape_flag + ": A, B and C (" + std::to_string(m) + " x " + std::to_string(k) + " x " +
                           std::to_string(n) + ") with SUMMA's panels of " + io::to_string(dtype));
      }
      const std::string what = shape_flag + ": the matrices A and B of " + io::to_string(dtype);
      DistMatrix<T> a, b;
      if (from_files) {
        a = for_flag("--a", [&] { return io::read_matrix<T>(grid, *a_path); });
        b = for_flag("--b", [&] { return io::read_matrix<T>(grid, *b_path); });
      } else {
        a = make_collectively(ctx, what, [&] { return DistMatrix<T>(grid, m, k); });
        b = make_collectively(ctx, what, [&] { return DistMatrix<T>(grid, k, n); });
        a.generate(o.seed);
        b.generate(o.seed + 1);
      }
      DistMatrix<T> c;
      const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) { c = matmul(a, b, matmul_options, times); });
      if (perturb) perturb_element(perturb, c);

      // The sum of C's elements, a checksum for the table (long double, or modulo 2^64 for integers).
      Json checksum;
      std::string checksum_text;
      {
        const std::vector<T> block = c.local_to_host();
        if constexpr (std::is_integral_v<T>) {
          std::uint64_t s = 0;
          for (const T x : block) s += static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
          verify::allreduce_sum(ctx, &s, 1);
          const auto wrapped = static_cast<T>(static_cast<std::make_unsigned_t<T>>(s));
          checksum = value_json(wrapped);
          checksum_text = value_text(wrapped);
        } else {
          long double s = 0;
          for (const T x : block) s += x;
          verify::allreduce_sum(ctx, &s, 1);
          checksum = static_cast<double>(s);
          checksum_text = format_number(static_cast<double>(s));
        }
      }

      Report r;
      r.input = input;
      r.dtype = dtype;
      r.sizes["m"] = static_cast<long long>(m);
      r.sizes["k"] = static_cast<long long>(k);
      r.sizes["n"] = static_cast<long long>(n);
      r.parameters["grid"] = std::to_string(grid.rows()) + "x" + std::to_string(grid.cols());
      r.parameters["panel"] = static_cast<long long>(matmul_options.panel_width);
      // What ran: under cpu the blocked host kernel ("host"), or OpenBLAS for --local vendor where
      // the build has it; under cuda what was asked.
      const char* vendor = kernels::vendor_gemm_library(ctx.backend());
      const std::string ran = ctx.backend() != Backend::cpu ? engine_text
                              : matmul_options.engine == GemmEngine::vendor && vendor ? std::string(vendor)
                                                                                                  : std::string("host");
      r.parameters["local"] = ran;
      r.rows.emplace_back("summa", "grid " + std::to_string(grid.rows()) + " x " + std::to_string(grid.cols()) +
                                       ", panel " + std::to_string(matmul_options.panel_width) + ", local " +
                                       (ran == engine_text ? ran
                                        : ran == "host"    ? ran + " (the cpu backend's blocked kernel; --local " + engine_text + " asked)"
                                                           : ran + " (--local " + engine_text + ")"));
      r.result = checksum;
      r.result_text = "C is " + std::to_string(m) + " x " + std::to_string(n) + ", sum of elements " + checksum_text;
      if (o.verify) r.verdict = verify::check_matmul(a, b, c, o.seed);
      r.timing = timing;
      const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
      r.throughput = timing.total > 0 ? flops / timing.total / 1e9 : 0;
      r.throughput_unit = "GFLOP/s";
      r.throughput_basis = "2 M K N flops";

      const bool wrong = r.verdict && !r.verdict->ok;
      if (o.output && !wrong) {
        auto attributes = output_attributes(app, ctx, dtype);
        attributes.extra.emplace_back("grid", std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()));
        for_flag("--output", [&] { io::write_matrix(c, *o.output, attributes); });
      }
      publish(app, ctx, r);
      return wrong ? kExitVerifyFailed : kExitOk;
    };
    return dtype == io::DType::float32 ? run.operator()<float>() : run.operator()<double>();
  });
}
