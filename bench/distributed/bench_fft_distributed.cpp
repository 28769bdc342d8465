// tessera_bench_fft_distributed: the distributed FFT (fft.hpp), forward, per phase, beside the
// baselines in the same run:
//   cpu backend   FFTW-MPI on the same ranks, the same global shape, slab decomposition, the same
//                 planning effort (FFTW_MEASURE by default) and its transposed output
//                 (FFTW_MPI_TRANSPOSED_OUT, the counterpart of the plan's cut output)
//   cuda backend  cuFFT alone on the whole array (one rank: the framework's overhead over cuFFT)
// and, for slab plans, the exchange against a bare DeviceComm::alltoallv of the same byte counts per
// peer (what the exchange cannot beat); every case's round trip checked. Rates in GFLOP/s by 5 N log2 N (half for r2c); times are the
// slowest rank's mean over --iters calls, each after a barrier.
//
//   mpiexec -n 4 tessera_bench_fft_distributed --backend cpu --shape 128x128x128,256x256x256
//   tessera_bench_fft_distributed --backend cuda --shape 512x512x512,1024x1024x1024 --dtype float,double
#include <mpi.h>

#if TESSERA_BENCH_FFTW_MPI
#include <fftw3-mpi.h>
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tessera/build_config.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/fft.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"
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
  int iters = 10, warmup = 2;
};

const char* kUsage =
    "usage: tessera_bench_fft_distributed [flags]   (under mpirun / srun)\n"
    "  --backend auto|cpu|cuda        where local work runs (default auto)\n"
    "  --dtype LIST                   float, double (default double)\n"
    "  --shape LIST                   global shapes N0xN1[xN2], comma-separated (default 128x128x128)\n"
    "  --decomposition slab|pencil    (default slab; FFTW-MPI runs beside slab plans only)\n"
    "  --kind c2c|r2c                 (default c2c)\n"
    "  --effort measure|estimate      FFTW's planning, for both (default measure)\n"
    "  -n, --iters I, -w, --warmup W  timed and untimed calls per case (default 10, 2)\n";

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

double slowest(const Context& ctx, double v) { return ctx.comm().allreduce(v, ReduceOp::max); }

// The slab exchange alone: every rank sends each other rank its rows of their columns.
double alltoall_alone(const Context& ctx, const std::vector<index_t>& out_shape, std::size_t elem, const Options& o) {
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
  for (int i = 0; i < o.warmup; ++i) comm.alltoallv(s, sb, so, r, rb, ro);
  double total = 0;
  for (int i = 0; i < o.iters; ++i) {
    ctx.comm().barrier();
    Stopwatch w;
    comm.alltoallv(s, sb, so, r, rb, ro);
    q.synchronize();
    total += w.seconds();
  }
  kernels::deallocate(q, s);
  kernels::deallocate(q, r);
  return slowest(ctx, total / o.iters);
}

