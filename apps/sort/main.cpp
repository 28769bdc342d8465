// sort: a distributed array in ascending order, in the balanced block partition (floating point in
// IEEE total order: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN). Sample sort: each rank
// radix-sorts its block, one allgather of regular samples fixes splitters around every block
// boundary, one all-to-all moves the data straight to its final rank, and a local sort merges what
// arrived. --values also sorts each key's original global index along with it and writes it as a
// second dataset (<dataset>_index): an argsort a user can apply to other columns.
//
// Compiled as CUDA where the build has it: the generated distributions and the checks of --verify
// are functors that run on the array's backend.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "app.hpp"
#include "perturb.hpp"
#include "verify_sort.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/sort_order.hpp"

namespace {

using tessera::index_t;

enum class Distribution { uniform, normal, sorted, reverse, few_unique, all_equal, zipf };

const std::pair<const char*, Distribution> kDistributions[] = {
    {"uniform", Distribution::uniform},     {"normal", Distribution::normal},
    {"sorted", Distribution::sorted},       {"reverse", Distribution::reverse},
    {"few-unique", Distribution::few_unique}, {"all-equal", Distribution::all_equal},
    {"zipf", Distribution::zipf}};

const char* to_string(Distribution d) {
  for (const auto& [name, value] : kDistributions)
    if (value == d) return name;
  return "?";
}

// Element i of a generated input, from (seed, i) only:
//   uniform     integers: every value of the dtype equally likely; floating point: [-1, 1)
//   normal      mean 0, deviation 1 (integers: rounded, deviation 2^20)
//   sorted      i;  reverse  n - 1 - i
//   few-unique  16 distinct values;  all-equal  one value
//   zipf        heavy-tailed: k >= 1 with probability 1 / (k (k + 1)) (integers capped at the dtype's
//               largest value)
template <class T>
struct Generator {
  Distribution distribution;
  std::uint64_t seed;
  index_t n;
  TESSERA_HOST_DEVICE T operator()(index_t i) const {
    const std::uint64_t bits = tessera::counter_bits(seed, static_cast<std::uint64_t>(i));
    // (0, 1]: never 0, so that logarithms and reciprocals stay finite.
    const double unit = static_cast<double>((bits >> 11) + 1) * 0x1p-53;
    switch (distribution) {
      case Distribution::uniform:
        if constexpr (std::is_integral_v<T>) {
          return static_cast<T>(bits);
        } else {
          return tessera::counter_value<T>(seed, static_cast<std::uint64_t>(i));
        }
      case Distribution::normal: {
        const std::uint64_t more = tessera::counter_bits(seed ^ 0x5bd1e995u, static_cast<std::uint64_t>(i));
        const double angle = static_cast<double>(more >> 11) * 0x1p-53 * 6.283185307179586;
        const double z = std::sqrt(-2.0 * std::log(unit)) * std::cos(angle);
        if constexpr (std::is_integral_v<T>) {
          return static_cast<T>(std::llround(z * 0x1p20));
        } else {
          return static_cast<T>(z);
        }
      }
      case Distribution::sorted: return static_cast<T>(i);
      case Distribution::reverse: return static_cast<T>(n - 1 - i);
      case Distribution::few_unique: return static_cast<T>(static_cast<double>(bits % 16) * 0.5 - 3.0);
      case Distribution::all_equal: return static_cast<T>(1);
      case Distribution::zipf: {
        const double k = std::floor(1.0 / unit);
        if constexpr (std::is_integral_v<T>) {
          const double top = static_cast<double>(std::numeric_limits<T>::max());
          return k >= top ? std::numeric_limits<T>::max() : static_cast<T>(k);
        } else {
          return static_cast<T>(k);
        }
      }
    }
    return T{};
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::apps;
  App app(argc, argv, "tessera-sort", "A distributed array in ascending order, in equal blocks (sample sort).");
  bool with_values = false;
  std::optional<Distribution> distribution;
  app.parser().add_switch("--values", "also sort each key's original global index and write it as <dataset>_index",
                          &with_values);
  app.parser().add_option("--distribution", "uniform|normal|sorted|reverse|few-unique|all-equal|zipf",
                          "the generated input's distribution (default uniform)", [&](std::string_view v) {
                            for (const auto& [name, value] : kDistributions)
                              if (v == name) {
                                distribution = value;
                                return;
                              }
                            throw UsageError("--distribution: unknown distribution '" + std::string(v) +
                                             "' (expected uniform, normal, sorted, reverse, few-unique, all-equal or "
                                             "zipf)");
                          });

  return app.run([&](const Context& ctx) -> int {
    const CommonOptions& o = app.options();
    if (o.input && distribution)
      throw UsageError("--distribution: cannot be combined with --input (the data come from the dataset)");
    const Distribution chosen = distribution.value_or(Distribution::uniform);
    const Perturbation perturbation =
        test_perturbation(app, ctx, {Perturbation::Kind::add, Perturbation::Kind::swap, Perturbation::Kind::relative});
    std::optional<io::DatasetPath> index_output;
    if (o.output && with_values) {
      index_output = io::DatasetPath{o.output->file, o.output->dataset + "_index"};
      for_flag("--output", [&] { io::check_output_path(ctx, *index_output, o.overwrite); });
    }
    const ArraySource source = resolve_array_source(ctx, app);
    return io::dispatch(source.dtype, [&]<class T>() -> int {
      DistArray<T> data = load_array<T>(ctx, app, source);
      if (!o.input) generate(data, Generator<T>{chosen, o.seed, source.n});

      DistArray<T> sorted;
      DistArray<index_t> indices;
      std::vector<SortPhaseTimes> steps_per_repeat;  // this rank's, one per timed repeat
      const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) {
        SortPhaseTimes* record = nullptr;
        if (times) record = &steps_per_repeat.emplace_back();
        if (with_values) {
          SortedPairs<T, index_t> result = sort_with_indices(data, times, record);
          sorted = std::move(result.keys);
          indices = std::move(result.values);
        } else {
          sorted = sort(data, times, record);
        }
      });

      if (perturbation.kind == Perturbation::Kind::swap) perturb_swap(perturbation, sorted, with_values ? &indices : nullptr);
      else if (perturbation) perturb_element(perturbation, sorted);

      // The steps of the sort in the repeat and on the rank the phases come from, so that local sort =
      // local, splitters + exchange = communication and merge = fix-up.
      double step_seconds[4] = {0, 0, 0, 0};
      if (!steps_per_repeat.empty()) {
        const SortPhaseTimes& s = steps_per_repeat[static_cast<std::size_t>(timing.phases_repeat)];
        step_seconds[0] = s.local_sort;
        step_seconds[1] = s.splitters;
        step_seconds[2] = s.exchange;
        step_seconds[3] = s.merge;
      }
      ctx.comm().bcast(step_seconds, 4, timing.phases_rank);

      Report r;
      r.input = o.input ? source.description : source.description + ", " + to_string(chosen);
      r.dtype = source.dtype;
      r.sizes["n"] = static_cast<long long>(source.n);
      r.parameters["values"] = with_values;
      r.parameters["distribution"] = o.input ? Json(nullptr) : Json(to_string(chosen));
      r.rows.emplace_back("sort", with_values ? "keys and their global indices (argsort)" : "keys");
      r.rows.emplace_back("sort steps", "local sort " + format_seconds(step_seconds[0]) + ", splitters " +
                                            format_seconds(step_seconds[1]) + ", exchange " +
                                            format_seconds(step_seconds[2]) + ", merge " +
                                            format_seconds(step_seconds[3]) + " (the phases' rank and repeat)");
      Json result = Json::object();
      result["keys"] = static_cast<long long>(sorted.global_size());
      Json steps_json = Json::object();
      steps_json["local_sort"] = step_seconds[0];
      steps_json["splitters"] = step_seconds[1];
      steps_json["exchange"] = step_seconds[2];
      steps_json["merge"] = step_seconds[3];
      result["steps"] = steps_json;
      r.result = result;
      r.result_text = std::to_string(sorted.global_size()) + " keys sorted";
      if (timing.total > 0) {
        char rate[64];
        std::snprintf(rate, sizeof rate, ", %.3f Gkeys/s", static_cast<double>(source.n) / timing.total / 1e9);
        r.result_text += rate;
      }
      if (o.verify) r.verdict = verify::check_sort(data, sorted, with_values ? &indices : nullptr);
      r.timing = timing;
      const double bytes = static_cast<double>(source.n) * 2.0 * (sizeof(T) + (with_values ? sizeof(index_t) : 0));
      r.throughput = timing.total > 0 ? bytes / timing.total / 1e9 : 0;
      r.throughput_unit = "GB/s";
      r.throughput_basis = with_values ? "n keys and indices read and written once" : "n keys read and written once";

      const bool wrong = r.verdict && !r.verdict->ok;
      if (o.output && !wrong) {
        auto attributes = output_attributes(app, ctx, source.dtype);
        attributes.extra.emplace_back("sorted", with_values ? "keys; argsort in " + index_output->dataset : "keys");
        if (!o.input) attributes.extra.emplace_back("distribution", to_string(chosen));
        // The keys and their argsort appear together or not at all: one file, one commit.
        io::OutputFile out(ctx, o.output->file);
        out.add(sorted, o.output->dataset, attributes);
        if (with_values) {
          auto index_attributes = output_attributes(app, ctx, io::DType::int64);
          index_attributes.extra.emplace_back("argsort_of", o.output->dataset);
          out.add(indices, index_output->dataset, index_attributes);
        }
        for_flag("--output", [&] { out.commit(); });
      }
      publish(app, ctx, r);
      return wrong ? kExitVerifyFailed : kExitOk;
    });
  });
}
