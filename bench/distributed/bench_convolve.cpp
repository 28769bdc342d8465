// tessera_bench_convolve: the 1-D convolution of a block-distributed array (fft_convolve.hpp) by
// each method at each radius, beside a copy of the same array in the same run:
//   direct   tessera::convolve (each tap one fused multiply-add)
//   fft      overlap-save through cuFFT (cuda) or FFTW (cpu), at each --fft-length and --batch
//   auto     what fft::Convolution chooses (its row says which)
//   copy     kernels::copy_within_async of the rank's block: the floor (one read, one write)
// Per row: p50 per call (each sample the slowest rank; a sample is --calls calls back to back, one
// synchronisation), share.copy = copy p50 / ours (the share of the copy rate), share.direct =
// direct p50 / ours, and the largest |out - exact| over error_bound() on the first --check outputs
// of rank 0's block (exact: the long double sum), VALID when at most 1 (direct: when within
// gamma_(2r+1) sum |w_k a_(i+r-k)|).
//
//   tessera_bench_convolve --backend cuda -b 1G -e 1G --radius 16,64,128,256,1024 --dtype float
//   mpiexec -n 2 tessera_bench_convolve --backend cpu -b 16M -e 16M --radius 8,32,64,256
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "app.hpp"
#include "cli.hpp"
#include "harness.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/fft_convolve.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/memory.hpp"

