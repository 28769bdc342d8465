// main() of the multi-rank test binaries.
//
// One launch runs the suite at several rank counts: `mpiexec -n 4 BINARY --ranks=4,3,2,1` runs every
// test on all 4 ranks, then on the first 3 (rank 3 waits, asleep), then on 2, then on 1. Without
// --ranks the suite runs once, on every rank of the launch (`mpiexec -n 3 BINARY` is the 3-rank pass
// alone, for debugging one count). Each pass is one GoogleTest iteration (--gtest_repeat, the
// supported way to run the tests more than once in a process: each iteration starts with fresh
// results and fixtures), and test::world() is that pass's context. The passes run from the largest
// count down, so that the ranks a pass leaves out are left out of every later pass: each rank runs
// the iterations of the passes it belongs to, then waits for the others.
//
// Only rank 0 prints the usual GoogleTest output, with a line naming the rank count before each
// pass and one after it; a failed assertion on another rank is printed with its rank; after each
// test the ranks of the pass agree whether it failed anywhere; the exit status is non-zero on every
// rank if any rank failed in any pass, so that mpiexec (and ctest) report the failure.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/queue.hpp"

namespace {

// The rank counts of --ranks=LIST (comma-separated), largest first, each once; empty on a bad list.
std::vector<int> parse_rank_counts(const std::string& list, int launched, std::string& error) {
  std::vector<int> counts;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    char* stop = nullptr;
    const long value = std::strtol(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || value < 1 || value > launched) {
      error = "--ranks=" + list + ": '" + item + "' is not a rank count from 1 to the " + std::to_string(launched) +
              " ranks launched";
      return {};
    }
    counts.push_back(static_cast<int>(value));
    start = end + 1;
  }
  std::sort(counts.begin(), counts.end(), std::greater<int>());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

std::string join(const std::vector<int>& counts) {
  std::string text;
  for (int c : counts) text += (text.empty() ? "" : ", ") + std::to_string(c);
  return text;
}

class RankListener : public ::testing::EmptyTestEventListener {
 public:
  RankListener(int rank, int launched, std::vector<tessera::Context> passes, std::vector<int> counts)
      : rank_(rank), launched_(launched), passes_(std::move(passes)), counts_(std::move(counts)) {}

  void OnTestIterationStart(const ::testing::UnitTest&, int iteration) override {
    // One pass (--gtest_repeat of the user's own: the same pass again), or iteration i is pass i.
    pass_ = counts_.size() > 1 ? iteration : 0;
    pass_failed_ = false;
    tessera::test::set_world(passes_[static_cast<std::size_t>(pass_)]);
    if (rank_ == 0 && counts_.size() > 1)
      std::printf("== tessera tests at %d rank(s) (pass %d of %zu; %d launched)\n", count(), pass_ + 1, counts_.size(),
                  launched_);
    std::fflush(stdout);
  }

  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (rank_ == 0 || !r.failed()) return;
    std::fprintf(stderr, "[rank %d of %d] %s:%d: Failure\n%s\n", rank_, count(), r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.summary());
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    int failed_here = info.result()->Failed() ? 1 : 0;
    int failed_ranks = 0;
    MPI_Allreduce(&failed_here, &failed_ranks, 1, MPI_INT, MPI_SUM, tessera::test::world().comm().get());
    if (failed_ranks > 0) pass_failed_ = true;
    if (rank_ == 0 && failed_ranks > failed_here)
      std::fprintf(stderr, "[rank 0] %s.%s failed on %d of %d rank(s)\n", info.test_suite_name(), info.name(),
                   failed_ranks, count());
  }

  void OnTestIterationEnd(const ::testing::UnitTest&, int) override {
    if (pass_failed_) failed_counts_.push_back(count());
    if (rank_ == 0 && counts_.size() > 1)
      std::printf("== tessera tests at %d rank(s): %s\n", count(), pass_failed_ ? "FAILED" : "passed");
    std::fflush(stdout);
    tessera::test::set_world(tessera::Context());
  }

  const std::vector<int>& failed_counts() const { return failed_counts_; }
  // The passes' communicators go before MPI_Finalize (the runtime's destructor).
  void release_passes() { passes_.clear(); }

 private:
  int count() const { return counts_[static_cast<std::size_t>(pass_)]; }

