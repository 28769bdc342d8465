// Distributed fast Fourier transforms of 2-D and 3-D arrays, and batched 1-D transforms along one
// axis of a distributed 2-D array: complex-to-complex (c2c) and real-to-complex / complex-to-real
// (r2c / c2r), forward and inverse, in float and double, normalised as numpy.fft is.
//
// A Plan is made once for a shape, a transform kind, a decomposition and a set of options, and
// reused: it holds the local plans (FFTW on the cpu backend, cuFFT on the cuda backend), the work
// buffers and the schedule of exchanges. It lives in its own library, tessera_fft
// (Tessera::fft), so that only programs that use it load FFTW and cuFFT.
//
// Layouts. Every local block is a row-major array over a box of the global array, with the axes
// in their global order (axis 0 slowest); only which axes are cut over the ranks changes:
//   slab     (a 1-D grid of all P ranks): the input is cut along axis 0. The forward transform's
//            output is cut along axis 1 (FFTW_MPI_TRANSPOSED_OUT's distribution, without its swap
//            of axes in memory).
//   pencil   (an R x C grid, 3-D only): the input is cut along axis 0 over R and axis 1 over C,
//            axis 2 whole. The forward output is cut along axis 1 over R and axis 2 over C, axis 0
//            whole. A 3-D slab keeps at most min(n0, n1) ranks busy; a pencil keeps as many as
//            each pass has lines (n0 n1, n0 n2 or n1 n2). A 2-D transform has no pencil: its passes
//            have n0 and n1 lines, and a slab already gives every rank a pass can use a share.
// Options::return_to_input_layout makes the forward output take the input's distribution (one
// more exchange per exchange of the transform, in reverse). Options::output_order = Order::swapped
// keeps the forward output's block with axes 0 and 1 swapped in memory: a slab's output block is
// then [b1][n0][n2] (FFTW_MPI_TRANSPOSED_OUT's order: the global spectrum as an n1 x n0 x n2 array
// cut along its first axis), a pencil's [b1][n0][c2], one rank's [n1][n0][n2]. Where an exchange
// makes axis 0 whole, its unpack writes the swapped order and axis 0's transform runs over
// contiguous [n0][n2] panels (FFTW-MPI's schedule for that output); elsewhere (one rank, a pencil
// grid of one row) one transposition of the block follows the last transform (one rank on the cpu
// with measured planning: or the planes, axes 1 onwards, then axis 0's transform writing the
// swapped order, or a transposition and axis 0's transform in place, whichever times fastest). It
// needs axis 0 transformed last: not with return_to_input_layout or a batched 1-D transform along
// axis 1. The inverse transform takes the forward output's layout and order and returns the input's.
// input_box() and output_box() state the boxes; the cuts are Partition::block of each axis over
// the ranks of its grid dimension, so any sizes work, ranks with empty blocks included.
//
// r2c: the input is real with the shape given; the output is complex with the last transformed
// axis n/2 + 1 long (numpy.fft.rfftn's layout; rfft along the one axis of a batched 1-D plan).
// The inverse (c2r) takes that complex layout and returns the real array of the plan's shape.
//
// How it works. A forward transform is a schedule of local steps and exchanges: a batched 1-D
// transform along each axis that is whole on this rank (the real axis first, for r2c), and, when
// an axis still to transform is cut, one all-to-all (algorithms/exchange.hpp) that makes it whole
// and cuts an axis already transformed instead, among the ranks of the grid dimension that cuts
// it. Pieces are packed with kernels::copy_2d into the exchange's buffers and unpacked in the same
// way (a slab's forward exchange receives straight into the new block). A slab transform makes one
// exchange, a pencil transform two (one along each grid dimension; none along a dimension of one
// rank); local steps over trailing axes that follow one another are one multi-axis plan. The
// normalisation is one pass over the output. The inverse runs the same schedule backwards.
#pragma once

#include <array>
#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/dist_matrix.hpp"

