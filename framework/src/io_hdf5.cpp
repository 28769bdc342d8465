// The public io functions (io.hpp): the element types by name, dataset paths, and the reads and
// writes of arrays, matrices and fields on top of the probe (io_probe), the block transfers
// (io_transfer), the output path (io_write, io_posix) and the HDF5 handles (io_hdf5_handles).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "io_elements.hpp"
#include "io_hdf5_handles.hpp"
#include "io_posix.hpp"
#include "io_probe.hpp"
#include "io_transfer.hpp"
#include "io_verdict.hpp"
#include "io_write.hpp"
#include "temporary_file.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/trace.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::io {

using detail::in_quotes;
using detail::quoted_path;

const char* to_string(DType t) {
  return dispatch(t, []<class T>() { return ElementTraits<T>::name; });
}

std::optional<DType> parse_dtype(std::string_view text) {
  if (text == "float") return DType::float32;
  if (text == "double") return DType::float64;
  for (DType t : kDTypes)
    if (text == to_string(t)) return t;
  return std::nullopt;
}

std::size_t size_of(DType t) {
  return dispatch(t, []<class T>() { return ElementTraits<T>::bytes; });
}

namespace {

// IoError unless path.dataset is a name HDF5 can make a dataset under: not empty, no empty
// component (a trailing or doubled '/'), no component "." or ".." (HDF5 gives them no special
// meaning in a path, but refuses them as names). Relative names ("x") are taken from the root.
void check_dataset_name(const DatasetPath& path) {
  const auto not_a_name = [&](const std::string& why) {
    return IoError(in_quotes(path.dataset) + " is not a dataset name (" + why + ")", path.file, path.dataset);
  };
  const std::string& name = path.dataset;
  if (name.empty() || name == "/" || name.back() == '/' || name.find("//") != std::string::npos)
    throw not_a_name("expected /NAME or /GROUP/NAME");
  for (std::size_t begin = name.front() == '/' ? 1 : 0; begin <= name.size();) {
    const auto end = std::min(name.find('/', begin), name.size());
    const std::string component = name.substr(begin, end - begin);
    if (component == "." || component == "..") throw not_a_name("'" + component + "' cannot name a group or dataset");
    begin = end + 1;
  }
}

}  // namespace

DatasetPath parse_dataset_path(std::string_view text) {
  const auto colon = text.rfind(":/");
  if (colon == std::string_view::npos || colon == 0)
    throw IoError("expected FILE.h5:/DATASET, got '" + std::string(text) + "'", "", "");
  DatasetPath path{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  check_dataset_name(path);
  return path;
}

namespace {

std::string shape_text(const std::vector<index_t>& shape) {
  if (shape.empty()) return "a scalar";
  std::string s;
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? " x " : "") + std::to_string(shape[d]);
  return std::to_string(shape.size()) + "-D (" + s + ")";
}

// "dataset '/d' in 'f.h5' is 2-D (3 x 4); <needed>".
IoError wrong_shape(const DatasetPath& path, const DatasetInfo& info, const std::string& needed) {
  return IoError("dataset " + quoted_path(path) + " is " + shape_text(info.shape) + "; " + needed, path.file,
                 path.dataset);
}

// Reads this rank's 2-D block [start, start + count) of elements of `element` into host memory.
std::vector<unsigned char> read_2d_block(const Context& ctx, const DatasetPath& path, const DatasetInfo& info,
                                         const H5Type& element, const index_t* start, const index_t* count) {
  const std::size_t bytes = static_cast<std::size_t>(count[0] * count[1]) * element.bytes;
  kernels::require_host_memory(bytes, "a host copy of this rank's block of " + path.str());
  std::vector<unsigned char> host(bytes);
  const detail::H5Types types = detail::h5_types(element);
  detail::read_block(ctx, path, info.type_name, types.element(), 2, start, count, host.data());
  return host;
}

}  // namespace

