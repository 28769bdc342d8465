// The per-stream workspace behind the reduce (kernels/cuda/stream_workspace.hpp): its counter is
// zero again after every reduce, so that reduces queued back to back on one stream (no
// synchronisation between them, grids of every size) each find their last block; two streams never
// share one; it grows in stream order; and a reduce captured into a CUDA graph does not use it
// (the graph, replayed later, gets pool memory of its own); the exact sum, which keeps its partials
// there too, in stream order with reduces and in a graph.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tessera/kernels/cuda/stream_workspace.hpp"
#include "gpu_test_support.hpp"
#include "tessera/kernels/exact_sum.hpp"

namespace tessera::gpu_test {
namespace {

cudaStream_t stream_of(const Queue& q) { return reinterpret_cast<cudaStream_t>(q.stream); }

template <class T>
T cpu_reduce(const std::vector<T>& host, index_t n, ReduceOp op) {
  T want{};
  kernels::reduce(cpu_queue(), host.data(), n, op, &want);
  return want;
}

// Reduces prefixes of `host` of many lengths (from one thread block to the full grid) with every
// operation, all queued on `q` before one synchronisation, each into its own output.
template <class T>
void reduce_back_to_back(const Queue& q, const std::vector<T>& host, const T* in, const char* what) {
  const auto n = static_cast<index_t>(host.size());
  const std::vector<index_t> lengths = {n, 1, 0, 33, 4097, n / 3 + 1, 65537, n - 1, 1000003, n / 2, 31, n};
  const std::vector<ReduceOp> ops = {ReduceOp::sum, ReduceOp::min, ReduceOp::max};
  const std::size_t calls = lengths.size() * ops.size();
  auto* out = static_cast<T*>(kernels::allocate(q, sizeof(T) * calls));
  TESSERA_CUDA_CHECK(cudaMemsetAsync(out, 0xA5, sizeof(T) * calls, stream_of(q)));
  for (std::size_t i = 0; i < lengths.size(); ++i)
    for (std::size_t k = 0; k < ops.size(); ++k)
      kernels::reduce(q, in, std::min(lengths[i], n), ops[k], out + i * ops.size() + k);
  std::vector<T> got(calls);
  kernels::copy_to_host(q, got.data(), out, sizeof(T) * calls);
  for (std::size_t i = 0; i < lengths.size(); ++i)
    for (std::size_t k = 0; k < ops.size(); ++k)
      ASSERT_EQ(got[i * ops.size() + k], cpu_reduce(host, std::min(lengths[i], n), ops[k]))
          << what << ": call " << i * ops.size() + k << ", " << to_string(ops[k]) << " of " << std::min(lengths[i], n);
  kernels::deallocate(q, out);
}

template <class T>
T* upload(const Queue& q, const std::vector<T>& host) {
  auto* d = static_cast<T*>(kernels::allocate(q, sizeof(T) * host.size()));
  kernels::copy_from_host(q, d, host.data(), sizeof(T) * host.size());
  return d;
}

std::uint32_t read_counter(const Queue& q) {
  const kernels::cuda::detail::StreamWorkspace w = kernels::cuda::detail::stream_workspace(stream_of(q), 0);
  std::uint32_t counter = 0xFFFFFFFFu;
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(&counter, w.counter, sizeof counter, cudaMemcpyDeviceToHost, stream_of(q)));
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_of(q)));
  return counter;
}

TEST(StreamWorkspaceGpu, ReducesQueuedBackToBackEachFindTheirLastBlock) {
  Queue q = kernels::make_cuda_queue(0);
  const index_t n = small_mode() ? 5003 : (index_t(1) << 22) + 3;  // 4 MiB+: the full grid in int64
  const auto host64 = host_generate<std::int64_t>(n, test_seed());
  const auto host32 = host_generate<std::int32_t>(n, test_seed() + 1);
  auto* in64 = upload(q, host64);
  auto* in32 = upload(q, host32);
  reduce_back_to_back(q, host64, in64, "int64");
  reduce_back_to_back(q, host32, in32, "int32");
  EXPECT_EQ(read_counter(q), 0u) << "the last block must leave the counter at zero";
  kernels::deallocate(q, in64);
  kernels::deallocate(q, in32);
  kernels::destroy_queue(q);
}

