#include "tessera/framework/fault.hpp"

#include <mpi.h>

#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tessera/kernels/error.hpp"

namespace tessera::detail {
namespace {

constexpr std::string_view kSites[] = {"allreduce", "exscan", "allgather", "bcast", "barrier", "alltoallv", "reduce_scatter", "neighbor_exchange", "write"};

struct ArmedFault {
  bool armed = false;
  int rank = -1;
  std::string site;
  long countdown = 1;
  std::string spec;
  std::string error;  // why the spec is malformed; empty when it is not
};

bool parse_number(std::string_view text, long min, long max, long* value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size() && *value >= min && *value <= max;
}

ArmedFault parse_fault() {
  ArmedFault f;
  const char* env = std::getenv("TESSERA_INJECT_FAULT");
  if (!env || !*env) return f;
  f.spec = env;
  const std::string_view s = f.spec;
  const auto colon = s.find(':');
  const auto colon2 = colon == std::string_view::npos ? colon : s.find(':', colon + 1);
  long rank = 0;
  if (colon == std::string_view::npos || !parse_number(s.substr(0, colon), 0, 1 << 30, &rank)) {
    f.error = "no rank number before the first ':'";
    return f;
  }
  const std::string_view site = s.substr(colon + 1, colon2 == std::string_view::npos ? std::string_view::npos : colon2 - colon - 1);
  bool known = false;
  for (std::string_view k : kSites) known = known || k == site;
  if (!known) {
    f.error = "unknown site '" + std::string(site) + "'";
    return f;
  }
  if (colon2 != std::string_view::npos && !parse_number(s.substr(colon2 + 1), 1, 1L << 40, &f.countdown)) {
    f.error = "COUNT '" + std::string(s.substr(colon2 + 1)) + "' is not a positive integer";
    return f;
  }
  f.rank = static_cast<int>(rank);
  f.site = std::string(site);
  f.armed = true;
  return f;
}

ArmedFault& fault() {
  static ArmedFault armed = parse_fault();
  return armed;
}

}  // namespace

std::string check_fault_injection(int world_size) {
  const ArmedFault& f = fault();
  std::string sites;
  for (std::string_view k : kSites) sites += (sites.empty() ? "" : ", ") + std::string(k);
  std::string error = f.error;
  if (error.empty() && f.armed && f.rank >= world_size)
    error = "rank " + std::to_string(f.rank) + " does not exist (the job has " + std::to_string(world_size) +
            (world_size == 1 ? " rank)" : " ranks)");
  if (error.empty()) return "";
  return "TESSERA_INJECT_FAULT='" + f.spec + "': " + error + " (expected RANK:SITE[:COUNT], SITE one of " + sites + ")";
}

void fault_point(const char* site, const char* file, int line) {
  ArmedFault& f = fault();
  if (!f.armed || f.site != site) return;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != f.rank) return;
  if (--f.countdown > 0) return;
  f.armed = false;
  ::tessera::fatal(file, line, site, "injected fault (TESSERA_INJECT_FAULT=" + f.spec + ")");
}

}  // namespace tessera::detail