DatasetInfo probe_dataset(const Context& ctx, const DatasetPath& path) {
  return detail::probe(ctx, path, /*need_dtype=*/true);
}

template <class T>
DistArray<T> read_array(const Context& ctx, const DatasetPath& path) {
  const trace::Range range(trace::enabled() ? "read " + path.str() : std::string());
  detail::QuietErrors quiet;
  const DatasetInfo info = detail::probe(ctx, path, /*need_dtype=*/false);
  if (info.shape.size() != 1) throw wrong_shape(path, info, "a 1-D dataset is needed");
  // The block and its host staging buffer, agreed on before the collective reads: a rank without
  // room stops every rank with one line.
  const Partition partition = Partition::block(info.shape[0], ctx.size());
  const index_t local = partition.local_size(ctx.rank());
  const std::size_t block_bytes = kernels::array_bytes(partition.local_size(0), sizeof(T), "a block");
  std::optional<std::pair<DistArray<T>, std::vector<T>>> made;
  try {
    made.emplace(make_collectively(
        ctx,
        "dataset " + quoted_path(path) + " (" + std::to_string(info.shape[0]) + " elements) needs " +
            format_bytes(2.0 * static_cast<double>(block_bytes)) + " per rank on " + std::to_string(ctx.size()) +
            " rank(s), its block and a host copy",
        [&] {
          DistArray<T> block(ctx, partition);  // first: a device block that cannot be made stops here
          kernels::require_host_memory(static_cast<std::size_t>(local) * sizeof(T));
          std::vector<T> staging(static_cast<std::size_t>(local));
          return std::pair<DistArray<T>, std::vector<T>>(std::move(block), std::move(staging));
        }));
  } catch (const IoError&) {
    throw;
  } catch (const UsageError& e) {
    throw IoError(e.what(), path.file, path.dataset);
  }
  auto& [array, host] = *made;
  const index_t start = array.global_offset();
  const index_t count = array.local_size();
  detail::read_block(ctx, path, info.type_name, detail::h5_element<T>(), 1, &start, &count, host.data());
  array.local_from_host(host);
  return std::move(array);
}

namespace detail {

tessera::detail::MatrixStorage read_matrix(const ProcessGrid& grid, const DatasetPath& path, const H5Type& element) {
  require_named(element, "read_matrix", path);
  const trace::Range range(trace::enabled() ? "read " + path.str() : std::string());
  QuietErrors quiet;
  const Context& ctx = grid.context();
  const DatasetInfo info = probe(ctx, path, /*need_dtype=*/element.cls == H5Type::Class::number, &element);
  if (info.shape.size() != 2) throw wrong_shape(path, info, "a 2-D matrix is needed");
  // The block and its host staging buffer, agreed on before the reads (as in read_array).
  std::optional<tessera::detail::MatrixStorage> made;
  try {
    made.emplace(make_collectively(
        ctx, "dataset " + quoted_path(path) + " (" + std::to_string(info.shape[0]) + " x " + std::to_string(info.shape[1]) + ")",
        [&] {
          tessera::detail::MatrixStorage block(grid, info.shape[0], info.shape[1], element.bytes);
          kernels::require_host_memory(block.local_bytes(), "a host copy of this rank's block");
          return block;
        }));
  } catch (const IoError&) {
    throw;
  } catch (const UsageError& e) {
    throw IoError(e.what(), path.file, path.dataset);
  }
  tessera::detail::MatrixStorage& matrix = *made;
  const index_t start[2] = {matrix.row_offset(), matrix.col_offset()};
  const index_t count[2] = {matrix.local_rows(), matrix.local_cols()};
  matrix.local_from_host(read_2d_block(ctx, path, info, element, start, count).data());
  return std::move(matrix);
}

}  // namespace detail

