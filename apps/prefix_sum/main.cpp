// prefix_sum: the inclusive (or exclusive) prefix sum of a distributed array. Each rank reduces its
// block, one MPI_Allgather of the block totals gives each rank its carry-in (the totals of the ranks
// before it, added in rank order), and one local scan pass seeded with it writes the output block.
#include "app.hpp"
#include "perturb.hpp"
#include "verify.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::apps;
  App app(argc, argv, "tessera-prefix-sum", "The inclusive or exclusive prefix sum of a distributed array.");
  bool exclusive = false;
  app.parser().add_switch("--exclusive", "out[i] = in[0] + ... + in[i-1] (default inclusive: ... + in[i])", &exclusive);

  return app.run([&](const Context& ctx) -> int {
    const CommonOptions& o = app.options();
    const ScanKind kind = exclusive ? ScanKind::exclusive : ScanKind::inclusive;
    const Perturbation perturb = test_perturbation(app, ctx, {Perturbation::Kind::relative, Perturbation::Kind::drop});
    const ArraySource source = resolve_array_source(ctx, app);
    return io::dispatch(source.dtype, [&]<class T>() -> int {
      const DistArray<T> data = load_array<T>(ctx, app, source);
      DistArray<T> result;
      const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) { result = scan(data, kind, times); });
      if (perturb.kind == Perturbation::Kind::relative) perturb_element(perturb, result);
      if (perturb.kind == Perturbation::Kind::drop) perturb_scan_drop(perturb, data, result, kind);

      // The last element (for an inclusive scan, the total), from the last rank that holds any.
      const std::vector<T> host_last = result.local_size() ? std::vector<T>{result.local_to_host().back()} : std::vector<T>{};
      const std::vector<index_t> counts = ctx.comm().allgather<index_t>(result.local_size());
      const std::vector<T> lasts = ctx.comm().allgather<T>(host_last.empty() ? T(0) : host_last[0]);
      std::optional<T> last;
      for (int rank = ctx.size() - 1; rank >= 0 && !last; --rank)
        if (counts[static_cast<std::size_t>(rank)] > 0) last = lasts[static_cast<std::size_t>(rank)];

      Report r;
      r.input = source.description;
      r.dtype = source.dtype;
      r.sizes["n"] = static_cast<long long>(source.n);
      r.parameters["kind"] = to_string(kind);
      r.rows.emplace_back("scan", to_string(kind));
      r.result = last ? value_json(*last) : Json();
      r.result_text = last ? "last element " + value_text(*last) : "empty";
      if (o.verify) r.verdict = verify::check_scan(data, result, kind);
      r.timing = timing;
      const double bytes = 2.0 * static_cast<double>(source.n) * sizeof(T);
      r.throughput = timing.total > 0 ? bytes / timing.total / 1e9 : 0;
      r.throughput_unit = "GB/s";
      r.throughput_basis = "n elements read, n written";

      const bool wrong = r.verdict && !r.verdict->ok;
      if (o.output && !wrong) {
        auto attributes = output_attributes(app, ctx, source.dtype);
        attributes.extra.emplace_back("scan", to_string(kind));
        for_flag("--output", [&] { io::write_array(result, *o.output, attributes); });
      }
      publish(app, ctx, r);
      return wrong ? kExitVerifyFailed : kExitOk;
    });
  });
}
