// tessera_bench_fft_distributed: the distributed FFT (fft.hpp), forward, beside the vendor's
// transform of the same array in the same run:
//   cpu backend   FFTW-MPI on the same ranks, the same global shape, slab decomposition, the same
//                 planning effort (FFTW_MEASURE by default) and its transposed output
//                 (FFTW_MPI_TRANSPOSED_OUT: the plan's cut output; its order in memory is ours'
//                 with --order swapped; --order natural has ours' output in the same distribution,
//                 axes in the global order, which FFTW-MPI has no way to write), or with --order
//                 input its output in the input's distribution (FFTW-MPI's default; ours with
//                 return_to_input_layout)
//   cuda backend  cuFFT alone on the whole array (one rank: the framework's overhead over cuFFT)
// and, for slab plans over more than one rank, the exchange against a bare DeviceComm::alltoallv of
// the same byte counts per peer (what the exchange cannot beat).
//
// Per case (shape, dtype) two rows: "fft ..." (ours) and the vendor's ("fftw-mpi ..." or
// "cufft ..."). A timed sample is --calls forward calls back to back with one synchronisation at
// the end, divided by --calls, after a barrier; the row's samples are each sample's slowest rank;
// the vendor is timed alike. Ours is VALID when its inverse gives the input back within
// 10 eps log2 N of max |x|; the vendor's when its output agrees with ours within 10 eps log2 N of
// max |X| (on the elements both hold on a rank; cuFFT: the first 2^24). Fields: GFLOP/s by
// 5 N log2 N (half for r2c) over the p50; the phases (local = local FFTs + packs, exchange,
// unpack; with --chunks above 1, exchange = only the waits the FFTs did not hide, and the unpacks
// count as local), the slowest rank's mean per call from a separate loop of calls that time them;
// share.vendor = the vendor's p50 over ours; share.alltoall_alone = the bare all-to-all's p50 over
// the exchange phase. Flags, statistics and the JSON report: the harness (bench/common).
//
//   mpiexec -n 2 tessera_bench_fft_distributed --backend cpu --shape 128x128x128 --dtype float,double
//   tessera_bench_fft_distributed --backend cuda --shape 512x512x512,1024x1024x1024 --dtype float,double
#include <mpi.h>

#if TESSERA_BENCH_FFTW_MPI
#include <fftw3-mpi.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "app.hpp"
#include "cli.hpp"
#include "harness.hpp"
#include "tessera/build_config.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/fft.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/memory.hpp"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>
#include <cufft.h>
#endif

