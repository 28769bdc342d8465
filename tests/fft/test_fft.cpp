// The distributed FFT (fft.hpp) against numpy.fft: for every case of make_fft_cases.py's manifest
// (c2c and r2c, float and double, 2-D and 3-D over slabs, 3-D over pencils on every grid of the
// rank count, batched 1-D along either axis of a 2-D array, every norm, sizes the ranks do not
// divide and more ranks than an axis is long), each rank's block of the forward transform against
// numpy's, in the natural and the swapped output order, with the exchange that makes axis 0 whole
// in one piece and in chunks, and the inverse against the input. Bad
// plans are refused with a UsageError on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/framework/fft.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

struct Case {
  std::string name, kind, real, decomposition, norm;
  int axis = -1;
  bool ret = false;
  std::vector<index_t> shape;
  std::string input, output;
};

std::string cases_dir() {
  const char* d = std::getenv("TESSERA_FFT_CASES");
  return d ? d : TESSERA_FFT_CASES_DIR;
}

std::vector<Case> read_manifest() {
  std::ifstream f(cases_dir() + "/manifest.txt");
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    Case c;
    std::string shape;
    int ret = 0;
    in >> c.name >> c.kind >> c.real >> c.decomposition >> c.axis >> c.norm >> ret >> shape >> c.input >> c.output;
    c.ret = ret != 0;
    std::istringstream s(shape);
    std::string part;
    while (std::getline(s, part, ',')) c.shape.push_back(std::stoll(part));
    cases.push_back(c);
  }
  return cases;
}

template <class T>
std::vector<T> read_raw(const std::string& file) {
  std::ifstream f(cases_dir() + "/" + file, std::ios::binary | std::ios::ate);
  const auto bytes = static_cast<std::size_t>(f.tellg());
  std::vector<T> v(bytes / sizeof(T));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(bytes));
  return v;
}

// This rank's box of the row-major global array of `shape`.
template <class T>
std::vector<T> extract(const std::vector<T>& global, const std::vector<index_t>& shape, const fft::Box& b) {
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(b.count()));
  const index_t n1 = shape.size() > 1 ? shape[1] : 1, n2 = shape.size() > 2 ? shape[2] : 1;
  for (index_t i = 0; i < b.size[0]; ++i)
    for (index_t j = 0; j < b.size[1]; ++j)
      for (index_t k = 0; k < b.size[2]; ++k)
        out.push_back(global[static_cast<std::size_t>(((b.lo[0] + i) * n1 + b.lo[1] + j) * n2 + b.lo[2] + k)]);
  return out;
}

// The same box with axes 0 and 1 swapped in memory (fft::Order::swapped).
template <class T>
std::vector<T> extract_swapped(const std::vector<T>& global, const std::vector<index_t>& shape, const fft::Box& b) {
  const std::vector<T> natural = extract(global, shape, b);
  std::vector<T> out(natural.size());
  const index_t n0 = b.size[0], n1 = b.size[1], n2 = b.size[2];
  for (index_t i = 0; i < n0; ++i)
    for (index_t j = 0; j < n1; ++j)
      for (index_t k = 0; k < n2; ++k)
        out[static_cast<std::size_t>((j * n0 + i) * n2 + k)] = natural[static_cast<std::size_t>((i * n1 + j) * n2 + k)];
  return out;
}

template <class T>
T* to_backend(const Context& ctx, const std::vector<T>& host) {
  void* p = kernels::allocate(ctx.queue(), std::max<std::size_t>(16, host.size() * sizeof(T)));
  if (!host.empty()) kernels::copy_from_host(ctx.queue(), p, host.data(), host.size() * sizeof(T));
  return static_cast<T*>(p);
}
template <class T>
std::vector<T> to_host(const Context& ctx, const T* p, std::size_t n) {
  std::vector<T> host(n);
  if (n) kernels::copy_to_host(ctx.queue(), host.data(), p, n * sizeof(T));
  return host;
}

// max |got - want| <= tol * max |want| (and an absolute floor where the reference is all zero).
template <class A, class B>
::testing::AssertionResult close(const std::vector<A>& got, const std::vector<B>& want, double tol, double scale) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  double err = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(std::complex<double>(got[i]) - std::complex<double>(want[i]));
    if (e > err) err = e, at = i;
  }
  if (err <= tol * std::max(scale, 1e-300)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max error " << err << " at " << at << " above " << tol << " x " << scale;
}

