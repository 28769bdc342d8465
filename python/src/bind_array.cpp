// tessera.Context and tessera.DistArray: sessions, arrays made from NumPy, CuPy or PyTorch blocks,
// by generators and from HDF5 files, their layout, their local blocks without a copy, and the
// explicit ways back to NumPy.
#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "array.hpp"
#include "bind.hpp"
#include "dlpack.hpp"
#include "ops.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <mpi4py/mpi4py.h>

namespace tessera::python {

// ---------------------------------------------------------------------------------------------
// Array

Array::~Array() {
  {
    const Call call(*session_, /*check_failure=*/false);
    vector_ = AnyVector{};
    matrix_ = AnyMatrix{};
  }
  // What kept a borrowed block alive goes after the block, with the GIL held (an array may also
  // end inside a call, where the GIL is released).
  if (python_owner_ || native_owner_) {
    py::gil_scoped_acquire gil;
    python_owner_ = py::object();
    native_owner_.reset();
  }
}

void* Array::local_data() {
  if (ndim_ == 1) return visit_vector([](auto& a) { return static_cast<void*>(a.local_data()); });
  return visit_matrix([](auto& m) { return static_cast<void*>(m.local_data()); });
}

index_t Array::local_rows() {
  if (ndim_ == 1) return visit_vector([](auto& a) { return a.local_size(); });
  return visit_matrix([](auto& m) { return m.local_rows(); });
}

index_t Array::local_cols() {
  if (ndim_ == 1) return 1;
  return visit_matrix([](auto& m) { return m.local_cols(); });
}

const char* dtype_name(Dtype dtype) {
  return dispatch(dtype, []<class T>() { return DtypeInfo<T>::name; });
}

std::size_t dtype_bytes(Dtype dtype) {
  return dispatch(dtype, []<class T>() { return sizeof(T); });
}

Dtype parse_dtype(const std::string& name) {
  int found = -1;
  int i = 0;
  for_each_dtype([&]<class T>() {
    if (name == DtypeInfo<T>::name) found = i;
    ++i;
  });
  if (found < 0)
    throw TypeError("dtype '" + name + "' is not supported (int32, int64, float32, float64, complex64 or complex128)");
  return Dtype{found};
}

py::dtype numpy_dtype(Dtype dtype) { return py::dtype(std::string(dtype_name(dtype))); }

namespace {

std::vector<index_t> shape_of(const py::object& shape) {
  std::vector<index_t> out;
  if (py::isinstance<py::int_>(shape)) {
    out.push_back(shape.cast<index_t>());
  } else {
    for (auto item : shape) out.push_back(item.cast<index_t>());
  }
  if (out.empty() || out.size() > 2) throw UsageError("only 1-D and 2-D arrays are supported");
  for (index_t n : out)
    if (n < 0) throw UsageError("negative dimensions are not allowed");
  return out;
}

// The arguments of a collective call that every rank must give alike (the shape, the dtype, the
// layout, a seed), compared in one allreduce of their minima and maxima before anything is made:
// ranks that disagree raise the same exception on every rank (TypeError for the dtype, ValueError
// otherwise) instead of crashing or waiting in a later collective.
struct Argument {
  const char* name;
  std::int64_t value;
};

void require_same_arguments(const Session& session, const std::string& what, std::initializer_list<Argument> arguments) {
  std::vector<std::int64_t> bounds;  // each value, then each one's complement: a min of both gives min and max
  for (const Argument& a : arguments) bounds.push_back(a.value);
  for (const Argument& a : arguments) bounds.push_back(~a.value);
  session.context().comm().allreduce(bounds.data(), static_cast<index_t>(bounds.size()), ReduceOp::min);
  std::size_t i = 0;
  for (const Argument& a : arguments) {
    const std::int64_t low = bounds[i], high = ~bounds[arguments.size() + i];
    ++i;
    if (low == high) continue;
    const std::string message = what + ": the ranks disagree on the " + a.name +
                                " (it must be the same on every rank, as every argument of a collective call)";
    if (std::string_view(a.name) == "dtype") throw TypeError(message);
    throw UsageError(message);
  }
}

// Runs `checks` (the parsing of a call's arguments, which may fail on one rank only) and agrees with
// the other ranks on whether it failed: where it did on some rank, every rank throws that rank's
// error, so that none waits in a collective the others never enter.
template <class F>
void agreed_checks(Session& session, F&& checks) {
  ErrorKind kind = ErrorKind::none;
  std::string message;
  try {
    checks();
  } catch (const TypeError& e) {
    kind = ErrorKind::type;
    message = e.what();
  } catch (const std::exception& e) {
    kind = ErrorKind::value;
    message = e.what();
  }
  const Call call(session);
  agree(session.context(), kind, message);
}

// A value's bits as two words (values of up to 16 bytes), to compare across ranks.
template <class T>
std::array<std::int64_t, 2> bits_of(const T& value) {
  static_assert(sizeof(T) <= 16);
  std::array<std::int64_t, 2> words{};
  std::memcpy(words.data(), &value, sizeof(T));
  return words;
}

// The shape as arguments: its rank and extents (2-D: rows and cols).
std::int64_t extent(const std::vector<index_t>& shape, std::size_t d) { return d < shape.size() ? shape[d] : -1; }

// A new array of each rank's part; where some rank has not the memory, MemoryError on every rank.
template <class T>
DistArray<T> new_vector(const Context& ctx, Partition partition) {
  std::optional<DistArray<T>> made;
  std::string error;
  try {
    made.emplace(ctx, std::move(partition));
  } catch (const std::bad_alloc& e) {
    error = e.what();
  }
  agree(ctx, error.empty() ? ErrorKind::none : ErrorKind::memory, error);
  return std::move(*made);
}

template <class T>
DistMatrix<T> new_matrix(const ProcessGrid& grid, index_t rows, index_t cols) {
  std::optional<DistMatrix<T>> made;
  std::string error;
  try {
    made.emplace(grid, rows, cols);
  } catch (const std::bad_alloc& e) {
    error = e.what();
  }
  agree(grid.context(), error.empty() ? ErrorKind::none : ErrorKind::memory, error);
  return std::move(*made);
}

// What each rank says about the block it hands over (from_local) or the array it holds (from_global).
struct BlockRecord {
  std::int32_t error = 0;  // ErrorKind
  std::int32_t dtype = -1;
  std::int32_t ndim = 0;
  std::int32_t viewable = 0;  // the block can be used in place (the memory and alignment allow it)
  index_t rows = 0, cols = 0;
};

// Every rank's record; where some rank failed, its error on every rank.
std::vector<BlockRecord> gather_records(const Context& ctx, const BlockRecord& mine, const std::string& message) {
  std::vector<BlockRecord> all = ctx.comm().allgather(mine);
  bool failed = false;
  for (const BlockRecord& r : all) failed = failed || r.error != 0;
  if (failed) agree(ctx, static_cast<ErrorKind>(mine.error), message);
  return all;
}

ErrorKind error_kind_of(const std::string& name) {
  if (name.empty()) return ErrorKind::none;
  if (name == "type") return ErrorKind::type;
  if (name == "memory") return ErrorKind::memory;
  return ErrorKind::value;
}

// Copies `bytes` of host or backend memory (`from_device`) into backend memory.
void copy_in(const Context& ctx, void* dst, const void* src, std::size_t bytes, bool from_device) {
  if (bytes == 0) return;
  if (from_device) {
    kernels::copy_within(ctx.queue(), dst, src, bytes);
  } else {
    kernels::copy_from_host(ctx.queue(), dst, src, bytes);
  }
}

bool is_device_memory(const Context& ctx, int device_type) {
  return ctx.backend() == Backend::cuda && device_type != dlpack::kCPU;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Creation

// Each rank's block of one global array (from_local): 1-D blocks of any sizes form the array in rank
// order, without a copy where the memory allows; 2-D blocks must form the balanced layout of the
// grid (rank = process row * grid columns + process column), and are used in place where the memory
// allows and the block starts on a 16-byte boundary, else copied into it.
ArrayPtr from_local(const SessionPtr& session, const std::string& error, const std::string& message,
                    const std::string& dtype_text, const std::vector<index_t>& shape, std::uintptr_t pointer,
                    int device_type, py::object owner, std::optional<std::uintptr_t> stream,
                    std::pair<int, int> grid_shape) {
  const Layout layout{grid_shape.first, grid_shape.second};
  const Context& ctx = session->context();
  BlockRecord mine;
  mine.error = static_cast<std::int32_t>(error_kind_of(error));
  std::string why = message;
  if (mine.error == 0) {
    try {
      mine.dtype = parse_dtype(dtype_text).index;
    } catch (const TypeError& e) {
      mine.error = static_cast<std::int32_t>(ErrorKind::type);
      why = e.what();
    }
  }
  if (mine.error == 0 && ctx.backend() == Backend::cpu && device_type != dlpack::kCPU) {
    mine.error = static_cast<std::int32_t>(ErrorKind::value);
    why = "the block is in GPU memory, and this context's backend is cpu";
  }
#if TESSERA_HAVE_CUDA
  if (mine.error == 0 && is_device_memory(ctx, device_type) && pointer != 0) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, reinterpret_cast<void*>(pointer)) != cudaSuccess ||
        (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)) {
      cudaGetLastError();
      mine.error = static_cast<std::int32_t>(ErrorKind::value);
      why = "the block's memory is not device memory";
    } else if (attributes.device != ctx.queue().device) {
      mine.error = static_cast<std::int32_t>(ErrorKind::value);
      why = "the block is on GPU " + std::to_string(attributes.device) + ", this rank's context on GPU " +
            std::to_string(ctx.queue().device);
    }
  }
#endif
  mine.ndim = static_cast<std::int32_t>(shape.size());
  mine.rows = shape.empty() ? 0 : shape[0];
  mine.cols = shape.size() == 2 ? shape[1] : 1;
  // In place where the block's memory is the backend's own (host memory under cpu, this GPU's
  // memory under cuda; a host block under cuda is copied to the device), and a 2-D block starts on
  // a 16-byte boundary (a matrix block's promise to the kernels).
  const bool on_device = is_device_memory(ctx, device_type);
  mine.viewable = (ctx.backend() == Backend::cpu || on_device) &&
                  (mine.ndim != 2 || mine.rows * mine.cols == 0 || pointer % 16 == 0);

