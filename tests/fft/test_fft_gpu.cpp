// The distributed FFT on the cuda backend (cuFFT locally) against the same plan on the cpu backend
// (FFTW), on the same ranks: c2c and r2c, float and double, slab and pencil, batched 1-D, both
// output orders, forward and inverse, on sizes the ranks do not divide. Run with TESSERA_TEST_BACKEND=cuda under mpiexec
// (tests/fft/CMakeLists.txt registers gpu_fft_tests, label gpu: 2 ranks sharing the GPU, then 1);
// skipped on the cpu backend.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/framework/fft.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

template <class T>
std::vector<T> run_plan(const Context& ctx, fft::Plan<typename T::value_type>& plan, const void* host_in,
                        std::size_t in_bytes, bool forward, std::size_t out_count, std::size_t out_elem) {
  const kernels::Queue& q = ctx.queue();
  void* in = kernels::allocate(q, std::max<std::size_t>(in_bytes, 16));
  void* out = kernels::allocate(q, std::max<std::size_t>(out_count * out_elem, 16));
  if (in_bytes) kernels::copy_from_host(q, in, host_in, in_bytes);
  if (forward) plan.forward(in, static_cast<T*>(out));
  else plan.inverse(static_cast<const T*>(in), out);
  std::vector<T> host((out_count * out_elem + sizeof(T) - 1) / sizeof(T));
  if (out_count) kernels::copy_to_host(q, host.data(), out, out_count * out_elem);
  kernels::deallocate(q, in);
  kernels::deallocate(q, out);
  return host;
}

template <class Real>
void compare(const Context& gpu, const Context& cpu, std::vector<index_t> shape, fft::Kind kind, fft::Options o) {
  using C = std::complex<Real>;
  o.effort = fft::Effort::estimate;
  fft::Plan<Real> pg(gpu, shape, kind, o), pc(cpu, shape, kind, o);
  const fft::Box ib = pg.input_box(), ob = pg.output_box();
  ASSERT_EQ(ib.count(), pc.input_box().count());
  const bool r2c = kind == fft::Kind::r2c;
  const std::size_t in_elem = r2c ? sizeof(Real) : sizeof(C);
  std::mt19937_64 rng(static_cast<std::uint64_t>(gpu.rank()) * 7919 + static_cast<std::uint64_t>(ib.count()));
  std::normal_distribution<Real> dist;
  std::vector<Real> x(static_cast<std::size_t>(ib.count()) * (r2c ? 1 : 2));
  for (Real& v : x) v = dist(rng);
  const auto n_out = static_cast<std::size_t>(ob.count());
  const std::vector<C> yg = run_plan<C>(gpu, pg, x.data(), x.size() * sizeof(Real), true, n_out, sizeof(C));
  const std::vector<C> yc = run_plan<C>(cpu, pc, x.data(), x.size() * sizeof(Real), true, n_out, sizeof(C));
  double n = 1;
  for (index_t s : shape) n *= static_cast<double>(s);
  const double tol = 8 * std::numeric_limits<Real>::epsilon() * (std::log2(n) + 1);
  double scale = 0, err = 0;
  for (std::size_t i = 0; i < n_out; ++i) {
    scale = std::max(scale, static_cast<double>(std::abs(yc[i])));
    err = std::max(err, static_cast<double>(std::abs(yg[i] - yc[i])));
  }
  // The largest coefficient over all ranks: a rank's block may be small.
  scale = gpu.comm().allreduce(scale, ReduceOp::max);
  EXPECT_LE(err, tol * scale) << "forward, shape " << shape[0] << "x" << shape[1] << " " << pg.layout_text();
  // The inverse of the cpu's spectrum, on both.
  const std::vector<C> bg = run_plan<C>(gpu, pg, yc.data(), n_out * sizeof(C), false, static_cast<std::size_t>(ib.count()), in_elem);
  const std::vector<C> bc = run_plan<C>(cpu, pc, yc.data(), n_out * sizeof(C), false, static_cast<std::size_t>(ib.count()), in_elem);
  const auto* rg = reinterpret_cast<const Real*>(bg.data());
  const auto* rc = reinterpret_cast<const Real*>(bc.data());
  double ierr = 0;
  for (std::size_t i = 0; i < x.size(); ++i) ierr = std::max(ierr, static_cast<double>(std::abs(rg[i] - rc[i])));
  EXPECT_LE(ierr, tol * 6) << "inverse, shape " << shape[0] << "x" << shape[1] << " " << pg.layout_text();
}

TEST(FftGpu, MatchesCpu) {
  const Context& gpu = test::world();
  if (gpu.backend() != Backend::cuda) GTEST_SKIP() << "TESSERA_TEST_BACKEND is not cuda";
  const Context cpu = gpu.with_queue(kernels::Queue{});
  for (fft::Kind kind : {fft::Kind::c2c, fft::Kind::r2c}) {
    fft::Options slab, pencil, ret, axis0, axis1, swapped, swapped_pencil, swapped_axis0;
    pencil.decomposition = fft::Decomposition::pencil;
    swapped.output_order = swapped_pencil.output_order = swapped_axis0.output_order = fft::Order::swapped;
    swapped_pencil.decomposition = fft::Decomposition::pencil;
    swapped_axis0.axis = 0;
    ret.return_to_input_layout = true;
    ret.norm = fft::Norm::ortho;
    axis0.axis = 0;
    axis1.axis = 1;
    axis1.norm = fft::Norm::forward;
    for (std::vector<index_t> shape : {std::vector<index_t>{64, 64, 64}, {33, 17, 9}, {1, 5, 130}, {97, 3, 2}}) {
      compare<float>(gpu, cpu, shape, kind, slab);
      compare<double>(gpu, cpu, shape, kind, pencil);
      compare<double>(gpu, cpu, shape, kind, ret);
      compare<float>(gpu, cpu, shape, kind, swapped);
      compare<double>(gpu, cpu, shape, kind, swapped_pencil);
    }
    for (std::vector<index_t> shape : {std::vector<index_t>{256, 255}, {31, 1}, {1, 33}, {1000, 7}}) {
      compare<double>(gpu, cpu, shape, kind, slab);
      compare<float>(gpu, cpu, shape, kind, axis0);
      compare<double>(gpu, cpu, shape, kind, axis1);
      compare<double>(gpu, cpu, shape, kind, swapped);
      compare<float>(gpu, cpu, shape, kind, swapped_axis0);
    }
  }
}

}  // namespace
}  // namespace tessera
