// main() of the multi-rank test binaries. Every rank runs every test; only rank 0 prints the usual
// GoogleTest output; a failed assertion on another rank is printed with its rank; after each test the
// ranks agree whether it failed anywhere, and the exit status is non-zero on every rank if any rank
// failed, so that mpiexec (and ctest) report the failure.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "support/test_support.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/kernels/error.hpp"

namespace {

class RankListener : public ::testing::EmptyTestEventListener {
 public:
  RankListener(int rank, bool print_parts) : rank_(rank), print_parts_(print_parts) {}

  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!print_parts_ || !r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.summary());
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    int failed_here = info.result()->Failed() ? 1 : 0;
    int failed_ranks = 0;
    MPI_Allreduce(&failed_here, &failed_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0 && failed_ranks > failed_here)
      std::fprintf(stderr, "[rank 0] %s.%s failed on %d rank(s)\n", info.test_suite_name(), info.name(),
                   failed_ranks);
  }

 private:
  int rank_;
  bool print_parts_;
};

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  const char* backend = std::getenv("TESSERA_TEST_BACKEND");
  tessera::Context world;
  try {
    world = runtime.start(tessera::parse_backend_choice(backend ? backend : "cpu"));
  } catch (const tessera::UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  tessera::test::set_world(world);
  if (runtime.world_rank() == 0)
    std::printf("tessera tests: %s, seed %llu\n", runtime.describe().c_str(),
                static_cast<unsigned long long>(tessera::test::seed()));

  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (runtime.world_rank() != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new RankListener(runtime.world_rank(), runtime.world_rank() != 0));

  int result = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  tessera::test::set_world(tessera::Context());
  return worst;
}
