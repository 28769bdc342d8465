// Checkpoints (checkpoint.hpp): the entries written through io::OutputFile (temporary file, rename),
// each dataset with a checksum that does not depend on the partition, verified on restore.
#include "tessera/framework/checkpoint.hpp"

#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "io_hdf5_handles.hpp"
#include "io_probe.hpp"
#include "io_verdict.hpp"
#include "tessera/framework/comm.hpp"
#include "tessera/framework/runtime.hpp"

namespace tessera::io {
namespace {

constexpr const char* kFormat = "tessera checkpoint 1";

const char* kind_name(CheckpointEntry::Kind k) {
  switch (k) {
    case CheckpointEntry::Kind::array: return "array";
    case CheckpointEntry::Kind::matrix: return "matrix";
    case CheckpointEntry::Kind::field: return "field";
    case CheckpointEntry::Kind::scalar: break;
  }
  return "scalar";
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a over the bytes that hold values: a number's bytes, a compound's members (never the padding
// between them, which a read need not reproduce).
std::uint64_t hash_element(const unsigned char* element, const H5Type& type, std::uint64_t h) {
  if (type.cls == H5Type::Class::compound) {
    for (const H5Member& m : type.members) h = hash_element(element + m.offset, m.type, h);
    return h;
  }
  for (std::size_t b = 0; b < type.bytes; ++b) h = (h ^ element[b]) * 0x100000001b3ULL;
  return h;
}

// This rank's share of an entry's checksum: the sum of mix(global index, element hash) over its
// elements (scalars: rank 0 alone holds the value that is stored).
std::uint64_t local_checksum(const Context& ctx, const CheckpointEntry& entry) {
  if (entry.kind() == CheckpointEntry::Kind::scalar && !ctx.is_root()) return 0;
  const CheckpointEntry::HostBlock block = entry.host_block();
  const std::size_t bytes = entry.element().bytes;
  if (bytes == 0 || block.local_cols == 0) return 0;
  const std::size_t count = block.bytes.size() / bytes;
  const std::size_t lc = static_cast<std::size_t>(block.local_cols);
  std::uint64_t sum = 0;
  if (block.is_box) {
    const auto& n = block.box_extent;
    const auto& o = block.box_offset;
    const auto& l = block.box_local;
    std::size_t k = 0;
    for (index_t i0 = 0; i0 < l[0]; ++i0)
      for (index_t i1 = 0; i1 < l[1]; ++i1)
        for (index_t i2 = 0; i2 < l[2]; ++i2, ++k) {
          const auto index = static_cast<std::uint64_t>(((o[0] + i0) * n[1] + (o[1] + i1)) * n[2] + (o[2] + i2));
          sum += mix(index ^ mix(hash_element(block.bytes.data() + k * bytes, entry.element(), 0xcbf29ce484222325ULL)));
        }
    return sum;
  }
  for (std::size_t k = 0; k < count; ++k) {
    const auto row = static_cast<std::uint64_t>(block.row_offset) + k / lc;
    const auto col = static_cast<std::uint64_t>(block.col_offset) + k % lc;
    const std::uint64_t index = row * static_cast<std::uint64_t>(block.global_cols) + col;
    sum += mix(index ^ mix(hash_element(block.bytes.data() + k * bytes, entry.element(), 0xcbf29ce484222325ULL)));
  }
  return sum;
}

std::vector<std::uint64_t> checksums(const Context& ctx, const std::vector<CheckpointEntry>& entries) {
  std::vector<std::uint64_t> sums;
  for (const CheckpointEntry& e : entries) sums.push_back(local_checksum(ctx, e));
  if (!sums.empty()) ctx.comm().allreduce(sums.data(), static_cast<index_t>(sums.size()), ReduceOp::sum);
  return sums;
}

std::string hex(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, v);
  return text;
}

std::string attribute(const std::vector<std::pair<std::string, std::string>>& attrs, const std::string& name) {
  for (const auto& [k, v] : attrs)
    if (k == name) return v;
  return "";
}

void check_names(const std::string& path, const std::vector<CheckpointEntry>& entries) {
  if (entries.empty()) throw IoError("checkpoint " + detail::in_quotes(path) + ": no entries to write", path, "");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& n = entries[i].name();
    if (n.empty() || n.find('/') != std::string::npos || n == "." || n == "..")
      throw IoError("checkpoint " + detail::in_quotes(path) + ": entry name " + detail::in_quotes(n) +
                        " is empty or holds '/' (a name is one dataset at the file's root)",
                    path, n);
    for (std::size_t j = 0; j < i; ++j)
      if (entries[j].name() == n)
        throw IoError("checkpoint " + detail::in_quotes(path) + ": two entries are named " + detail::in_quotes(n), path, n);
  }
}

// Rank 0: "" when `path` is absent, or an HDF5 file whose datasets among `entries` all carry the
// checkpoint's mark (the replace_file check of the commit refuses any other object in it).
std::string replace_problem(const std::string& path, const std::vector<CheckpointEntry>& entries) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";  // the commit checks the rest
  if (H5Fis_hdf5(path.c_str()) <= 0) return "";
  detail::Handle h5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!h5.valid()) return "";
  for (const CheckpointEntry& e : entries) {
    const std::string dataset = "/" + e.name();
    if (H5Lexists(h5.get(), dataset.c_str(), H5P_DEFAULT) <= 0) continue;
    if (attribute(detail::attributes_on_root({path, dataset}), "checkpoint_format").empty())
      return detail::in_quotes(path) + " holds " + detail::in_quotes(dataset) +
             ", which is not part of a Tessera checkpoint (a checkpoint replaces only an earlier checkpoint; the file "
             "is left as it is: give another name)";
  }
  return "";
}