std::vector<unsigned char> read_box(const Context& ctx, const DatasetPath& path, const DatasetInfo& info,
                                    const H5Type& element, const std::vector<index_t>& start,
                                    const std::vector<index_t>& count) {
  using namespace detail;
  require_named(element, "read_box", path);
  TESSERA_ASSERT(start.size() == info.shape.size() && count.size() == info.shape.size() && !start.empty() &&
                     start.size() <= static_cast<std::size_t>(kMaxBlockDims),
                 "read_box: a start and a count per axis of the dataset (1 to 3 axes)");
  const trace::Range range(trace::enabled() ? "read " + path.str() : std::string());
  QuietErrors quiet;
  std::size_t bytes = element.bytes;
  for (index_t c : count) bytes *= static_cast<std::size_t>(c);
  kernels::require_host_memory(bytes, "a host copy of this rank's block of " + path.str());
  std::vector<unsigned char> host(bytes);
  const H5Types types = h5_types(element);
  read_block(ctx, path, info.type_name, types.element(), static_cast<int>(start.size()), start.data(), count.data(),
             host.data());
  return host;
}

namespace detail {

void read_block_field(tessera::detail::BlockStorage& field, const DatasetPath& path, const H5Type& element) {
  require_named(element, "read_field", path);
  const trace::Range range(trace::enabled() ? "read " + path.str() : std::string());
  QuietErrors quiet;
  const Context& ctx = field.context();
  const tessera::detail::BlockLayout& l = field.layout();
  const int dims = l.dims;
  const int first = 3 - dims;
  const DatasetInfo info = probe(ctx, path, /*need_dtype=*/false, &element);
  bool same = static_cast<int>(info.shape.size()) == dims;
  std::string extents;
  for (int a = 0; a < dims; ++a) {
    extents += (a ? " x " : "") + std::to_string(l.extent[static_cast<std::size_t>(first + a)]);
    if (same && info.shape[static_cast<std::size_t>(a)] != l.extent[static_cast<std::size_t>(first + a)]) same = false;
  }
  if (!same)
    throw wrong_shape(path, info, "this run's field is " + std::to_string(dims) + "-D (" + extents + ")");
  std::vector<index_t> start, count;
  for (int a = first; a < 3; ++a) {
    start.push_back(l.offset(a));
    count.push_back(l.local(a));
  }
  const std::size_t bytes = static_cast<std::size_t>(l.local_cells()) * element.bytes;
  kernels::require_host_memory(bytes, "a host copy of this rank's block of " + path.str());
  std::vector<unsigned char> host(bytes);
  const detail::H5Types types = detail::h5_types(element);
  detail::read_block(ctx, path, info.type_name, types.element(), dims, start.data(), count.data(), host.data());
  field.local_from_host(host.data());
}

}  // namespace detail

std::vector<std::pair<std::string, std::string>> read_attributes(const Context& ctx, const DatasetPath& path) {
  detail::QuietErrors quiet;
  // A missing file or dataset: the usual message; any element type.
  (void)detail::probe(ctx, path, /*need_dtype=*/false, nullptr, /*accept_complex=*/false, /*any_type=*/true);
  std::string packed;  // name, NUL, value, NUL, ...
  if (ctx.is_root()) {
    for (const auto& [name, value] : detail::attributes_on_root(path)) {
      packed += name;
      packed += '\0';
      packed += value;
      packed += '\0';
    }
  }
  index_t size = ctx.comm().bcast_value(static_cast<index_t>(packed.size()), 0);
  packed.resize(static_cast<std::size_t>(size));
  ctx.comm().bcast(packed.data(), size, 0);
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t at = 0; at < packed.size();) {
    const std::size_t name_end = packed.find('\0', at);
    const std::size_t value_end = packed.find('\0', name_end + 1);
    out.emplace_back(packed.substr(at, name_end - at), packed.substr(name_end + 1, value_end - name_end - 1));
    at = value_end + 1;
  }
  return out;
}