namespace {

using namespace tessera;

struct Options {
  std::string backend = "auto";
  std::vector<std::string> dtypes = {"float"};
  std::vector<index_t> radii = {16, 64, 256, 1024};
  std::vector<index_t> fft_lengths = {0};
  std::vector<index_t> batches = {0};
  fft::Effort effort = fft::Effort::estimate;
  std::vector<std::string> methods = {"direct", "fft", "auto"};
  int calls = 0;
  index_t check = 4096;
  int iters = 10, warmup = 2;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<index_t> parse_counts(std::string_view v, const char* flag) {
  std::vector<index_t> out;
  for (const std::string& part : split_list(std::string(v))) out.push_back(apps::parse_count(part, flag, 0, index_t(1) << 40));
  return out;
}

// Seconds per call of `call`: iters samples of `calls` calls, each sample's slowest rank.
std::vector<double> time_calls(const Context& ctx, const Options& o, const std::function<void()>& call) {
  for (int i = 0; i < o.warmup; ++i) call();
  ctx.queue().synchronize();
  std::vector<double> samples;
  for (int i = 0; i < o.iters; ++i) {
    ctx.comm().barrier();
    const double t0 = MPI_Wtime();
    for (int c = 0; c < o.calls; ++c) call();
    ctx.queue().synchronize();
    samples.push_back((MPI_Wtime() - t0) / o.calls);
  }
  return bench::slowest_rank(ctx, samples);
}

template <class T>
void run_case(const Context& ctx, index_t n, index_t radius, const Options& o, bench::Harness& h) {
  const char* dtype = sizeof(T) == 4 ? "float" : "double";
  std::vector<T> weights(static_cast<std::size_t>(2 * radius + 1));
  std::mt19937_64 rng(static_cast<std::uint64_t>(radius) * 977 + sizeof(T));
  std::uniform_real_distribution<double> value(-1, 1);
  for (T& w : weights) w = static_cast<T>(value(rng));
  const Partition part = Partition::block(n, ctx.size());
  DistArray<T> a(ctx, part);
  {
    std::vector<T> host(static_cast<std::size_t>(a.local_size()));
    std::mt19937_64 r2(static_cast<std::uint64_t>(ctx.rank()) + 17);
    for (T& v : host) v = static_cast<T>(value(r2));
    a.local_from_host(host);
  }
  // The exact sums of rank 0's first outputs (inside the block: its halo is not on this rank).
  const index_t lo = std::min<index_t>(radius, a.local_size()), hi = std::min<index_t>(a.local_size() - radius, lo + o.check);
  const std::vector<T> x = a.local_to_host();
  auto worst_share = [&](const DistArray<T>& out, double bound_abs) {
    const std::vector<T> y = out.local_to_host();
    const long double u = std::numeric_limits<T>::epsilon() / 2;
    const long double gamma = static_cast<long double>(2 * radius + 1) * u;
    double worst = 0;
    for (index_t i = lo; i < hi; ++i) {
      long double exact = 0, magnitude = 0;
      for (index_t k = 0; k <= 2 * radius; ++k) {
        const long double term = static_cast<long double>(weights[static_cast<std::size_t>(k)]) *
                                 static_cast<long double>(x[static_cast<std::size_t>(i + radius - k)]);
        exact += term;
        magnitude += std::fabs(term);
      }
      const long double bound = bound_abs > 0 ? static_cast<long double>(bound_abs) : gamma * magnitude;
      const long double e = std::fabs(static_cast<long double>(y[static_cast<std::size_t>(i)]) - exact);
      worst = std::max(worst, static_cast<double>(bound > 0 ? e / bound : (e > 0 ? 1e300 : 0)));
    }
    return ctx.comm().allreduce(worst, ReduceOp::max);
  };

  T* scratch = static_cast<T*>(kernels::allocate(ctx.queue(), std::max<std::size_t>(static_cast<std::size_t>(a.local_size()) * sizeof(T), 64)));
  const std::vector<double> copy = time_calls(ctx, o, [&] {
    kernels::copy_within_async(ctx.queue(), scratch, a.local_data(), static_cast<std::size_t>(a.local_size()) * sizeof(T));
  });
  kernels::deallocate(ctx.queue(), scratch);
  const double copy_p50 = bench::statistics(copy).p50;
  double direct_p50 = 0;
  const double max_abs = 1.0;  // the inputs' magnitude bound (uniform on [-1, 1))
  for (const std::string& m : o.methods) {
    const fft::ConvolveMethod method = fft::parse_convolve_method(m);
    for (index_t length : method == fft::ConvolveMethod::direct ? std::vector<index_t>{0} : o.fft_lengths)
      for (index_t batch : method == fft::ConvolveMethod::direct ? std::vector<index_t>{0} : o.batches) {
        if (length > 0 && length <= 2 * radius) continue;
        fft::ConvolveOptions co;
        co.method = method;
        co.fft_length = length;
        co.batch = batch;
        co.effort = o.effort;
        fft::Convolution<T> conv(ctx, std::span<const T>(weights), Boundary::zero, co);
        DistArray<T> out;
        const std::vector<double> t = time_calls(ctx, o, [&] { out = conv(a); });
        const bool took_fft = ctx.comm().allreduce(conv.method_for(a.local_size()) == fft::ConvolveMethod::fft ? 1 : 0,
                                                   ReduceOp::max) == 1;
        const double share = worst_share(out, took_fft ? conv.error_bound(max_abs) : 0);
        const double p50 = bench::statistics(t).p50;
        if (method == fft::ConvolveMethod::direct) direct_p50 = p50;
        bench::Row& row = h.row(std::string("convolve ") + m + " " + dtype);
        row.set("method", m).set("dtype", dtype).set("n", n).set("radius", radius).set("ranks", ctx.size());
        row.set("path", took_fft ? "fft" : "direct");
        if (took_fft)
          row.set("fft_length", conv.fft_length()).set("batch", batch).set("effort", o.effort == fft::Effort::measure ? "measure" : "estimate");
        row.set("crossover_radius", conv.crossover_radius()).set("error_over_bound", share);
        row.time(t).share("copy", copy_p50 / p50);
        if (direct_p50 > 0) row.share("direct", direct_p50 / p50);
        row.verdict(share <= 1, share <= 1 ? "" : "an output beyond its bound");
        h.print_pending();
      }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Runtime runtime(argc, argv);
  bench::Harness h("tessera_bench_convolve",
                   "The 1-D convolution of a distributed array by the direct sum, by the FFT (overlap-save) and as\n"
                   "fft::Convolution chooses, at each radius, beside a copy of the array. Sizes: -b/-e bytes of\n"
                   "the whole array.",
                   {.minbytes = index_t(64) << 20, .maxbytes = index_t(64) << 20, .stepfactor = 4, .iters = 10, .warmup = 2});
  h.set_root(runtime.world_rank() == 0);
  try {
    Options o;
    h.add_option({"--backend"}, "auto|cpu|cuda", "the backend (default auto)", [&](std::string_view v) { o.backend = v; });
    h.add_option({"--dtype"}, "LIST", "float, double (default float)",
                 [&](std::string_view v) { o.dtypes = split_list(std::string(v)); });
    h.add_option({"--radius"}, "LIST", "radii (default 16,64,256,1024)", [&](std::string_view v) { o.radii = parse_counts(v, "--radius"); });
    h.add_option({"--fft-length"}, "LIST", "the FFT path's transform lengths (0: chosen; default 0)",
                 [&](std::string_view v) { o.fft_lengths = parse_counts(v, "--fft-length"); });
    h.add_option({"--batch"}, "LIST", "the FFT path's segments per batch (0: chosen; default 0)",
                 [&](std::string_view v) { o.batches = parse_counts(v, "--batch"); });
    h.add_option({"--effort"}, "estimate|measure", "cpu: FFTW's planning effort for the FFT path (default estimate)",
                 [&](std::string_view v) {
                   if (v == "estimate") o.effort = fft::Effort::estimate;
                   else if (v == "measure") o.effort = fft::Effort::measure;
                   else throw UsageError("--effort: '" + std::string(v) + "' (expected estimate or measure)");
                 });
    h.add_option({"--method"}, "LIST", "direct, fft, auto (default all three)",
                 [&](std::string_view v) { o.methods = split_list(std::string(v)); });
    h.add_option({"--calls"}, "K", "calls per timed sample (default 4 on cuda, 1 on cpu)",
                 [&](std::string_view v) { o.calls = static_cast<int>(apps::parse_count(v, "--calls", 1, 1 << 20)); });
    h.add_option({"--check"}, "K", "outputs of rank 0 checked against the exact sum (default 4096)",
                 [&](std::string_view v) { o.check = apps::parse_count(v, "--check", 0, index_t(1) << 30); });
    if (!h.parse(argc, argv)) return 0;
    for (const std::string& m : o.methods) (void)fft::parse_convolve_method(m);
    o.iters = h.iters();
    o.warmup = h.warmup();
    const Context ctx = runtime.start(parse_backend_choice(o.backend));
    if (o.calls <= 0) o.calls = ctx.backend() == Backend::cuda ? 4 : 1;
    if (!h.json_path().empty()) apps::for_flag("--json", [&] { io::check_output_file(ctx, h.json_path()); });
    h.configuration()["ranks"] = ctx.size();
    h.configuration()["backend"] = runtime.describe();
    h.configuration()["calls_per_sample"] = o.calls;
    h.configuration()["statistic"] = "time_s: per call, each sample's slowest rank; share.copy: copy p50 / ours; "
                                     "share.direct: direct p50 / ours";
    h.set_environment(bench::environment_json(describe_environment(ctx)));
    for (const std::string& d : o.dtypes) {
      if (d != "float" && d != "double") throw UsageError("--dtype: '" + d + "' (expected float or double)");
      for (index_t n : h.sizes(d == "float" ? sizeof(float) : sizeof(double)))
        for (index_t r : o.radii) {
          if (d == "float") run_case<float>(ctx, n, r, o, h);
          else run_case<double>(ctx, n, r, o, h);
        }
    }
    if (!h.json_path().empty()) apps::write_json_report(ctx, h.json_path(), h.report());
    return h.finish(/*written_elsewhere=*/true);
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "tessera_bench_convolve: %s\n", e.what());
    return 2;
  }
}