#if TESSERA_BENCH_FFTW_MPI
// FFTW-MPI's forward transform of the same shape, slab, transposed output; seconds per call.
template <class Real>
double fftw_mpi_alone(const Context& ctx, const std::vector<index_t>& shape, bool r2c, bool measure, const Options& o) {
  constexpr bool f = sizeof(Real) == 4;
  const int rank = static_cast<int>(shape.size());
  std::vector<ptrdiff_t> n(shape.begin(), shape.end()), nc = n;
  if (r2c) nc.back() = n.back() / 2 + 1;
  ptrdiff_t local_n0 = 0, local_0 = 0, local_n1 = 0, local_1 = 0;
  const MPI_Comm comm = ctx.comm().get();
  const ptrdiff_t alloc = f ? fftwf_mpi_local_size_transposed(rank, nc.data(), comm, &local_n0, &local_0, &local_n1, &local_1)
                            : fftw_mpi_local_size_transposed(rank, nc.data(), comm, &local_n0, &local_0, &local_n1, &local_1);
  const unsigned flags = (measure ? FFTW_MEASURE : FFTW_ESTIMATE) | FFTW_MPI_TRANSPOSED_OUT;
  const std::size_t elems = static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1));
  void* in = f ? static_cast<void*>(fftwf_alloc_complex(elems)) : static_cast<void*>(fftw_alloc_complex(elems));
  void* out = f ? static_cast<void*>(fftwf_alloc_complex(elems)) : static_cast<void*>(fftw_alloc_complex(elems));
  double total = 0;
  auto time = [&](auto&& execute) {
    for (int i = 0; i < o.warmup; ++i) execute();
    for (int i = 0; i < o.iters; ++i) {
      ctx.comm().barrier();
      Stopwatch w;
      execute();
      total += w.seconds();
    }
  };
  if constexpr (f) {
    fftwf_plan p = r2c ? fftwf_mpi_plan_dft_r2c(rank, n.data(), static_cast<float*>(in), static_cast<fftwf_complex*>(out), comm, flags)
                       : fftwf_mpi_plan_dft(rank, n.data(), static_cast<fftwf_complex*>(in), static_cast<fftwf_complex*>(out), comm,
                                            FFTW_FORWARD, flags);
    std::fill_n(static_cast<float*>(in), 2 * elems, 0.5f);
    time([&] { fftwf_execute(p); });
    fftwf_destroy_plan(p);
    fftwf_free(in);
    fftwf_free(out);
  } else {
    fftw_plan p = r2c ? fftw_mpi_plan_dft_r2c(rank, n.data(), static_cast<double*>(in), static_cast<fftw_complex*>(out), comm, flags)
                      : fftw_mpi_plan_dft(rank, n.data(), static_cast<fftw_complex*>(in), static_cast<fftw_complex*>(out), comm,
                                          FFTW_FORWARD, flags);
    std::fill_n(static_cast<double*>(in), 2 * elems, 0.5);
    time([&] { fftw_execute(p); });
    fftw_destroy_plan(p);
    fftw_free(in);
    fftw_free(out);
  }
  return slowest(ctx, total / o.iters);
}
#endif

#if TESSERA_HAVE_CUDA
// cuFFT alone on the whole array (one rank), seconds per forward call.
template <class Real>
double cufft_alone(const Context& ctx, const std::vector<index_t>& shape, bool r2c, const Options& o) {
  constexpr bool f = sizeof(Real) == 4;
  std::vector<long long> n(shape.begin(), shape.end());
  index_t count = 1;
  for (index_t s : shape) count *= s;
  index_t out_count = count / shape.back() * (r2c ? shape.back() / 2 + 1 : shape.back());
  const kernels::Queue& q = ctx.queue();
  void* in = kernels::allocate(q, static_cast<std::size_t>(count) * 2 * sizeof(Real));
  void* out = kernels::allocate(q, static_cast<std::size_t>(out_count) * 2 * sizeof(Real));
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
  for (int i = 0; i < o.warmup; ++i) exec();
  q.synchronize();
  Stopwatch w;
  for (int i = 0; i < o.iters; ++i) exec();
  q.synchronize();
  const double t = w.seconds() / o.iters;
  cufftDestroy(plan);
  kernels::deallocate(q, in);
  kernels::deallocate(q, out);
  return t;
}
#endif

std::string shape_text(const std::vector<index_t>& s) {
  std::string t;
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? "x" : "") + std::to_string(s[i]);
  return t;
}