template <class Real>
void run_case(const Context& ctx, const Case& c, int grid_rows, int grid_cols, fft::Order order, int chunks,
              fft::Effort effort = fft::Effort::estimate) {
  using C = std::complex<Real>;
  fft::Options o;
  o.decomposition = c.decomposition == "pencil" ? fft::Decomposition::pencil : fft::Decomposition::slab;
  o.grid_rows = grid_rows;
  o.grid_cols = grid_cols;
  o.axis = c.axis;
  o.norm = fft::parse_norm(c.norm);
  o.return_to_input_layout = c.ret;
  o.output_order = order;
  o.exchange_chunks = chunks;
  o.effort = effort;
  const bool r2c = c.kind == "r2c";
  fft::Plan<Real> plan(ctx, c.shape, r2c ? fft::Kind::r2c : fft::Kind::c2c, o);
  const fft::Box ib = plan.input_box(), ob = plan.output_box();
  const std::vector<std::complex<double>> ref =
      order == fft::Order::swapped ? extract_swapped(read_raw<std::complex<double>>(c.output), plan.output_shape(), ob)
                                   : extract(read_raw<std::complex<double>>(c.output), plan.output_shape(), ob);
  double scale = 0;
  for (const auto& v : read_raw<std::complex<double>>(c.output)) scale = std::max(scale, std::abs(v));
  double n = 1;
  for (index_t s : c.shape) n *= static_cast<double>(s);
  const double eps = std::numeric_limits<Real>::epsilon();
  const double tol = 8 * eps * (std::log2(n) + 1);
  const std::string what = c.name + " " + c.kind + " " + c.real + " " + c.decomposition + " axis " +
                           std::to_string(c.axis) + " " + c.norm + (c.ret ? " return" : "") + " grid " +
                           std::to_string(plan.grid().rows()) + "x" + std::to_string(plan.grid().cols()) + " " +
                           plan.layout_text() + " chunks " + std::to_string(chunks) +
                           (effort == fft::Effort::measure ? " measured" : "");
  C* out = to_backend(ctx, std::vector<C>(static_cast<std::size_t>(ob.count())));
  // The plan reused (it keeps its exchanges between calls): a second forward into another buffer,
  // then a third into the first, each checked.
  auto reused = [&](const void* in) {
    C* other = to_backend(ctx, std::vector<C>(static_cast<std::size_t>(ob.count())));
    plan.forward(in, other);
    EXPECT_TRUE(close(to_host(ctx, other, ref.size()), ref, tol, scale)) << what << " (second call, other output)";
    kernels::deallocate(ctx.queue(), other);
    plan.forward(in, out);
    EXPECT_TRUE(close(to_host(ctx, out, ref.size()), ref, tol, scale)) << what << " (third call)";
  };
  if (r2c) {
    const std::vector<Real> x = extract(read_raw<Real>(c.input), c.shape, ib);
    double xscale = 0;
    for (Real v : x) xscale = std::max(xscale, std::abs(static_cast<double>(v)));
    Real* in = to_backend(ctx, x);
    Real* back = to_backend(ctx, std::vector<Real>(x.size()));
    plan.forward(in, out);
    EXPECT_TRUE(close(to_host(ctx, out, ref.size()), ref, tol, scale)) << what;
    EXPECT_TRUE(to_host(ctx, in, x.size()) == x) << what << " (forward changed its input)";
    reused(in);
    plan.inverse(out, back);
    EXPECT_TRUE(close(to_host(ctx, back, x.size()), x, tol, 4.5)) << what << " (inverse)";
    EXPECT_TRUE(close(to_host(ctx, out, ref.size()), ref, tol, scale)) << what << " (inverse changed its input)";
    kernels::deallocate(ctx.queue(), in);
    kernels::deallocate(ctx.queue(), back);
  } else {
    const std::vector<C> x = extract(read_raw<C>(c.input), c.shape, ib);
    C* in = to_backend(ctx, x);
    C* back = to_backend(ctx, std::vector<C>(x.size()));
    plan.forward(in, out);
    EXPECT_TRUE(close(to_host(ctx, out, ref.size()), ref, tol, scale)) << what;
    EXPECT_TRUE(to_host(ctx, in, x.size()) == x) << what << " (forward changed its input)";
    reused(in);
    plan.inverse(out, back);
    EXPECT_TRUE(close(to_host(ctx, back, x.size()), x, tol, 6.5)) << what << " (inverse)";
    EXPECT_TRUE(close(to_host(ctx, out, ref.size()), ref, tol, scale)) << what << " (inverse changed its input)";
    kernels::deallocate(ctx.queue(), in);
    kernels::deallocate(ctx.queue(), back);
  }
  kernels::deallocate(ctx.queue(), out);
}

