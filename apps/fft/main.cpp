// fft: the distributed FFT of a 2-D or 3-D array (fft.hpp): c2c forward or inverse, r2c, or c2r,
// over slabs or pencils, or a batched 1-D transform along one axis of a 2-D array, normalised as
// numpy.fft is. HDF5 in and out (complex numbers as h5py's compound {r, i}); --verify checks
// Parseval's identity and a forward + inverse round trip against stated rounding bounds.
#include <array>
#include <climits>
#include <cmath>
#include <complex>
#include <cstring>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app.hpp"
#include "perturb.hpp"
#include "tessera/framework/fft.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/memory.hpp"

namespace {

using namespace tessera;

enum class Op { c2c_forward, c2c_inverse, r2c, c2r };

std::string shape_text(const std::vector<index_t>& s) {
  std::string t;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) t += 'x';
    t += std::to_string(s[i]);
  }
  return t;
}

std::vector<index_t> parse_shape(std::string_view v) {
  std::vector<index_t> shape;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = v.find('x', start);
    shape.push_back(apps::parse_count(v.substr(start, x == std::string_view::npos ? std::string_view::npos : x - start),
                                      "--shape", 1, index_t(1) << 40));
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  if (shape.size() != 2 && shape.size() != 3)
    throw UsageError("--shape: '" + std::string(v) + "' has " + std::to_string(shape.size()) +
                     " axes; the FFT takes 2 or 3 (N0xN1 or N0xN1xN2)");
  return shape;
}

