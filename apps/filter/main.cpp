// filter: the elements of a distributed array that satisfy a predicate, in their global order.
// Each rank selects from its block and counts; one MPI_Allgather of the counts gives every rank the
// global offset of each rank's kept elements. --rebalance moves the ragged result back to equal
// blocks (nothing moves where they already are: on one rank, always).
#include <limits>
#include <string>
#include <type_traits>

#include "app.hpp"
#include "perturb.hpp"
#include "verify.hpp"

namespace {

// The predicate as given on the command line; its numbers are converted once the dtype is known.
struct PredicateText {
  tessera::PredicateKind kind = tessera::PredicateKind::gt;
  std::string a = "0", b;
  std::string text = "gt:0";
};

PredicateText parse_predicate(std::string_view v) {
  using tessera::PredicateKind;
  PredicateText p;
  p.text = std::string(v);
  if (v == "nonzero") {
    p.kind = PredicateKind::nonzero;
    return p;
  }
  const auto colon = v.find(':');
  const std::string_view name = v.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? std::string_view() : v.substr(colon + 1);
  const std::pair<const char*, PredicateKind> kinds[] = {{"gt", PredicateKind::gt}, {"ge", PredicateKind::ge},
                                                         {"lt", PredicateKind::lt}, {"le", PredicateKind::le},
                                                         {"eq", PredicateKind::eq}, {"ne", PredicateKind::ne},
                                                         {"between", PredicateKind::between}};
  bool known = false;
  for (const auto& [word, kind] : kinds)
    if (name == word) {
      p.kind = kind;
      known = true;
    }
  const std::string usage = " (expected gt:X, ge:X, lt:X, le:X, eq:X, ne:X, between:A:B or nonzero)";
  if (!known) throw tessera::UsageError("--predicate: unknown predicate '" + std::string(v) + "'" + usage);
  if (colon == std::string_view::npos || rest.empty())
    throw tessera::UsageError("--predicate: '" + std::string(v) + "' lacks its value" + usage);
  if (p.kind == PredicateKind::between) {
    // The bounds may be negative ("between:-1:1"), so split at the first colon after a character.
    const auto sep = rest.find(':', 1);
    if (sep == std::string_view::npos || sep + 1 >= rest.size())
      throw tessera::UsageError("--predicate: '" + std::string(v) + "' needs two bounds, between:A:B");
    p.a = std::string(rest.substr(0, sep));
    p.b = std::string(rest.substr(sep + 1));
  } else {
    p.a = std::string(rest);
  }
  return p;
}

// Why pred can keep nothing of any input of T, or "" when it can keep something. (ne:nan keeps
// everything and is allowed.)
template <class T>
std::string never_matches(const tessera::Predicate<T>& pred) {
  using tessera::PredicateKind;
  const auto text = [](T v) { return tessera::apps::value_text(v); };
  if constexpr (std::is_floating_point_v<T>) {
    const bool a_nan = pred.a != pred.a, b_nan = pred.b != pred.b;
    if (pred.kind != PredicateKind::ne && pred.kind != PredicateKind::nonzero && (a_nan || (pred.kind == PredicateKind::between && b_nan)))
      return "every comparison with NaN is false";
  }
  if (pred.kind == PredicateKind::between && pred.b < pred.a)
    return "the lower bound " + text(pred.a) + " exceeds the upper bound " + text(pred.b);
  const T top = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  const T bottom = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  if (pred.kind == PredicateKind::gt && pred.a == top) return "no value of the dtype exceeds " + text(pred.a);
  if (pred.kind == PredicateKind::lt && pred.a == bottom) return "no value of the dtype is below " + text(pred.a);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::apps;
  App app(argc, argv, "tessera-filter", "The elements of a distributed array that satisfy a predicate, in order.");
  PredicateText predicate_text;
  bool rebalanced = false;
  app.parser().add_option("--predicate", "gt:X|ge:X|lt:X|le:X|eq:X|ne:X|between:A:B|nonzero",
                          "which elements to keep (default gt:0; between keeps A <= x <= B)",
                          [&](std::string_view v) { predicate_text = parse_predicate(v); });
  app.parser().add_switch("--rebalance", "move the kept elements back to equal blocks (one all-to-all)", &rebalanced);

  return app.run([&](const Context& ctx) -> int {
    const CommonOptions& o = app.options();
    const Perturbation perturb = test_perturbation(app, ctx, {Perturbation::Kind::drop});
    const ArraySource source = resolve_array_source(ctx, app);
    return io::dispatch(source.dtype, [&]<class T>() -> int {
      Predicate<T> pred;
      pred.kind = predicate_text.kind;
      if (pred.kind != PredicateKind::nonzero) pred.a = parse_element<T>(predicate_text.a, "--predicate");
      if (pred.kind == PredicateKind::between) pred.b = parse_element<T>(predicate_text.b, "--predicate");
      if (const std::string never = never_matches(pred); !never.empty())
        throw UsageError("--predicate: '" + predicate_text.text + "' can never match: " + never);

      const DistArray<T> data = load_array<T>(ctx, app, source);
      DistArray<T> kept;
      const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) {
        kept = filter(data, pred, times);
        if (rebalanced) kept = rebalance(std::move(kept), times);
      });
      if (perturb) kept = perturb_filter_drop(perturb, std::move(kept));
      const index_t kept_count = kept.global_size();

      Report r;
      r.input = source.description;
      r.dtype = source.dtype;
      r.sizes["n"] = static_cast<long long>(source.n);
      r.parameters["predicate"] = predicate_text.text;
      r.parameters["rebalance"] = rebalanced;
      r.rows.emplace_back("predicate", predicate_text.text + (rebalanced ? ", rebalanced" : ", ragged result"));
      r.result = Json(static_cast<long long>(kept_count));
      char fraction[64] = "";
      if (source.n > 0)
        std::snprintf(fraction, sizeof fraction, " (%.2f%%)", 100.0 * static_cast<double>(kept_count) / static_cast<double>(source.n));
      r.result_text = std::to_string(kept_count) + " kept of " + std::to_string(source.n) + fraction;
      if (o.verify) r.verdict = verify::check_filter(data, kept, pred);
      r.timing = timing;
      const double bytes = static_cast<double>(source.n + kept_count) * sizeof(T);
      r.throughput = timing.total > 0 ? bytes / timing.total / 1e9 : 0;
      r.throughput_unit = "GB/s";
      r.throughput_basis = "n elements read, kept elements written";

      const bool wrong = r.verdict && !r.verdict->ok;
      if (o.output && !wrong) {
        auto attributes = output_attributes(app, ctx, source.dtype);
        attributes.extra.emplace_back("predicate", predicate_text.text);
        for_flag("--output", [&] { io::write_array(kept, *o.output, attributes); });
      }
      publish(app, ctx, r);
      return wrong ? kExitVerifyFailed : kExitOk;
    });
  });
}