TEST(Fft, MatchesNumpy) {
  const Context& ctx = test::world();
  const std::vector<Case> cases = read_manifest();
  ASSERT_GT(cases.size(), 100u) << "no cases in " << cases_dir();
  int runs = 0;
  for (const Case& c : cases) {
    std::vector<std::pair<int, int>> grids = {{0, 0}};
    if (c.decomposition == "pencil") {
      grids.clear();
      for (int r = 1; r <= ctx.size(); ++r)
        if (ctx.size() % r == 0) grids.push_back({r, ctx.size() / r});
    }
    // Every case in the natural order, and in the swapped one where axis 0 is transformed last;
    // each with the exchange that makes axis 0 whole in one piece and in 3 chunks. The swapped order
    // also with its transposition in axis 0's transform (cpu) rather than the unpack; at one rank
    // each order also with axis 0's transform after the planes (cpu), in place, and the swapped
    // order with its transposition in place between them.
    std::vector<fft::Order> orders = {fft::Order::natural};
    if (!c.ret && c.axis != 1) orders.push_back(fft::Order::swapped);
    for (auto [r, g] : grids)
      for (fft::Order order : orders)
        for (int chunks : {1, 3}) {
          using fft::detail::CpuSchedule;
          std::vector<CpuSchedule> ways = {CpuSchedule::chosen};
          if (order == fft::Order::swapped) ways.push_back(CpuSchedule::transform);
          if (ctx.size() == 1) ways.push_back(CpuSchedule::panels);  // elsewhere as chosen
          if (ctx.size() == 1 && order == fft::Order::swapped) ways.push_back(CpuSchedule::in_place);
          for (CpuSchedule way : ways) {
            fft::detail::force_cpu_schedule(way);
            if (c.real == "float") run_case<float>(ctx, c, r, g, order, chunks);
            else run_case<double>(ctx, c, r, g, order, chunks);
            fft::detail::force_cpu_schedule(CpuSchedule::chosen);
            ++runs;
          }
        }
  }
  EXPECT_GE(runs, static_cast<int>(cases.size()));
}

// Measured planning (the cpu times its schedules on the rank's block and keeps the fastest): every
// fifth case, in each order, its choices checked as estimated planning's are.
TEST(Fft, MeasuredPlanningMatchesNumpy) {
  const Context& ctx = test::world();
  const std::vector<Case> cases = read_manifest();
  int runs = 0;
  for (std::size_t k = 0; k < cases.size(); k += 5) {
    const Case& c = cases[k];
    std::vector<fft::Order> orders = {fft::Order::natural};
    if (!c.ret && c.axis != 1) orders.push_back(fft::Order::swapped);
    for (fft::Order order : orders) {
      if (c.real == "float") run_case<float>(ctx, c, 0, 0, order, 1, fft::Effort::measure);
      else run_case<double>(ctx, c, 0, 0, order, 1, fft::Effort::measure);
      ++runs;
    }
  }
  EXPECT_GE(runs, 20);
}

