// tessera_bench_stencil_overlap: where the time of an overlapped Jacobi step goes on one GPU. The
// step's device work as the solver queues it (the interior sweep on one queue; the frame, the pack
// of its edge rows, the exchange and the unpack on a high-priority queue), with the exchange done
// by NCCL sending the rows to the same rank (the SendRecv kernel two GPUs would run, without a
// peer to wait for). Events give each part's end, in us from the step's start, per order in which
// the host queues the parts; the wall time of the step is next to the whole block's sweep alone.
//
//   tessera_bench_stencil_overlap [--sizes 4096,8192,16384] [-n 30] [-w 5] [--json FILE]   (the harness's flags)
// Each row is checked: the exchange's ghost rows must equal the edge rows they came from.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/kernels.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/stencil.hpp"

namespace {

using tessera::index_t;
namespace kernels = tessera::kernels;

#define NCCL_OK(call)                                                                         \
  do {                                                                                        \
    const ncclResult_t result_ = (call);                                                      \
    if (result_ != ncclSuccess) throw std::runtime_error(std::string(#call) + ": " + ncclGetErrorString(result_)); \
  } while (0)

enum Part { kStart, kInteriorStart, kInteriorEnd, kFrame, kPack, kExchange, kUnpack, kEnd, kParts };

// The orders in which the host may queue the parts (the unpack always last).
struct Order {
  const char* name;
  const char* parts;  // i interior, f frame, p pack, x exchange
};
constexpr Order kOrders[] = {{"interior, frame, pack, exchange", "ifpx"},
                             {"frame, interior, pack, exchange", "fipx"},
                             {"frame, pack, interior, exchange", "fpix"},
                             {"frame, pack, exchange, interior", "fpxi"}};

// Whether the last step's exchange put each edge row into the ghost row beyond it (NCCL sends the
// first and last owned rows to this rank, which receives them as the rows above and below).
bool exchanged(const kernels::Queue& q, const float* out, index_t ld, index_t origin, index_t n) {
  std::vector<float> rows(4 * static_cast<std::size_t>(n));
  const index_t at[4] = {-ld, 0, (n - 1) * ld, n * ld};
  for (int r = 0; r < 4; ++r)
    kernels::copy_to_host(q, rows.data() + r * n, out + origin + at[r], static_cast<std::size_t>(n) * sizeof(float));
  for (index_t j = 0; j < n; ++j)
    if (rows[j] != rows[n + j] || rows[3 * n + j] != rows[2 * n + j]) return false;
  return true;
}

void run_size(index_t n, int iters, int warmup, ncclComm_t comm, cudaStream_t nccl_stream, const kernels::Queue& q,
              const kernels::Queue& edges, tessera::bench::Harness& h) {
  // Two n x n fields with a ghost ring; rows padded to 32 elements, the owned cells from a 16-byte
  // boundary (the solver's layout); the interior from the first 16-byte boundary after the ghost.
  const index_t ld = (n + 2 + 31) / 32 * 32 + 32, origin = ld + 32;
  const auto field_bytes = static_cast<std::size_t>((n + 2) * ld + 64) * sizeof(float);
  auto* a = static_cast<float*>(kernels::allocate(q, field_bytes));
  auto* b = static_cast<float*>(kernels::allocate(q, field_bytes));
  auto* send = static_cast<float*>(kernels::allocate(q, 2 * n * sizeof(float)));
  auto* recv = static_cast<float*>(kernels::allocate(q, 2 * n * sizeof(float)));
  // Random cells (the generator's floats in [-1, 1)), so that the exchange's check can fail.
  kernels::generate(q, a, static_cast<index_t>(field_bytes / sizeof(float)), 7, 0);
  kernels::generate(q, b, static_cast<index_t>(field_bytes / sizeof(float)), 8, 0);
  const auto w = tessera::StencilWeights<float>::jacobi5();
  const std::vector<kernels::Rectangle> sends = {{0, ld, 1, n}, {(n - 1) * ld, ld, 1, n}};
  const std::vector<kernels::Rectangle> recvs = {{-ld, ld, 1, n}, {n * ld, ld, 1, n}};
  const kernels::StencilFrame frame{1, 1, 4, 1};
  auto stream = [](const kernels::Queue& queue) { return static_cast<cudaStream_t>(queue.stream); };
  cudaEvent_t event[kParts];
  for (cudaEvent_t& e : event) TESSERA_CUDA_CHECK(cudaEventCreate(&e));

  double sweep_wall = 0;
  for (int it = 0; it < iters + warmup; ++it) {
    TESSERA_CUDA_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    kernels::stencil_2d(q, a + origin, ld, b + origin, ld, n, n, w);
    q.synchronize();
    if (it >= warmup) sweep_wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  for (const Order& order : kOrders) {
    double at[kParts] = {}, wall = 0;
    std::vector<double> walls;
    float* out = nullptr;
    for (int it = 0; it < iters + warmup; ++it) {
      float* in = it % 2 ? b : a;
      out = it % 2 ? a : b;
      TESSERA_CUDA_CHECK(cudaDeviceSynchronize());
      const auto t0 = std::chrono::steady_clock::now();
      kernels::queue_wait(edges, q);
      TESSERA_CUDA_CHECK(cudaEventRecord(event[kStart], stream(edges)));
      for (const char* p = order.parts; *p; ++p) {
        if (*p == 'i') {
          TESSERA_CUDA_CHECK(cudaEventRecord(event[kInteriorStart], stream(q)));
          kernels::stencil_2d(q, in + origin + ld + 4, ld, out + origin + ld + 4, ld, n - 2, n - 5, w);
          TESSERA_CUDA_CHECK(cudaEventRecord(event[kInteriorEnd], stream(q)));
        } else if (*p == 'f') {
          kernels::stencil_2d_frame(edges, in + origin, ld, out + origin, ld, n, n, frame, w);
          TESSERA_CUDA_CHECK(cudaEventRecord(event[kFrame], stream(edges)));
        } else if (*p == 'p') {
          kernels::pack_rectangles(edges, out + origin, sends, send, sizeof(float));
          TESSERA_CUDA_CHECK(cudaEventRecord(event[kPack], stream(edges)));
        } else {
          TESSERA_CUDA_CHECK(cudaStreamWaitEvent(nccl_stream, event[kPack], 0));
          NCCL_OK(ncclGroupStart());
          NCCL_OK(ncclSend(send, 2 * n * sizeof(float), ncclChar, 0, comm, nccl_stream));
          NCCL_OK(ncclRecv(recv, 2 * n * sizeof(float), ncclChar, 0, comm, nccl_stream));
          NCCL_OK(ncclGroupEnd());
          TESSERA_CUDA_CHECK(cudaEventRecord(event[kExchange], nccl_stream));
          TESSERA_CUDA_CHECK(cudaStreamWaitEvent(stream(edges), event[kExchange], 0));
        }
      }
      kernels::unpack_rectangles(edges, recv, recvs, out + origin, sizeof(float));
      TESSERA_CUDA_CHECK(cudaEventRecord(event[kUnpack], stream(edges)));
      kernels::queue_wait(q, edges);
      TESSERA_CUDA_CHECK(cudaEventRecord(event[kEnd], stream(q)));
      q.synchronize();
      if (it < warmup) continue;
      walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      wall += walls.back();
      for (int k = kInteriorStart; k < kParts; ++k) {
        float ms = 0;
        TESSERA_CUDA_CHECK(cudaEventElapsedTime(&ms, event[kStart], event[k]));
        at[k] += ms;
      }
    }
    auto us = [&](int k) { return 1e3 * at[k] / iters; };
    std::printf("%8lld^2  %-32s %7.1f-%-7.1f %7.1f %7.1f %9.1f %8.1f %7.1f %9.1f %9.1f\n", static_cast<long long>(n),
                order.name, us(kInteriorStart), us(kInteriorEnd), us(kFrame), us(kPack), us(kExchange), us(kUnpack),
                us(kEnd), 1e6 * wall / iters, 1e6 * sweep_wall / iters);
    std::fflush(stdout);
    // The harness's row: each step's wall time, its share of the sweep alone (that time over the
    // step's), VALID when the exchange delivered the edge rows.
    const bool right = exchanged(q, out, ld, origin, n);
    h.row(std::to_string(n) + "^2 " + order.parts)
        .set("block", n)
        .set("order", order.name)
        .set("interior_start_us", us(kInteriorStart))
        .set("interior_end_us", us(kInteriorEnd))
        .set("frame_us", us(kFrame))
        .set("pack_us", us(kPack))
        .set("exchange_us", us(kExchange))
        .set("unpack_us", us(kUnpack))
        .set("step_us", us(kEnd))
        .set("wall_step_us", 1e6 * wall / iters)
        .set("wall_sweep_us", 1e6 * sweep_wall / iters)
        .time(walls)
        .share("sweep_alone", sweep_wall / wall)
        .verdict(right, "the ghost rows are not the exchanged edge rows");
    h.print_pending();
  }
  for (cudaEvent_t& e : event) TESSERA_CUDA_CHECK(cudaEventDestroy(e));
  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(send), static_cast<void*>(recv)})
    kernels::deallocate(q, p);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::bench;
  Harness h("tessera_bench_stencil_overlap",
            "Where the time of an overlapped Jacobi step goes on one GPU (NCCL sending to the same rank).\n"
            "Blocks: --sizes N,... (N x N cells; default 4096,8192,16384) or square float blocks of -b to -e bytes.",
            {.minbytes = index_t(64) << 20, .maxbytes = index_t(1) << 30, .stepfactor = 4, .iters = 30, .warmup = 5});
  std::vector<index_t> sizes = {4096, 8192, 16384};
  h.add_option({"--sizes"}, "N,...", "blocks of N x N cells (at least 8)", [&](std::string_view v) {
    sizes.clear();
    for (long long n : parse_counts(v, "--sizes")) {
      if (n < 8) usage_error("--sizes: blocks of at least 8 x 8, got " + std::to_string(n));
      sizes.push_back(n);
    }
  });
  parse_command_line(h, argc, argv);
  if (h.sizes_given() && h.given("--sizes")) usage_error("--sizes and -b/-e: give one or the other");
  if (h.sizes_given()) {
    sizes = h.square_sides(sizeof(float));
    for (index_t n : sizes)
      if (n < 8) usage_error("-b: blocks of at least 8 x 8 (256 bytes)");
  }
  const int iters = h.iters(), warmup = h.warmup();
  try {
    if (kernels::cuda_device_count() == 0) {
      std::fprintf(stderr, "tessera_bench_stencil_overlap: no CUDA device\n");
      return 1;
    }
    kernels::Queue q = kernels::make_cuda_queue(0);
    kernels::Queue edges = kernels::make_priority_queue(q);
    cudaStream_t nccl_stream = nullptr;
    TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&nccl_stream, cudaStreamNonBlocking));
    ncclComm_t comm = nullptr;
    int device = 0;
    NCCL_OK(ncclCommInitAll(&comm, 1, &device));
    int nccl = 0;
    NCCL_OK(ncclGetVersion(&nccl));
    set_local_environment(h, q, std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." +
                                    std::to_string(nccl % 100));
    h.configuration()["statistic"] = "time_s: each step's wall time; *_us: means over the steps";
    std::printf("# tessera_bench_stencil_overlap: %s; 5-point float, one rank, NCCL to itself\n",
                kernels::describe_device(q).c_str());
    std::printf("# us from the step's start to the end of each part (mean of %d steps after %d)\n", iters, warmup);
    std::printf("%10s  %-32s %15s %7s %7s %9s %8s %7s %9s %9s\n", "block", "queued in the order", "interior", "frame",
                "pack", "exchange", "unpack", "step", "wall step", "wall sweep");
    for (index_t n : sizes) run_size(n, iters, warmup, comm, nccl_stream, q, edges, h);
    NCCL_OK(ncclCommDestroy(comm));
    TESSERA_CUDA_CHECK(cudaStreamDestroy(nccl_stream));
    kernels::destroy_queue(edges);
    kernels::destroy_queue(q);
    return finish(h);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_bench_stencil_overlap: %s\n", e.what());
    return 1;
  }
}
