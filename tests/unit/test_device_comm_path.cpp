// The path DeviceComm takes, as a function of everything it depends on: the backend, the path asked
// for (TESSERA_DEVICE_COMM), whether MPI is CUDA-aware, whether the build has NCCL and whether ranks
// share GPUs. Each expectation is written out here, one case per line, from the documented rules.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tessera/framework/device_comm.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera {
namespace {

using detail::DeviceCommFacts;

struct Case {
  Backend backend;
  const char* requested;
  bool aware;
  bool nccl;
  bool share;
  std::optional<DeviceCommPath> expected;  // none: a UsageError
  const char* message;                     // a part of the UsageError's text
};

constexpr auto host = DeviceCommPath::mpi_host;
constexpr auto aware = DeviceCommPath::cuda_aware_mpi;
constexpr auto nccl = DeviceCommPath::nccl;
constexpr auto staged = DeviceCommPath::staged;
constexpr auto cpu = Backend::cpu;
constexpr auto cuda = Backend::cuda;

const std::vector<Case> kCases = {
    // backend  requested         aware  nccl   share  expected      message
    {cpu, "", false, false, false, host, ""},
    {cpu, "", true, true, true, host, ""},
    {cpu, "nccl", false, false, true, host, ""},  // the cpu backend never looks at the request
    {cpu, "bogus", false, false, false, host, ""},
    {cuda, "", false, false, false, staged, ""},
    {cuda, "", false, true, false, nccl, ""},
    {cuda, "", false, true, true, staged, ""},
    {cuda, "", true, true, false, aware, ""},
    {cuda, "", true, true, true, aware, ""},
    {cuda, "", true, false, false, aware, ""},
    {cuda, "auto", false, true, false, nccl, ""},
    {cuda, "auto", false, true, true, staged, ""},
    {cuda, "auto", true, false, true, aware, ""},
    {cuda, "staged", true, true, false, staged, ""},
    {cuda, "staged", false, false, true, staged, ""},
    {cuda, "nccl", true, true, false, nccl, ""},
    {cuda, "nccl", false, true, false, nccl, ""},
    {cuda, "nccl", false, false, false, std::nullopt, "TESSERA_DEVICE_COMM=nccl, but this build of Tessera has no NCCL"},
    {cuda, "nccl", true, true, true, std::nullopt, "ranks share GPUs"},
    {cuda, "cuda-aware-mpi", true, false, true, aware, ""},
    {cuda, "cuda-aware-mpi", false, true, false, std::nullopt, "TESSERA_DEVICE_COMM=cuda-aware-mpi, but this MPI is not CUDA-aware"},
    {cuda, "NCCL", false, true, false, std::nullopt, "TESSERA_DEVICE_COMM='NCCL': expected auto, cuda-aware-mpi, nccl or staged"},
    {cuda, "mpi-host", false, false, false, std::nullopt, "TESSERA_DEVICE_COMM='mpi-host'"},
    {cuda, " auto", false, true, false, std::nullopt, "TESSERA_DEVICE_COMM=' auto'"},
};

TEST(DeviceCommPathChoice, EveryCombinationAsDocumented) {
  for (const Case& c : kCases) {
    const DeviceCommFacts facts{.backend = c.backend,
                                .requested = c.requested,
                                .mpi_cuda_aware = c.aware,
                                .built_with_nccl = c.nccl,
                                .ranks_share_gpus = c.share};
    const std::string where = std::string(to_string(c.backend)) + " requested='" + c.requested +
                              "' aware=" + std::to_string(c.aware) + " nccl=" + std::to_string(c.nccl) +
                              " share=" + std::to_string(c.share);
    if (c.expected) {
      EXPECT_EQ(detail::choose_device_comm_path(facts), *c.expected) << where;
      continue;
    }
    try {
      const DeviceCommPath got = detail::choose_device_comm_path(facts);
      ADD_FAILURE() << where << ": expected a UsageError, got " << to_string(got);
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << where << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << where << ": one line";
    }
  }
}

TEST(DeviceCommPathChoice, Names) {
  EXPECT_STREQ(to_string(DeviceCommPath::mpi_host), "mpi-host");
  EXPECT_STREQ(to_string(DeviceCommPath::cuda_aware_mpi), "cuda-aware-mpi");
  EXPECT_STREQ(to_string(DeviceCommPath::nccl), "nccl");
  EXPECT_STREQ(to_string(DeviceCommPath::staged), "staged");
}

}  // namespace
}  // namespace tessera
