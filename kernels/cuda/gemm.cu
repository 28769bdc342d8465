// gemm: the device-wide dispatch of the local matrix product. engine == tiled runs our kernels
// (SIMT SGEMM for float, split along K where the tiles fill the device's last wave poorly, see
// gemm_split_k.cuh; FP64 tensor-core DGEMM for double); engine == vendor runs cuBLAS in its default
// math mode (no TF32), with the row-major product expressed as the column-major C^T = B^T A^T.
// The kernels are in kernel_gemm.cuh, their tuning in tessera/kernels/cuda/tuning/gemm.cuh.
// Integers and complex numbers run the generic tiled kernel (kernel_gemm_generic.cuh); their
// vendor engine is cuBLAS's cgemm/zgemm for complex numbers, and for integers, which cuBLAS does
// not multiply at these widths, the generic kernel again.
//
// cuBLAS is loaded on the first vendor GEMM (dlopen), not linked: its libraries (about 540 MB) take
// about 0.4 s to load, which every process of a CUDA build would otherwise pay at start-up.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "cuda_backend.hpp"
#include "gemm_split_k.cuh"
#include "kernel_gemm.cuh"
#include "kernel_gemm_generic.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/tuning/gemm.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"

#define TESSERA_CUBLAS_CHECK(call)                                                                          \
  do {                                                                                                      \
    const cublasStatus_t tessera_cublas_status_ = (call);                                                   \
    if (tessera_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                    \
      ::tessera::fatal(__FILE__, __LINE__, #call, cublas().status_string(tessera_cublas_status_));         \
  } while (0)

// The symbol a cuBLAS name stands for (cublas_v2.h maps cublasCreate to cublasCreate_v2, ...).
#define TESSERA_CUBLAS_SYMBOL_NAME(name) TESSERA_CUBLAS_SYMBOL_TEXT(name)
#define TESSERA_CUBLAS_SYMBOL_TEXT(name) #name

namespace tessera::kernels::cuda {
namespace detail {

// The cuBLAS entry points the vendor GEMM calls, from the library loaded once.
struct Cublas {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetStream) set_stream = nullptr;
  decltype(&cublasSgemm_64) sgemm = nullptr;
  decltype(&cublasDgemm_64) dgemm = nullptr;
  decltype(&cublasCgemm_64) cgemm = nullptr;
  decltype(&cublasZgemm_64) zgemm = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

const Cublas& cublas() {
  static const Cublas loaded = [] {
    const std::string library = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      // Beside the CUDA runtime this process loaded, where the search path does not name it.
      Dl_info runtime{};
      if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &runtime) && runtime.dli_fname) {
        const std::string path = runtime.dli_fname;
        const std::size_t slash = path.rfind('/');
        if (slash != std::string::npos)
          handle = dlopen((path.substr(0, slash + 1) + library).c_str(), RTLD_NOW | RTLD_LOCAL);
      }
    }
    if (!handle) {
      const char* why = dlerror();
      throw UsageError("the vendor GEMM (cuBLAS) cannot be loaded: " + library + ": " + (why ? why : "not found") +
                       " (install cuBLAS, or use the tiled local product)");
    }
    Cublas c;
    auto find = [&](auto& entry, const char* symbol) {
      entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(dlsym(handle, symbol));
      if (!entry) throw UsageError("the vendor GEMM (cuBLAS): " + library + " has no " + symbol);
    };
    find(c.create, TESSERA_CUBLAS_SYMBOL_NAME(cublasCreate));
    find(c.set_math_mode, TESSERA_CUBLAS_SYMBOL_NAME(cublasSetMathMode));
    find(c.set_stream, TESSERA_CUBLAS_SYMBOL_NAME(cublasSetStream));
    find(c.sgemm, TESSERA_CUBLAS_SYMBOL_NAME(cublasSgemm_64));
    find(c.dgemm, TESSERA_CUBLAS_SYMBOL_NAME(cublasDgemm_64));
    find(c.cgemm, TESSERA_CUBLAS_SYMBOL_NAME(cublasCgemm_64));
    find(c.zgemm, TESSERA_CUBLAS_SYMBOL_NAME(cublasZgemm_64));
    find(c.status_string, TESSERA_CUBLAS_SYMBOL_NAME(cublasGetStatusString));
    return c;  // the library stays loaded for the process's life
  }();
  return loaded;
}

template <class T>
void scale_matrix(index_t m, index_t n, T beta, T* c, index_t ldc, StreamHandle stream) {
  using Tu = GemmScaleTuning;
  const int grid = static_cast<int>(
      std::min<index_t>(ceil_div<index_t>(m * n, Tu::kThreads), index_t{Tu::kWaves} * current_device_info().sm_count));
  scale_matrix_kernel<<<grid, Tu::kThreads, 0, to_cuda(stream)>>>(m, n, beta, c, ldc);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// One cuBLAS handle per (host thread, device), created on first use; the stream is set per call.
cublasHandle_t cublas_handle() {
  thread_local std::array<cublasHandle_t, 64> handles{};
  const int device = current_device_info().ordinal;
  if (!handles[device]) {
    TESSERA_CUBLAS_CHECK(cublas().create(&handles[device]));
    TESSERA_CUBLAS_CHECK(cublas().set_math_mode(handles[device], CUBLAS_DEFAULT_MATH));
  }
  return handles[device];
}

template <class T>
void vendor_gemm(index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b, index_t ldb, T beta,
                 T* c, index_t ldc, StreamHandle stream) {
  cublasHandle_t handle = cublas_handle();
  TESSERA_CUBLAS_CHECK(cublas().set_stream(handle, to_cuda(stream)));
  if constexpr (std::is_same_v<T, float>) {
    TESSERA_CUBLAS_CHECK(cublas().sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    TESSERA_CUBLAS_CHECK(cublas().dgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    // std::complex<float> and cuComplex share their layout (two floats, real first).
    const auto z = [](const auto* p) { return reinterpret_cast<const cuComplex*>(p); };
    TESSERA_CUBLAS_CHECK(cublas().cgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, z(&alpha), z(b), ldb, z(a), lda,
                                        z(&beta), reinterpret_cast<cuComplex*>(c), ldc));
  } else {
    static_assert(std::is_same_v<T, std::complex<double>>, "vendor_gemm: float, double, or complex");
    const auto z = [](const auto* p) { return reinterpret_cast<const cuDoubleComplex*>(p); };
    TESSERA_CUBLAS_CHECK(cublas().zgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, z(&alpha), z(b), ldb, z(a), lda,
                                        z(&beta), reinterpret_cast<cuDoubleComplex*>(c), ldc));
  }
}

// The generic tiled product (integers, complex numbers), and C = beta * C for it.
template <class T>
void generic_gemm(index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b, index_t ldb, T beta,
                  T* c, index_t ldc, StreamHandle stream) {
  using Tu = GemmGenericTuning;
  using V = typename GemmArithmetic<T>::V;
  const index_t tiles_n = ceil_div<index_t>(n, Tu::kBlockN);
  if (tiles_n > 0x7fffffff)
    throw UsageError("gemm: " + std::to_string(n) + " columns exceed the tile grid of the generic engine");
  const dim3 grid(static_cast<unsigned>(tiles_n),
                  static_cast<unsigned>(std::min<index_t>(ceil_div<index_t>(m, Tu::kBlockM), 65535)));
  gemm_generic_kernel<T><<<grid, Tu::kThreads, 0, to_cuda(stream)>>>(
      m, n, k, std::bit_cast<V>(alpha), reinterpret_cast<const V*>(a), lda, reinterpret_cast<const V*>(b), ldb,
      std::bit_cast<V>(beta), reinterpret_cast<V*>(c), ldc);
  TESSERA_CUDA_CHECK_LAUNCH();
}

template <class T>
void scale_generic(index_t m, index_t n, T beta, T* c, index_t ldc, StreamHandle stream) {
  using Tu = GemmScaleTuning;
  using V = typename GemmArithmetic<T>::V;
  const int grid = static_cast<int>(
      std::min<index_t>(ceil_div<index_t>(m * n, Tu::kThreads), index_t{Tu::kWaves} * current_device_info().sm_count));
  scale_matrix_generic_kernel<T>
      <<<grid, Tu::kThreads, 0, to_cuda(stream)>>>(m, n, std::bit_cast<V>(beta), reinterpret_cast<V*>(c), ldc);
  TESSERA_CUDA_CHECK_LAUNCH();
}

template <class T>
bool rows_aligned(const T* p, index_t ld) {
  constexpr index_t kPerVector = 16 / sizeof(T);
  return is_aligned(p, 16) && ld % kPerVector == 0;
}

// Picks the kernel instance for the alignment of the three matrices (8 instances per type).
template <template <bool, bool, bool> class KernelOf>
auto pick_aligned_kernel(bool va, bool vb, bool vc) {
  using K = decltype(KernelOf<true, true, true>::value);
  K table[8] = {KernelOf<false, false, false>::value, KernelOf<false, false, true>::value,
                KernelOf<false, true, false>::value,  KernelOf<false, true, true>::value,
                KernelOf<true, false, false>::value,  KernelOf<true, false, true>::value,
                KernelOf<true, true, false>::value,   KernelOf<true, true, true>::value};
  return table[(va ? 4 : 0) + (vb ? 2 : 0) + (vc ? 1 : 0)];
}

template <bool VA, bool VB, bool VC>
struct SgemmKernel {
  static constexpr auto value = sgemm_simt_kernel<VA, VB, VC>;
};
template <bool VA, bool VB, bool VC>
struct SgemmBlocksPerSm {
  static constexpr auto value = &blocks_per_sm<sgemm_simt_kernel<VA, VB, VC>>;
};
template <bool VA, bool VB, bool VC>
struct DgemmKernel {
  static constexpr auto value = dgemm_dmma_kernel<DgemmTuning, VA, VB, VC>;
};

dim3 gemm_grid(index_t m, index_t n, int block_m, int block_n) {
  const index_t tiles_m = ceil_div<index_t>(m, block_m);
  const index_t tiles_n = ceil_div<index_t>(n, block_n);
  if (tiles_m > 65535 || tiles_n > 0x7fffffff)
    throw UsageError("gemm: matrix of " + std::to_string(m) + " x " + std::to_string(n) +
                     " exceeds the tile grid of the tiled engine (at most 65535 x 128 rows)");
  return dim3(static_cast<unsigned>(tiles_n), static_cast<unsigned>(tiles_m));
}

// The float tiled product with a given split (k > 0, alpha != 0: gemm handles the rest).
void run_sgemm(const Queue& queue, const SplitKPlan& plan, index_t m, index_t n, index_t k, float alpha, const float* a,
               index_t lda, const float* b, index_t ldb, float beta, float* c, index_t ldc) {
  using Tu = SgemmTuning;
  const StreamHandle stream = queue.stream;
  if (k / Tu::kBlockK >= 0x7fffffff)
    throw UsageError("gemm: k = " + std::to_string(k) + " exceeds the tiled float engine (k / 8 < 2^31)");
  const bool va = rows_aligned(a, lda), vb = rows_aligned(b, ldb), vc = rows_aligned(c, ldc);
  dim3 grid = gemm_grid(m, n, Tu::kBlockM, Tu::kBlockN);
  grid.z = static_cast<unsigned>(plan.splits);
  if (plan.splits == 1) {
    const auto kernel = pick_aligned_kernel<SgemmKernel>(va, vb, vc);
    kernel<<<grid, Tu::kThreads, 0, to_cuda(stream)>>>(m, n, k, k, alpha, a, lda, b, ldb, beta, c, ldc, 0);
    TESSERA_CUDA_CHECK_LAUNCH();
    return;
  }
  TESSERA_ASSERT(plan.splits <= 65535 && plan.k_chunk > 0 && plan.k_chunk % Tu::kBlockK == 0 &&
                     (plan.splits - 1) * plan.k_chunk < k,
                 "gemm: invalid split of K");
  // One plane per slice, rows padded to 4 floats: every plane row is 16-byte aligned, so the slices
  // store with vectors (the VectorC instance) whatever C's alignment.
  const index_t partial_ld = ceil_div<index_t>(n, 4) * 4;
  const index_t partial_plane = m * partial_ld;
  const DeviceInfo& device = current_device_info();
  const ScratchBuffer workspace(queue, sizeof(float) * static_cast<std::size_t>(partial_plane) * plan.splits,
                                ScratchBuffer::OutOfMemory::leave_empty);
  float* partials = workspace.as<float>();
  if (!partials) {  // no room for the planes: the unsplit product needs none
    run_sgemm(queue, SplitKPlan{1, k}, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const auto kernel = pick_aligned_kernel<SgemmKernel>(va, vb, true);
  kernel<<<grid, Tu::kThreads, 0, to_cuda(stream)>>>(m, n, k, plan.k_chunk, 1.f, a, lda, b, ldb, 0.f, partials,
                                                      partial_ld, partial_plane);
  TESSERA_CUDA_CHECK_LAUNCH();

  using Reduce = SplitKReduceTuning;
  const index_t groups = ceil_div<index_t>(n, 4);
  const int threads = static_cast<int>(std::min<index_t>(Reduce::kThreads, ceil_div<index_t>(groups, 32) * 32));
  const index_t blocks_x = ceil_div<index_t>(groups, threads);
  const index_t rows_per_pass = std::max<index_t>(1, index_t{Reduce::kBlocksPerSm} * device.sm_count / blocks_x);
  const dim3 reduce_grid(static_cast<unsigned>(blocks_x),
                         static_cast<unsigned>(std::min<index_t>({m, rows_per_pass, 65535})));
  const auto reduce = vc ? sgemm_split_k_reduce_kernel<true> : sgemm_split_k_reduce_kernel<false>;
  reduce<<<reduce_grid, threads, 0, to_cuda(stream)>>>(m, n, alpha, partials, partial_ld, partial_plane, plan.splits,
                                                       beta, c, ldc);
  TESSERA_CUDA_CHECK_LAUNCH();
}

SplitKPlan sgemm_policy_plan(index_t m, index_t n, index_t k, bool va, bool vb, bool vc) {
  using Tu = SgemmTuning;
  const int per_sm = pick_aligned_kernel<SgemmBlocksPerSm>(va, vb, vc)(Tu::kThreads, 0);
  const SplitKDevice device{static_cast<index_t>(current_device_info().sm_count), per_sm};
  return choose_split_k(m, n, k, Tu::kBlockM, Tu::kBlockN, Tu::kBlockK, device);
}

// The float tiled product (k > 0, alpha != 0): B copied to aligned rows where that pays (or as
// copy_b says: < 0 by the rule above, 0 never, > 0 always where B's rows are unaligned), then the
// split of K that `forced_splits` asks for, or the policy's where it is 0.
int tiled_sgemm(const Queue& queue, int forced_splits, int copy_b, index_t m, index_t n, index_t k, float alpha,
                const float* a, index_t lda, const float* b, index_t ldb, float beta, float* c, index_t ldc) {
  const StreamHandle stream = queue.stream;
  using Copy = GemmCopyBTuning;
  bool vb = rows_aligned(b, ldb);
  const bool worth_copy = copy_b > 0 || (copy_b < 0 && m >= Copy::kMinRows && k * n >= Copy::kMinElements);
  std::optional<ScratchBuffer> b_copy;  // where there is no room, the product reads B's rows as they are
  if (!vb && worth_copy) {
    const index_t copy_ld = ceil_div<index_t>(n, 4) * 4;
    b_copy.emplace(queue, sizeof(float) * static_cast<std::size_t>(k * copy_ld),
                   ScratchBuffer::OutOfMemory::leave_empty);
    if (b_copy->data()) {
      const index_t blocks_x = ceil_div<index_t>(copy_ld / 4, Copy::kThreads);
      const index_t rows_per_pass =
          std::max<index_t>(1, index_t{Copy::kBlocksPerSm} * current_device_info().sm_count / blocks_x);
      const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(std::min<index_t>({k, rows_per_pass, 65535})));
      pad_rows_kernel<<<grid, Copy::kThreads, 0, to_cuda(stream)>>>(b, ldb, k, n, b_copy->as<float>(), copy_ld);
      TESSERA_CUDA_CHECK_LAUNCH();
      b = b_copy->as<float>();
      ldb = copy_ld;
      vb = true;
    }
  }
  const SplitKPlan plan = forced_splits > 0 ? split_k_chunks(k, forced_splits, SgemmTuning::kBlockK)
                                            : sgemm_policy_plan(m, n, k, rows_aligned(a, lda), vb, rows_aligned(c, ldc));
  run_sgemm(queue, plan, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return plan.splits;
}

void tiled_gemm(const Queue& queue, index_t m, index_t n, index_t k, float alpha, const float* a, index_t lda,
                const float* b, index_t ldb, float beta, float* c, index_t ldc) {
  tiled_sgemm(queue, 0, -1, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void tiled_gemm(const Queue& queue, index_t m, index_t n, index_t k, double alpha, const double* a, index_t lda,
                const double* b, index_t ldb, double beta, double* c, index_t ldc) {
  using Tu = DgemmTuning;
  const StreamHandle stream = queue.stream;
  const DeviceInfo& device = current_device_info();
  if (device.cc_major < 8)
    throw UsageError("gemm: the tiled double engine needs FP64 tensor cores (compute capability 8.0 or newer)");
  const auto kernel = pick_aligned_kernel<DgemmKernel>(rows_aligned(a, lda), rows_aligned(b, ldb), rows_aligned(c, ldc));
  // Opt in to more than 48 KiB of shared memory, once per device for all 8 instances.
  static std::array<std::atomic<bool>, 64> opted_in{};
  if (!opted_in[device.ordinal].load()) {
    TESSERA_ASSERT(static_cast<std::size_t>(device.max_smem_optin) >= Tu::kSharedBytes,
                   "gemm: the device offers too little shared memory for the DGEMM tile");
    for (int i = 0; i < 8; ++i) {
      const auto instance = pick_aligned_kernel<DgemmKernel>(i & 4, i & 2, i & 1);
      TESSERA_CUDA_CHECK(cudaFuncSetAttribute(instance, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(Tu::kSharedBytes)));
    }
    opted_in[device.ordinal].store(true);
  }
  // One-dimensional grid: the kernel maps block indices to tiles in groups of rows (L2 reuse).
  const index_t tiles = ceil_div<index_t>(m, Tu::kBlockM) * ceil_div<index_t>(n, Tu::kBlockN);
  if (tiles > 0x7fffffff)
    throw UsageError("gemm: matrix of " + std::to_string(m) + " x " + std::to_string(n) +
                     " exceeds the tile grid of the tiled engine (at most 2^31 - 1 tiles of 128 x " +
                     std::to_string(Tu::kBlockN) + ")");
  kernel<<<static_cast<unsigned>(tiles), Tu::kThreads, Tu::kSharedBytes, to_cuda(stream)>>>(m, n, k, alpha, a, lda, b,
                                                                                            ldb, beta, c, ldc);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace detail

template <class T>
void gemm(const Queue& queue, GemmEngine engine, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda,
          const T* b, index_t ldb, T beta, T* c, index_t ldc) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (k == 0 || alpha == T(0)) {
      detail::scale_matrix(m, n, beta, c, ldc, queue.stream);
      return;
    }
    if (engine == GemmEngine::vendor) {
      detail::vendor_gemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, queue.stream);
    } else {
      detail::tiled_gemm(queue, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
  } else {
    if (k == 0 || alpha == T(0)) {
      detail::scale_generic(m, n, beta, c, ldc, queue.stream);
      return;
    }
    if constexpr (!std::is_integral_v<T>) {
      if (engine == GemmEngine::vendor) {
        detail::vendor_gemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, queue.stream);
        return;
      }
    }
    detail::generic_gemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, queue.stream);
  }
}

int tiled_sgemm_policy_splits(index_t m, index_t n, index_t k, bool rows_aligned_a, bool rows_aligned_b,
                              bool rows_aligned_c) {
  return detail::sgemm_policy_plan(m, n, k, rows_aligned_a, rows_aligned_b, rows_aligned_c).splits;
}

int tiled_sgemm_forced_splits(const Queue& queue, int splits, int copy_b, index_t m, index_t n, index_t k, float alpha,
                              const float* a, index_t lda, const float* b, index_t ldb, float beta, float* c,
                              index_t ldc) {
  if (splits < 1) throw UsageError("gemm: split of K into " + std::to_string(splits) + " slices (at least 1)");
  if (m == 0 || n == 0) return 1;
  if (k == 0 || alpha == 0.f) {
    detail::scale_matrix(m, n, beta, c, ldc, queue.stream);
    return 1;
  }
  return detail::tiled_sgemm(queue, splits, copy_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#define TESSERA_INSTANTIATE_GEMM(T)                                                                       \
  template void gemm<T>(const Queue&, GemmEngine, index_t, index_t, index_t, T, const T*, index_t, const T*, index_t, \
                        T, T*, index_t);
TESSERA_FOR_EACH_GEMM_TYPE(TESSERA_INSTANTIATE_GEMM)
#undef TESSERA_INSTANTIATE_GEMM

}  // namespace tessera::kernels::cuda