// Backend memory of `bytes` (at least 16), freed at the end of the scope.
struct Buffer {
  Buffer(const kernels::Queue& q, std::size_t bytes) : queue(q), data(kernels::allocate(q, std::max<std::size_t>(bytes, 16))) {}
  ~Buffer() { kernels::deallocate(queue, data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  kernels::Queue queue;
  void* data;
};

// A sum of many doubles to about 2 eps relative (Neumaier's compensated summation): Parseval's
// sums run over up to 2^30 and more terms, whose plain sum in double strays by about sqrt(N) eps
// (2.7e-13 at 256^3, five times the check's bound).
struct CompensatedSum {
  double sum = 0, compensation = 0;
  void add(double v) {
    const double t = sum + v;
    compensation += std::abs(sum) >= std::abs(v) ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  double value() const { return sum + compensation; }
};

// The ranks' compensated sums added on every rank in rank order, compensated: the same value on
// each. Collective.
double sum_over_ranks(const Context& ctx, const CompensatedSum& mine) {
  const std::vector<double> parts = ctx.comm().allgather(mine.sum), fixes = ctx.comm().allgather(mine.compensation);
  CompensatedSum all;
  for (std::size_t r = 0; r < parts.size(); ++r) {
    all.add(parts[r]);
    all.add(fixes[r]);
  }
  return all.value();
}

template <class T>
void to_backend(const kernels::Queue& q, void* dst, const std::vector<T>& host) {
  if (!host.empty()) kernels::copy_from_host(q, dst, host.data(), host.size() * sizeof(T));
}
template <class T>
std::vector<T> to_host(const kernels::Queue& q, const void* src, index_t count) {
  std::vector<T> host(static_cast<std::size_t>(count));
  if (count > 0) kernels::copy_to_host(q, host.data(), src, host.size() * sizeof(T));
  return host;
}

// Whether bin k of the r2c axis (of a real length n) is its own conjugate's: k = 0, and n/2 for an
// even n. Such bins count once in Parseval's sum, the others twice (their conjugates are left out).
bool self_conjugate(index_t k, index_t n) { return k == 0 || (n % 2 == 0 && k == n / 2); }

// The spectrum a c2r transform reads from S: F(c2r S). Off the self-conjugate planes of the r2c axis
// (k = 0, and k = n/2 for an even n) it is S; on them (S[m] + conj S[-m]) / 2, where -m negates the
// indices of the other transformed axes (modulo their lengths; none for a batched 1-D transform:
// then Re S). numpy's irfftn, FFTW and cuFFT all read S so: the part of S that no real array's
// spectrum has is dropped. S is this rank's block `box` of the spectrum of shape `spectral`
// (row-major, 3 axes with the missing ones of length 1). Collective: each bin on a plane goes to the
// rank that holds its mirror, as (that bin's global index, value).
template <class C>
std::vector<C> hermitian_part(const Context& ctx, const std::vector<C>& S, const fft::Box& box,
                              const std::array<index_t, 3>& spectral, int raxis, index_t rn, bool mirror_others) {
  struct Entry {
    index_t at;  // the receiver's bin, a global row-major index
    double re, im;
  };
  const std::vector<fft::Box> boxes = ctx.comm().allgather(box);
  const auto owns = [&](const fft::Box& b, const std::array<index_t, 3>& g) {
    for (int a = 0; a < 3; ++a)
      if (g[a] < b.lo[a] || g[a] >= b.lo[a] + b.size[a]) return false;
    return true;
  };
  const int ranks = ctx.size();
  std::vector<std::vector<Entry>> to(static_cast<std::size_t>(ranks));
  int owner = 0;
  std::size_t at = 0;
  std::array<index_t, 3> g{}, m{};
  for (index_t i = 0; i < box.size[0]; ++i)
    for (index_t j = 0; j < box.size[1]; ++j)
      for (index_t l = 0; l < box.size[2]; ++l, ++at) {
        g = {box.lo[0] + i, box.lo[1] + j, box.lo[2] + l};
        if (!self_conjugate(g[static_cast<std::size_t>(raxis)], rn)) continue;
        for (std::size_t a = 0; a < 3; ++a)
          m[a] = mirror_others && static_cast<int>(a) != raxis ? (spectral[a] - g[a]) % spectral[a] : g[a];
        for (int tried = 0; tried < ranks && !owns(boxes[static_cast<std::size_t>(owner)], m); ++tried)
          owner = (owner + 1) % ranks;
        TESSERA_ASSERT(owns(boxes[static_cast<std::size_t>(owner)], m), "hermitian_part: no rank holds a mirrored bin");
        to[static_cast<std::size_t>(owner)].push_back(
            {(m[0] * spectral[1] + m[1]) * spectral[2] + m[2], double(S[at].real()), double(S[at].imag())});
      }
  std::vector<int> send_counts(static_cast<std::size_t>(ranks)), recv_counts(static_cast<std::size_t>(ranks));
  std::vector<int> send_offsets(static_cast<std::size_t>(ranks)), recv_offsets(static_cast<std::size_t>(ranks));
  std::vector<Entry> send;
  for (int r = 0; r < ranks; ++r) {
    const auto& piece = to[static_cast<std::size_t>(r)];
    send_offsets[static_cast<std::size_t>(r)] = static_cast<int>(send.size());
    send_counts[static_cast<std::size_t>(r)] = static_cast<int>(piece.size());
    send.insert(send.end(), piece.begin(), piece.end());
  }
  // MPI counts are ints: a rank over the limit stops every rank (agreed, so that none waits).
  if (ctx.comm().allreduce<std::int32_t>(send.size() > static_cast<std::size_t>(INT_MAX) ? 1 : 0, ReduceOp::max) != 0)
    throw UsageError("--verify: the self-conjugate planes of a c2r transform this large are beyond the check");
  ctx.comm().alltoall(send_counts.data(), 1, recv_counts.data());
  std::size_t total = 0;
  for (int r = 0; r < ranks; ++r) {
    recv_offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += static_cast<std::size_t>(recv_counts[static_cast<std::size_t>(r)]);
  }
  std::vector<Entry> arrived(total);
  MPI_Datatype entry_type = MPI_DATATYPE_NULL;
  TESSERA_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(sizeof(Entry)), MPI_BYTE, &entry_type));
  TESSERA_MPI_CHECK(MPI_Type_commit(&entry_type));
  TESSERA_MPI_CHECK(MPI_Alltoallv(send.data(), send_counts.data(), send_offsets.data(), entry_type, arrived.data(),
                                  recv_counts.data(), recv_offsets.data(), entry_type, ctx.comm().get()));
  TESSERA_MPI_CHECK(MPI_Type_free(&entry_type));
  std::vector<C> out = S;
  for (const Entry& e : arrived) {
    const index_t g0 = e.at / (spectral[1] * spectral[2]), g1 = e.at / spectral[2] % spectral[1], g2 = e.at % spectral[2];
    TESSERA_ASSERT(owns(box, {g0, g1, g2}), "hermitian_part: a bin arrived at a rank that does not hold it");
    const std::size_t k = static_cast<std::size_t>(((g0 - box.lo[0]) * box.size[1] + g1 - box.lo[1]) * box.size[2] + g2 - box.lo[2]);
    using R = typename C::value_type;
    out[k] = C(static_cast<R>((double(S[k].real()) + e.re) / 2), static_cast<R>((double(S[k].imag()) - e.im) / 2));
  }
  return out;
}

std::vector<index_t> box_start(const fft::Box& b, std::size_t ndim) { return {b.lo.begin(), b.lo.begin() + static_cast<long>(ndim)}; }
std::vector<index_t> box_count(const fft::Box& b, std::size_t ndim) { return {b.size.begin(), b.size.begin() + static_cast<long>(ndim)}; }

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::apps;
  App app(argc, argv, "tessera-fft",
          "The distributed FFT of a 2-D or 3-D array: c2c, r2c or c2r, over slabs or pencils, normalised as numpy.fft is.",
          false);
  auto& parser = app.parser();
  std::vector<index_t> shape = {256, 256, 256};
  std::string kind_text = "c2c";
  bool inverse = false;
  fft::Options po;
  std::optional<index_t> real_length;
  bool complex_dtype = true, single = false;  // the generated input's type
  parser.add_option("--shape", "N0xN1[xN2]", "the generated array's shape (default 256x256x256); with --input, the file's",
                    [&](std::string_view v) { shape = parse_shape(v); });
  parser.add_option("--kind", "c2c|r2c|c2r",
                    "c2c (complex input), r2c (real input, output's last transformed axis n/2 + 1), c2r (the inverse "
                    "of r2c; complex input) (default: c2c, or from the --input file's type: r2c for real data)",
                    [&](std::string_view v) {
                      if (v != "c2c" && v != "r2c" && v != "c2r")
                        throw UsageError("--kind: unknown kind '" + std::string(v) + "' (expected c2c, r2c or c2r)");
                      kind_text = std::string(v);
                    });
  parser.add_switch("--inverse", "c2c: the inverse transform (numpy.fft.ifftn)", &inverse);
  parser.add_option("--norm", "backward|ortho|forward", "numpy.fft's normalisation (default backward)",
                    [&](std::string_view v) {
                      try {
                        po.norm = fft::parse_norm(std::string(v));
                      } catch (const UsageError& e) {
                        std::string what = e.what();
                        if (what.starts_with("fft: ")) what = what.substr(5);
                        throw UsageError("--norm: " + what);
                      }
                    });
  parser.add_option("--decomposition", "slab|pencil",
                    "slab: axis 0 cut over the ranks; pencil (3-D): axes 0 and 1 over an R x C grid (default slab)",
                    [&](std::string_view v) {
                      if (v == "slab") po.decomposition = fft::Decomposition::slab;
                      else if (v == "pencil") po.decomposition = fft::Decomposition::pencil;
                      else throw UsageError("--decomposition: unknown decomposition '" + std::string(v) + "' (expected slab or pencil)");
                    });
  parser.add_option("--grid", "RxC", "the pencil decomposition's process grid, R * C = ranks (default: MPI_Dims_create)",
                    [&](std::string_view v) {
                      const auto x = v.find('x');
                      if (x == std::string_view::npos)
                        throw UsageError("--grid: expected RxC (e.g. 2x3), got '" + std::string(v) + "'");
                      po.grid_rows = static_cast<int>(parse_integer(v.substr(0, x), "--grid", 1, 1 << 24));
                      po.grid_cols = static_cast<int>(parse_integer(v.substr(x + 1), "--grid", 1, 1 << 24));
                    });
  parser.add_option("--axis", "A", "a batched 1-D transform along axis A (0 or 1) of a 2-D array (default: all axes)",
                    [&](std::string_view v) { po.axis = static_cast<int>(parse_integer(v, "--axis", 0, 1)); });
  parser.add_option("--layout", "transposed|input",
                    "the forward output's distribution: transposed (the plan's, default) or the input's",
                    [&](std::string_view v) {
                      if (v == "transposed") po.return_to_input_layout = false;
                      else if (v == "input") po.return_to_input_layout = true;
                      else throw UsageError("--layout: unknown layout '" + std::string(v) + "' (expected transposed or input)");
                    });
  parser.add_option("--real-length", "N", "c2r: the real output's length along the last transformed axis (default 2 (m - 1))",
                    [&](std::string_view v) { real_length = parse_count(v, "--real-length", 1, index_t(1) << 40); });
  parser.add_option("--effort", "estimate|measure", "FFTW's planning on the cpu backend (default estimate)",
                    [&](std::string_view v) {
                      if (v == "estimate") po.effort = fft::Effort::estimate;
                      else if (v == "measure") po.effort = fft::Effort::measure;
                      else throw UsageError("--effort: unknown effort '" + std::string(v) + "' (expected estimate or measure)");
                    });
  po.effort = fft::Effort::estimate;
  parser.add_option("--dtype", "float32|float64|complex64|complex128",
                    "the generated input's type (default complex128, float64 for r2c); with --input, the file's",
                    [&](std::string_view v) {
                      if (v == "float32" || v == "float64" || v == "complex64" || v == "complex128") {
                        complex_dtype = v.starts_with("complex");
                        single = v == "float32" || v == "complex64";
                      } else {
                        throw UsageError("--dtype: unknown dtype '" + std::string(v) +
                                         "' (expected float32, float64, complex64 or complex128)");
                      }
                    });