namespace tessera {
namespace {

struct Options {
  std::string backend = "auto";
  std::vector<std::string> dtypes = {"double"};
  std::vector<std::vector<index_t>> shapes = {{128, 128, 128}};
  std::string decomposition = "slab";
  std::string kind = "c2c";
  std::string effort = "measure";
  std::string order = "natural";  // the output's order in memory (fft::Order)
  std::vector<int> chunks = {0};  // fft::Options::exchange_chunks, one case per value
  int calls = 0;  // per sample; 0: 1 on the cpu backend, 8 under cuda
  int iters = 10, warmup = 2;  // from the harness
};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

void add_options(bench::Harness& h, Options& o) {
  h.add_option({"--backend"}, "auto|cpu|cuda", "where local work runs (default auto)",
               [&o](std::string_view v) { o.backend = std::string(v); });
  h.add_option({"--dtype"}, "LIST", "float, double, comma-separated (default double)", [&o](std::string_view v) {
    o.dtypes = split(std::string(v), ',');
    for (const auto& d : o.dtypes)
      if (d != "float" && d != "double") throw UsageError("--dtype: '" + d + "' (expected float or double)");
  });
  h.add_option({"--shape"}, "LIST",
               "global shapes N0xN1[xN2], comma-separated (default 128x128x128; or cubes of -b to -e bytes)",
               [&o](std::string_view v) {
                 o.shapes.clear();
                 for (const std::string& s : split(std::string(v), ',')) {
                   std::vector<index_t> shape;
                   for (const std::string& d : split(s, 'x')) shape.push_back(apps::parse_count(d, "--shape", 1, index_t(1) << 40));
                   if (shape.size() != 2 && shape.size() != 3)
                     throw UsageError("--shape: '" + s + "' has " + std::to_string(shape.size()) + " axes (expected 2 or 3)");
                   o.shapes.push_back(shape);
                 }
               });
  h.add_option({"--decomposition"}, "slab|pencil", "(default slab; FFTW-MPI runs beside slab plans only)",
               [&o](std::string_view v) {
                 if (v != "slab" && v != "pencil") throw UsageError("--decomposition: '" + std::string(v) + "' (expected slab or pencil)");
                 o.decomposition = std::string(v);
               });
  h.add_option({"--kind"}, "c2c|r2c", "(default c2c)", [&o](std::string_view v) {
    if (v != "c2c" && v != "r2c") throw UsageError("--kind: '" + std::string(v) + "' (expected c2c or r2c)");
    o.kind = std::string(v);
  });
  h.add_option({"--effort"}, "measure|estimate", "FFTW's planning, for both (default measure)", [&o](std::string_view v) {
    if (v != "measure" && v != "estimate") throw UsageError("--effort: '" + std::string(v) + "' (expected measure or estimate)");
    o.effort = std::string(v);
  });
  h.add_option({"--order"}, "natural|swapped|input",
               "ours' output order in memory (fft::Order; default natural; FFTW-MPI's transposed output is swapped); "
               "input: the output in the input's distribution (return_to_input_layout; FFTW-MPI without transposed output)",
               [&o](std::string_view v) {
                 if (v != "natural" && v != "swapped" && v != "input")
                   throw UsageError("--order: '" + std::string(v) + "' (expected natural, swapped or input)");
                 o.order = std::string(v);
               });
  h.add_option({"--schedule"}, "chosen|transform|pass|panels|in_place",
               "the cpu's schedule (fft::detail::CpuSchedule; default chosen: measured planning's choice)",
               [](std::string_view v) {
                 using tessera::fft::detail::CpuSchedule;
                 if (v == "chosen") tessera::fft::detail::force_cpu_schedule(CpuSchedule::chosen);
                 else if (v == "transform") tessera::fft::detail::force_cpu_schedule(CpuSchedule::transform);
                 else if (v == "pass") tessera::fft::detail::force_cpu_schedule(CpuSchedule::pass);
                 else if (v == "panels") tessera::fft::detail::force_cpu_schedule(CpuSchedule::panels);
                 else if (v == "in_place") tessera::fft::detail::force_cpu_schedule(CpuSchedule::in_place);
                 else throw UsageError("--schedule: '" + std::string(v) + "' (expected chosen, transform, pass, panels or in_place)");
               });
  h.add_option({"--chunks"}, "LIST",
               "fft::Options::exchange_chunks, comma-separated, a case each (default 0: the backend's default)",
               [&o](std::string_view v) {
                 o.chunks.clear();
                 for (const std::string& c : split(std::string(v), ','))
                   o.chunks.push_back(static_cast<int>(apps::parse_count(c, "--chunks", 0, 64)));
               });
  h.add_option({"--calls"}, "C", "forward calls per timed sample, back to back, one synchronisation (default 1 on the cpu, 8 under cuda)",
               [&o](std::string_view v) { o.calls = static_cast<int>(apps::parse_count(v, "--calls", 1, 1 << 20)); });
}

// The largest side s with s^3 elements in `count`.
index_t cube_side(index_t count) {
  auto s = static_cast<index_t>(std::cbrt(static_cast<double>(count)));
  while (s > 1 && s * s * s > count) --s;
  while ((s + 1) * (s + 1) * (s + 1) <= count) ++s;
  return std::max<index_t>(s, 1);
}

double slowest(const Context& ctx, double v) { return ctx.comm().allreduce(v, ReduceOp::max); }

// The input's value at global linear index g (the same array on every rank count): re, im.
std::array<double, 2> input_value(index_t g) {
  const auto x = static_cast<double>(g + 1);
  return {std::sin(0.37 * x), std::cos(0.61 * x)};
}

std::array<index_t, 3> dims3(const std::vector<index_t>& s) {
  return {s[0], s.size() > 1 ? s[1] : 1, s.size() > 2 ? s[2] : 1};
}

// `calls` calls of f back to back and one synchronisation per sample, after a barrier: seconds per
// call, each sample's slowest rank.
template <class F>
std::vector<double> time_samples(const Context& ctx, const Options& o, F&& f) {
  for (int i = 0; i < o.warmup; ++i) f();
  ctx.queue().synchronize();
  std::vector<double> samples;
  for (int i = 0; i < o.iters; ++i) {
    ctx.comm().barrier();
    Stopwatch w;
    for (int c = 0; c < o.calls; ++c) f();
    ctx.queue().synchronize();
    samples.push_back(w.seconds() / o.calls);
  }
  return bench::slowest_rank(ctx, samples);
}

// The same for two functions, their samples alternating (each after a barrier), so that a slower
// spell of a shared machine falls on both alike.
template <class F, class G>
std::pair<std::vector<double>, std::vector<double>> time_alternating(const Context& ctx, const Options& o, F&& f, G&& g) {
  for (int i = 0; i < o.warmup; ++i) {
    f();
    g();
  }
  ctx.queue().synchronize();
  std::vector<double> a, b;
  for (int i = 0; i < o.iters; ++i) {
    for (int k = 0; k < 2; ++k) {
      ctx.comm().barrier();
      Stopwatch w;
      for (int c = 0; c < o.calls; ++c) k == 0 ? f() : g();
      ctx.queue().synchronize();
      (k == 0 ? a : b).push_back(w.seconds() / o.calls);
    }
  }
  return {bench::slowest_rank(ctx, a), bench::slowest_rank(ctx, b)};
}

// The slab exchange alone: every rank sends each other rank its rows of their columns.
std::vector<double> alltoall_alone(const Context& ctx, const std::vector<index_t>& out_shape, std::size_t elem,
                                   const Options& o) {
  const int ranks = ctx.size(), me = ctx.rank();
  const Partition p0 = Partition::block(out_shape[0], ranks), p1 = Partition::block(out_shape[1], ranks);
  index_t rest = 1;
  for (std::size_t k = 2; k < out_shape.size(); ++k) rest *= out_shape[k];
  std::vector<std::size_t> sb(static_cast<std::size_t>(ranks), 0), so = sb, rb = sb, ro = sb;
  std::size_t st = 0, rt = 0;
  for (int q = 0; q < ranks; ++q) {
    if (q == me) continue;
    const auto i = static_cast<std::size_t>(q);
    sb[i] = static_cast<std::size_t>(p0.local_size(me) * p1.local_size(q) * rest) * elem;
    rb[i] = static_cast<std::size_t>(p0.local_size(q) * p1.local_size(me) * rest) * elem;
    so[i] = st;
    ro[i] = rt;
    st = (st + sb[i] + 255) / 256 * 256;
    rt = (rt + rb[i] + 255) / 256 * 256;
  }
  const kernels::Queue& q = ctx.queue();
  void* s = kernels::allocate(q, std::max<std::size_t>(st, 16));
  void* r = kernels::allocate(q, std::max<std::size_t>(rt, 16));
  const DeviceComm comm(ctx);
  Options one = o;
  one.calls = 1;
  auto samples = time_samples(ctx, one, [&] { comm.alltoallv(s, sb, so, r, rb, ro); });
  kernels::deallocate(q, s);
  kernels::deallocate(q, r);
  return samples;
}

// What the vendor's run gives back: its timed samples, and how far its output lies from ours.
struct VendorResult {
  std::string name;
  std::vector<double> samples;
  double max_error = 0;
  std::int64_t compared = 0;
};

// Ours' output on this rank, for the vendor to be compared with: the box and (a prefix of) its
// values on the host.
template <class Real>
struct OurOutput {
  fft::Box box;
  bool swapped = false;  // values in fft::Order::swapped
  std::vector<std::complex<Real>> values;
  double max_abs = 0;  // over all ranks
};

#if TESSERA_BENCH_FFTW_MPI
// FFTW-MPI's forward transform of the same array, slab, transposed output (or not: the input's
// distribution, as ours with return_to_input_layout): planned and its input
// written at construction, then run call by call (its samples alternate with ours').
template <class Real>
class FftwMpi {
  static constexpr bool f = sizeof(Real) == 4;