  const Call call(*session);
  std::vector<BlockRecord> all = gather_records(ctx, mine, why);
  // Every rank decides the same from the same records.
  for (int r = 0; r < ctx.size(); ++r) {
    const BlockRecord& other = all[static_cast<std::size_t>(r)];
    if (other.dtype != all[0].dtype)
      throw TypeError("from_local: rank 0's block is " + std::string(dtype_name(Dtype{all[0].dtype})) + ", rank " +
                      std::to_string(r) + "'s " + dtype_name(Dtype{other.dtype}) + "; every block needs one dtype");
    if (other.ndim != all[0].ndim || other.ndim < 1 || other.ndim > 2)
      throw UsageError("from_local: every rank's block must be 1-D, or every rank's 2-D (rank " + std::to_string(r) +
                       "'s is " + std::to_string(other.ndim) + "-D)");
  }
  const Dtype dtype{all[0].dtype};
  const std::size_t element = dtype_bytes(dtype);
  // Allocating the copies is collective: every rank views, or every rank copies.
  bool view = true;
  for (const BlockRecord& r : all) view = view && r.viewable != 0;

  if (all[0].ndim == 1) {
    std::vector<index_t> counts;
    for (const BlockRecord& r : all) counts.push_back(r.rows);
    Partition partition = Partition::from_counts(counts);
    if (partition == Partition::block(partition.global_size(), ctx.size()))
      partition = Partition::block(partition.global_size(), ctx.size());
    return dispatch(dtype, [&]<class T>() {
      if (view) {
        ArrayPtr out = make_array(session, DistArray<T>::view_local(ctx, std::move(partition),
                                                                    reinterpret_cast<T*>(pointer)));
        if (stream && ctx.backend() == Backend::cuda) {
          // The producer's work on its stream comes before ours on the block.
          kernels::Queue theirs = ctx.queue();
          theirs.stream = reinterpret_cast<kernels::StreamHandle>(*stream);
          kernels::queue_wait(ctx.queue(), theirs);
        }
        call.with_gil([&] { out->keep_alive(owner); });
        return out;
      }
      DistArray<T> a = new_vector<T>(ctx, std::move(partition));
      copy_in(ctx, a.local_data(), reinterpret_cast<const void*>(pointer), a.local_bytes(), false);
      return make_array(session, std::move(a));
    });
  }

