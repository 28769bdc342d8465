// global_sum: the sum (or min, or max) of a distributed array, every rank holding one block.
// Local reduce on each rank, then one MPI_Allreduce; --reproducible gives the correctly rounded
// sum, bitwise the same for any number of ranks.
#include "app.hpp"
#include "perturb.hpp"
#include "verify.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::apps;
  App app(argc, argv, "tessera-global-sum", "The sum, min or max of a distributed array (one block per rank).");
  ReduceOp op = ReduceOp::sum;
  bool reproducible = false;
  app.parser().add_option("--op", "sum|min|max", "the reduction (default sum)", [&](std::string_view v) {
    if (v == "sum") op = ReduceOp::sum;
    else if (v == "min") op = ReduceOp::min;
    else if (v == "max") op = ReduceOp::max;
    else throw UsageError("--op: unknown operation '" + std::string(v) + "' (expected sum, min or max)");
  });
  app.parser().add_switch("--reproducible",
                          "the exact sum, correctly rounded: bitwise identical for any rank count (float types; "
                          "integer sums are exact anyway)",
                          &reproducible);

  return app.run([&](const Context& ctx) -> int {
    const CommonOptions& o = app.options();
    if (reproducible && op != ReduceOp::sum) throw UsageError("--reproducible: only with --op sum");
    using Kind = Perturbation::Kind;
    const Perturbation perturb = test_perturbation(app, ctx, {Kind::ulps, Kind::relative, Kind::value, Kind::negate});
    const ArraySource source = resolve_array_source(ctx, app);
    return io::dispatch(source.dtype, [&]<class T>() -> int {
      const DistArray<T> data = load_array<T>(ctx, app, source);
      T result{};
      const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) {
        if constexpr (std::is_floating_point_v<T>) {
          if (reproducible) {
            result = reproducible_sum(data, times);
            return;
          }
        }
        result = reduce(data, op, times);
      });
      if (perturb) result = perturbed(perturb, result);

      Report r;
      r.input = source.description;
      r.dtype = source.dtype;
      r.sizes["n"] = static_cast<long long>(source.n);
      r.parameters["op"] = to_string(op);
      r.parameters["reproducible"] = reproducible;
      r.rows.emplace_back("operation", std::string(to_string(op)) + (reproducible ? " (reproducible, correctly rounded)" : ""));
      r.result = value_json(result);
      r.result_text = value_text(result);
      if (o.verify) r.verdict = verify::check_reduce(data, op, result, reproducible);
      r.timing = timing;
      const double bytes = static_cast<double>(source.n) * sizeof(T);
      r.throughput = timing.total > 0 ? bytes / timing.total / 1e9 : 0;
      r.throughput_unit = "GB/s";
      r.throughput_basis = "n elements read once";

      const bool wrong = r.verdict && !r.verdict->ok;
      if (o.output && !wrong) {
        // One element, on the first rank: the scalar result as a 1-element dataset.
        std::vector<index_t> counts(static_cast<std::size_t>(ctx.size()), 0);
        counts[0] = 1;
        DistArray<T> out(ctx, Partition::from_counts(counts));
        if (ctx.is_root()) out.local_from_host(std::vector<T>{result});
        auto attributes = output_attributes(app, ctx, source.dtype);
        attributes.extra.emplace_back("op", to_string(op));
        for_flag("--output", [&] { io::write_array(out, *o.output, attributes); });
      }
      publish(app, ctx, r);
      return wrong ? kExitVerifyFailed : kExitOk;
    });
  });
}