 public:
  FftwMpi(const Context& ctx, const std::vector<index_t>& shape, bool r2c, bool measure, bool transposed)
      : ctx_(ctx), shape_(shape), r2c_(r2c), transposed_(transposed), n_(shape.begin(), shape.end()), nc_(n_) {
    const int rank = static_cast<int>(shape.size());
    if (r2c) nc_.back() = n_.back() / 2 + 1;
    const MPI_Comm comm = ctx.comm().get();
    const ptrdiff_t alloc = f ? fftwf_mpi_local_size_transposed(rank, nc_.data(), comm, &local_n0_, &local_0_, &local_n1_, &local_1_)
                              : fftw_mpi_local_size_transposed(rank, nc_.data(), comm, &local_n0_, &local_0_, &local_n1_, &local_1_);
    const unsigned flags = (measure ? FFTW_MEASURE : FFTW_ESTIMATE) | (transposed ? FFTW_MPI_TRANSPOSED_OUT : 0u);
    const std::size_t elems = static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1));
    in_ = static_cast<std::complex<Real>*>(f ? static_cast<void*>(fftwf_alloc_complex(elems)) : static_cast<void*>(fftw_alloc_complex(elems)));
    out_ = static_cast<std::complex<Real>*>(f ? static_cast<void*>(fftwf_alloc_complex(elems)) : static_cast<void*>(fftw_alloc_complex(elems)));
    if (!in_ || !out_) throw std::bad_alloc();
    if constexpr (f) {
      plan_ = r2c ? fftwf_mpi_plan_dft_r2c(rank, n_.data(), reinterpret_cast<float*>(in_), reinterpret_cast<fftwf_complex*>(out_), comm, flags)
                  : fftwf_mpi_plan_dft(rank, n_.data(), reinterpret_cast<fftwf_complex*>(in_), reinterpret_cast<fftwf_complex*>(out_),
                                       comm, FFTW_FORWARD, flags);
    } else {
      plan_ = r2c ? fftw_mpi_plan_dft_r2c(rank, n_.data(), reinterpret_cast<double*>(in_), reinterpret_cast<fftw_complex*>(out_), comm, flags)
                  : fftw_mpi_plan_dft(rank, n_.data(), reinterpret_cast<fftw_complex*>(in_), reinterpret_cast<fftw_complex*>(out_), comm,
                                      FFTW_FORWARD, flags);
    }
    if (!plan_) throw std::runtime_error("FFTW-MPI could not plan the transform");
    // The input (after planning, which may overwrite it): [local_n0, N1, ...], the last axis padded
    // to 2 (n/2 + 1) reals for r2c.
    const auto d = dims3(shape);
    const index_t last = shape.back(), padded = r2c ? 2 * (last / 2 + 1) : last;
    const index_t rows = static_cast<index_t>(local_n0_) * (rank == 3 ? d[1] : 1);
    Real* re = reinterpret_cast<Real*>(in_);
    for (index_t row = 0; row < rows; ++row)
      for (index_t k = 0; k < last; ++k) {
        const auto x = input_value((static_cast<index_t>(local_0_) * (rank == 3 ? d[1] : 1) + row) * last + k);
        if (r2c) re[row * padded + k] = static_cast<Real>(x[0]);
        else in_[row * last + k] = {static_cast<Real>(x[0]), static_cast<Real>(x[1])};
      }
  }
  ~FftwMpi() {
    if constexpr (f) {
      if (plan_) fftwf_destroy_plan(plan_);
      fftwf_free(in_);
      fftwf_free(out_);
    } else {
      if (plan_) fftw_destroy_plan(plan_);
      fftw_free(in_);
      fftw_free(out_);
    }
  }
  FftwMpi(const FftwMpi&) = delete;
  FftwMpi& operator=(const FftwMpi&) = delete;