  return app.run([&](const Context& ctx) -> int {
    const CommonOptions& o = app.options();
    std::string input = "generated from seed " + std::to_string(o.seed);
    std::optional<io::DatasetInfo> info;
    if (o.input) {
      info = for_flag("--input", [&] { return io::probe_numeric_or_complex(ctx, *o.input); });
      if (info->shape.size() != 2 && info->shape.size() != 3)
        throw UsageError("--input: dataset '" + o.input->dataset + "' in '" + o.input->file + "' has " +
                         std::to_string(info->shape.size()) + " axes (" + shape_text(info->shape) +
                         "); the FFT takes 2 or 3");
      for (index_t s : info->shape)
        if (s < 1)
          throw UsageError("--input: dataset '" + o.input->dataset + "' in '" + o.input->file + "' is " +
                           shape_text(info->shape) + "; every axis needs at least 1 element");
      if (parser.given("--shape") && shape != info->shape)
        throw UsageError("--shape: " + shape_text(shape) + " does not match dataset '" + o.input->dataset + "' in '" +
                         o.input->file + "', which is " + shape_text(info->shape));
      if (parser.given("--dtype"))
        throw UsageError("--dtype: the input's type is the file's (" + info->type_name + ")");
      shape = info->shape;
      complex_dtype = info->is_complex;
      single = info->dtype == io::DType::float32;
      if (!info->is_complex && info->dtype != io::DType::float32 && info->dtype != io::DType::float64)
        throw UsageError("--input: dataset '" + o.input->dataset + "' in '" + o.input->file + "' holds " +
                         info->type_name + "; the FFT takes float32, float64, complex64 or complex128");
      if (!parser.given("--kind") && !info->is_complex) kind_text = "r2c";
      input = o.input->str() + " (" + info->type_name + ")";
    } else if (!parser.given("--dtype")) {
      complex_dtype = kind_text != "r2c";
    }
    const Op op = kind_text == "r2c" ? Op::r2c : kind_text == "c2r" ? Op::c2r : inverse ? Op::c2c_inverse : Op::c2c_forward;
    if (inverse && op != Op::c2c_inverse) throw UsageError("--inverse: takes --kind c2c (c2r is the inverse of r2c)");
    if (real_length && op != Op::c2r) throw UsageError("--real-length: takes --kind c2r");
    if (op == Op::r2c && complex_dtype)
      throw UsageError(std::string(o.input ? "--input" : "--dtype") + ": r2c takes real data (float32 or float64)");
    if (op != Op::r2c && !complex_dtype)
      throw UsageError(std::string(o.input ? "--input" : "--dtype") + ": " + kind_text + " takes complex data (complex64 or complex128)");
    // The plan's shape: the real array's for r2c and c2r. c2r's input holds n/2 + 1 along the last
    // transformed axis, and n must agree with it.
    std::vector<index_t> plan_shape = shape;
    if (op == Op::c2r) {
      if (po.axis >= static_cast<int>(shape.size())) throw UsageError("--axis: " + std::to_string(po.axis) + " is outside the array");
      const std::size_t last = po.axis >= 0 ? static_cast<std::size_t>(po.axis) : shape.size() - 1;
      const index_t m = shape[last];
      const index_t n = real_length.value_or(2 * (m - 1));
      if (n < 1 || n / 2 + 1 != m)
        throw UsageError(real_length ? "--real-length: c2r to " + std::to_string(n) + " real values along axis " +
                                           std::to_string(last) + " takes " + std::to_string(n / 2 + 1) +
                                           " complex values (n/2 + 1), not the input's " + std::to_string(m)
                                     : std::string(o.input ? "--input" : "--shape") + ": c2r of " + std::to_string(m) +
                                           " complex value along axis " + std::to_string(last) +
                                           " has no default real length; give --real-length 1");
      plan_shape[last] = n;
    }
    const char* shape_flag = o.input ? "--input" : "--shape";
    index_t total_elements = 0;
    {
      const index_t rest = plan_shape.size() > 2 ? checked_elements(plan_shape[1], plan_shape[2], shape_flag) : plan_shape[1];
      total_elements = checked_elements(plan_shape[0], rest, shape_flag);
    }

    const auto run = [&]<class Real>() -> int {
      using C = std::complex<Real>;
      const fft::Kind kind = op == Op::r2c || op == Op::c2r ? fft::Kind::r2c : fft::Kind::c2c;
      // A plan the ranks cannot make: the flag that asked for it.
      const std::string plan_flag = parser.given("--grid") ? "--grid"
                                    : parser.given("--axis") ? "--axis"
                                    : parser.given("--decomposition") ? "--decomposition"
                                    : o.input ? "--input" : "--shape";
      {
        // What a rank holds at least: its share of x and of X (the work buffers, the exchange's and
        // cuFFT's are left out, so that no run that fits is refused).
        const double share = std::ceil(static_cast<double>(total_elements) / ctx.size());
        const double spectral_share = kind == fft::Kind::r2c ? share / 2 : share;  // complex, about half for r2c
        const double bytes = share * (kind == fft::Kind::r2c ? sizeof(Real) : sizeof(C)) + spectral_share * sizeof(C);
        const std::size_t held = bytes < 1.8e19 ? static_cast<std::size_t>(bytes) : std::numeric_limits<std::size_t>::max();
        require_memory(ctx, held,
                       std::string(shape_flag) + ": the transform of " + shape_text(plan_shape) + " " +
                           (sizeof(Real) == 4 ? "complex64" : "complex128") + " elements (its input and output)");
      }
      const Perturbation perturbation = test_perturbation(app, ctx, {Perturbation::Kind::add, Perturbation::Kind::relative});
      std::optional<fft::Plan<Real>> made;
      try {
        made.emplace(ctx, plan_shape, kind, po);
      } catch (const UsageError& e) {
        std::string what = e.what();
        if (what.starts_with("fft: ")) what = what.substr(5);
        throw UsageError(plan_flag + ": " + what);
      }
      fft::Plan<Real>& plan = *made;
      const kernels::Queue& q = ctx.queue();
      const std::size_t nd = plan_shape.size();
      const bool forward = op == Op::c2c_forward || op == Op::r2c;
      // The real-side (x) and spectral-side (X) blocks; the run reads one and writes the other.
      const fft::Box xb = plan.input_box(), sb = plan.output_box();
      const bool real_x = kind == fft::Kind::r2c;
      const std::size_t x_elem = real_x ? sizeof(Real) : sizeof(C);
      Buffer x(q, static_cast<std::size_t>(xb.count()) * x_elem), s(q, static_cast<std::size_t>(sb.count()) * sizeof(C));
      const fft::Box& in_box = forward ? xb : sb;
      const std::vector<index_t>& in_shape = forward ? plan.shape() : plan.output_shape();
      void* in_data = forward ? x.data : s.data;
      const bool in_complex = !forward || !real_x;
      if (o.input) {
        const io::H5Type element = in_complex ? io::h5_type_of<C>() : io::h5_type_of<Real>();
        const std::vector<unsigned char> block = for_flag("--input", [&] {
          return io::read_box(ctx, *o.input, *info, element, box_start(in_box, nd), box_count(in_box, nd));
        });
        if (!block.empty()) kernels::copy_from_host(q, in_data, block.data(), block.size());
      } else {
        // Element k (row-major global index) of the generated input: counter values 2k and 2k + 1
        // (real, imaginary), or k (real data), whatever the ranks.
        const index_t n1 = in_shape[1], n2 = nd > 2 ? in_shape[2] : 1;
        std::vector<Real> host(static_cast<std::size_t>(in_box.count()) * (in_complex ? 2 : 1));
        std::size_t at = 0;
        for (index_t i = 0; i < in_box.size[0]; ++i)
          for (index_t j = 0; j < in_box.size[1]; ++j)
            for (index_t l = 0; l < in_box.size[2]; ++l) {
              const auto k = static_cast<std::uint64_t>(((in_box.lo[0] + i) * n1 + in_box.lo[1] + j) * n2 + in_box.lo[2] + l);
              if (in_complex) {
                host[at++] = counter_value<Real>(o.seed, 2 * k);
                host[at++] = counter_value<Real>(o.seed, 2 * k + 1);
              } else {
                host[at++] = counter_value<Real>(o.seed, k);
              }
            }
        to_backend(q, in_data, host);
      }
      const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) {
        if (forward) plan.forward(x.data, static_cast<C*>(s.data), times);
        else plan.inverse(static_cast<const C*>(s.data), x.data, times);
      });
      if (perturbation) {
        // One element of the output (row-major global index) times 1 + R, or plus X (on the real part).
        const fft::Box& ob = forward ? sb : xb;
        const std::vector<index_t>& oshape = forward ? plan.output_shape() : plan.shape();
        const index_t n1 = oshape[1], n2 = nd > 2 ? oshape[2] : 1;
        const auto perturb = [&]<class E>(void* data) {
          std::vector<E> block = to_host<E>(q, data, ob.count());
          double largest = -1;
          index_t at = -1;
          std::size_t k = 0;
          for (index_t i = 0; i < ob.size[0]; ++i)
            for (index_t j = 0; j < ob.size[1]; ++j)
              for (index_t l = 0; l < ob.size[2]; ++l, ++k)
                if (std::abs(block[k]) > largest) {
                  largest = std::abs(block[k]);
                  at = ((ob.lo[0] + i) * n1 + ob.lo[1] + j) * n2 + ob.lo[2] + l;
                }
          const index_t target = perturbed_index(ctx, perturbation, oshape[0] * n1 * n2, largest, at);
          const index_t g[3] = {target / (n1 * n2), target / n2 % n1, target % n2};
          bool mine = true;
          for (int a = 0; a < 3; ++a) mine = mine && g[a] >= ob.lo[a] && g[a] < ob.lo[a] + ob.size[a];
          bool same = false;
          if (mine) {
            E& e = block[static_cast<std::size_t>(((g[0] - ob.lo[0]) * ob.size[1] + g[1] - ob.lo[1]) * ob.size[2] + g[2] - ob.lo[2])];
            const E before = e;
            e = perturbation.kind == Perturbation::Kind::relative ? e * static_cast<Real>(1 + perturbation.amount)
                                                                  : e + static_cast<Real>(perturbation.amount);
            same = std::memcmp(&before, &e, sizeof(E)) == 0;
            to_backend(q, data, block);
          }
          if (ctx.comm().allreduce<std::int32_t>(same ? 1 : 0, ReduceOp::max) != 0)
            throw UsageError("TESSERA_TEST_PERTURB='" + perturbation.spec + "': the element it names does not change");
        };
        if (forward || !real_x) perturb.template operator()<C>(forward ? s.data : x.data);
        else perturb.template operator()<Real>(x.data);
      }

      Report r;
      r.input = input;
      r.dtype = single ? io::DType::float32 : io::DType::float64;
      r.dtype_name = in_complex ? (single ? "complex64" : "complex128") : (single ? "float32" : "float64");
      r.sizes["n0"] = static_cast<long long>(plan_shape[0]);
      r.sizes["n1"] = static_cast<long long>(plan_shape[1]);
      if (nd > 2) r.sizes["n2"] = static_cast<long long>(plan_shape[2]);
      r.parameters["kind"] = kind_text;
      r.parameters["direction"] = forward ? "forward" : "inverse";
      r.parameters["norm"] = fft::norm_name(po.norm);
      r.parameters["decomposition"] = po.decomposition == fft::Decomposition::pencil ? "pencil" : "slab";
      const std::string grid = std::to_string(plan.grid().rows()) + "x" + std::to_string(plan.grid().cols());
      r.parameters["grid"] = grid;
      r.parameters["axis"] = static_cast<long long>(po.axis);
      r.parameters["layout"] = po.return_to_input_layout ? "input" : "transposed";
      r.parameters["cuts"] = plan.layout_text();
      r.parameters["output_shape"] = shape_text(forward ? plan.output_shape() : plan.shape());
      Json phase_names = Json::object();
      phase_names["local"] = "local FFTs, packs, normalisation";
      phase_names["communication"] = "exchanges";
      phase_names["fixup"] = "unpacks";
      phase_names["host"] = "bookkeeping";
      r.parameters["phase_names"] = phase_names;
      r.rows.emplace_back("transform", kind_text + (forward ? " forward" : " inverse") + ", norm " + fft::norm_name(po.norm) +
                                           ", " + (po.axis >= 0 ? "axis " + std::to_string(po.axis) : std::string("all axes")));
      r.rows.emplace_back("decomposition", std::string(po.decomposition == fft::Decomposition::pencil ? "pencil " : "slab ") +
                                               grid + ", cuts " + plan.layout_text() +
                                               ", " + std::to_string(plan.exchanges_per_transform()) + " exchange(s)");
      r.rows.emplace_back("phases", "local " + format_seconds(timing.phases.local) + ", exchange " +
                                        format_seconds(timing.phases.communication) + ", unpack " +
                                        format_seconds(timing.phases.fixup));
      r.result_text = std::string(forward ? "spectrum " : "array ") + shape_text(forward ? plan.output_shape() : plan.shape());
      r.result = r.result_text;
      r.timing = timing;
      const double flops = fft::nominal_flops(plan_shape, kind, po.axis);
      r.throughput = timing.total > 0 ? flops / timing.total / 1e9 : 0;
      r.throughput_unit = "GFLOP/s";
      r.throughput_basis = "5 N log2 N per transform of N points (half for r2c and c2r)";

      if (o.verify) {
        // x: the real-side array (the input of a forward run, the output of an inverse one); X: the
        // spectral side, the run's output in a forward run and, in an inverse one, the spectrum the run
        // read: its input S, or for c2r S's Hermitian part (hermitian_part: what c2r reads of it).
        // Parseval: sum |x|^2 = w sum' |X|^2, w = 1/N (backward), 1 (ortho), N (forward), sum'
        // counting the r2c axis's conjugate halves twice. Round trip, from the run's input to its
        // output and back: F^-1 X = x (forward), F x = X (inverse). Bounds: 10 eps log2 N, relative to
        // the run's input (its sum of squares and its largest element).
        const int raxis = real_x ? (po.axis >= 0 ? po.axis : static_cast<int>(nd) - 1) : -1;
        const index_t rn = raxis >= 0 ? plan_shape[static_cast<std::size_t>(raxis)] : 0;
        Buffer back(q, static_cast<std::size_t>(forward ? xb.count() * static_cast<index_t>(x_elem) : sb.count() * static_cast<index_t>(sizeof(C))));
        if (forward) plan.inverse(static_cast<const C*>(s.data), back.data);
        else plan.forward(x.data, static_cast<C*>(back.data));
        double n_total = 1;
        if (po.axis >= 0) n_total = static_cast<double>(plan_shape[static_cast<std::size_t>(po.axis)]);
        else
          for (index_t v : plan_shape) n_total *= static_cast<double>(v);
        const double eps = std::numeric_limits<Real>::epsilon();
        const double bound = 10 * eps * std::max(1.0, std::log2(n_total));
        std::vector<C> X = to_host<C>(q, s.data, sb.count());
        // Elements of the run's input that are NaN or infinite (x in a forward run, counted below as x
        // is read; the spectrum in an inverse one): every element of the other side mixes them in.
        std::int64_t non_finite = 0;
        double hermitian_gap = 0;  // c2r: how far S lies from its Hermitian part
        // The spectrum as the run read it (an inverse run's input S, before its Hermitian part is
        // taken): the transforms round relative to it, so the bounds scale with it.
        const auto weighted_sum = [&](const std::vector<C>& spectrum) {
          CompensatedSum sum;
          std::size_t at = 0;
          for (index_t i = 0; i < sb.size[0]; ++i)
            for (index_t j = 0; j < sb.size[1]; ++j)
              for (index_t l = 0; l < sb.size[2]; ++l) {
                double w = 1;
                if (raxis >= 0) {
                  const index_t k = sb.lo[static_cast<std::size_t>(raxis)] + (raxis == 0 ? i : raxis == 1 ? j : l);
                  w = self_conjugate(k, rn) ? 1 : 2;
                }
                sum.add(w * std::norm(std::complex<double>(spectrum[at++])));
              }
          return sum;
        };
        double Smax = 0;
        CompensatedSum sum_S;
        if (!forward) {
          for (const C& v : X) {
            non_finite += std::isfinite(v.real()) && std::isfinite(v.imag()) ? 0 : 1;
            Smax = std::max(Smax, std::abs(std::complex<double>(v)));
          }
          sum_S = weighted_sum(X);
          if (real_x) {
            std::array<index_t, 3> spectral{1, 1, 1};
            for (std::size_t a = 0; a < nd; ++a) spectral[a] = plan.output_shape()[a];
            std::vector<C> H = hermitian_part(ctx, X, sb, spectral, raxis, rn, po.axis < 0);
            for (std::size_t i = 0; i < X.size(); ++i)
              hermitian_gap = std::max(hermitian_gap, std::abs(std::complex<double>(X[i]) - std::complex<double>(H[i])));
            X = std::move(H);
          }
        }
        // The round trip's largest error; a NaN counts as infinite, so that it survives the max here and
        // across the ranks (a NaN the transforms made from a finite input fails the check).
        CompensatedSum sum_x, sum_X;
        double xmax = 0, err = 0;
        const auto worse = [&err](double e) { err = std::max(err, std::isnan(e) ? std::numeric_limits<double>::infinity() : e); };
        if (real_x) {
          const std::vector<Real> a = to_host<Real>(q, x.data, xb.count());
          const std::vector<Real> b = forward ? to_host<Real>(q, back.data, xb.count()) : std::vector<Real>();
          for (std::size_t i = 0; i < a.size(); ++i) {
            if (forward) non_finite += std::isfinite(a[i]) ? 0 : 1;
            sum_x.add(double(a[i]) * double(a[i]));
            xmax = std::max(xmax, std::abs(double(a[i])));
            if (forward) worse(std::abs(double(a[i]) - double(b[i])));
          }
        } else {
          const std::vector<C> a = to_host<C>(q, x.data, xb.count());
          const std::vector<C> b = forward ? to_host<C>(q, back.data, xb.count()) : std::vector<C>();
          for (std::size_t i = 0; i < a.size(); ++i) {
            if (forward) non_finite += std::isfinite(a[i].real()) && std::isfinite(a[i].imag()) ? 0 : 1;
            sum_x.add(std::norm(std::complex<double>(a[i])));
            xmax = std::max(xmax, std::abs(std::complex<double>(a[i])));
            if (forward) worse(std::abs(std::complex<double>(a[i]) - std::complex<double>(b[i])));
          }
        }
        if (!forward) {
          const std::vector<C> b = to_host<C>(q, back.data, sb.count());
          for (std::size_t i = 0; i < X.size(); ++i) worse(std::abs(std::complex<double>(X[i]) - std::complex<double>(b[i])));
        }
        sum_X = weighted_sum(X);
        const double sx = sum_over_ranks(ctx, sum_x), sX = sum_over_ranks(ctx, sum_X);
        const double sS = forward ? sX : sum_over_ranks(ctx, sum_S);
        xmax = ctx.comm().allreduce(xmax, ReduceOp::max);
        Smax = ctx.comm().allreduce(Smax, ReduceOp::max);
        err = ctx.comm().allreduce(err, ReduceOp::max);
        hermitian_gap = ctx.comm().allreduce(hermitian_gap, ReduceOp::max);
        const double w = po.norm == fft::Norm::backward ? 1 / n_total : po.norm == fft::Norm::ortho ? 1 : n_total;
        const std::int64_t non_finite_all = ctx.comm().allreduce(non_finite, ReduceOp::sum);
        // Relative to the run's input: sum |x|^2 (forward) or w sum |S|^2 (inverse; S's part that c2r
        // drops rounds into x all the same), and max |x| or max |S|.
        const double scale = forward ? sx : std::max(sx, w * sS);
        const double parseval = scale > 0 ? std::abs(sx - w * sX) / scale : std::abs(w * sX);
        const double start_max = forward ? xmax : Smax;
        const double round_trip = start_max > 0 ? err / start_max : err;
        Verdict v;
        if (non_finite_all > 0) {
          // Every element of the transform mixes every element of x: nothing can be compared.
          v.checked = false;
          v.detail = std::to_string(non_finite_all) + " element(s) of the input are NaN or infinite, and every element of its "
                     "transform mixes them: neither identity can be checked";
        } else if (!std::isfinite(sx) || !std::isfinite(sX) || !std::isfinite(sS)) {
          v.checked = false;
          v.detail = "sum |x|^2 or sum |X|^2 passes the largest double: neither identity can be checked";
        } else {
          v.ok = parseval <= bound && round_trip <= bound;
          v.detail = "Parseval: relative difference " + format_number(parseval) + ", round trip: " +
                     (forward ? "max |F^-1 X - x| / max |x| " : "max |F x - X| / max |input| ") + format_number(round_trip) +
                     " (bound for both: 10 eps log2 N = " + format_number(bound) + ")";
          if (real_x && !forward && hermitian_gap > bound * Smax)
            v.detail += "; the input is no real array's spectrum: c2r read its Hermitian part X, " +
                        format_number(hermitian_gap / std::max(Smax, 1e-300)) + " of max |input| away from it on the "
                        "self-conjugate planes";
        }
        r.verdict = v;
      }

      const bool wrong = r.verdict && !r.verdict->ok;
      if (o.output && !wrong) {
        auto attributes = output_attributes(app, ctx, r.dtype);
        const bool out_complex = forward || !real_x;
        for (auto& [key, value] : attributes.extra)
          if (key == "dtype") value = out_complex ? (single ? "complex64" : "complex128") : (single ? "float32" : "float64");
        attributes.extra.emplace_back("kind", kind_text);
        attributes.extra.emplace_back("direction", forward ? "forward" : "inverse");
        attributes.extra.emplace_back("norm", fft::norm_name(po.norm));
        const fft::Box& ob = forward ? sb : xb;
        const std::vector<index_t>& oshape = forward ? plan.output_shape() : plan.shape();
        const void* odata = forward ? s.data : x.data;
        const std::size_t obytes = static_cast<std::size_t>(ob.count()) * (out_complex ? sizeof(C) : sizeof(Real));
        std::vector<unsigned char> host(obytes);
        if (obytes) kernels::copy_to_host(q, host.data(), odata, obytes);
        for_flag("--output", [&] {
          io::OutputFile file(ctx, o.output->file);
          file.add_box(o.output->dataset, out_complex ? io::h5_type_of<C>() : io::h5_type_of<Real>(), oshape,
                       box_start(ob, nd), box_count(ob, nd), host.data(), attributes);
          file.commit();
        });
      }
      publish(app, ctx, r);
      return wrong ? kExitVerifyFailed : kExitOk;
    };
    return single ? run.operator()<float>() : run.operator()<double>();
  });
}
