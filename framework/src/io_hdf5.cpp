// The public io functions (io.hpp): the element types by name, dataset paths, and the reads and
// writes of arrays, matrices and fields on top of the probe (io_probe), the block transfers
// (io_transfer), the output path (io_write, io_posix) and the HDF5 handles (io_hdf5_handles).
#include <algorithm>
#include <optional>
#include <string>

#include "io_hdf5_handles.hpp"
#include "io_posix.hpp"
#include "io_probe.hpp"
#include "io_transfer.hpp"
#include "io_verdict.hpp"
#include "io_write.hpp"
#include "tessera/framework/io.hpp"
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

DatasetPath parse_dataset_path(std::string_view text) {
  const auto colon = text.rfind(":/");
  if (colon == std::string_view::npos || colon == 0)
    throw IoError("expected FILE.h5:/DATASET, got '" + std::string(text) + "'", "", "");
  DatasetPath path{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  const auto not_a_name = [&](const std::string& why) {
    return IoError(in_quotes(path.dataset) + " is not a dataset name (" + why + ")", path.file, path.dataset);
  };
  if (path.dataset.size() < 2 || path.dataset.back() == '/' || path.dataset.find("//") != std::string::npos)
    throw not_a_name("expected /NAME or /GROUP/NAME");
  // HDF5 gives "." and ".." no special meaning in a path, but refuses them as names.
  for (std::size_t begin = 1; begin <= path.dataset.size();) {
    const auto end = std::min(path.dataset.find('/', begin), path.dataset.size());
    const std::string component = path.dataset.substr(begin, end - begin);
    if (component == "." || component == "..") throw not_a_name("'" + component + "' cannot name a group or dataset");
    begin = end + 1;
  }
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

}  // namespace

DatasetInfo probe_dataset(const Context& ctx, const DatasetPath& path) {
  return detail::probe(ctx, path, /*need_dtype=*/true);
}

template <class T>
DistArray<T> read_array(const Context& ctx, const DatasetPath& path) {
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

std::vector<std::pair<std::string, std::string>> read_attributes(const Context& ctx, const DatasetPath& path) {
  detail::QuietErrors quiet;
  (void)detail::probe(ctx, path, /*need_dtype=*/false);  // a missing file or dataset: the usual message
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

void check_output_path(const Context& ctx, const DatasetPath& path, bool overwrite, bool replace_file) {
  detail::Verdict verdict;
  if (ctx.is_root()) {
    detail::QuietErrors quiet;
    const detail::Destination d = detail::check_destination(path, overwrite, replace_file);
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

template <class T>
void write_array(const DistArray<T>& array, const DatasetPath& path, const OutputAttributes& attributes) {
  detail::QuietErrors quiet;
  const std::vector<T> host = array.local_to_host();
  const detail::OutputBlock block{path.dataset,
                                  detail::h5_element<T>(),
                                  1,
                                  {static_cast<hsize_t>(array.global_size()), 0},
                                  {array.global_offset(), 0},
                                  {array.local_size(), 0},
                                  host.data(),
                                  &attributes};
  detail::write_block(array.context(), path, block);
}

template <class A, class B>
void write_array_pair(const DistArray<A>& first, const DatasetPath& path, const OutputAttributes& first_attributes,
                      const DistArray<B>& second, const std::string& second_dataset,
                      const OutputAttributes& second_attributes) {
  TESSERA_ASSERT(first.context().comm().get() == second.context().comm().get(),
                 "write_array_pair: the arrays live on different contexts");
  detail::QuietErrors quiet;
  const std::vector<A> first_host = first.local_to_host();
  const std::vector<B> second_host = second.local_to_host();
  const detail::OutputBlock parts[2] = {
      {path.dataset, detail::h5_element<A>(), 1, {static_cast<hsize_t>(first.global_size()), 0},
       {first.global_offset(), 0}, {first.local_size(), 0}, first_host.data(), &first_attributes},
      {second_dataset, detail::h5_element<B>(), 1, {static_cast<hsize_t>(second.global_size()), 0},
       {second.global_offset(), 0}, {second.local_size(), 0}, second_host.data(), &second_attributes}};
  detail::write_pair(first.context(), path, parts);
}

template void write_array_pair<std::int64_t, double>(const DistArray<std::int64_t>&, const DatasetPath&,
                                                    const OutputAttributes&, const DistArray<double>&,
                                                    const std::string&, const OutputAttributes&);

// Arrays of every numeric element type (matrices and fields of any type: io_elements.cpp).
#define TESSERA_IO_INSTANTIATE_ARRAY(T)                                                  \
  template DistArray<T> read_array<T>(const Context&, const DatasetPath&);               \
  template void write_array<T>(const DistArray<T>&, const DatasetPath&, const OutputAttributes&);
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
