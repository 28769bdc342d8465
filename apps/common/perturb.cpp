#include "perturb.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace tessera::apps {
namespace {

const char* name_of(Perturbation::Kind kind) {
  switch (kind) {
    case Perturbation::Kind::ulps: return "ulps:N";
    case Perturbation::Kind::relative: return "relative:R[@INDEX]";
    case Perturbation::Kind::add: return "add:X[@INDEX]";
    case Perturbation::Kind::swap: return "swap[@INDEX]";
    case Perturbation::Kind::move: return "move[@INDEX]";
    case Perturbation::Kind::drop: return "drop[@INDEX]";
    case Perturbation::Kind::value: return "value:X";
    case Perturbation::Kind::negate: return "negate";
    default: return "";
  }
}

bool parse_whole(std::string_view text, long long min, long long max, long long* value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size() && *value >= min && *value <= max;
}

bool parse_real(std::string_view text, double* value) {
  if (text.empty()) return false;
  const std::string s(text);
  char* end = nullptr;
  *value = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(*value);
}

// Why `spec` is malformed, or "" (fills p).
std::string parse(std::string_view spec, Perturbation& p) {
  const auto at = spec.find('@');
  const std::string_view head = spec.substr(0, at);
  if (at != std::string_view::npos) {
    long long index = 0;
    if (!parse_whole(spec.substr(at + 1), 0, std::numeric_limits<index_t>::max(), &index))
      return "INDEX '" + std::string(spec.substr(at + 1)) + "' is not a non-negative integer";
    p.index = static_cast<index_t>(index);
  }
  const auto colon = head.find(':');
  const std::string_view word = head.substr(0, colon);
  const std::string_view value = colon == std::string_view::npos ? std::string_view() : head.substr(colon + 1);
  const bool has_value = colon != std::string_view::npos;
  if (word == "ulps") {
    p.kind = Perturbation::Kind::ulps;
    if (!parse_whole(value, -(1LL << 40), 1LL << 40, &p.ulps) || p.ulps == 0) return "N must be a non-zero integer";
  } else if (word == "relative") {
    p.kind = Perturbation::Kind::relative;
    if (!parse_real(value, &p.amount) || p.amount == 0) return "R must be a finite non-zero number";
  } else if (word == "add") {
    p.kind = Perturbation::Kind::add;
    if (!parse_real(value, &p.amount) || p.amount == 0) return "X must be a finite non-zero number";
  } else if (word == "value") {
    p.kind = Perturbation::Kind::value;
    if (!parse_real(value, &p.amount)) return "X must be a finite number";
  } else if (word == "drop" || word == "negate" || word == "swap" || word == "move") {
    p.kind = word == "drop"   ? Perturbation::Kind::drop
             : word == "swap" ? Perturbation::Kind::swap
             : word == "move" ? Perturbation::Kind::move
                              : Perturbation::Kind::negate;
    if (has_value) return std::string(name_of(p.kind)) + " takes no value";
  } else {
    return "unknown kind '" + std::string(word) + "'";
  }
  if (p.index && (p.kind == Perturbation::Kind::ulps || p.kind == Perturbation::Kind::value ||
                  p.kind == Perturbation::Kind::negate))
    return std::string(name_of(p.kind)) + " takes no @INDEX";
  return "";
}

}  // namespace

Perturbation test_perturbation(const App& app, const Context& ctx, std::initializer_list<Perturbation::Kind> kinds) {
  Perturbation p;
  const char* env = std::getenv("TESSERA_TEST_PERTURB");
  if (!env || !*env) return p;
  p.spec = env;
  std::string takes;
  for (const Perturbation::Kind k : kinds) takes += (takes.empty() ? "" : ", ") + std::string(name_of(k));
  const std::string prefix = "TESSERA_TEST_PERTURB='" + p.spec + "' (a test-only switch): ";
  std::string error = parse(p.spec, p);
  if (error.empty()) {
    bool taken = false;
    for (const Perturbation::Kind k : kinds) taken = taken || k == p.kind;
    if (!taken) error = std::string(name_of(p.kind)) + " is not one that " + app.name() + " takes";
  }
  if (!error.empty()) throw UsageError(prefix + error + " (" + app.name() + " takes " + takes + ")");
  if (ctx.is_root()) {
    std::fprintf(stderr, "%s: TESSERA_TEST_PERTURB='%s': the result is made wrong on purpose (a test-only switch)\n",
                 app.name().c_str(), p.spec.c_str());
    std::fflush(stderr);
  }
  return p;
}

index_t perturbed_index(const Context& ctx, const Perturbation& p, index_t size, double local_largest,
                        index_t local_index) {
  if (p.index) {
    if (*p.index >= size)
      throw UsageError("TESSERA_TEST_PERTURB='" + p.spec + "': INDEX " + std::to_string(*p.index) +
                       " is past the result's " + std::to_string(size) + " elements");
    return *p.index;
  }
  if (size == 0) throw UsageError("TESSERA_TEST_PERTURB='" + p.spec + "': the result is empty");
  const std::vector<double> largest = ctx.comm().allgather<double>(local_largest);
  const std::vector<index_t> at = ctx.comm().allgather<index_t>(local_index);
  double best = -1;
  index_t chosen = 0;
  for (std::size_t r = 0; r < largest.size(); ++r)
    if (at[r] >= 0 && (largest[r] > best || (largest[r] == best && at[r] < chosen))) {
      best = largest[r];
      chosen = at[r];
    }
  return chosen;
}

void perturb_move(const Context& ctx, const Perturbation& p, std::vector<index_t>& counts, index_t first_bin,
                  index_t bins) {
  if (bins < 2) throw UsageError("TESSERA_TEST_PERTURB='" + p.spec + "': a histogram of one bin has no other bin");
  index_t from = 0;
  if (p.index) {
    from = perturbed_index(ctx, p, bins, -1, -1);
  } else {
    // The fullest bin: each rank's candidate, the highest count winning, the lowest bin of equals.
    index_t best = -1, at = -1;
    for (std::size_t i = 0; i < counts.size(); ++i)
      if (counts[i] > best) {
        best = counts[i];
        at = first_bin + static_cast<index_t>(i);
      }
    const std::vector<index_t> bests = ctx.comm().allgather<index_t>(best), ats = ctx.comm().allgather<index_t>(at);
    best = -1;
    for (std::size_t r = 0; r < bests.size(); ++r)
      if (ats[r] >= 0 && (bests[r] > best || (bests[r] == best && ats[r] < from))) {
        best = bests[r];
        from = ats[r];
      }
  }
  const index_t to = from + 1 < bins ? from + 1 : from - 1;
  auto add = [&](index_t bin, index_t delta) {
    const index_t local = bin - first_bin;
    if (local >= 0 && local < static_cast<index_t>(counts.size())) counts[static_cast<std::size_t>(local)] += delta;
  };
  add(from, -1);
  add(to, +1);
}

}  // namespace tessera::apps