TEST(StreamWorkspaceGpu, TwoStreamsReduceConcurrentlyInWorkspacesOfTheirOwn) {
  Queue a = kernels::make_cuda_queue(0);
  Queue b = kernels::make_cuda_queue(0);
  using kernels::cuda::detail::stream_workspace;
  EXPECT_NE(stream_workspace(stream_of(a), 0).counter, stream_workspace(stream_of(b), 0).counter);
  const index_t n = small_mode() ? 7919 : (index_t(1) << 23) - 1;
  const auto host = host_generate<std::int64_t>(n, test_seed() + 2);
  auto* in_a = upload(a, host);
  auto* in_b = upload(b, host);
  a.synchronize();
  b.synchronize();
  constexpr int kRounds = 16;
  auto* out_a = static_cast<std::int64_t*>(kernels::allocate(a, sizeof(std::int64_t) * kRounds));
  auto* out_b = static_cast<std::int64_t*>(kernels::allocate(b, sizeof(std::int64_t) * kRounds));
  for (int r = 0; r < kRounds; ++r) {  // the two streams' kernels overlap on the device
    kernels::reduce(a, in_a, n - r, ReduceOp::sum, out_a + r);
    kernels::reduce(b, in_b, n - 2 * r, ReduceOp::max, out_b + r);
  }
  std::vector<std::int64_t> got_a(kRounds), got_b(kRounds);
  kernels::copy_to_host(a, got_a.data(), out_a, sizeof(std::int64_t) * kRounds);
  kernels::copy_to_host(b, got_b.data(), out_b, sizeof(std::int64_t) * kRounds);
  for (int r = 0; r < kRounds; ++r) {
    EXPECT_EQ(got_a[r], cpu_reduce(host, n - r, ReduceOp::sum)) << "stream a, round " << r;
    EXPECT_EQ(got_b[r], cpu_reduce(host, n - 2 * r, ReduceOp::max)) << "stream b, round " << r;
  }
  kernels::deallocate(a, in_a);
  kernels::deallocate(b, in_b);
  kernels::deallocate(a, out_a);
  kernels::deallocate(b, out_b);
  kernels::destroy_queue(a);
  kernels::destroy_queue(b);
}

TEST(StreamWorkspaceGpu, GrowsInStreamOrderWithAZeroCounter) {
  Queue q = kernels::make_cuda_queue(0);
  using kernels::cuda::detail::stream_workspace;
  const index_t n = 100003;
  const auto host = host_generate<double>(n, test_seed() + 3);
  auto* in = upload(q, host);
  auto* out = static_cast<double*>(kernels::allocate(q, 2 * sizeof(double)));
  kernels::reduce(q, in, n, ReduceOp::max, out);  // queued on the first workspace
  // Swapped while the reduce may still run (the pool may hand back the same address: it reuses
  // memory freed earlier on the same stream). All 64 MiB are ours: memcheck checks the memset.
  const auto big = stream_workspace(stream_of(q), std::size_t(64) << 20);
  ASSERT_NE(big.counter, nullptr);
  TESSERA_CUDA_CHECK(cudaMemsetAsync(big.scratch, 0xFF, std::size_t(64) << 20, stream_of(q)));
  EXPECT_EQ(read_counter(q), 0u);
  kernels::reduce(q, in, n, ReduceOp::min, out + 1);
  std::vector<double> got(2);
  kernels::copy_to_host(q, got.data(), out, sizeof(double) * 2);
  EXPECT_EQ(got[0], cpu_reduce(host, n, ReduceOp::max));
  EXPECT_EQ(got[1], cpu_reduce(host, n, ReduceOp::min));
  EXPECT_EQ(stream_workspace(stream_of(q), 100).counter, big.counter) << "a smaller request keeps the workspace";
  kernels::deallocate(q, in);
  kernels::deallocate(q, out);
  kernels::destroy_queue(q);
}

TEST(StreamWorkspaceGpu, ReduceCapturedIntoAGraphUsesPoolMemoryAndReplays) {
  Queue q = kernels::make_cuda_queue(0);
  const index_t n = small_mode() ? 4099 : 1000003;
  auto host = host_generate<std::int32_t>(n, test_seed() + 4);
  auto* in = upload(q, host);
  auto* out = static_cast<std::int32_t*>(kernels::allocate(q, sizeof(std::int32_t)));
  q.synchronize();
  cudaGraph_t graph = nullptr;
  TESSERA_CUDA_CHECK(cudaStreamBeginCapture(stream_of(q), cudaStreamCaptureModeThreadLocal));
  EXPECT_EQ(kernels::cuda::detail::stream_workspace(stream_of(q), 0).counter, nullptr) << "no workspace in a capture";
  kernels::reduce(q, in, n, ReduceOp::sum, out);
  TESSERA_CUDA_CHECK(cudaStreamEndCapture(stream_of(q), &graph));
  cudaGraphExec_t exec = nullptr;
  TESSERA_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  Queue other = kernels::make_cuda_queue(0);  // the graph replays on another stream
  for (int replay = 0; replay < 3; ++replay) {
    host[static_cast<std::size_t>(replay * 7)] += 1000 + replay;
    kernels::copy_from_host(other, in, host.data(), sizeof(std::int32_t) * host.size());
    TESSERA_CUDA_CHECK(cudaMemsetAsync(out, 0xA5, sizeof(std::int32_t), stream_of(other)));
    TESSERA_CUDA_CHECK(cudaGraphLaunch(exec, stream_of(other)));
    std::int32_t got = 0;
    kernels::copy_to_host(other, &got, out, sizeof got);
    EXPECT_EQ(got, cpu_reduce(host, n, ReduceOp::sum)) << "replay " << replay;
  }
  TESSERA_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TESSERA_CUDA_CHECK(cudaGraphDestroy(graph));
  kernels::deallocate(q, in);
  kernels::deallocate(q, out);
  kernels::destroy_queue(other);
  kernels::destroy_queue(q);
}