  void execute() {
    if constexpr (f) fftwf_execute(plan_);
    else fftw_execute(plan_);
  }

  // Collective: its output ([local_n1 of N1, N0, R] transposed, [local_n0 of N0, N1, R] otherwise)
  // against ours' ([ours' N0 range, ours' N1 range, R], or [N1 range, N0 range, R] swapped) where
  // both hold; the largest difference and the count compared, over all ranks.
  template <class Ours>
  void compare(const Ours& ours, VendorResult& v) const {
    const index_t n0 = shape_[0], n1 = static_cast<index_t>(nc_[1]);
    const index_t r = shape_.size() == 3 ? static_cast<index_t>(nc_[2]) : 1;
    // FFTW's ranges of axes 0 and 1 on this rank, cut to ours'.
    const index_t f0 = transposed_ ? 0 : local_0_, e0 = transposed_ ? n0 : local_0_ + local_n0_;
    const index_t f1 = transposed_ ? local_1_ : 0, e1 = transposed_ ? local_1_ + local_n1_ : n1;
    const index_t lo0 = std::max<index_t>(f0, ours.box.lo[0]), hi0 = std::min<index_t>(e0, ours.box.lo[0] + ours.box.size[0]);
    const index_t lo = std::max<index_t>(f1, ours.box.lo[1]), hi = std::min<index_t>(e1, ours.box.lo[1] + ours.box.size[1]);
    double err = 0;
    std::int64_t count = 0;
    for (index_t j1 = lo; j1 < hi; ++j1)
      for (index_t j0 = lo0; j0 < hi0; ++j0)
        for (index_t k = 0; k < r; ++k) {
          const std::complex<Real> a = transposed_ ? out_[((j1 - local_1_) * n0 + j0) * r + k]
                                                   : out_[((j0 - local_0_) * n1 + j1) * r + k];
          const index_t i0 = j0 - ours.box.lo[0], i1 = j1 - ours.box.lo[1];
          const auto at = static_cast<std::size_t>(
              (ours.swapped ? i1 * ours.box.size[0] + i0 : i0 * ours.box.size[1] + i1) * r + k);
          if (at >= ours.values.size()) continue;
          err = std::max(err, std::abs(std::complex<double>(a) - std::complex<double>(ours.values[at])));
          ++count;
        }
    v.max_error = slowest(ctx_, err);
    v.compared = ctx_.comm().allreduce(count, ReduceOp::sum);
  }

 private:
  using plan_type = std::conditional_t<f, fftwf_plan, fftw_plan>;
  const Context& ctx_;
  std::vector<index_t> shape_;
  bool r2c_;
  bool transposed_;
  std::vector<ptrdiff_t> n_, nc_;
  ptrdiff_t local_n0_ = 0, local_0_ = 0, local_n1_ = 0, local_1_ = 0;
  std::complex<Real>* in_ = nullptr;
  std::complex<Real>* out_ = nullptr;
  plan_type plan_ = nullptr;
};
#endif