  const ProcessGrid& grid = session->grid(layout.rows, layout.cols);
  const Partition rows_by_process_row = [&] {
    std::vector<index_t> counts;
    for (int pr = 0; pr < grid.rows(); ++pr) counts.push_back(all[static_cast<std::size_t>(pr * grid.cols())].rows);
    return Partition::from_counts(counts);
  }();
  const Partition cols_by_process_col = [&] {
    std::vector<index_t> counts;
    for (int pc = 0; pc < grid.cols(); ++pc) counts.push_back(all[static_cast<std::size_t>(pc)].cols);
    return Partition::from_counts(counts);
  }();
  const index_t rows = rows_by_process_row.global_size(), cols = cols_by_process_col.global_size();
  const Partition row_blocks = Partition::block(rows, grid.rows()), col_blocks = Partition::block(cols, grid.cols());
  for (int r = 0; r < ctx.size(); ++r) {
    const int pr = r / grid.cols(), pc = r % grid.cols();
    const BlockRecord& b = all[static_cast<std::size_t>(r)];
    if (b.rows != row_blocks.local_size(pr) || b.cols != col_blocks.local_size(pc))
      throw UsageError("from_local: the 2-D blocks do not form the balanced " + std::to_string(grid.rows()) + " x " +
                       std::to_string(grid.cols()) + " block layout of a " + std::to_string(rows) + " x " +
                       std::to_string(cols) + " array: rank " + std::to_string(r) + " holds " +
                       std::to_string(b.rows) + " x " + std::to_string(b.cols) + ", its block there is " +
                       std::to_string(row_blocks.local_size(pr)) + " x " + std::to_string(col_blocks.local_size(pc)));
  }
  return dispatch(dtype, [&]<class T>() {
    if (stream && on_device) {
      kernels::Queue theirs = ctx.queue();
      theirs.stream = reinterpret_cast<kernels::StreamHandle>(*stream);
      kernels::queue_wait(ctx.queue(), theirs);
    }
    if (view) {
      ArrayPtr out = make_array(session, DistMatrix<T>::view_local(grid, rows, cols, reinterpret_cast<T*>(pointer)));
      call.with_gil([&] { out->keep_alive(owner); });
      return out;
    }
    DistMatrix<T> m = new_matrix<T>(grid, rows, cols);
    copy_in(ctx, m.local_data(), reinterpret_cast<const void*>(pointer),
            static_cast<std::size_t>(m.local_rows() * m.local_cols()) * element, on_device);
    return make_array(session, std::move(m));
  });
}

namespace {

// The rows [row0, row0 + rows) and columns [col0, col0 + cols) of a row-major host array with `ld`
// elements per row, packed contiguously.
std::vector<char> pack_host(const char* src, index_t ld, index_t row0, index_t rows, index_t col0, index_t cols,
                            std::size_t element) {
  std::vector<char> out(static_cast<std::size_t>(rows * cols) * element);
  for (index_t i = 0; i < rows; ++i)
    std::memcpy(out.data() + static_cast<std::size_t>(i * cols) * element,
                src + static_cast<std::size_t>((row0 + i) * ld + col0) * element, static_cast<std::size_t>(cols) * element);
  return out;
}

}  // namespace

// A NumPy array on every rank (root < 0) or on `root` only, cut into the block layout.
ArrayPtr from_global(const SessionPtr& session, const py::object& global, int root, const std::string& error,
                     const std::string& message, std::pair<int, int> grid_shape) {
  const Layout layout{grid_shape.first, grid_shape.second};
  const Context& ctx = session->context();
  BlockRecord mine;
  mine.error = static_cast<std::int32_t>(error_kind_of(error));
  std::string why = message;
  const bool holds = root < 0 || ctx.rank() == root;
  py::array array;
  if (holds && mine.error == 0) {
    array = global.cast<py::array>();
    try {
      mine.dtype = parse_dtype(py::str(array.dtype().attr("name"))).index;
    } catch (const TypeError& e) {
      mine.error = static_cast<std::int32_t>(ErrorKind::type);
      why = e.what();
    }
    mine.ndim = static_cast<std::int32_t>(array.ndim());
    mine.rows = array.ndim() >= 1 ? array.shape(0) : 0;
    mine.cols = array.ndim() == 2 ? array.shape(1) : 1;
    if (mine.error == 0 && (mine.ndim < 1 || mine.ndim > 2)) {
      mine.error = static_cast<std::int32_t>(ErrorKind::value);
      why = "from_global: only 1-D and 2-D arrays are supported (got " + std::to_string(mine.ndim) + "-D)";
    }
  }
  const char* base = holds && mine.error == 0 ? static_cast<const char*>(array.data()) : nullptr;

  const Call call(*session);
  if (root >= ctx.size()) throw UsageError("from_global: root " + std::to_string(root) + " is not a rank");
  std::vector<BlockRecord> all = gather_records(ctx, mine, why);
  const BlockRecord& ref = all[static_cast<std::size_t>(root < 0 ? 0 : root)];
  if (root < 0)
    for (int r = 0; r < ctx.size(); ++r) {
      const BlockRecord& b = all[static_cast<std::size_t>(r)];
      if (b.dtype != ref.dtype || b.ndim != ref.ndim || b.rows != ref.rows || b.cols != ref.cols)
        throw UsageError("from_global: every rank must pass the same array (rank " + std::to_string(r) +
                         "'s differs from rank 0's in dtype or shape); pass root= to scatter one rank's");
    }
  const Dtype dtype{ref.dtype};
  const std::size_t element = dtype_bytes(dtype);
  const Communicator& comm = ctx.comm();
  constexpr int kTag = 7401;

  if (ref.ndim == 1) {
    return dispatch(dtype, [&]<class T>() {
      DistArray<T> a = new_vector<T>(ctx, Partition::block(ref.rows, ctx.size()));
      const T* src = reinterpret_cast<const T*>(base);
      if (root < 0) {
        copy_in(ctx, a.local_data(), src + a.global_offset(), a.local_bytes(), false);
      } else if (ctx.rank() == root) {
        for (int p = 0; p < ctx.size(); ++p) {
          const Partition& part = a.partition();
          if (p == root) {
            copy_in(ctx, a.local_data(), src + a.global_offset(), a.local_bytes(), false);
          } else {
            comm.send(src + part.offset(p), part.local_size(p), p, kTag);
          }
        }
      } else {
        std::vector<T> block(static_cast<std::size_t>(a.local_size()));
        comm.recv(block.data(), a.local_size(), root, kTag);
        copy_in(ctx, a.local_data(), block.data(), a.local_bytes(), false);
      }
      return make_array(session, std::move(a));
    });
  }
  const ProcessGrid& grid = session->grid(layout.rows, layout.cols);
  return dispatch(dtype, [&]<class T>() {
    DistMatrix<T> m = new_matrix<T>(grid, ref.rows, ref.cols);
    const Partition& rp = m.row_partition();
    const Partition& cp = m.col_partition();
    const std::size_t bytes = static_cast<std::size_t>(m.local_rows() * m.local_cols()) * element;
    if (root < 0 || ctx.rank() == root) {
      for (int p = 0; p < ctx.size(); ++p) {
        if (root < 0 && p != ctx.rank()) continue;
        const int pr = p / grid.cols(), pc = p % grid.cols();
        const std::vector<char> block =
            pack_host(base, ref.cols, rp.offset(pr), rp.local_size(pr), cp.offset(pc), cp.local_size(pc), element);
        if (p == ctx.rank()) {
          copy_in(ctx, m.local_data(), block.data(), bytes, false);
        } else {
          comm.send(block.data(), static_cast<index_t>(block.size()), p, kTag);
        }
      }
    } else {
      std::vector<char> block(bytes);
      comm.recv(block.data(), static_cast<index_t>(bytes), root, kTag);
      copy_in(ctx, m.local_data(), block.data(), bytes, false);
    }
    return make_array(session, std::move(m));
  });
}

