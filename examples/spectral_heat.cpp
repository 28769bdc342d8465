// A time-stepping spectral solver that checkpoints and resumes: the heat equation u_t = nu lap(u) on
// the periodic box [0, 2 pi)^3, sampled on an N0 x N1 x N2 grid cut into slabs, stepped with the
// exact integrating factor. Each step transforms u forward (r2c), multiplies mode k by
// exp(-nu |k|^2 dt) and transforms back (c2r): the shape of a pseudo-spectral step, whose nonlinear
// terms would be computed on the grid between the two transforms.
//
//   mpiexec -n 4 ./spectral_heat N0 N1 N2 STEPS [--checkpoint FILE.h5 [--every K]] [--restart FILE.h5]
//
// u(0) = sin(x) cos(2y) sin(3z) + cos(x + y) / 2 + sin(z) / 4, whose three parts decay as
// exp(-14 nu t), exp(-2 nu t) and exp(-nu t) (every mode lies on the grid when N >= 7 on every axis).
// The program prints the largest error against that exact solution after the last step (exit 1
// past its bound) and a checksum of the field that depends on its values and not on the rank count.
//
// The state, the field u and the time t, is checkpointed with io::checkpoint (one HDF5 file written
// under a temporary name and renamed, a checksum per dataset): every K steps with --every K, and
// after the last step. --restart continues from such a file on any number of ranks: io::restore
// reads u block-partitioned over the ranks and tessera::repartition moves it onto this run's slabs.
// A run resumed from step s ends bit for bit where a run never interrupted ends.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tessera/framework/checkpoint.hpp"
#include "tessera/framework/fft.hpp"
#include "tessera/framework/framework.hpp"
#include "tessera/kernels/memory.hpp"

namespace {

using tessera::index_t;
constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr double kNu = 0.1, kDt = 0.01;

double exact_u(double x, double y, double z, double t) {
  return std::sin(x) * std::cos(2 * y) * std::sin(3 * z) * std::exp(-14 * kNu * t) +
         std::cos(x + y) / 2 * std::exp(-2 * kNu * t) + std::sin(z) / 4 * std::exp(-kNu * t);
}

// The signed wave number of index i on an axis of n points (numpy.fft.fftfreq(n) * n).
double wave(index_t i, index_t n) { return static_cast<double>(i <= n / 2 ? i : i - n); }

struct Args {
  std::vector<index_t> n;
  index_t steps = 0, every = 0;
  std::string checkpoint, restart;
};

std::optional<Args> parse(int argc, char** argv, std::string& error) {
  Args a;
  if (argc < 5) {
    error = "usage: spectral_heat N0 N1 N2 STEPS [--checkpoint FILE.h5 [--every K]] [--restart FILE.h5]";
    return std::nullopt;
  }
  for (int i = 1; i <= 4; ++i) {
    char* end = nullptr;
    const long long v = std::strtoll(argv[i], &end, 10);
    if (*argv[i] == '\0' || *end != '\0' || v < (i < 4 ? 7 : 0)) {
      error = std::string(i < 4 ? "N" + std::to_string(i - 1) + ": every axis needs at least 7 points"
                                : "STEPS: a count of steps (0 or more)") +
              ", not '" + argv[i] + "'";
      return std::nullopt;
    }
    if (i < 4) a.n.push_back(v);
    else a.steps = v;
  }
  for (int i = 5; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      error = flag + ": needs a value";
      return std::nullopt;
    }
    const std::string value = argv[++i];
    if (flag == "--checkpoint") a.checkpoint = value;
    else if (flag == "--restart") a.restart = value;
    else if (flag == "--every") a.every = std::atoll(value.c_str());
    else {
      error = "unknown flag '" + flag + "'";
      return std::nullopt;
    }
  }
  if (a.every < 0 || (a.every > 0 && a.checkpoint.empty())) {
    error = "--every: a positive step count, with --checkpoint";
    return std::nullopt;
  }
  return a;
}

// A checksum of the field that does not depend on its partition: the sum, modulo 2^64, of a hash of
// (global index, the value's bits) over every element.
std::uint64_t checksum(const tessera::Context& ctx, const std::vector<double>& u, index_t offset) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    std::uint64_t bits;
    std::memcpy(&bits, &u[i], sizeof bits);
    std::uint64_t h = (static_cast<std::uint64_t>(offset) + i) * 0x9E3779B97F4A7C15ull ^ bits;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    sum += h;
  }
  return ctx.comm().allreduce(sum, tessera::ReduceOp::sum);
}