void check_output_path(const Context& ctx, const DatasetPath& path, bool overwrite, bool replace_file,
                       const std::string& app) {
  check_dataset_name(path);  // the same on every rank
  detail::Verdict verdict;
  if (ctx.is_root()) {
    detail::QuietErrors quiet;
    // The temporaries that killed writers left beside the destination go now, also when this run
    // is refused (or ends) before it writes.
    if (detail::output_directory_problem(path.file).empty()) tessera::detail::remove_stale_temporaries(path.file);
    const detail::Destination d = detail::check_destination(path, overwrite, replace_file, app);
    if (!d.problem.empty()) verdict.fail(d.problem, d.kind);
  }
  detail::agree_on_verdict(ctx, verdict, 0, path.file, path.dataset);
}

void check_output_file(const Context& ctx, const std::string& file) {
  detail::Verdict verdict;
  if (ctx.is_root()) {
    const std::string problem = detail::plain_output_problem(file);
    if (!problem.empty()) verdict.fail(problem);
  }
  detail::agree_on_verdict(ctx, verdict, 0, file, "");
}

// ---- OutputFile ------------------------------------------------------------------------------------

struct OutputFile::Impl {
  Context ctx;
  std::string file;
  std::vector<detail::OutputBlock> parts;
  std::vector<std::unique_ptr<detail::H5Types>> types;  // the compound types the parts name, until the commit
  bool committed = false;

  // A part whose block (count elements of `element`, row-major) this rank copies from `host`.
  void add(const std::string& dataset, const detail::H5Element& element, int ndims, const index_t* dims,
           const index_t* start, const index_t* count, const void* host, const OutputAttributes& attributes) {
    TESSERA_ASSERT(!committed, "OutputFile::add after commit");
    check_dataset_name({file, dataset});  // every rank adds the same names: all throw alike
    if (parts.size() >= static_cast<std::size_t>(detail::kMaxOutputDatasets))
      throw IoError("an output file takes at most " + std::to_string(detail::kMaxOutputDatasets) + " datasets", file,
                    dataset);
    detail::OutputBlock part{dataset, element, ndims, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {}, attributes};
    std::size_t elements = 1;
    for (int d = 0; d < ndims; ++d) {
      part.dims[d] = static_cast<hsize_t>(dims[d]);
      part.start[d] = start[d];
      part.count[d] = count[d];
      elements *= static_cast<std::size_t>(count[d]);
    }
    const auto* bytes = static_cast<const unsigned char*>(host);
    part.host.assign(bytes, bytes + elements * element.bytes);
    parts.push_back(std::move(part));
  }
};

OutputFile::OutputFile(const Context& ctx, std::string file) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = ctx;
  impl_->file = std::move(file);
}
OutputFile::~OutputFile() = default;
OutputFile::OutputFile(OutputFile&&) noexcept = default;
OutputFile& OutputFile::operator=(OutputFile&&) noexcept = default;

const std::string& OutputFile::file() const { return impl_->file; }
const Context& OutputFile::context() const { return impl_->ctx; }
std::size_t OutputFile::datasets() const { return impl_->parts.size(); }

template <class T>
OutputFile& OutputFile::add(const DistArray<T>& array, const std::string& dataset, const OutputAttributes& attributes) {
  TESSERA_ASSERT(array.context().comm().congruent(impl_->ctx.comm()), "OutputFile::add: an array of another context");
  const std::vector<T> host = array.local_to_host();
  const index_t dims[1] = {array.global_size()}, start[1] = {array.global_offset()}, count[1] = {array.local_size()};
  impl_->add(dataset, detail::h5_element<T>(), 1, dims, start, count, host.data(), attributes);
  return *this;
}