namespace {

template <class T>
T scalar_as(const py::object& value) {
  return value.cast<T>();
}

}  // namespace

namespace {

// The arguments of full and random, parsed on every rank and agreed (agreed_checks, then
// require_same_arguments): the shape, the dtype, the layout and (random) the seed.
struct Creation {
  std::vector<index_t> shape;
  Dtype dtype;
  Layout layout;
};

Creation agreed_creation(Session& session, const std::string& what, const py::object& shape_object,
                         const std::string& dtype_text, std::pair<int, int> grid_shape, std::int64_t seed = 0) {
  Creation c{{}, Dtype{}, Layout{grid_shape.first, grid_shape.second}};
  agreed_checks(session, [&] {
    c.shape = shape_of(shape_object);
    c.dtype = parse_dtype(dtype_text);
  });
  const Call call(session);
  require_same_arguments(session, what,
                         {{"number of dimensions", static_cast<std::int64_t>(c.shape.size())}, {"shape", extent(c.shape, 0)},
                          {"shape", extent(c.shape, 1)}, {"dtype", c.dtype.index}, {"layout", c.layout.rows},
                          {"layout", c.layout.cols}, {"seed", seed}});
  return c;
}

}  // namespace

ArrayPtr full(const SessionPtr& session, const py::object& shape_object, const std::string& dtype_text,
              const py::object& value, std::pair<int, int> grid_shape) {
  const auto [shape, dtype, layout] = agreed_creation(*session, "array creation", shape_object, dtype_text, grid_shape);
  return dispatch(dtype, [&]<class T>() {
    const bool filled = !value.is_none();
    T fill{};
    agreed_checks(*session, [&] {
      if (filled) fill = scalar_as<T>(value);
    });
    const Call call(*session);
    const auto fill_bits = bits_of(fill);
    require_same_arguments(*session, "full", {{"fill value", fill_bits[0]}, {"fill value", fill_bits[1]}});
    if (shape.size() == 1) {
      DistArray<T> a = new_vector<T>(session->context(), Partition::block(shape[0], session->context().size()));
      if (filled) a.fill(fill);
      return make_array(session, std::move(a));
    }
    DistMatrix<T> m = new_matrix<T>(session->grid(layout.rows, layout.cols), shape[0], shape[1]);
    if (filled) m.fill(fill);
    return make_array(session, std::move(m));
  });
}

ArrayPtr random(const SessionPtr& session, const py::object& shape_object, const std::string& dtype_text,
                std::uint64_t seed, std::pair<int, int> grid_shape) {
  const auto [shape, dtype, layout] =
      agreed_creation(*session, "random", shape_object, dtype_text, grid_shape, static_cast<std::int64_t>(seed));
  return dispatch(dtype, [&]<class T>() {
    const Call call(*session);
    if (shape.size() == 1) {
      DistArray<T> a = new_vector<T>(session->context(), Partition::block(shape[0], session->context().size()));
      if constexpr (is_complex_v<T>) {
        // Element i = (r[2i], r[2i + 1]), r the real type's sequence of the seed.
        kernels::generate(a.context().queue(), reinterpret_cast<real_t<T>*>(a.local_data()), 2 * a.local_size(), seed,
                          2 * a.global_offset());
      } else {
        a.generate(seed);
      }
      return make_array(session, std::move(a));
    }
    DistMatrix<T> m = new_matrix<T>(session->grid(layout.rows, layout.cols), shape[0], shape[1]);
    if constexpr (is_complex_v<T>) {
      // Element (i, j) = (r[2k], r[2k + 1]) with k = i * cols + j, whatever the grid.
      auto* data = reinterpret_cast<real_t<T>*>(m.local_data());
      for (index_t r = 0; r < m.local_rows() && m.local_cols() > 0; ++r)
        kernels::generate(m.grid().context().queue(), data + 2 * r * m.local_cols(), 2 * m.local_cols(), seed,
                          2 * ((m.row_offset() + r) * m.cols() + m.col_offset()));
    } else {
      m.generate(seed);
    }
    return make_array(session, std::move(m));
  });
}

ArrayPtr arange(const SessionPtr& session, index_t n, const std::string& dtype_text, const py::object& first,
                const py::object& second, std::int64_t first_integer, std::int64_t step_integer) {
  Dtype dtype{};
  agreed_checks(*session, [&] {
    if (n < 0) throw UsageError("arange: negative length");
    dtype = parse_dtype(dtype_text);
  });
  {
    const Call call(*session);
    require_same_arguments(*session, "arange",
                           {{"length", n}, {"dtype", dtype.index}, {"start", first_integer}, {"step", step_integer}});
  }
  return dispatch(dtype, [&]<class T>() {
    T a{}, b{};
    agreed_checks(*session, [&] {
      if constexpr (!std::is_integral_v<T>) {
        a = scalar_as<T>(first);
        b = scalar_as<T>(second);
      }
    });
    const Call call(*session);
    require_same_arguments(*session, "arange", {{"start", bits_of(a)[0]}, {"start", bits_of(a)[1]}, {"second value", bits_of(b)[0]},
                                                {"second value", bits_of(b)[1]}});
    DistArray<T> out = new_vector<T>(session->context(), Partition::block(n, session->context().size()));
    ops::arange(out, a, b, first_integer, step_integer);
    return make_array(session, std::move(out));
  });
}

// ---------------------------------------------------------------------------------------------
// Local blocks

