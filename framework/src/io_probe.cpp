// The rank-0 probe of input datasets and output destinations, with a broadcast verdict (io_probe.hpp).
#include "io_probe.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "io_elements.hpp"
#include "io_hdf5_handles.hpp"
#include "io_posix.hpp"
#include "io_verdict.hpp"

namespace tessera::io::detail {
namespace {

// What rank 0 found, in one fixed-size record so that it crosses to the other ranks in one bcast.
struct ProbeRecord {
  int ok = 0;
  int no_dataset = 0;  // an HDF5 file that opens, without the dataset: IoError::Kind::no_dataset
  int dtype = 0;
  int is_complex = 0;
  int ndims = 0;
  std::int64_t dims[H5S_MAX_RANK] = {};
  char type_name[256] = {};
  char message[1024] = {};
};

// Rank 0's half of probe. Returns with record.ok = 0 and a message for any user error.
void probe_on_root(const DatasetPath& path, ProbeRecord& record, bool need_dtype, const H5Type* element,
                   bool accept_complex, bool any_type) {
  auto fail = [&](const std::string& what) { set_text(record.message, sizeof record.message, what); };

  struct stat st {};
  if (stat(path.file.c_str(), &st) != 0) return fail("no such file " + in_quotes(path.file));
  if (S_ISDIR(st.st_mode)) return fail(in_quotes(path.file) + " is a directory, not an HDF5 file");
  if (access(path.file.c_str(), R_OK) != 0) return fail("cannot read " + in_quotes(path.file) + " (permission denied)");

  QuietErrors quiet;
  const htri_t is_hdf5 = H5Fis_hdf5(path.file.c_str());
  if (is_hdf5 <= 0) return fail(in_quotes(path.file) + " is not an HDF5 file");
  Handle file(H5Fopen(path.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) return fail("cannot open " + in_quotes(path.file) + " as an HDF5 file");

  // H5Lexists fails (rather than answering no) when an intermediate group is missing, so walk the
  // path one component at a time.
  const std::string& name = path.dataset;
  for (std::size_t pos = 1; pos <= name.size(); ++pos) {
    if (pos != name.size() && name[pos] != '/') continue;
    const std::string prefix = name.substr(0, pos);
    if (prefix.back() == '/') continue;
    if (H5Lexists(file.get(), prefix.c_str(), H5P_DEFAULT) <= 0)
      return record.no_dataset = 1, fail("no dataset " + in_quotes(name) + " in " + in_quotes(path.file) +
                  (pos == name.size() ? "" : " (no " + in_quotes(prefix) + ")"));
  }
  Handle dset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dset.valid()) return record.no_dataset = 1, fail(in_quotes(name) + " in " + in_quotes(path.file) + " is not a dataset");

  Handle type(H5Dget_type(dset.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  const std::size_t bytes = H5Tget_size(type.get());
  std::string type_name;
  std::size_t component_bytes = 0;
  if (element && element->cls == H5Type::Class::compound) {
    const std::string mismatch = compound_mismatch(type.get(), *element);
    if (!mismatch.empty()) return fail(in_quotes(name) + " in " + in_quotes(path.file) + " " + mismatch);
    type_name = describe_file_type(type.get());
  } else if (accept_complex && is_complex_compound(type.get(), &component_bytes)) {
    type_name = "complex compound {r, i} of " + std::to_string(component_bytes * 8) + "-bit floats";
    record.dtype = static_cast<int>(component_bytes == 4 ? DType::float32 : DType::float64);
    record.is_complex = 1;
  } else if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
    type_name = std::to_string(bytes * 8) + "-bit " + (is_signed ? "signed" : "unsigned") + " integer";
    // Widen to the narrowest of our types that holds every value of the file's type.
    if (bytes < 4 || (bytes == 4 && is_signed)) record.dtype = static_cast<int>(DType::int32);
    else if (bytes < 8 || (bytes == 8 && is_signed) || !need_dtype) record.dtype = static_cast<int>(DType::int64);
    else return fail(in_quotes(name) + " in " + in_quotes(path.file) + " holds " + type_name +
                     "s, which no supported dtype (int32, int64, float32, float64) holds exactly");
  } else if (cls == H5T_FLOAT) {
    type_name = std::to_string(bytes * 8) + "-bit float";
    record.dtype = static_cast<int>(bytes <= 4 ? DType::float32 : DType::float64);
  } else if (any_type) {
    type_name = describe_file_type(type.get());
  } else {
    return fail(in_quotes(name) + " in " + in_quotes(path.file) +
                " is not numeric (expected an integer or floating-point dataset)");
  }
  set_text(record.type_name, sizeof record.type_name, type_name);

  // A filter this library lacks (LZF, Blosc, ... registered only inside h5py or a plugin) would fail
  // every read of a chunk: say so now.
  Handle dcpl(H5Dget_create_plist(dset.get()), H5Pclose);
  const int filters = dcpl.valid() ? H5Pget_nfilters(dcpl.get()) : 0;
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t values = 0;
    char filter_name[128] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &values, nullptr,
                                           sizeof filter_name, filter_name, &config);
    if (id >= 0 && H5Zfilter_avail(id) <= 0)
      return fail(in_quotes(name) + " in " + in_quotes(path.file) + " is compressed with the HDF5 filter " +
                  (filter_name[0] ? in_quotes(filter_name) + " " : std::string()) + "(id " + std::to_string(id) +
                  "), which this HDF5 library does not have (rewrite it with gzip, or without compression)");
  }