int run(const tessera::Context& ctx, const Args& a) {
  const std::vector<index_t>& n = a.n;
  tessera::fft::Options options;
  options.decomposition = tessera::fft::Decomposition::slab;
  options.effort = tessera::fft::Effort::estimate;
  tessera::fft::Plan<double> plan(ctx, n, tessera::fft::Kind::r2c, options);
  const tessera::fft::Box in = plan.input_box(), out = plan.output_box();
  const tessera::kernels::Queue& q = ctx.queue();

  // The field as a distributed array in global (row-major) order: a slab is one contiguous range.
  const std::vector<index_t> counts = ctx.comm().allgather(in.count());
  const tessera::Partition slabs = tessera::Partition::from_counts(counts);
  tessera::DistArray<double> u(ctx, slabs);
  double t = 0;
  index_t step = 0;
  auto coord = [&](index_t i, int axis) { return kTwoPi * static_cast<double>(i) / static_cast<double>(n[axis]); };
  auto at = [](const tessera::fft::Box& b, index_t i, index_t j, index_t k) {
    return static_cast<std::size_t>((i * b.size[1] + j) * b.size[2] + k);
  };

  if (!a.restart.empty()) {
    tessera::DistArray<double> saved(ctx, 0);
    step = tessera::io::restore(ctx, a.restart, {{"u", saved}, {"t", t}});
    if (saved.global_size() != slabs.global_size()) {
      if (ctx.is_root())
        std::fprintf(stderr, "spectral_heat: --restart: '%s' holds a field of %lld points, not %lldx%lldx%lld\n",
                     a.restart.c_str(), static_cast<long long>(saved.global_size()), static_cast<long long>(n[0]),
                     static_cast<long long>(n[1]), static_cast<long long>(n[2]));
      return 2;
    }
    u = tessera::repartition(saved, slabs);
    if (ctx.is_root()) std::printf("spectral_heat: resumed from %s at step %lld\n", a.restart.c_str(), static_cast<long long>(step));
  } else {
    std::vector<double> u0(static_cast<std::size_t>(in.count()));
    for (index_t i = 0; i < in.size[0]; ++i)
      for (index_t j = 0; j < in.size[1]; ++j)
        for (index_t k = 0; k < in.size[2]; ++k)
          u0[at(in, i, j, k)] = exact_u(coord(in.lo[0] + i, 0), coord(in.lo[1] + j, 1), coord(in.lo[2] + k, 2), 0);
    u.local_from_host(u0);
  }

  // The integrating factor of one step, mode by mode, in the plan's spectral layout.
  std::vector<double> decay(static_cast<std::size_t>(out.count()));
  for (index_t i = 0; i < out.size[0]; ++i)
    for (index_t j = 0; j < out.size[1]; ++j)
      for (index_t k = 0; k < out.size[2]; ++k) {
        const double kx = wave(out.lo[0] + i, n[0]), ky = wave(out.lo[1] + j, n[1]);
        const double kz = static_cast<double>(out.lo[2] + k);  // the r2c axis holds 0 .. n2/2
        decay[at(out, i, j, k)] = std::exp(-kNu * (kx * kx + ky * ky + kz * kz) * kDt);
      }
  const std::size_t spec_bytes = std::max<std::size_t>(16, decay.size() * sizeof(std::complex<double>));
  auto* spectrum = static_cast<std::complex<double>*>(tessera::kernels::allocate(q, spec_bytes));
  std::vector<std::complex<double>> s(decay.size());

  auto save = [&] {
    tessera::io::checkpoint(ctx, a.checkpoint, {{"u", u}, {"t", t}}, step, {"spectral_heat", {}});
  };
  for (; step < a.steps;) {
    plan.forward(u.local_data(), spectrum);
    // Through the host, so that the example runs the same on both backends; a GPU program would
    // multiply with a kernel.
    if (!s.empty()) tessera::kernels::copy_to_host(q, s.data(), spectrum, s.size() * sizeof(s[0]));
    for (std::size_t m = 0; m < s.size(); ++m) s[m] *= decay[m];
    if (!s.empty()) tessera::kernels::copy_from_host(q, spectrum, s.data(), s.size() * sizeof(s[0]));
    plan.inverse(spectrum, u.local_data());
    ++step;
    t = static_cast<double>(step) * kDt;
    if (a.every > 0 && step % a.every == 0 && step < a.steps) save();
  }
  tessera::kernels::deallocate(q, spectrum);
  if (!a.checkpoint.empty()) save();

  const std::vector<double> field = u.local_to_host();
  double err = 0;
  for (index_t i = 0; i < in.size[0]; ++i)
    for (index_t j = 0; j < in.size[1]; ++j)
      for (index_t k = 0; k < in.size[2]; ++k)
        err = std::max(err, std::abs(field[at(in, i, j, k)] - exact_u(coord(in.lo[0] + i, 0), coord(in.lo[1] + j, 1),
                                                                     coord(in.lo[2] + k, 2), t)));
  err = ctx.comm().allreduce(err, tessera::ReduceOp::max);
  const std::uint64_t sum = checksum(ctx, field, u.global_offset());
  // max |u| <= 1.75; each step's rounding grows as log2 of the transform's length.
  const double bound = 8 * std::numeric_limits<double>::epsilon() * 1.75 *
                       std::log2(static_cast<double>(n[0] * n[1] * n[2])) * static_cast<double>(step + 1);
  if (ctx.is_root())
    std::printf("spectral_heat: %lldx%lldx%lld on %d ranks (%s), step %lld, t = %g: max error %.3g (bound %.3g) %s; "
                "checksum %016llx\n",
                static_cast<long long>(n[0]), static_cast<long long>(n[1]), static_cast<long long>(n[2]), ctx.size(),
                tessera::to_string(ctx.backend()), static_cast<long long>(step), t, err, bound,
                err <= bound ? "ok" : "WRONG", static_cast<unsigned long long>(sum));
  return err <= bound ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  std::string error;
  const std::optional<Args> args = parse(argc, argv, error);
  if (!args) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "spectral_heat: %s\n", error.c_str());
    return 2;
  }
  const tessera::Context world = runtime.start(tessera::BackendChoice::automatic);
  try {
    return run(world, *args);
  } catch (const tessera::UsageError& e) {  // a file refused or damaged (io::IoError), alike on every rank
    if (world.is_root()) std::fprintf(stderr, "spectral_heat: %s\n", e.what());
    return 2;
  }
}