namespace {

// This rank's block as a NumPy array viewing the backend's host memory (cpu backend).
py::array local_host(const py::object& self) {
  auto& a = *self.cast<ArrayPtr>();
  std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(a.local_rows())};
  if (a.ndim() == 2) shape.push_back(static_cast<py::ssize_t>(a.local_cols()));
  void* data = a.local_data();
  if (!data) return py::array(numpy_dtype(a.dtype()), shape);  // an empty block has no storage
  return py::array(numpy_dtype(a.dtype()), shape, {}, data, self);
}

}  // namespace

// The rank's GPU block: __cuda_array_interface__ (version 3) and __dlpack__, which CuPy, PyTorch,
// Numba and JAX take without a copy.
struct DeviceBlock {
  ArrayPtr owner;
  std::uintptr_t data = 0;
  std::vector<std::int64_t> shape;
  Dtype dtype;
  int device_type = dlpack::kCUDA;
  int device = 0;
  std::uintptr_t stream = 0;
};

namespace {

DeviceBlock device_block(const ArrayPtr& a) {
  DeviceBlock b;
  b.owner = a;
  b.data = reinterpret_cast<std::uintptr_t>(a->local_data());
  b.shape.push_back(a->local_rows());
  if (a->ndim() == 2) b.shape.push_back(a->local_cols());
  b.dtype = a->dtype();
  const Context& ctx = a->context();
  b.device_type = ctx.backend() == Backend::cuda ? dlpack::kCUDA : dlpack::kCPU;
  b.device = ctx.backend() == Backend::cuda ? ctx.queue().device : 0;
  b.stream = reinterpret_cast<std::uintptr_t>(ctx.queue().stream);
  return b;
}

std::string typestr(Dtype dtype) {
  return dispatch(dtype, []<class T>() { return std::string("<") + DtypeInfo<T>::kind + std::to_string(sizeof(T)); });
}

py::dict cuda_array_interface(const DeviceBlock& b) {
  if (b.device_type != dlpack::kCUDA)
    throw py::attribute_error("__cuda_array_interface__: the block is in host memory (cpu backend)");
  py::dict d;
  py::tuple shape(b.shape.size());
  for (std::size_t i = 0; i < b.shape.size(); ++i) shape[i] = py::int_(b.shape[i]);
  d["shape"] = shape;
  d["typestr"] = typestr(b.dtype);
  // An empty block: a null pointer is allowed where the size is 0.
  d["data"] = py::make_tuple(py::int_(b.data), false);
  d["version"] = 3;
  d["strides"] = py::none();
  // The work that writes the block is ordered on this stream; a consumer on another waits for it.
  d["stream"] = b.stream == 0 ? py::object(py::none()) : py::object(py::int_(b.stream));
  return d;
}

// The exporter's part of a DLPack tensor: shape storage and the array it keeps alive.
struct ExportContext {
  ArrayPtr owner;
  std::vector<std::int64_t> shape;
};

template <class Managed>
void delete_export(Managed* self) {
  if (!self) return;
  auto* ctx = static_cast<ExportContext*>(self->manager_ctx);
  {
    py::gil_scoped_acquire gil;  // a consumer may release the tensor from any thread
    delete ctx;
  }
  delete self;
}

template <class Managed>
void fill_export(Managed* m, const DeviceBlock& b) {
  auto* ctx = new ExportContext{b.owner, b.shape};
  m->manager_ctx = ctx;
  m->deleter = &delete_export<Managed>;
  dlpack::Tensor& t = m->dl_tensor;
  t.data = reinterpret_cast<void*>(b.data);
  t.device = {b.device_type, b.device};
  t.ndim = static_cast<std::int32_t>(ctx->shape.size());
  dispatch(b.dtype, [&]<class T>() {
    t.dtype = {static_cast<std::uint8_t>(DtypeInfo<T>::dlpack), static_cast<std::uint8_t>(8 * sizeof(T)), 1};
  });
  t.shape = ctx->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
}

extern "C" void unversioned_capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "used_dltensor")) return;  // the consumer owns it now
  auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (!m) {
    PyErr_Clear();
    return;
  }
  if (m->deleter) m->deleter(m);
}

extern "C" void versioned_capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "used_dltensor_versioned")) return;
  auto* m = static_cast<dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
  if (!m) {
    PyErr_Clear();
    return;
  }
  if (m->deleter) m->deleter(m);
}

py::object export_dlpack(const DeviceBlock& b, const py::object& stream, const py::object& max_version,
                         const py::object& dl_device, const py::object& copy) {
  if (!copy.is_none() && copy.cast<bool>())
    throw py::buffer_error("__dlpack__: the block is exported without a copy (copy=True is not supported)");
  if (!dl_device.is_none()) {
    const auto asked = dl_device.cast<std::pair<int, int>>();
    if (asked.first != b.device_type || asked.second != b.device)
      throw py::buffer_error("__dlpack__: the block lives on device (" + std::to_string(b.device_type) + ", " +
                             std::to_string(b.device) + "); no copy to another device");
  }
  if (b.device_type == dlpack::kCUDA) {
    // stream: the consumer's stream (None: the legacy default stream, 1; -1: no ordering asked).
    const long long s = stream.is_none() ? 1 : stream.cast<long long>();
    if (s != -1) {
      const Call call(*b.owner->session());
      kernels::Queue consumer = b.owner->context().queue();
      consumer.stream = reinterpret_cast<kernels::StreamHandle>(static_cast<std::uintptr_t>(s == 0 ? 1 : s));
      kernels::queue_wait(consumer, b.owner->context().queue());
    }
  } else if (!stream.is_none()) {
    throw py::value_error("__dlpack__: stream must be None for a block in host memory");
  }
  const bool versioned = !max_version.is_none() && max_version.cast<std::pair<int, int>>().first >= 1;
  if (versioned) {
    auto* m = new dlpack::ManagedTensorVersioned{};
    m->version = {1, 0};
    m->flags = 0;
    fill_export(m, b);
    return py::reinterpret_steal<py::object>(PyCapsule_New(m, "dltensor_versioned", versioned_capsule_destructor));
  }
  auto* m = new dlpack::ManagedTensor{};
  fill_export(m, b);
  return py::reinterpret_steal<py::object>(PyCapsule_New(m, "dltensor", unversioned_capsule_destructor));
}

// A DLPack tensor taken from a producer's capsule: what from_local needs, and the deleter to call
// when the array lets go of it.
struct ImportedTensor {
  std::uintptr_t data = 0;
  std::vector<index_t> shape;
  std::string dtype;
  int device_type = dlpack::kCPU;
  int device = 0;
  std::shared_ptr<void> owner;
  std::string error;  // why it cannot be taken without a copy ("" when it can)
};