#if TESSERA_HAVE_CUDA
// cuFFT alone on the whole array (one rank): the same input, its output's first elements compared
// with ours'.
template <class Real>
VendorResult cufft_run(const Context& ctx, const std::vector<index_t>& shape, bool r2c, const Options& o,
                       const std::vector<Real>& x, const OurOutput<Real>& ours) {
  constexpr bool f = sizeof(Real) == 4;
  std::vector<long long> n(shape.begin(), shape.end());
  index_t count = 1;
  for (index_t s : shape) count *= s;
  const index_t out_count = count / shape.back() * (r2c ? shape.back() / 2 + 1 : shape.back());
  const kernels::Queue& q = ctx.queue();
  const std::size_t in_bytes = static_cast<std::size_t>(count) * (r2c ? 1 : 2) * sizeof(Real);
  void* in = kernels::allocate(q, in_bytes);
  void* out = kernels::allocate(q, static_cast<std::size_t>(out_count) * 2 * sizeof(Real));
  kernels::copy_from_host(q, in, x.data(), in_bytes);
  auto check = [](cufftResult r, const char* what) {
    if (r != CUFFT_SUCCESS) throw std::runtime_error(std::string(what) + " failed (cufftResult " + std::to_string(int(r)) + ")");
  };
  cufftHandle plan;
  std::size_t work = 0;
  check(cufftCreate(&plan), "cufftCreate");
  const cufftType type = r2c ? (f ? CUFFT_R2C : CUFFT_D2Z) : (f ? CUFFT_C2C : CUFFT_Z2Z);
  check(cufftMakePlanMany64(plan, static_cast<int>(n.size()), n.data(), nullptr, 1, 0, nullptr, 1, 0, type, 1, &work),
        "cufftMakePlanMany64");
  check(cufftSetStream(plan, reinterpret_cast<cudaStream_t>(q.stream)), "cufftSetStream");
  auto exec = [&] {
    if constexpr (f) {
      if (r2c) check(cufftExecR2C(plan, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out)), "cufftExecR2C");
      else check(cufftExecC2C(plan, static_cast<cufftComplex*>(in), static_cast<cufftComplex*>(out), CUFFT_FORWARD), "cufftExecC2C");
    } else {
      if (r2c) check(cufftExecD2Z(plan, static_cast<cufftDoubleReal*>(in), static_cast<cufftDoubleComplex*>(out)), "cufftExecD2Z");
      else check(cufftExecZ2Z(plan, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleComplex*>(out), CUFFT_FORWARD), "cufftExecZ2Z");
    }
  };
  VendorResult v;
  v.name = "cufft";
  exec();
  std::vector<std::complex<Real>> got(ours.values.size());
  if (!got.empty() && !ours.swapped) {
    kernels::copy_to_host(q, got.data(), out, got.size() * sizeof(got[0]));
  } else if (!got.empty()) {
    // Ours' first elements in the swapped order, [o1][o0][r]: cuFFT's rows gathered to that order.
    const auto d = dims3(shape);
    const index_t o0 = d[0], o1 = shape.size() == 2 && r2c ? d[1] / 2 + 1 : d[1];
    const index_t r = shape.size() == 3 ? (r2c ? d[2] / 2 + 1 : d[2]) : 1;
    const index_t rows = std::min<index_t>(o1, (static_cast<index_t>(got.size()) + o0 * r - 1) / (o0 * r));
    const std::size_t elem = sizeof(std::complex<Real>);
    void* gathered = kernels::allocate(q, static_cast<std::size_t>(rows * o0 * r) * elem);
    for (index_t j1 = 0; j1 < rows; ++j1)
      kernels::copy_2d(q, static_cast<char*>(gathered) + static_cast<std::size_t>(j1 * o0 * r) * elem, r,
                       static_cast<const char*>(out) + static_cast<std::size_t>(j1 * r) * elem, o1 * r, o0, r, elem);
    kernels::copy_to_host(q, got.data(), gathered, got.size() * elem);
    kernels::deallocate(q, gathered);
  }
  for (std::size_t i = 0; i < got.size(); ++i)
    v.max_error = std::max(v.max_error, std::abs(std::complex<double>(got[i]) - std::complex<double>(ours.values[i])));
  v.compared = static_cast<std::int64_t>(got.size());
  v.samples = time_samples(ctx, o, exec);
  cufftDestroy(plan);
  kernels::deallocate(q, in);
  kernels::deallocate(q, out);
  return v;
}
#endif

std::string shape_text(const std::vector<index_t>& s) {
  std::string t;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) t += 'x';
    t += std::to_string(s[i]);
  }
  return t;
}