  Handle space(H5Dget_space(dset.get()), H5Sclose);
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (space_class == H5S_NULL) return fail(in_quotes(name) + " in " + in_quotes(path.file) + " has no data (null dataspace)");
  const int ndims = H5Sget_simple_extent_ndims(space.get());
  if (ndims < 0) return fail("cannot read the shape of " + in_quotes(name) + " in " + in_quotes(path.file));
  hsize_t dims[H5S_MAX_RANK] = {};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  record.ndims = ndims;
  for (int d = 0; d < ndims; ++d) record.dims[d] = static_cast<std::int64_t>(dims[d]);
  record.ok = 1;
}

using AttributeList = std::vector<std::pair<std::string, std::string>>;

// H5Aiterate2's callback: scalar string, integer and floating-point attributes, as text.
herr_t collect_attribute(hid_t location, const char* name, const H5A_info_t*, void* data) {
  auto& out = *static_cast<AttributeList*>(data);
  Handle attr(H5Aopen(location, name, H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) return 0;
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (!type.valid() || !space.valid() || H5Sget_simple_extent_npoints(space.get()) != 1) return 0;
  switch (H5Tget_class(type.get())) {
    case H5T_STRING: {
      Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
      if (H5Tis_variable_str(type.get()) > 0) {
        H5Tset_size(memory.get(), H5T_VARIABLE);
        H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
        char* value = nullptr;
        if (H5Aread(attr.get(), memory.get(), &value) >= 0 && value) {
          out.emplace_back(name, value);
          H5free_memory(value);
        }
      } else {
        const std::size_t size = H5Tget_size(type.get());
        std::vector<char> value(size + 1, '\0');
        H5Tset_size(memory.get(), size + 1);
        if (H5Aread(attr.get(), memory.get(), value.data()) >= 0) out.emplace_back(name, std::string(value.data()));
      }
      break;
    }
    case H5T_INTEGER: {
      long long value = 0;
      if (H5Aread(attr.get(), H5T_NATIVE_LLONG, &value) >= 0) out.emplace_back(name, std::to_string(value));
      break;
    }
    case H5T_FLOAT: {
      double value = 0;
      if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0) {
        char digits[64] = {};
        const auto written = std::to_chars(digits, digits + sizeof digits - 1, value);
        out.emplace_back(name, std::string(digits, written.ptr));
      }
      break;
    }
    default: break;
  }
  return 0;
}

}  // namespace

DatasetInfo probe(const Context& ctx, const DatasetPath& path, bool need_dtype, const H5Type* element,
                  bool accept_complex, bool any_type) {
  ProbeRecord record;
  if (ctx.is_root()) probe_on_root(path, record, need_dtype, element, accept_complex, any_type);
  ctx.comm().bcast(reinterpret_cast<unsigned char*>(&record), static_cast<index_t>(sizeof record), 0);
  if (!record.ok)
    throw IoError(record.message, path.file, path.dataset, record.no_dataset ? IoError::Kind::no_dataset : IoError::Kind::other);
  DatasetInfo info;
  info.dtype = static_cast<DType>(record.dtype);
  info.shape.assign(record.dims, record.dims + record.ndims);
  info.type_name = record.type_name;
  info.is_complex = record.is_complex != 0;
  return info;
}