template <class Managed>
ImportedTensor import_tensor(Managed* m) {
  ImportedTensor out;
  const dlpack::Tensor& t = m->dl_tensor;
  out.owner = std::shared_ptr<void>(m, [](void* p) {
    auto* managed = static_cast<Managed*>(p);
    if (managed->deleter) managed->deleter(managed);
  });
  out.data = reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset;
  out.device_type = t.device.device_type;
  out.device = t.device.device_id;
  for (int i = 0; i < t.ndim; ++i) out.shape.push_back(t.shape[i]);
  for_each_dtype([&]<class T>() {
    if (t.dtype.code == static_cast<std::uint8_t>(DtypeInfo<T>::dlpack) && t.dtype.bits == 8 * sizeof(T) &&
        t.dtype.lanes == 1)
      out.dtype = DtypeInfo<T>::name;
  });
  if (out.dtype.empty()) out.error = "the DLPack tensor's element type (code " + std::to_string(t.dtype.code) +
                                     ", " + std::to_string(t.dtype.bits) + " bits) is not supported";
  if (t.strides) {
    index_t expected = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expected) out.error = "the DLPack tensor is not C-contiguous";
      expected *= t.shape[i];
    }
  }
  if (out.data % std::max<std::size_t>(1, t.dtype.bits / 8) != 0) out.error = "the DLPack tensor is not aligned";
  return out;
}

ImportedTensor import_dlpack(const py::capsule& capsule) {
  if (PyCapsule_IsValid(capsule.ptr(), "dltensor_versioned")) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor_versioned"));
    PyCapsule_SetName(capsule.ptr(), "used_dltensor_versioned");
    ImportedTensor t = import_tensor(m);
    if (m->version.major > 1) t.error = "DLPack version " + std::to_string(m->version.major) + " is not supported";
    return t;
  }
  if (PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    return import_tensor(m);
  }
  throw TypeError("__dlpack__ returned something that is not an unused DLPack capsule");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Back to NumPy

namespace {

// Copies rank p's block into `dst` (the global row-major array) on the ranks that hold dst.
void scatter_block(char* dst, const char* block, index_t cols, index_t row0, index_t rows, index_t col0,
                   index_t block_cols, std::size_t element) {
  for (index_t i = 0; i < rows; ++i)
    std::memcpy(dst + static_cast<std::size_t>((row0 + i) * cols + col0) * element,
                block + static_cast<std::size_t>(i * block_cols) * element,
                static_cast<std::size_t>(block_cols) * element);
}

// The whole array on `root` (root < 0: on every rank), None elsewhere.
py::object gather(const ArrayPtr& a, int root) {
  const Context& ctx = a->context();
  if (root >= ctx.size()) throw UsageError("gather: root " + std::to_string(root) + " is not a rank");
  std::vector<py::ssize_t> shape;
  if (a->ndim() == 1) {
    shape.push_back(a->visit_vector([](auto& v) { return static_cast<py::ssize_t>(v.global_size()); }));
  } else {
    a->visit_matrix([&](auto& m) {
      shape.push_back(static_cast<py::ssize_t>(m.rows()));
      shape.push_back(static_cast<py::ssize_t>(m.cols()));
    });
  }
  const bool receives = root < 0 || ctx.rank() == root;
  py::array out;
  std::string error;
  if (receives) {
    try {
      out = py::array(numpy_dtype(a->dtype()), shape);
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_MemoryError)) throw;
      error = "gather: no host memory for the whole array";
    }
  }
  char* dst = receives && error.empty() ? static_cast<char*>(out.mutable_data()) : nullptr;
  const std::size_t element = dtype_bytes(a->dtype());
  {
    const Call call(*a->session());
    agree(ctx, error.empty() ? ErrorKind::none : ErrorKind::memory, error);
    const Communicator& comm = ctx.comm();
    const int to = root < 0 ? 0 : root;
    constexpr int kTag = 7402;
    if (a->ndim() == 1) {
      a->visit_vector([&](auto& v) {
        using T = typename std::remove_reference_t<decltype(v)>::value_type;
        T* all = reinterpret_cast<T*>(dst);
        if (ctx.rank() == to) {
          kernels::copy_to_host(ctx.queue(), all + v.global_offset(), v.local_data(), v.local_bytes());
          for (int p = 0; p < ctx.size(); ++p)
            if (p != to) comm.recv(all + v.partition().offset(p), v.partition().local_size(p), p, kTag);
        } else {
          const std::vector<T> block = v.local_to_host();
          comm.send(block.data(), v.local_size(), to, kTag);
        }
        if (root < 0) comm.bcast(all, v.global_size(), to);
      });
    } else {
      a->visit_matrix([&](auto& m) {
        using T = std::remove_pointer_t<decltype(m.local_data())>;
        const ProcessGrid& grid = m.grid();
        const Communicator& grid_comm = grid.context().comm();
        const std::vector<T> block = m.local_to_host();
        if (grid_comm.rank() == to) {
          std::vector<T> incoming;
          for (int p = 0; p < grid_comm.size(); ++p) {
            const int pr = p / grid.cols(), pc = p % grid.cols();
            const index_t rows = m.row_partition().local_size(pr), cols = m.col_partition().local_size(pc);
            const T* src = block.data();
            if (p != to) {
              incoming.resize(static_cast<std::size_t>(rows * cols));
              grid_comm.recv(incoming.data(), rows * cols, p, kTag);
              src = incoming.data();
            }
            scatter_block(dst, reinterpret_cast<const char*>(src), m.cols(), m.row_partition().offset(pr), rows,
                          m.col_partition().offset(pc), cols, element);
          }
        } else {
          grid_comm.send(block.data(), static_cast<index_t>(block.size()), to, kTag);
        }
        if (root < 0) grid_comm.bcast(reinterpret_cast<T*>(dst), m.rows() * m.cols(), to);
      });
    }
  }
  if (!receives) return py::none();
  return out;
}