herr_t first_dataset(hid_t group, const char* name, const H5L_info_t*, void* data) {
  detail::Handle object(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
  if (object.valid() && H5Iget_type(object.get()) == H5I_DATASET) {
    *static_cast<std::string*>(data) = std::string("/") + name;
    return 1;
  }
  return 0;
}

}  // namespace

void checkpoint(const Context& ctx, const std::string& path, const std::vector<CheckpointEntry>& entries, index_t step,
                const CheckpointOptions& options) {
  detail::QuietErrors quiet;
  check_names(path, entries);
  const std::string problem = ctx.comm().bcast_string(ctx.is_root() ? replace_problem(path, entries) : std::string(), 0);
  if (!problem.empty()) throw IoError(problem, path, "/" + entries.front().name());

  const std::vector<std::uint64_t> sums = checksums(ctx, entries);
  OutputFile out(ctx, path);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const CheckpointEntry& e = entries[i];
    OutputAttributes a;
    a.app = options.app.empty() ? "tessera" : options.app;
    a.backend = to_string(ctx.backend());
    a.ranks = ctx.size();
    a.overwrite = true;
    a.replace_file = true;
    a.extra = options.extra;
    a.extra.emplace_back("checkpoint_format", kFormat);
    a.extra.emplace_back("checkpoint_step", std::to_string(step));
    a.extra.emplace_back("checkpoint_kind", kind_name(e.kind()));
    a.extra.emplace_back("checkpoint_element", e.element().name);
    a.extra.emplace_back("checkpoint_checksum", hex(sums[i]));
    e.add_to(out, "/" + e.name(), a);
  }
  out.commit();
}

index_t restore(const Context& ctx, const std::string& path, const std::vector<CheckpointEntry>& entries) {
  if (entries.empty()) throw IoError("restore " + detail::in_quotes(path) + ": no entries to read", path, "");
  const std::string where = "checkpoint " + detail::in_quotes(path) + ": ";
  std::vector<std::string> stored;
  index_t step = -1;
  for (const CheckpointEntry& e : entries) {
    const DatasetPath dataset{path, "/" + e.name()};
    const auto attrs = read_attributes(ctx, dataset);  // IoError for a missing file or dataset
    const std::string name = detail::in_quotes(dataset.dataset);
    if (attribute(attrs, "checkpoint_format") != kFormat)
      throw IoError(where + "dataset " + name + " is not part of a Tessera checkpoint (no checkpoint_format " +
                        detail::in_quotes(kFormat) + ")",
                    path, dataset.dataset);
    if (attribute(attrs, "checkpoint_kind") != kind_name(e.kind()))
      throw IoError(where + "dataset " + name + " holds a " + attribute(attrs, "checkpoint_kind") + ", restored into a " +
                        kind_name(e.kind()),
                    path, dataset.dataset);
    if (attribute(attrs, "checkpoint_element") != e.element().name)
      throw IoError(where + "dataset " + name + " holds " + attribute(attrs, "checkpoint_element") +
                        " elements, restored into " + e.element().name + " (a checkpoint restores into its own type)",
                    path, dataset.dataset);
    const std::string text = attribute(attrs, "checkpoint_step");
    char* end = nullptr;
    const long long s = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || s < 0 || (step >= 0 && s != step))
      throw IoError(where + "dataset " + name + " has checkpoint_step " + detail::in_quotes(text) +
                        (step >= 0 ? ", the other entries " + std::to_string(step) : std::string()),
                    path, dataset.dataset);
    step = s;
    stored.push_back(attribute(attrs, "checkpoint_checksum"));
  }
  for (const CheckpointEntry& e : entries) e.read_from(ctx, {path, "/" + e.name()});
  const std::vector<std::uint64_t> sums = checksums(ctx, entries);
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (hex(sums[i]) != stored[i])
      throw IoError(where + "dataset " + detail::in_quotes("/" + entries[i].name()) +
                        " does not match its checksum (stored " + stored[i] + ", read " + hex(sums[i]) +
                        "): the file is corrupt",
                    path, "/" + entries[i].name());
  return step;
}

index_t checkpoint_step(const Context& ctx, const std::string& path) {
  detail::QuietErrors quiet;
  // Rank 0: "/DATASET", the first dataset at the root, or the problem (not starting with '/').
  std::string found;
  if (ctx.is_root()) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) {
      found = "no such file " + detail::in_quotes(path);
    } else if (H5Fis_hdf5(path.c_str()) <= 0) {
      found = detail::in_quotes(path) + " is not an HDF5 file";
    } else {
      detail::Handle h5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
      if (h5.valid()) H5Literate(h5.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, &first_dataset, &found);
      if (found.empty()) found = detail::in_quotes(path) + " holds no dataset (not a Tessera checkpoint)";
    }
  }
  found = ctx.comm().bcast_string(found, 0);
  if (found.front() != '/') throw IoError(found, path, "");
  const std::string& dataset = found;
  const auto attrs = read_attributes(ctx, {path, dataset});
  const std::string text = attribute(attrs, "checkpoint_step");
  char* end = nullptr;
  const long long s = std::strtoll(text.c_str(), &end, 10);
  if (attribute(attrs, "checkpoint_format") != kFormat || text.empty() || *end != '\0' || s < 0)
    throw IoError(detail::in_quotes(path) + " is not a Tessera checkpoint (its dataset " + detail::in_quotes(dataset) +
                      " lacks checkpoint_format and checkpoint_step)",
                  path, dataset);
  return s;
}

}  // namespace tessera::io
