// A local kernel of one's own on each rank's block, on the framework's stream, combined with a global
// collective through the public API: a histogram of 16 bins of values in [0, 1).
//
//   mpiexec -n 3 ./user_kernel [N]
//
// The three phases of every Tessera algorithm, written by hand:
//   local   our kernel counts this rank's block into 16 bins (device memory under cuda)
//   global  DeviceComm::allreduce_sum adds the bins of all ranks, in place (NCCL, CUDA-aware MPI or
//           staging under cuda; MPI on host memory under cpu)
//   result  every rank holds the whole histogram
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tessera/framework/framework.hpp"
#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"
#endif

constexpr int kBins = 16;

#if defined(__CUDACC__)
__global__ void histogram_kernel(const double* x, tessera::index_t n, std::int64_t* bins) {
  __shared__ unsigned long long local[kBins];
  if (threadIdx.x < kBins) local[threadIdx.x] = 0;
  __syncthreads();
  for (tessera::index_t i = blockIdx.x * tessera::index_t(blockDim.x) + threadIdx.x; i < n;
       i += tessera::index_t(gridDim.x) * blockDim.x) {
    const int bin = static_cast<int>(x[i] * kBins);
    atomicAdd(&local[bin < 0 ? 0 : bin >= kBins ? kBins - 1 : bin], 1ull);
  }
  __syncthreads();
  if (threadIdx.x < kBins) atomicAdd(reinterpret_cast<unsigned long long*>(&bins[threadIdx.x]), local[threadIdx.x]);
}
#endif

// Counts this rank's block into `bins` (backend memory of kBins counters, zeroed), in the queue's order.
void count_block(const tessera::Context& ctx, const double* x, tessera::index_t n, std::int64_t* bins) {
  if (ctx.backend() == tessera::Backend::cuda) {
#if defined(__CUDACC__)
    const auto stream = reinterpret_cast<cudaStream_t>(ctx.queue().stream);
    histogram_kernel<<<120, 256, 0, stream>>>(x, n, bins);
    TESSERA_CUDA_CHECK_LAUNCH();
#else
    throw tessera::UsageError("user_kernel: built without CUDA, cannot run on the cuda backend");
#endif
  } else {
    for (tessera::index_t i = 0; i < n; ++i) {
      const int bin = static_cast<int>(x[i] * kBins);
      ++bins[bin < 0 ? 0 : bin >= kBins ? kBins - 1 : bin];
    }
  }
}

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  const tessera::Context ctx = runtime.start(tessera::BackendChoice::automatic);
  const tessera::index_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;

  // x[i] = the fractional part of i * golden ratio: spread evenly over [0, 1).
  tessera::DistArray<double> x(ctx, n);
  tessera::generate(x, [] TESSERA_HOST_DEVICE(tessera::index_t i) {
    const double v = static_cast<double>(i) * 0.6180339887498949;
    return v - static_cast<double>(static_cast<long long>(v));
  });

  // Local: our own kernel, on the framework's queue, into backend memory.
  // One block of kBins counters per rank.
  tessera::DistArray<std::int64_t> bins(
      ctx, tessera::Partition::from_counts(std::vector<tessera::index_t>(static_cast<std::size_t>(ctx.size()), kBins)));
  bins.fill(0);
  count_block(ctx, x.local_data(), x.local_size(), bins.local_data());

  // Global: the bins of all ranks added, in place, on every rank.
  const tessera::DeviceComm comm(ctx);
  comm.allreduce_sum(bins.local_data(), kBins);

  const std::vector<std::int64_t> total = bins.local_to_host();
  long long sum = 0;
  for (std::int64_t c : total) sum += c;
  if (ctx.is_root()) {
    std::printf("user_kernel: n %lld on %d ranks (%s): histogram of %lld values:", static_cast<long long>(n),
                ctx.size(), tessera::to_string(ctx.backend()), sum);
    for (std::int64_t c : total) std::printf(" %lld", static_cast<long long>(c));
    std::printf("\n");
  }
  return sum == n ? 0 : 1;
}