// Returns whether the case's round trip was within its bound.
template <class Real>
bool run_case(const Context& ctx, const std::vector<index_t>& shape, const Options& o) {
  fft::Options po;
  po.decomposition = o.decomposition == "pencil" ? fft::Decomposition::pencil : fft::Decomposition::slab;
  po.effort = o.effort == "estimate" ? fft::Effort::estimate : fft::Effort::measure;
  const bool r2c = o.kind == "r2c";
  PhaseTimes phases;
  double total = 0, round_trip_error = 0;
  bool round_trip_ok = true;
  std::vector<index_t> output_shape;
  {
    // The plan and its buffers go before the baselines run (1024^3 in double is 16 GiB an array).
    fft::Plan<Real> plan(ctx, shape, r2c ? fft::Kind::r2c : fft::Kind::c2c, po);
    output_shape = plan.output_shape();
    const kernels::Queue& q = ctx.queue();
    const std::size_t in_bytes = static_cast<std::size_t>(plan.input_box().count()) * (r2c ? 1 : 2) * sizeof(Real);
    const std::size_t out_bytes = static_cast<std::size_t>(plan.output_box().count()) * 2 * sizeof(Real);
    void* in = kernels::allocate(q, std::max<std::size_t>(in_bytes, 16));
    auto* out = static_cast<std::complex<Real>*>(kernels::allocate(q, std::max<std::size_t>(out_bytes, 16)));
    std::vector<Real> x(in_bytes / sizeof(Real));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<Real>(std::sin(0.37 * static_cast<double>(i + 1) * (ctx.rank() + 1)));
    if (in_bytes) kernels::copy_from_host(q, in, x.data(), in_bytes);
    for (int i = 0; i < o.warmup; ++i) plan.forward(in, out);
    // The phases, call by call; then the time per call as cuFFT alone is timed: calls back to
    // back, one synchronisation at the end (a call's launches overlap the previous call's tail).
    for (int i = 0; i < o.iters; ++i) {
      ctx.comm().barrier();
      PhaseTimes t;
      plan.forward(in, out, &t);
      q.synchronize();
      phases += t;
    }
    ctx.comm().barrier();
    Stopwatch w;
    for (int i = 0; i < o.iters; ++i) plan.forward(in, out);
    q.synchronize();
    total = w.seconds();
    // Every result checked: the inverse of the last forward gives the input back within
    // 10 eps log2 N of max |x|.
    plan.inverse(out, in);
    std::vector<Real> back(x.size());
    if (in_bytes) kernels::copy_to_host(q, back.data(), in, in_bytes);
    double err = 0;
    for (std::size_t i = 0; i < x.size(); ++i) err = std::max(err, std::abs(static_cast<double>(back[i]) - static_cast<double>(x[i])));
    err = slowest(ctx, err);
    double n = 1;
    for (index_t v : shape) n *= static_cast<double>(v);
    round_trip_ok = err <= 10 * std::numeric_limits<Real>::epsilon() * std::max(1.0, std::log2(n));
    round_trip_error = err;
    kernels::deallocate(q, in);
    kernels::deallocate(q, out);
  }
  kernels::release_cached_memory();
  const double t = slowest(ctx, total / o.iters);
  const double local = slowest(ctx, phases.local / o.iters), xch = slowest(ctx, phases.communication / o.iters);
  const double unpack = slowest(ctx, phases.fixup / o.iters);
  const double flops = fft::nominal_flops(shape, r2c ? fft::Kind::r2c : fft::Kind::c2c);
  // Baselines.
  double alone = 0, base = 0;
  const char* base_name = "-";
  if (po.decomposition == fft::Decomposition::slab && ctx.size() > 1)
    alone = alltoall_alone(ctx, output_shape, 2 * sizeof(Real), o);
#if TESSERA_BENCH_FFTW_MPI
  if (ctx.backend() == Backend::cpu && po.decomposition == fft::Decomposition::slab) {
    base = fftw_mpi_alone<Real>(ctx, shape, r2c, po.effort == fft::Effort::measure, o);
    base_name = "fftw-mpi";
  }
#endif
#if TESSERA_HAVE_CUDA
  if (ctx.backend() == Backend::cuda && ctx.size() == 1) {
    kernels::release_cached_memory();
    base = cufft_alone<Real>(ctx, shape, r2c, o);
    base_name = "cufft";
  }
#endif
  // A number, or "-" where there is none.
  auto num = [](double v, const char* format) {
    char text[32] = "-";
    if (v > 0) std::snprintf(text, sizeof text, format, v);
    return std::string(text);
  };
  if (ctx.is_root())
    std::printf("%-16s %-6s %-6s %-4s %5d %10.4f %9.1f %9.4f %9.4f %9.4f %9s %8s %-8s %10s %9s %9s\n",
                shape_text(shape).c_str(), sizeof(Real) == 4 ? "float" : "double", o.kind.c_str(),
                o.decomposition == "pencil" ? "pen" : "slab", ctx.size(), t * 1e3, flops / t / 1e9, local * 1e3, xch * 1e3,
                unpack * 1e3, num(alone * 1e3, "%.4f").c_str(), num(alone > 0 && xch > 0 ? alone / xch : 0, "%.3f").c_str(),
                base_name, num(base * 1e3, "%.4f").c_str(), num(base > 0 ? flops / base / 1e9 : 0, "%.1f").c_str(),
                num(base > 0 ? base / t : 0, "%.3f").c_str());
  if (ctx.is_root() && !round_trip_ok)
    std::printf("# WRONG: %s %s: round trip max error %.3g\n", shape_text(shape).c_str(),
                sizeof(Real) == 4 ? "float" : "double", round_trip_error);
  return round_trip_ok;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  Runtime runtime(argc, argv);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--backend") o.backend = next();
    else if (a == "--dtype") o.dtypes = split(next(), ',');
    else if (a == "--shape") {
      o.shapes.clear();
      for (const std::string& s : split(next(), ',')) {
        std::vector<index_t> shape;
        for (const std::string& d : split(s, 'x')) shape.push_back(std::atoll(d.c_str()));
        o.shapes.push_back(shape);
      }
    } else if (a == "--decomposition") o.decomposition = next();
    else if (a == "--kind") o.kind = next();
    else if (a == "--effort") o.effort = next();
    else if (a == "-n" || a == "--iters") o.iters = std::atoi(next().c_str());
    else if (a == "-w" || a == "--warmup") o.warmup = std::atoi(next().c_str());
    else {
      std::fprintf(stderr, "unknown flag '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  const Context ctx = runtime.start(parse_backend_choice(o.backend));
#if TESSERA_BENCH_FFTW_MPI
  if (ctx.backend() == Backend::cpu) {
    fftw_mpi_init();
    fftwf_mpi_init();
  }
#endif
  if (ctx.is_root()) {
    std::printf("# tessera_bench_fft_distributed: forward, %d ranks, backend %s, %d iters, FFTW effort %s\n", ctx.size(),
                to_string(ctx.backend()), o.iters, o.effort.c_str());
    std::printf("# ms: slowest rank's mean per call, calls back to back (as the base); local, xch, unpk: per call, timed apart; GF/s: 5 N log2 N (r2c half) / time; local: local FFTs + packs;\n"
                "# xch: exchange; unpk: unpacks; a2a: the same alltoallv alone; a2a/xch: share of the all-to-all floor;\n"
                "# base: FFTW-MPI (cpu, slab, same effort, transposed out) or cuFFT alone (cuda, 1 rank); base/ours: speed-up\n");
    std::printf("%-16s %-6s %-6s %-4s %5s %10s %9s %9s %9s %9s %9s %8s %-8s %10s %9s %9s\n", "shape", "dtype", "kind", "dec",
                "ranks", "ms", "GF/s", "local", "xch", "unpk", "a2a", "a2a/xch", "base", "base ms", "base GF/s", "base/ours");
  }
  int wrong = 0;
  try {
    for (const auto& shape : o.shapes)
      for (const std::string& d : o.dtypes) {
        const bool ok = d == "float" ? run_case<float>(ctx, shape, o) : run_case<double>(ctx, shape, o);
        wrong += ok ? 0 : 1;
      }
  } catch (const UsageError& e) {
    if (ctx.is_root()) std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
#if TESSERA_BENCH_FFTW_MPI
  if (ctx.backend() == Backend::cpu) {
    fftw_mpi_cleanup();
  }
#endif
  if (ctx.is_root()) std::printf("# summary: %d wrong case(s) (round trip within 10 eps log2 N of max |x|)\n", wrong);
  return wrong ? 1 : 0;
}