// Plans a user gets wrong: refused on every rank with a message naming what was wrong.
TEST(Fft, RefusesBadPlans) {
  const Context& ctx = test::world();
  auto refused = [&](std::vector<index_t> shape, fft::Options o, const std::string& words) {
    try {
      fft::Plan<double> plan(ctx, shape, fft::Kind::c2c, o);
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "not refused: " << words;
  };
  fft::Options pencil;
  pencil.decomposition = fft::Decomposition::pencil;
  pencil.grid_rows = ctx.size() + 1;
  pencil.grid_cols = 1;
  refused({4, 4, 4}, pencil, "does not match");
  pencil.grid_rows = 0;
  pencil.grid_cols = 0;
  refused({4, 4}, pencil, "pencil decomposition takes a 3-D");
  fft::Options axis;
  axis.axis = 2;
  refused({4, 4}, axis, "outside");
  axis.axis = 0;
  refused({4, 4, 4}, axis, "takes a 2-D array");
  fft::Options swapped;
  swapped.output_order = fft::Order::swapped;
  swapped.return_to_input_layout = true;
  refused({4, 4, 4}, swapped, "swapped output order needs axis 0 transformed last");
  swapped.return_to_input_layout = false;
  swapped.axis = 1;
  refused({4, 4}, swapped, "batched 1-D transform along axis 1");
  fft::Options chunks;
  chunks.exchange_chunks = -1;
  refused({4, 4}, chunks, "exchange_chunks -1 is outside");
  chunks.exchange_chunks = 65;
  refused({4, 4}, chunks, "exchange_chunks 65 is outside");
  refused({4, 0}, {}, "shorter than 1");
  refused({4}, {}, "a plan takes 2 or 3");
  EXPECT_THROW(fft::parse_norm("unitary"), UsageError);
}

// Buffers off FFTW's alignment (8 bytes past a 64-byte boundary) give the same results as aligned
// ones, and the inverse leaves its input as it was.
TEST(Fft, UnalignedBuffers) {
  const Context& ctx = test::world();
  // The swapped order with its transposition in place (one rank, cpu) too: the steps after the
  // first then run on the caller's unaligned output, or through the plan's buffers.
  for (fft::Order order : {fft::Order::natural, fft::Order::swapped})
  for (fft::Kind kind : {fft::Kind::c2c, fft::Kind::r2c}) {
    fft::Options o;
    o.effort = fft::Effort::estimate;
    o.output_order = order;
    fft::detail::force_cpu_schedule(order == fft::Order::swapped ? fft::detail::CpuSchedule::in_place
                                                                 : fft::detail::CpuSchedule::chosen);
    fft::Plan<double> plan(ctx, {7, 6, 5}, kind, o);
    fft::detail::force_cpu_schedule(fft::detail::CpuSchedule::chosen);
    const std::size_t nin = static_cast<std::size_t>(plan.input_box().count()) * (kind == fft::Kind::r2c ? 1 : 2);
    const std::size_t nout = static_cast<std::size_t>(plan.output_box().count());
    std::vector<double> x(nin);
    for (std::size_t i = 0; i < nin; ++i) x[i] = std::sin(1.0 + static_cast<double>(i) + 10.0 * ctx.rank());
    const kernels::Queue& q = ctx.queue();
    char* raw_in = static_cast<char*>(kernels::allocate(q, nin * 8 + 64));
    char* raw_out = static_cast<char*>(kernels::allocate(q, nout * 16 + 64));
    double* in = to_backend(ctx, x);
    auto* out = to_backend(ctx, std::vector<std::complex<double>>(nout));
    plan.forward(in, out);
    const std::vector<std::complex<double>> want = to_host(ctx, out, nout);
    if (nin) kernels::copy_from_host(q, raw_in + 8, x.data(), nin * 8);
    plan.forward(raw_in + 8, reinterpret_cast<std::complex<double>*>(raw_out + 8));
    const std::vector<std::complex<double>> got = to_host(ctx, reinterpret_cast<std::complex<double>*>(raw_out + 8), nout);
    // Rounding apart (cuFFT may pick other kernels for other alignments): |X| <= sum |x| <= 210.
    EXPECT_TRUE(close(got, want, 1e-13, 210.0)) << "forward, unaligned";
    plan.inverse(reinterpret_cast<std::complex<double>*>(raw_out + 8), raw_in + 8);
    EXPECT_TRUE(close(to_host(ctx, reinterpret_cast<double*>(raw_in + 8), nin), x, 1e-14, 1.0)) << "inverse, unaligned";
    EXPECT_TRUE(close(to_host(ctx, reinterpret_cast<std::complex<double>*>(raw_out + 8), nout), got, 0.0, 1.0))
        << "the inverse changed its input";
    for (void* p : {static_cast<void*>(raw_in), static_cast<void*>(raw_out), static_cast<void*>(in), static_cast<void*>(out)})
      kernels::deallocate(q, p);
  }
}

TEST(Fft, NominalFlops) {
  EXPECT_DOUBLE_EQ(fft::nominal_flops({8, 4}, fft::Kind::c2c), 5.0 * 32 * 5);
  EXPECT_DOUBLE_EQ(fft::nominal_flops({8, 4}, fft::Kind::c2c, 0), 5.0 * 8 * 3 * 4);
  EXPECT_DOUBLE_EQ(fft::nominal_flops({8, 4}, fft::Kind::r2c), 5.0 * 32 * 5 / 2);
}

}  // namespace
}  // namespace tessera