// The element at a global index, on every rank (its owner broadcasts it).
py::object item(const ArrayPtr& a, const std::vector<index_t>& index) {
  if (static_cast<int>(index.size()) != a->ndim())
    throw py::index_error("a " + std::to_string(a->ndim()) + "-D array takes " + std::to_string(a->ndim()) +
                          (a->ndim() == 1 ? " index" : " indices"));
  return dispatch(a->dtype(), [&]<class T>() -> py::object {
    T value{};
    {
      const Call call(*a->session());
      if (a->ndim() == 1) {
        auto& v = a->vector<T>();
        const index_t i = index[0];
        if (i < 0 || i >= v.global_size())
          throw py::index_error("index " + std::to_string(i) + " is out of bounds for size " +
                                std::to_string(v.global_size()));
        const int owner = v.partition().owner(i);
        if (owner == v.context().rank())
          kernels::copy_to_host(v.context().queue(), &value, v.local_data() + (i - v.global_offset()), sizeof(T));
        value = v.context().comm().bcast_value(value, owner);
      } else {
        auto& m = a->matrix<T>();
        const index_t i = index[0], j = index[1];
        if (i < 0 || i >= m.rows() || j < 0 || j >= m.cols())
          throw py::index_error("index (" + std::to_string(i) + ", " + std::to_string(j) + ") is out of bounds for shape (" +
                                std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + ")");
        const ProcessGrid& grid = m.grid();
        const int owner = m.row_partition().owner(i) * grid.cols() + m.col_partition().owner(j);
        if (owner == grid.context().rank())
          kernels::copy_to_host(grid.context().queue(), &value,
                                m.local_data() + (i - m.row_offset()) * m.local_cols() + (j - m.col_offset()), sizeof(T));
        value = grid.context().comm().bcast_value(value, owner);
      }
    }
    return numpy_scalar(value);
  });
}

// ---------------------------------------------------------------------------------------------
// HDF5

io::OutputAttributes attributes_for(const Context& ctx, bool overwrite) {
  io::OutputAttributes attributes;
  attributes.app = "tessera-python";
  attributes.backend = to_string(ctx.backend());
  attributes.ranks = ctx.size();
  attributes.overwrite = overwrite;
  return attributes;
}

ArrayPtr load_hdf5(const SessionPtr& session, const std::string& file, const std::string& dataset,
                   const py::object& dtype_object, std::pair<int, int> grid_shape) {
  const Layout layout{grid_shape.first, grid_shape.second};
  const io::DatasetPath path{file, dataset};
  std::optional<Dtype> dtype;
  if (!dtype_object.is_none()) dtype = parse_dtype(dtype_object.cast<std::string>());
  const Call call(*session);
  const Context& ctx = session->context();
  const io::DatasetInfo info = io::probe_numeric_or_complex(ctx, path);
  const std::string file_dtype = info.is_complex ? (info.dtype == io::DType::float32 ? "complex64" : "complex128")
                                                 : io::to_string(info.dtype);
  if (!dtype) dtype = parse_dtype(file_dtype);
  if (info.shape.size() != 1 && info.shape.size() != 2)
    throw io::IoError("dataset '" + dataset + "' in '" + file + "' is " + std::to_string(info.shape.size()) +
                          "-D; a 1-D or 2-D dataset is needed",
                      file, dataset);
  return dispatch(*dtype, [&]<class T>() -> ArrayPtr {
    if (info.is_complex != is_complex_v<T>)
      throw TypeError("load_hdf5: dataset '" + dataset + "' in '" + file + "' holds " + file_dtype +
                      "; it is not read as " + DtypeInfo<T>::name + " (read it as it is, then convert)");
    if constexpr (is_complex_v<T>) {
      if (info.shape.size() == 1) {
        // A 1-D complex dataset: this rank's box of the block partition.
        DistArray<T> a = new_vector<T>(ctx, Partition::block(info.shape[0], ctx.size()));
        const std::vector<unsigned char> host =
            io::read_box(ctx, path, info, io::h5_type_of<T>(), {a.global_offset()}, {a.local_size()});
        copy_in(ctx, a.local_data(), host.data(), a.local_bytes(), false);
        return make_array(session, std::move(a));
      }
    } else {
      if (info.shape.size() == 1) return make_array(session, io::read_array<T>(ctx, path));
    }
    return make_array(session, io::read_matrix<T>(session->grid(layout.rows, layout.cols), path));
  });
}

void save_hdf5(const ArrayPtr& a, const std::string& file, const std::string& dataset, bool overwrite) {
  const io::DatasetPath path{file, dataset};
  const Call call(*a->session());
  const io::OutputAttributes attributes = attributes_for(a->context(), overwrite);
  if (a->ndim() == 1) {
    a->visit_vector([&](auto& v) {
      using T = std::remove_pointer_t<decltype(v.local_data())>;
      if constexpr (is_complex_v<T>) {
        const std::vector<T> host = v.local_to_host();
        io::OutputFile(v.context(), path.file)
            .add_box(path.dataset, io::h5_type_of<T>(), {v.global_size()}, {v.global_offset()}, {v.local_size()},
                     host.data(), attributes)
            .commit();
      } else {
        io::write_array(v, path, attributes);
      }
    });
  } else {
    a->visit_matrix([&](auto& m) { io::write_matrix(m, path, attributes); });
  }
}

py::tuple layout_tuple(Array& a) {
  if (a.ndim() == 1) return py::make_tuple(a.context().size(), 1);
  return a.visit_matrix([](auto& m) { return py::make_tuple(m.grid().rows(), m.grid().cols()); });
}

}  // namespace

// ---------------------------------------------------------------------------------------------

SessionPtr make_session(const py::object& comm, const std::string& backend, int threads, int device) {
  MPI_Comm handle = MPI_COMM_WORLD;
  if (!comm.is_none()) {
    if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type))
      throw TypeError("init: comm must be an mpi4py communicator (mpi4py.MPI.Comm), not " +
                      std::string(py::str(py::type::of(comm).attr("__name__"))));
    MPI_Comm* p = PyMPIComm_Get(comm.ptr());
    if (!p) throw py::error_already_set();
    handle = *p;
    if (handle == MPI_COMM_NULL) throw UsageError("init: comm is MPI.COMM_NULL");
    int inter = 0;
    MPI_Comm_test_inter(handle, &inter);
    if (inter) throw UsageError("init: comm is an intercommunicator; an intracommunicator is needed");
  }
  const BackendChoice choice = parse_backend_choice(backend);
  SessionPtr session;
  {
    const Call call;
    session = std::make_shared<Session>(handle, choice, threads, device);
  }
  session->python_comm = comm;
  return session;
}