namespace {

// What a visit of a file's objects collects for whole_file_problem.
struct ObjectList {
  std::vector<std::string> datasets;  // "/a", "/g/b"
  std::vector<std::string> others;    // objects that are neither a group nor a dataset
  hid_t file = H5I_INVALID_HID;
};

herr_t collect_object(hid_t, const char* name, const H5L_info_t*, void* data) {
  auto& list = *static_cast<ObjectList*>(data);
  const std::string path = std::string("/") + name;
  Handle object(H5Oopen(list.file, name, H5P_DEFAULT), H5Oclose);
  const H5I_type_t type = object.valid() ? H5Iget_type(object.get()) : H5I_BADID;
  if (type == H5I_DATASET) list.datasets.push_back(path);
  else if (type != H5I_GROUP) list.others.push_back(path);
  return 0;
}

// "" when the HDF5 file `file` may be replaced as a whole by an output of `app` that writes the
// datasets `written`: everything in it is one of those datasets, made by `app` (its attribute app),
// so that nothing is lost (a checkpoint replaced by the next one). The problem otherwise.
std::string whole_file_problem(const std::string& file, const std::string& app, const std::vector<std::string>& written) {
  Handle h5(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!h5.valid()) return "cannot open " + in_quotes(file) + " as an HDF5 file (" + h5_error_text() + ")";
  ObjectList list;
  list.file = h5.get();
  if (H5Lvisit(h5.get(), H5_INDEX_NAME, H5_ITER_INC, &collect_object, &list) < 0)
    return "cannot list the objects of " + in_quotes(file) + " (" + h5_error_text() + ")";
  const std::string refusal = " (the file is replaced whole by each write: only a file this app wrote so may be; it is "
                              "left as it is: give another name)";
  if (!list.others.empty()) return in_quotes(file) + " holds " + in_quotes(list.others.front()) + ", which" + refusal.substr(1);
  for (const std::string& dataset : list.datasets) {
    bool ours = false;
    for (const std::string& w : written) ours = ours || w == dataset;
    if (!ours) return in_quotes(file) + " holds the dataset " + in_quotes(dataset) + ", which this output would lose" + refusal;
    std::string made_by;
    for (const auto& [name, value] : attributes_on_root({file, dataset}))
      if (name == "app") made_by = value;
    if (made_by != app)
      return in_quotes(file) + " holds " + in_quotes(dataset) + ", which " +
             (made_by.empty() ? std::string("no Tessera app") : in_quotes(made_by)) + " made, not " + in_quotes(app) + refusal;
  }
  return "";
}

}  // namespace

Destination check_destination(const DatasetPath& path, bool overwrite, bool replace_file, const std::string& app,
                              const std::vector<std::string>& written) {
  Destination d;
  const std::string& file = path.file;
  bool present = false;
  d.problem = output_directory_problem(file);
  if (d.problem.empty()) d.problem = replaceable_file_problem(file, &present);
  if (!d.problem.empty() || !present) return d;
  if (H5Fis_hdf5(file.c_str()) <= 0) {
    d.problem = in_quotes(file) + " exists and is not an HDF5 file (it is left as it is: remove it or give another name)";
    return d;
  }
  // A file replaced as a whole (a checkpoint) keeps nothing of the old one: a new temporary, renamed
  // over it. Only a file that holds nothing else may be replaced so.
  if (replace_file) {
    d.problem = whole_file_problem(file, app, written.empty() ? std::vector<std::string>{path.dataset} : written);
    return d;
  }
  Handle h5(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!h5.valid()) {
    d.problem = "cannot open " + in_quotes(file) + " as an HDF5 file (" + h5_error_text() + ")";
    return d;
  }
  d.exists = true;
  // Each group on the way must be a group (or be missing: it is created); the last component may be
  // missing, or a dataset when `overwrite`.
  const std::string& name = path.dataset;
  for (std::size_t pos = 1; pos <= name.size(); ++pos) {
    if (pos != name.size() && name[pos] != '/') continue;
    const std::string prefix = name.substr(0, pos);
    const htri_t there = H5Lexists(h5.get(), prefix.c_str(), H5P_DEFAULT);
    if (there < 0) {
      d.problem = "cannot look up " + in_quotes(prefix) + " in " + in_quotes(file) + " (" + h5_error_text() + ")";
      return d;
    }
    if (there == 0) return d;
    Handle object(H5Oopen(h5.get(), prefix.c_str(), H5P_DEFAULT), H5Oclose);
    const H5I_type_t type = object.valid() ? H5Iget_type(object.get()) : H5I_BADID;
    if (pos != name.size()) {
      if (type != H5I_GROUP) {
        d.problem = in_quotes(prefix) + " in " + in_quotes(file) + " is not a group, so " + in_quotes(name) + " cannot be made";
        return d;
      }
      continue;
    }
    if (type == H5I_GROUP) {
      d.problem = in_quotes(name) + " in " + in_quotes(file) + " is a group, not a dataset";
    } else if (!overwrite) {
      d.problem = "dataset " + quoted_path(path) + " already exists";
      d.kind = IoError::Kind::dataset_exists;
    } else {
      d.replace_dataset = true;
    }
  }
  return d;
}

std::vector<std::pair<std::string, std::string>> attributes_on_root(const DatasetPath& path) {
  AttributeList found;
  Handle file(H5Fopen(path.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  Handle dset(file.valid() ? H5Dopen2(file.get(), path.dataset.c_str(), H5P_DEFAULT) : H5I_INVALID_HID, H5Dclose);
  if (dset.valid()) H5Aiterate2(dset.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, &collect_attribute, &found);
  return found;
}

}  // namespace tessera::io::detail