namespace tessera::fft {

enum class Kind { c2c, r2c };  // r2c: forward r2c, inverse c2r
enum class Norm { backward, ortho, forward };  // numpy.fft's norm
enum class Decomposition { slab, pencil };
enum class Effort { estimate, measure };  // FFTW_ESTIMATE or FFTW_MEASURE (cuFFT: ignored)
enum class Order { natural, swapped };     // the forward output's axes in memory: global order, or 0 and 1 swapped

// "backward", "ortho", "forward" (UsageError naming the text otherwise), and back.
Norm parse_norm(const std::string& text);
const char* norm_name(Norm norm);

struct Options {
  Decomposition decomposition = Decomposition::slab;
  // Pencil: the process grid, rows x cols = the ranks (0 x 0: chosen by MPI_Dims_create).
  int grid_rows = 0, grid_cols = 0;
  // The one axis of a batched 1-D transform of a 2-D array (-1: all axes, a 2-D or 3-D transform).
  int axis = -1;
  Norm norm = Norm::backward;
  bool return_to_input_layout = false;
  Order output_order = Order::natural;
  // The exchange that makes axis 0 whole (a slab's, a pencil's second) and the local transforms
  // before it run in this many chunks of axis 0's rows, each chunk's exchange travelling while the
  // next chunk is transformed (the inverse: while the chunk before is). 1: one exchange after all
  // the transforms. 0: the backend's default (1 on the cpu, 4 under cuda). At most 64.
  int exchange_chunks = 0;
  Effort effort = Effort::measure;
};

// A box of the global array: per axis, the first global index and the length (axes beyond the
// array's rank are 0 and 1).
struct Box {
  std::array<index_t, 3> lo{0, 0, 0};
  std::array<index_t, 3> size{1, 1, 1};
  index_t count() const { return size[0] * size[1] * size[2]; }
};

// Seconds of one call, summed over its steps: local = the local transforms, the packs and the
// normalisation; communication = the exchanges; fixup = the unpacks; host = bookkeeping.
using tessera::PhaseTimes;

namespace detail {
class PlanImpl;
// The cpu backend's schedule where axis 0's c2c transform follows the exchange that makes axis 0
// whole in the swapped order, and where one plan would transform every axis (one rank):
//   chosen     measured planning times the ways on the rank's block and keeps the fastest (the
//              default; estimated planning takes `pass`);
//   transform  the swapped order's transposition in axis 0's transform, which reads the natural
//              order and writes the swapped one (one rank: after the planes, the transform of axes
//              1 onwards); one rank in the natural order: as pass;
//   pass       the transposition in the exchange's unpack; one rank: the one plan (and a pass of
//              the transposition after it);
//   panels     the transposition in the exchange's unpack; one rank: the planes (and a pass of the
//              transposition), then axis 0's transform in place;
//   in_place   as panels, but at one rank in the swapped order the transposition runs in place on
//              the planes' output (FFTW's, FFTW-MPI's one-rank schedule), where FFTW has a plan
//              for it.
// Plans made afterwards follow it, whatever the effort (tests run each). Not thread-safe.
enum class CpuSchedule { chosen, transform, pass, panels, in_place };
void force_cpu_schedule(CpuSchedule way);
}  // namespace detail

// Real: float or double.
template <class Real>
class Plan {
 public:
  using complex_type = std::complex<Real>;

  // shape: 2 or 3 global lengths, each >= 1. UsageError (the same on every rank, naming what was
  // wrong) for: a shape of another rank; a length below 1; a pencil decomposition of a 2-D array
  // or with a grid whose product is not the rank count; an axis outside the array or a batched
  // 1-D plan of a 3-D array; Order::swapped where axis 0 is not transformed last. Collective over ctx.
  Plan(const Context& ctx, std::vector<index_t> shape, Kind kind, const Options& options = {});
  ~Plan();
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;

  const std::vector<index_t>& shape() const;           // the real (r2c) or complex input's shape
  const std::vector<index_t>& output_shape() const;    // the spectrum's: the r2c axis n/2 + 1
  Kind kind() const;
  const Options& options() const;
  const ProcessGrid& grid() const;                      // slab: P x 1
  Box input_box() const;                                // this rank's block of the input
  Box output_box() const;                               // this rank's block of the forward output
                                                        // (global axes; Order::swapped: 0, 1 swapped in memory)
  // Which grid dimension cuts each axis of the input and of the output (-1: whole; 0: the grid's
  // rows, slab's only one; 1: the grid's columns), e.g. "[0,-1,-1] -> [-1,0,-1]".
  std::string layout_text() const;
  int exchanges_per_transform() const;

  // Forward: `in` holds input_box().count() elements (Real for r2c, complex_type for c2c), `out`
  // output_box().count() complex elements, both backend memory (device memory under cuda), not
  // overlapping. Collective over ctx.
  void forward(const void* in, complex_type* out, PhaseTimes* times = nullptr);
  // Inverse: `in` in the output layout, `out` in the input layout (Real for c2r). `in` is left as
  // it was. Collective over ctx.
  void inverse(const complex_type* in, void* out, PhaseTimes* times = nullptr);

 private:
  std::unique_ptr<detail::PlanImpl> impl_;
};

extern template class Plan<float>;
extern template class Plan<double>;

// 5 N log2 N over the transformed axes' product N (c2c), half of it for r2c: the flop count by
// which FFT rates are compared.
double nominal_flops(const std::vector<index_t>& shape, Kind kind, int axis = -1);

}  // namespace tessera::fft