OutputFile& OutputFile::add_matrix(const tessera::detail::MatrixStorage& matrix, const std::string& dataset,
                                   const OutputAttributes& attributes, const H5Type& element) {
  TESSERA_ASSERT(matrix.grid().context().comm().congruent(impl_->ctx.comm()), "OutputFile::add: a matrix of another context");
  detail::require_named(element, "write_matrix", {impl_->file, dataset});
  std::vector<unsigned char> host(matrix.local_bytes());
  matrix.local_to_host(host.data());
  const index_t dims[2] = {matrix.rows(), matrix.cols()};
  const index_t start[2] = {matrix.row_offset(), matrix.col_offset()};
  const index_t count[2] = {matrix.local_rows(), matrix.local_cols()};
  impl_->types.push_back(std::make_unique<detail::H5Types>(detail::h5_types(element)));
  impl_->add(dataset, impl_->types.back()->element(), 2, dims, start, count, host.data(), attributes);
  return *this;
}

OutputFile& OutputFile::add_box(const std::string& dataset, const H5Type& element, const std::vector<index_t>& dims,
                                const std::vector<index_t>& start, const std::vector<index_t>& count, const void* host,
                                const OutputAttributes& attributes) {
  TESSERA_ASSERT(!dims.empty() && dims.size() <= static_cast<std::size_t>(detail::kMaxBlockDims) &&
                     start.size() == dims.size() && count.size() == dims.size(),
                 "OutputFile::add_box: 1 to 3 axes, with a start and a count each");
  detail::require_named(element, "OutputFile::add_box", {impl_->file, dataset});
  impl_->types.push_back(std::make_unique<detail::H5Types>(detail::h5_types(element)));
  impl_->add(dataset, impl_->types.back()->element(), static_cast<int>(dims.size()), dims.data(), start.data(),
             count.data(), host, attributes);
  return *this;
}

OutputFile& OutputFile::add_block_field(const tessera::detail::BlockStorage& field, const std::string& dataset,
                                        const OutputAttributes& attributes, const H5Type& element) {
  TESSERA_ASSERT(field.context().comm().congruent(impl_->ctx.comm()), "OutputFile::add: a field of another context");
  detail::require_named(element, "write_field", {impl_->file, dataset});
  const tessera::detail::BlockLayout& l = field.layout();
  std::vector<unsigned char> host(static_cast<std::size_t>(l.local_cells()) * element.bytes);
  field.local_to_host(host.data());
  std::vector<index_t> dims, start, count;
  for (int a = 3 - l.dims; a < 3; ++a) {
    dims.push_back(l.extent[static_cast<std::size_t>(a)]);
    start.push_back(l.offset(a));
    count.push_back(l.local(a));
  }
  impl_->types.push_back(std::make_unique<detail::H5Types>(detail::h5_types(element)));
  impl_->add(dataset, impl_->types.back()->element(), l.dims, dims.data(), start.data(), count.data(), host.data(),
             attributes);
  return *this;
}

void OutputFile::commit() {
  TESSERA_ASSERT(!impl_->committed, "OutputFile::commit twice");
  TESSERA_ASSERT(!impl_->parts.empty(), "OutputFile::commit without datasets");
  detail::QuietErrors quiet;
  detail::write_parts(impl_->ctx, impl_->file, impl_->parts);
  impl_->committed = true;
}

template <class T>
void write_array(const DistArray<T>& array, const DatasetPath& path, const OutputAttributes& attributes) {
  OutputFile(array.context(), path.file).add(array, path.dataset, attributes).commit();
}

// Arrays of every numeric element type (matrices and fields of any type HDF5 can name: the
// templates of io.hpp over the byte-level functions above).
#define TESSERA_IO_INSTANTIATE_ARRAY(T)                                                                   \
  template DistArray<T> read_array<T>(const Context&, const DatasetPath&);                                \
  template void write_array<T>(const DistArray<T>&, const DatasetPath&, const OutputAttributes&);         \
  template OutputFile& OutputFile::add<T>(const DistArray<T>&, const std::string&, const OutputAttributes&);
TESSERA_IO_INSTANTIATE_ARRAY(std::int8_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::int16_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::int32_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::int64_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::uint8_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::uint16_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::uint32_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::uint64_t)
TESSERA_IO_INSTANTIATE_ARRAY(float)
TESSERA_IO_INSTANTIATE_ARRAY(double)

}  // namespace tessera::io