  int rank_;
  int launched_;
  std::vector<tessera::Context> passes_;
  std::vector<int> counts_;
  int pass_ = 0;
  bool pass_failed_ = false;
  std::vector<int> failed_counts_;
};

// MPI_Allreduce(MAX) over the launch, waited for asleep: a rank whose passes are over leaves the
// cores to the ranks still at work (a blocking collective polls at full speed).
int max_over_launch(const tessera::Context& launch, int value) {
  int result = value;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&value, &result, 1, MPI_INT, MPI_MAX, launch.comm().get(), &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return result;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = runtime.world_rank();
  std::string ranks_flag;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--ranks=", 8) == 0) {
      ranks_flag = argv[i] + 8;
    } else {
      if (rank == 0)
        std::fprintf(stderr, "unknown argument '%s' (this binary takes --ranks=LIST and GoogleTest's --gtest_* flags)\n",
                     argv[i]);
      return 2;
    }
  }
  const char* backend = std::getenv("TESSERA_TEST_BACKEND");
  // The GPU registrations (TESSERA_TEST_BACKEND=cuda) on a machine without a usable GPU: skipped
  // (77, which ctest reports as such), never passed, on every rank alike.
  if (backend && std::strcmp(backend, "cuda") == 0 && tessera::kernels::cuda_device_count() == 0) {
    if (rank == 0) std::printf("tessera tests: TESSERA_TEST_BACKEND=cuda and no usable CUDA device; skipped\n");
    return 77;
  }
  tessera::Context launch;
  try {
    launch = runtime.start(tessera::parse_backend_choice(backend ? backend : "cpu"));
  } catch (const tessera::UsageError& e) {
    if (rank == 0) std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  std::vector<int> counts{launch.size()};
  if (!ranks_flag.empty()) {
    std::string error;
    counts = parse_rank_counts(ranks_flag, launch.size(), error);
    if (counts.empty()) {
      if (rank == 0) std::fprintf(stderr, "%s\n", error.c_str());
      return 2;
    }
  }
  if (counts.size() > 1 && GTEST_FLAG_GET(repeat) != 1) {
    if (rank == 0) std::fprintf(stderr, "--gtest_repeat runs the passes of --ranks=%s; give one rank count with it\n",
                                ranks_flag.c_str());
    return 2;
  }
  tessera::test::set_launch(launch);
  // Every pass's context, made now while every rank takes part (Context::first is collective over
  // the launch); a rank outside a pass gets the null context, and its passes are a prefix of these.
  std::vector<tessera::Context> passes;
  for (int c : counts) passes.push_back(c == launch.size() ? launch : launch.first(c));
  while (!passes.empty() && passes.back().is_null()) passes.pop_back();
  if (rank == 0)
    std::printf("tessera tests: %s, seed %llu%s%s\n", runtime.describe().c_str(),
                static_cast<unsigned long long>(tessera::test::seed()), counts.size() > 1 ? ", passes at rank counts " : "",
                counts.size() > 1 ? join(counts).c_str() : "");

  // The rank listener before GoogleTest's printer: its lines come before the printer's at the start
  // of a pass and after them at the end of a test or pass (end events go in reverse order).
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  ::testing::TestEventListener* printer = listeners.Release(listeners.default_result_printer());
  auto* rank_listener = new RankListener(rank, launch.size(), passes, counts);
  listeners.Append(rank_listener);
  if (rank == 0)
    listeners.Append(printer);
  else
    delete printer;

  int result = 0;
  if (!passes.empty()) {
    if (counts.size() > 1) GTEST_FLAG_SET(repeat, static_cast<int>(passes.size()));
    result = RUN_ALL_TESTS();
  }
  const int worst = max_over_launch(launch, result);
  if (rank == 0 && counts.size() > 1) {
    const std::vector<int>& failed = rank_listener->failed_counts();
    if (failed.empty() && worst == 0)
      std::printf("tessera tests: passed at rank counts %s\n", join(counts).c_str());
    else
      std::printf("tessera tests: FAILED at rank count(s) %s (launched: %d; passes: %s)\n",
                  failed.empty() ? "?" : join(failed).c_str(), launch.size(), join(counts).c_str());
  }
  rank_listener->release_passes();
  tessera::test::set_world(tessera::Context());
  tessera::test::set_launch(tessera::Context());
  passes.clear();
  return worst;
}