// Prints the case's table line and adds its rows (ours, then the vendor's where there is one).
template <class Real>
void run_case(const Context& ctx, const std::vector<index_t>& shape, const Options& o, int chunks, bench::Harness& h) {
  fft::Options po;
  po.exchange_chunks = chunks;
  po.decomposition = o.decomposition == "pencil" ? fft::Decomposition::pencil : fft::Decomposition::slab;
  po.effort = o.effort == "estimate" ? fft::Effort::estimate : fft::Effort::measure;
  const std::string& order = o.order;
  po.output_order = order == "swapped" ? fft::Order::swapped : fft::Order::natural;
  po.return_to_input_layout = order == "input";
  const bool r2c = o.kind == "r2c";
  const char* dtype = sizeof(Real) == 4 ? "float" : "double";
  double n_total = 1;
  for (index_t v : shape) n_total *= static_cast<double>(v);
  const double log_n = std::max(1.0, std::log2(n_total));
  const double eps = std::numeric_limits<Real>::epsilon();
  const bool cuda = ctx.backend() == Backend::cuda;
  PhaseTimes phases;
  std::vector<double> samples;
  double round_trip_error = 0, max_abs_x = 0, plan_s = 0;
  std::vector<index_t> output_shape;
  OurOutput<Real> ours;
  std::vector<Real> x;
  std::optional<VendorResult> vendor;
#if TESSERA_BENCH_FFTW_MPI
  // FFTW-MPI planned first (its wisdom then serves ours' planning as ours' would serve it).
  std::optional<FftwMpi<Real>> fftw_mpi;
  if (ctx.backend() == Backend::cpu && po.decomposition == fft::Decomposition::slab) {
    fftw_mpi.emplace(ctx, shape, r2c, po.effort == fft::Effort::measure, order != "input");
    vendor.emplace();
    vendor->name = "fftw-mpi";
  }
#endif
  {
    // The plan and its buffers go before the baselines run (1024^3 in double is 16 GiB an array).
    Stopwatch planning;
    fft::Plan<Real> plan(ctx, shape, r2c ? fft::Kind::r2c : fft::Kind::c2c, po);
    plan_s = slowest(ctx, planning.seconds());
    output_shape = plan.output_shape();
    const kernels::Queue& q = ctx.queue();
    const fft::Box ib = plan.input_box();
    const std::size_t in_bytes = static_cast<std::size_t>(ib.count()) * (r2c ? 1 : 2) * sizeof(Real);
    const std::size_t out_bytes = static_cast<std::size_t>(plan.output_box().count()) * 2 * sizeof(Real);
    void* in = kernels::allocate(q, std::max<std::size_t>(in_bytes, 16));
    auto* out = static_cast<std::complex<Real>*>(kernels::allocate(q, std::max<std::size_t>(out_bytes, 16)));
    // This rank's box of the global array, made by the rank's OpenMP threads (an element's sine
    // and cosine of an argument up to 10^9 take 0.1-0.2 us: 2^30 elements took minutes on one).
    const auto d = dims3(shape);
    x.resize(in_bytes / sizeof(Real));
    const std::size_t per = r2c ? 1 : 2;
#pragma omp parallel for schedule(static)
    for (index_t i0 = 0; i0 < ib.size[0]; ++i0)
      for (index_t i1 = 0; i1 < ib.size[1]; ++i1)
        for (index_t i2 = 0; i2 < ib.size[2]; ++i2) {
          const auto v = input_value(((ib.lo[0] + i0) * d[1] + ib.lo[1] + i1) * d[2] + ib.lo[2] + i2);
          const std::size_t at = static_cast<std::size_t>((i0 * ib.size[1] + i1) * ib.size[2] + i2) * per;
          x[at] = static_cast<Real>(v[0]);
          if (!r2c) x[at + 1] = static_cast<Real>(v[1]);
        }
#pragma omp parallel for reduction(max : max_abs_x) schedule(static)
    for (std::size_t i = 0; i < x.size(); ++i) max_abs_x = std::max(max_abs_x, std::abs(static_cast<double>(x[i])));
    max_abs_x = slowest(ctx, max_abs_x);
    if (in_bytes) kernels::copy_from_host(q, in, x.data(), in_bytes);
    // The phases, call by call (each call timed in its parts, with synchronisations between them).
    for (int i = 0; i < o.warmup; ++i) plan.forward(in, out);
    for (int i = 0; i < o.iters; ++i) {
      ctx.comm().barrier();
      PhaseTimes t;
      plan.forward(in, out, &t);
      q.synchronize();
      phases += t;
    }
    // The time per call as the vendor's is timed; on the cpu, their samples alternate.
#if TESSERA_BENCH_FFTW_MPI
    if (fftw_mpi) {
      auto both = time_alternating(ctx, o, [&] { plan.forward(in, out); }, [&] { fftw_mpi->execute(); });
      samples = std::move(both.first);
      vendor->samples = std::move(both.second);
    } else
#endif
      samples = time_samples(ctx, o, [&] { plan.forward(in, out); });
    // Ours' output (on the GPU its first 2^24 elements) for the vendor's to be compared with.
    ours.box = plan.output_box();
    ours.swapped = po.output_order == fft::Order::swapped;
    const std::size_t keep = std::min<std::size_t>(out_bytes / sizeof(std::complex<Real>), cuda ? std::size_t(1) << 24 : SIZE_MAX);
    ours.values.resize(keep);
    if (keep) kernels::copy_to_host(q, ours.values.data(), out, keep * sizeof(std::complex<Real>));
    for (const auto& v : ours.values) ours.max_abs = std::max(ours.max_abs, static_cast<double>(std::abs(v)));
    ours.max_abs = slowest(ctx, ours.max_abs);
    // Checked: the inverse of the last forward gives the input back within 10 eps log2 N of max |x|.
    plan.inverse(out, in);
    std::vector<Real> back(x.size());
    if (in_bytes) kernels::copy_to_host(q, back.data(), in, in_bytes);
#pragma omp parallel for reduction(max : round_trip_error) schedule(static)
    for (std::size_t i = 0; i < x.size(); ++i)
      round_trip_error = std::max(round_trip_error, std::abs(static_cast<double>(back[i]) - static_cast<double>(x[i])));
    round_trip_error = slowest(ctx, round_trip_error);
    kernels::deallocate(q, in);
    kernels::deallocate(q, out);
  }
  kernels::release_cached_memory();
  const bench::Stats st = bench::statistics(samples);
  const double local = slowest(ctx, phases.local / o.iters), xch = slowest(ctx, phases.communication / o.iters);
  const double unpack = slowest(ctx, phases.fixup / o.iters);
  const double flops = fft::nominal_flops(shape, r2c ? fft::Kind::r2c : fft::Kind::c2c);
  // Baselines.
  double alone = 0;
  if (po.decomposition == fft::Decomposition::slab && ctx.size() > 1)
    alone = bench::statistics(alltoall_alone(ctx, output_shape, 2 * sizeof(Real), o)).p50;
#if TESSERA_BENCH_FFTW_MPI
  if (fftw_mpi) {
    fftw_mpi->compare(ours, *vendor);
    fftw_mpi.reset();
  }
#endif
#if TESSERA_HAVE_CUDA
  if (cuda && ctx.size() == 1) {
    kernels::release_cached_memory();
    vendor = cufft_run<Real>(ctx, shape, r2c, o, x, ours);
  }
#endif
  const double vendor_p50 = vendor ? bench::statistics(vendor->samples).p50 : 0;

  if (ctx.is_root()) {
    const std::string dec = o.decomposition + (chunks > 0 ? ":" + std::to_string(chunks) : std::string());
    std::printf("%-16s %-6s %-4s %-6s %5d %9.4f %8.1f %9.4f %9.4f %9.4f %9.4f %-8s %9.4f %7.3f\n", shape_text(shape).c_str(),
                dtype, o.kind.c_str(), dec.c_str(), ctx.size(), st.p50 * 1e3, st.p50 > 0 ? flops / st.p50 / 1e9 : 0.0,
                local * 1e3, xch * 1e3, unpack * 1e3, alone * 1e3, vendor ? vendor->name.c_str() : "-", vendor_p50 * 1e3,
                vendor_p50 > 0 && st.p50 > 0 ? vendor_p50 / st.p50 : 0.0);
    std::fflush(stdout);
  }
  const std::string what = o.kind + " " + shape_text(shape) + " " + dtype + " " + o.decomposition +
                           (chunks > 0 ? " chunks " + std::to_string(chunks) : std::string()) +
                           (order != "natural" ? " " + order : std::string());
  // The case's configuration, the same on our row and the vendor's.
  const auto describe = [&](bench::Row& r) -> bench::Row& {
    return r.set("shape", shape_text(shape))
        .set("dtype", dtype)
        .set("kind", o.kind)
        .set("decomposition", o.decomposition)
        .set("ranks", ctx.size())
        .set("effort", o.effort)
        .set("order", order)
        .set("exchange_chunks", chunks);
  };
  bench::Row& row = h.row("fft " + what);
  describe(row)
      .set("plan_s", plan_s)
      .set("gflops", st.p50 > 0 ? flops / st.p50 / 1e9 : 0.0)
      .set("local_s", local)
      .set("exchange_s", xch)
      .set("unpack_s", unpack)
      .set("alltoall_alone_s", alone)
      .set("vendor", vendor ? vendor->name : std::string("-"))
      .set("vendor_s", vendor_p50)
      .set("round_trip_error", round_trip_error);
  row.time(samples);
  if (vendor_p50 > 0 && st.p50 > 0) row.share("vendor", vendor_p50 / st.p50);
  if (alone > 0 && xch > 0) row.share("alltoall_alone", alone / xch);
  const double rt_bound = 10 * eps * log_n * std::max(1.0, max_abs_x);
  char why[160];
  std::snprintf(why, sizeof why, "round trip max error %.3g over the bound %.3g", round_trip_error, rt_bound);
  row.verdict(round_trip_error <= rt_bound, why);
  h.print_pending();
  if (vendor) {
    const bench::Stats vs = bench::statistics(vendor->samples);
    bench::Row& vrow = h.row(vendor->name + " " + what);
    describe(vrow)
        .set("gflops", vs.p50 > 0 ? flops / vs.p50 / 1e9 : 0.0)
        .set("compared", vendor->compared)
        .set("max_error_vs_ours", vendor->max_error);
    vrow.time(vendor->samples);
    const double bound = 10 * eps * log_n * std::max(1.0, ours.max_abs);
    if (vendor->compared == 0) std::snprintf(why, sizeof why, "no element compared with ours");
    else std::snprintf(why, sizeof why, "output differs from ours by %.3g, over the bound %.3g", vendor->max_error, bound);
    vrow.verdict(vendor->compared > 0 && vendor->max_error <= bound, why);
    h.print_pending();
  }
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  Runtime runtime(argc, argv);
  bench::Harness h("tessera_bench_fft_distributed",
                   "The distributed FFT, forward, beside FFTW-MPI (cpu: same shape, ranks, slab decomposition,\n"
                   "planning effort, transposed output; --order input: the input's distribution) or cuFFT alone (cuda, one rank), and its exchange beside\n"
                   "the same all-to-all alone, under mpirun or srun. Shapes: --shape, or cubes of -b to -e bytes\n"
                   "(complex elements of each --dtype).",
                   {.minbytes = index_t(32) << 20, .maxbytes = index_t(32) << 20, .stepfactor = 8, .iters = 10, .warmup = 2});
  h.set_root(runtime.world_rank() == 0);
  try {
    Options o;
    add_options(h, o);
    if (!h.parse(argc, argv)) return 0;
    if (h.sizes_given() && h.given("--shape")) throw UsageError("--shape and -b/-e: give one or the other");
    o.iters = h.iters();
    o.warmup = h.warmup();
    const Context ctx = runtime.start(parse_backend_choice(o.backend));
    if (o.calls == 0) o.calls = ctx.backend() == Backend::cuda ? 8 : 1;
    if (!h.json_path().empty()) apps::for_flag("--json", [&] { io::check_output_file(ctx, h.json_path()); });
#if TESSERA_BENCH_FFTW_MPI
    if (ctx.backend() == Backend::cpu) {
      fftw_mpi_init();
      fftwf_mpi_init();
    }
#endif
    h.configuration()["ranks"] = ctx.size();
    h.configuration()["backend"] = runtime.describe();
    h.configuration()["device_path"] = to_string(device_comm_path(ctx));
    h.configuration()["effort"] = o.effort;
    h.configuration()["calls_per_sample"] = o.calls;
    h.configuration()["statistic"] =
        "time_s: per call, each sample's slowest rank (a sample: calls_per_sample calls back to back, one "
        "synchronisation); local_s, exchange_s, unpack_s: the slowest rank's mean per call, timed apart; vendor_s, "
        "alltoall_alone_s: p50";
    h.set_environment(bench::environment_json(describe_environment(ctx)));
    if (ctx.is_root()) {
      std::printf("# tessera_bench_fft_distributed: forward, %s, device path %s, iters %d, warmup %d, %d call(s) per sample, "
                  "FFTW effort %s\n",
                  runtime.describe().c_str(), to_string(device_comm_path(ctx)), o.iters, o.warmup, o.calls, o.effort.c_str());
      std::printf("# ms: p50 per call; GF/s: 5 N log2 N (r2c half) / p50; local (local FFTs + packs), xch, unpk: mean per call, "
                  "timed apart; a2a: the same alltoallv alone (p50);\n# vendor: FFTW-MPI (cpu, slab, same effort, transposed "
                  "out; --order input: not transposed) or cuFFT alone (cuda, 1 rank); ratio: vendor p50 / ours\n");
      std::printf("%-16s %-6s %-4s %-6s %5s %9s %8s %9s %9s %9s %9s %-8s %9s %7s\n", "shape", "dtype", "kind", "dec", "ranks",
                  "ms", "GF/s", "local", "xch", "unpk", "a2a", "vendor", "vendor ms", "ratio");
    }
    for (const std::string& d : o.dtypes) {
      std::vector<std::vector<index_t>> shapes = o.shapes;
      if (h.sizes_given()) {
        shapes.clear();
        for (index_t count : h.sizes(2 * (d == "float" ? sizeof(float) : sizeof(double)))) {
          const index_t s = cube_side(count);
          if (shapes.empty() || shapes.back()[0] != s) shapes.push_back({s, s, s});
        }
      }
      for (const auto& shape : shapes) {
        for (int chunks : o.chunks) {
          if (d == "float") run_case<float>(ctx, shape, o, chunks, h);
          else run_case<double>(ctx, shape, o, chunks, h);
        }
      }
    }
#if TESSERA_BENCH_FFTW_MPI
    if (ctx.backend() == Backend::cpu) fftw_mpi_cleanup();
#endif
    if (!h.json_path().empty()) apps::write_json_report(ctx, h.json_path(), h.report());
    return h.finish(/*written_elsewhere=*/true);
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "tessera_bench_fft_distributed: %s\n", e.what());
    return 2;
  }
}
