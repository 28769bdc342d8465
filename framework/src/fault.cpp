#include "tessera/framework/fault.hpp"

#include <mpi.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tessera/kernels/error.hpp"

namespace tessera::detail {
namespace {

struct ArmedFault {
  bool armed = false;
  int rank = -1;
  std::string site;
  long countdown = 1;
  std::string spec;
};

ArmedFault parse_fault() {
  ArmedFault f;
  const char* env = std::getenv("TESSERA_INJECT_FAULT");
  if (!env || !*env) return f;
  f.spec = env;
  const std::string s = env;
  const auto colon = s.find(':');
  if (colon == std::string::npos) return f;
  f.rank = std::atoi(s.substr(0, colon).c_str());
  std::string rest = s.substr(colon + 1);
  const auto colon2 = rest.find(':');
  if (colon2 != std::string::npos) {
    f.countdown = std::max(1L, std::atol(rest.substr(colon2 + 1).c_str()));
    rest = rest.substr(0, colon2);
  }
  f.site = rest;
  f.armed = true;
  return f;
}

}  // namespace

void fault_point(const char* site, const char* file, int line) {
  static ArmedFault fault = parse_fault();
  if (!fault.armed || fault.site != site) return;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != fault.rank) return;
  if (--fault.countdown > 0) return;
  fault.armed = false;
  ::tessera::fatal(file, line, site, "injected fault (TESSERA_INJECT_FAULT=" + fault.spec + ")");
}

}  // namespace tessera::detail