// The exact sum keeps its per-block partials in the same workspace: queued between reduces with no
// synchronisation, each pass must find its own data.
TEST(StreamWorkspaceGpu, ExactSumAndReduceShareTheWorkspaceInStreamOrder) {
  Queue q = kernels::make_cuda_queue(0);
  const index_t n = small_mode() ? 6007 : (index_t(1) << 22) + 5;
  const auto host = host_generate<double>(n, test_seed() + 5);
  auto* in = upload(q, host);
  using Acc = kernels::ExactAccumulator<double>;
  constexpr int kRounds = 4;
  auto* accs = static_cast<Acc*>(kernels::allocate(q, sizeof(Acc) * kRounds));
  auto* maxima = static_cast<double*>(kernels::allocate(q, sizeof(double) * kRounds));
  for (int r = 0; r < kRounds; ++r) {
    kernels::exact_sum_partial(q, in, n - r * 1001, accs + r);
    kernels::reduce(q, in, n - r * 1001, ReduceOp::max, maxima + r);
  }
  std::vector<Acc> got(kRounds);
  std::vector<double> got_max(kRounds);
  kernels::copy_to_host(q, got.data(), accs, sizeof(Acc) * kRounds);
  kernels::copy_to_host(q, got_max.data(), maxima, sizeof(double) * kRounds);
  for (int r = 0; r < kRounds; ++r) {
    Acc want{};
    kernels::exact_sum_partial(cpu_queue(), host.data(), n - r * 1001, &want);
    const double a = kernels::exact_sum_round(got[r]), b = kernels::exact_sum_round(want);
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "exact sum, round " << r << ": " << a << " vs " << b;
    EXPECT_EQ(got_max[r], cpu_reduce(host, n - r * 1001, ReduceOp::max)) << "max, round " << r;
  }
  kernels::deallocate(q, in);
  kernels::deallocate(q, accs);
  kernels::deallocate(q, maxima);
  kernels::destroy_queue(q);
}

TEST(StreamWorkspaceGpu, ExactSumCapturedIntoAGraphReplays) {
  Queue q = kernels::make_cuda_queue(0);
  const index_t n = small_mode() ? 3001 : 1000003;
  auto host = host_generate<float>(n, test_seed() + 6);
  auto* in = upload(q, host);
  using Acc = kernels::ExactAccumulator<float>;
  auto* acc = static_cast<Acc*>(kernels::allocate(q, sizeof(Acc)));
  q.synchronize();
  cudaGraph_t graph = nullptr;
  TESSERA_CUDA_CHECK(cudaStreamBeginCapture(stream_of(q), cudaStreamCaptureModeThreadLocal));
  kernels::exact_sum_partial(q, in, n, acc);
  TESSERA_CUDA_CHECK(cudaStreamEndCapture(stream_of(q), &graph));
  cudaGraphExec_t exec = nullptr;
  TESSERA_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    host[static_cast<std::size_t>(replay * 13 + 1)] = 1e30f * static_cast<float>(replay + 1);
    kernels::copy_from_host(q, in, host.data(), sizeof(float) * host.size());
    TESSERA_CUDA_CHECK(cudaGraphLaunch(exec, stream_of(q)));
    Acc got{}, want{};
    kernels::copy_to_host(q, &got, acc, sizeof got);
    kernels::exact_sum_partial(cpu_queue(), host.data(), n, &want);
    const float a = kernels::exact_sum_round(got), b = kernels::exact_sum_round(want);
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "replay " << replay << ": " << a << " vs " << b;
  }
  TESSERA_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TESSERA_CUDA_CHECK(cudaGraphDestroy(graph));
  kernels::deallocate(q, in);
  kernels::deallocate(q, acc);
  kernels::destroy_queue(q);
}

}  // namespace
}  // namespace tessera::gpu_test
