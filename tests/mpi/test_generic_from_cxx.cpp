// The open algorithms called from a translation unit that a plain C++ compiler builds (as a
// CPU-only consumer would): user functors run on the cpu backend; on the cuda backend they cannot
// (no device code of theirs exists), which is a UsageError on every rank, while the precompiled
// operations run on both.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera {
namespace {

struct SumOfSquares {
  TESSERA_HOST_DEVICE std::int64_t operator()(std::int32_t x) const { return std::int64_t(x) * x; }
};

TEST(GenericFromCxx, UserFunctorsOnTheCpuBackendAndAClearErrorOnCuda) {
  const Context& world = test::world();
  const index_t n = 4099;
  const auto global = test::random_vector<std::int32_t>(n, test::seed() + 91);
  const auto a = DistArray<std::int32_t>::from_replicated(world, global);
  std::int64_t expected = 0;
  for (auto x : global) expected += std::int64_t(x) * x;
  if (world.backend() == Backend::cpu) {
    EXPECT_EQ(transform_reduce(a, SumOfSquares{}, plus{}, std::int64_t(0)), expected);
  } else {
    EXPECT_THROW(transform_reduce(a, SumOfSquares{}, plus{}, std::int64_t(0)), UsageError);
  }
  // The precompiled sum runs on either backend from here.
  std::int32_t sum = 0;
  for (auto x : global) sum = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum) + static_cast<std::uint32_t>(x));
  EXPECT_EQ(reduce(a, plus{}), sum);
  EXPECT_EQ(reduce(a, ReduceOp::sum), sum);
}

}  // namespace
}  // namespace tessera