void bind_array(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();

  py::class_<Session, SessionPtr>(m, "Context",
                                  "The ranks, backend and device that arrays live on (tessera.init makes one).")
      .def_property_readonly("comm", [](const Session& s) { return s.python_comm; },
                             "The mpi4py communicator the context was made from (None: MPI.COMM_WORLD)")
      .def_property_readonly("rank", [](const Session& s) { return s.context().rank(); })
      .def_property_readonly("size", [](const Session& s) { return s.context().size(); })
      .def_property_readonly("backend", [](const Session& s) { return std::string(to_string(s.context().backend())); })
      .def_property_readonly("device",
                             [](const Session& s) -> py::object {
                               if (s.context().backend() == Backend::cpu) return py::none();
                               return py::int_(s.context().queue().device);
                             })
      .def_property_readonly("stream",
                             [](const Session& s) {
                               return reinterpret_cast<std::uintptr_t>(s.context().queue().stream);
                             })
      .def_property_readonly("threads", [](const Session& s) { return s.runtime().cpu_threads(); })
      .def("describe", [](const Session& s) { return s.runtime().describe(); })
      .def("synchronize",
           [](Session& s) {
             const Call call(s);
             s.context().queue().synchronize();
           })
      .def("_grid_shape", [](const SessionPtr& s, int rows, int cols) {
        const Call call(*s);
        const ProcessGrid& g = s->grid(rows, cols);
        return py::make_tuple(g.rows(), g.cols());
      });

  m.def("_init", &make_session, py::arg("comm"), py::arg("backend"), py::arg("threads"), py::arg("device"));

  py::class_<DeviceBlock>(m, "DeviceBlock",
                          "A rank's block in GPU memory: __cuda_array_interface__ (v3) and __dlpack__, without a copy.")
      .def_property_readonly("__cuda_array_interface__", &cuda_array_interface)
      .def("__dlpack__", &export_dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const DeviceBlock& b) { return py::make_tuple(b.device_type, b.device); })
      .def_property_readonly("shape",
                             [](const DeviceBlock& b) {
                               py::tuple t(b.shape.size());
                               for (std::size_t i = 0; i < b.shape.size(); ++i) t[i] = py::int_(b.shape[i]);
                               return t;
                             })
      .def_property_readonly("dtype", [](const DeviceBlock& b) { return numpy_dtype(b.dtype); })
      .def_property_readonly("ptr", [](const DeviceBlock& b) { return b.data; })
      .def("__repr__", [](const DeviceBlock& b) {
        std::string s = "DeviceBlock(shape=(";
        for (std::size_t i = 0; i < b.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(b.shape[i]);
        return s + (b.shape.size() == 1 ? ",)" : ")") + ", dtype=" + dtype_name(b.dtype) + ", device=" +
               std::to_string(b.device) + ")";
      });

  py::class_<ImportedTensor>(m, "_ImportedTensor")
      .def_readonly("data", &ImportedTensor::data)
      .def_readonly("shape", &ImportedTensor::shape)
      .def_readonly("dtype", &ImportedTensor::dtype)
      .def_readonly("device_type", &ImportedTensor::device_type)
      .def_readonly("device", &ImportedTensor::device)
      .def_readonly("error", &ImportedTensor::error);
  m.def("_import_dlpack", &import_dlpack);

  py::class_<Array, ArrayPtr>(m, "DistArray", py::dynamic_attr(),
                              "A global 1-D or 2-D array cut into one block per rank (see docs/PYTHON.md).")
      .def_property_readonly("dtype", [](const Array& a) { return numpy_dtype(a.dtype()); })
      .def_property_readonly("ndim", &Array::ndim)
      .def_property_readonly("context", &Array::session)
      .def_property_readonly("global_shape",
                             [](Array& a) -> py::tuple {
                               if (a.ndim() == 1) return py::make_tuple(a.visit_vector([](auto& v) { return v.global_size(); }));
                               return a.visit_matrix([](auto& mat) { return py::make_tuple(mat.rows(), mat.cols()); });
                             })
      .def_property_readonly("local_shape",
                             [](Array& a) -> py::tuple {
                               if (a.ndim() == 1) return py::make_tuple(a.local_rows());
                               return py::make_tuple(a.local_rows(), a.local_cols());
                             })
      .def_property_readonly("local_offset",
                             [](Array& a) -> py::tuple {
                               if (a.ndim() == 1) return py::make_tuple(a.visit_vector([](auto& v) { return v.global_offset(); }));
                               return a.visit_matrix([](auto& mat) { return py::make_tuple(mat.row_offset(), mat.col_offset()); });
                             })
      .def_property_readonly("counts",
                             [](Array& a) -> py::tuple {
                               if (a.ndim() == 1)
                                 return py::cast(a.visit_vector([](auto& v) { return v.partition().counts(); })).cast<py::tuple>();
                               return a.visit_matrix([](auto& mat) {
                                 const int ranks = mat.grid().rows() * mat.grid().cols();
                                 py::tuple t(static_cast<std::size_t>(ranks));
                                 for (int r = 0; r < ranks; ++r)
                                   t[static_cast<std::size_t>(r)] =
                                       py::make_tuple(mat.row_partition().local_size(r / mat.grid().cols()),
                                                      mat.col_partition().local_size(r % mat.grid().cols()));
                                 return t;
                               });
                             })
      .def_property_readonly("offsets",
                             [](Array& a) -> py::tuple {
                               if (a.ndim() == 1)
                                 return a.visit_vector([](auto& v) {
                                   py::tuple t(static_cast<std::size_t>(v.partition().parts()));
                                   for (int r = 0; r < v.partition().parts(); ++r)
                                     t[static_cast<std::size_t>(r)] = py::int_(v.partition().offset(r));
                                   return t;
                                 });
                               return a.visit_matrix([](auto& mat) {
                                 const int ranks = mat.grid().rows() * mat.grid().cols();
                                 py::tuple t(static_cast<std::size_t>(ranks));
                                 for (int r = 0; r < ranks; ++r)
                                   t[static_cast<std::size_t>(r)] =
                                       py::make_tuple(mat.row_partition().offset(r / mat.grid().cols()),
                                                      mat.col_partition().offset(r % mat.grid().cols()));
                                 return t;
                               });
                             })
      .def_property_readonly("layout", &layout_tuple)
      .def_property_readonly("owns_memory",
                             [](Array& a) {
                               if (a.ndim() == 2) return a.visit_matrix([](auto& matrix) { return !matrix.is_view(); });
                               return a.visit_vector([](auto& v) { return !v.is_view(); });
                             })
      .def("_local_host", &local_host)
      .def("_local_device", &device_block)
      .def("_gather", &gather)
      .def("_item", &item)
      .def("_save_hdf5", &save_hdf5);

  m.def("_from_local", &from_local);
  m.def("_from_global", &from_global);
  m.def("_full", &full);
  m.def("_random", &random);
  m.def("_arange", &arange);
  m.def("_agree", [](const SessionPtr& session, int kind, const std::string& message) {
    const Call call(*session);
    agree(session->context(), static_cast<ErrorKind>(kind), message);
  });
  m.def("_load_hdf5", &load_hdf5);
}

}  // namespace tessera::python
