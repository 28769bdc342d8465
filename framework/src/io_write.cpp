// Output datasets: attributes, creation in the temporary, the ranks' writes and the commit (io_write.hpp).
#include "io_write.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "io_posix.hpp"
#include "io_probe.hpp"
#include "io_transfer.hpp"
#include "io_verdict.hpp"
#include "tessera/build_config.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/framework/utf8.hpp"
#include "tessera/framework/trace.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::io::detail {
namespace {

void write_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  Handle type(TESSERA_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  TESSERA_H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  TESSERA_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  Handle space(TESSERA_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  Handle attr(TESSERA_H5_CHECK(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)),
              H5Aclose);
  const std::string text = valid_utf8(value);  // a path may hold any bytes; the attribute says UTF-8
  const char* data = text.c_str();
  TESSERA_H5_CHECK(H5Awrite(attr.get(), type.get(), &data));
}

void write_attributes(hid_t dset, const OutputAttributes& a) {
  write_string_attribute(dset, "app", a.app);
  write_string_attribute(dset, "backend", a.backend);
  write_string_attribute(dset, "version", TESSERA_VERSION_STRING);
  {
    Handle space(TESSERA_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
    const H5Element int32 = h5_element<std::int32_t>();
    Handle attr(TESSERA_H5_CHECK(H5Acreate2(dset, "ranks", int32.file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT)),
                H5Aclose);
    const std::int32_t ranks = a.ranks;
    TESSERA_H5_CHECK(H5Awrite(attr.get(), int32.memory_type, &ranks));
  }
  for (const auto& [key, value] : a.extra) write_string_attribute(dset, key, value);
}

// Rank 0: checks every destination again (it may have changed since start-up) and makes the
// temporary.
void plan_output(const std::string& file, const std::vector<OutputBlock>& parts, OutputPlan& plan) {
  const OutputAttributes& first_attributes = parts.front().attributes;
  const int n = static_cast<int>(parts.size());
  for (int i = 1; i < n; ++i)
    for (int j = 0; j < i; ++j)
      if (parts[static_cast<std::size_t>(i)].dataset == parts[static_cast<std::size_t>(j)].dataset)
        return set_text(plan.message, sizeof plan.message,
                        "two datasets are named " + in_quotes(parts[static_cast<std::size_t>(i)].dataset));
  std::vector<std::string> names;
  for (const OutputBlock& part : parts) names.push_back(part.dataset);
  // Every part must be writable into the file; the first one's check decides whether it exists.
  Destination first;
  for (int i = n - 1; i >= 0; --i) {
    const OutputBlock& part = parts[static_cast<std::size_t>(i)];
    Destination d = check_destination({file, part.dataset}, first_attributes.overwrite, first_attributes.replace_file,
                                      first_attributes.app, names);
    if (!d.problem.empty()) {
      set_text(plan.message, sizeof plan.message, d.problem);
      plan.kind = static_cast<int>(d.kind);
      return;
    }
    plan.replace_dataset[i] = d.replace_dataset ? 1 : 0;
    if (i == 0) first = d;
  }
  const std::string problem = prepare_temporary(file, first.exists, plan);
  if (!problem.empty()) set_text(plan.message, sizeof plan.message, problem);
  plan.copy_of_existing = first.exists ? 1 : 0;
}

// Creates a part's dataset in the open file `f` (unlinking the one it replaces) with its attributes.
Handle create_dataset(hid_t f, const OutputBlock& part, bool replace) {
  if (replace) TESSERA_H5_CHECK(H5Ldelete(f, part.dataset.c_str(), H5P_DEFAULT));
  Handle lcpl(TESSERA_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  TESSERA_H5_CHECK(H5Pset_create_intermediate_group(lcpl.get(), 1));
  Handle space(TESSERA_H5_CHECK(H5Screate_simple(part.ndims, part.dims, nullptr)), H5Sclose);
  Handle dset(TESSERA_H5_CHECK(H5Dcreate2(f, part.dataset.c_str(), part.element.file_type, space.get(), lcpl.get(),
                                          H5P_DEFAULT, H5P_DEFAULT)),
              H5Dclose);
  write_attributes(dset.get(), part.attributes);
  return dset;
}

// Opens the temporary (a copy of the existing file) or creates it. Collective under parallel HDF5.
Handle open_output(const Context& ctx, const OutputPlan& plan) {
  Handle fapl = file_access(ctx);
  return Handle(plan.copy_of_existing ? TESSERA_H5_CHECK(H5Fopen(plan.temporary, H5F_ACC_RDWR, fapl.get()))
                                      : TESSERA_H5_CHECK(H5Fcreate(plan.temporary, H5F_ACC_EXCL, H5P_DEFAULT, fapl.get())),
                H5Fclose);
}

}  // namespace

// The common path of every write: rank 0 plans (and copies an existing file to the temporary name),
// every rank writes its blocks into the temporary (collectively, or in rank order with a token),
// then rank 0 renames it over the destination after a barrier.
void write_parts(const Context& ctx, const std::string& file, const std::vector<OutputBlock>& parts) {
  const trace::Range range(trace::enabled() ? "write " + file : std::string());
  OutputPlan plan;
  const int n = static_cast<int>(parts.size());
  TESSERA_ASSERT(n >= 1 && n <= kMaxOutputDatasets, "write_parts: 1 to kMaxOutputDatasets datasets");
  const std::string& first_dataset = parts.front().dataset;
  if (ctx.is_root()) plan_output(file, parts, plan);
  ctx.comm().bcast(reinterpret_cast<unsigned char*>(&plan), static_cast<index_t>(sizeof plan), 0);
  if (plan.message[0]) throw IoError(plan.message, file, first_dataset, static_cast<IoError::Kind>(plan.kind));
  TemporaryGuard guard(plan.temporary);
  // Writes part after part into the open file `f`; `create`: this rank makes the datasets.
  auto write_into = [&](hid_t f, bool create) {
    for (int i = 0; i < n; ++i) {
      const OutputBlock& part = parts[static_cast<std::size_t>(i)];
      Handle dset = create ? create_dataset(f, part, plan.replace_dataset[i] != 0)
                           : Handle(TESSERA_H5_CHECK(H5Dopen2(f, part.dataset.c_str(), H5P_DEFAULT)), H5Dclose);
      transfer_block(ctx, dset.get(), part.element.memory_type, part.element.bytes, part.ndims, part.start, part.count,
                     const_cast<unsigned char*>(part.host.data()), true);
      // The dataset closes before the file does (an MPI-IO file does not close while objects in it
      // are open).
      dset.close_checked();
    }
  };
  if (parallel_io()) {
    Handle f = open_output(ctx, plan);
    write_into(f.get(), true);
    f.close_checked();
  } else {
    // Rank r writes after rank r - 1 has closed the file: a serial HDF5 file has one writer at a time.
    constexpr int kTokenTag = 7301;
    const Communicator& comm = ctx.comm();
    int token = 0;
    if (comm.rank() > 0) comm.recv(&token, 1, comm.rank() - 1, kTokenTag);
    {
      Handle f = comm.rank() == 0 ? open_output(ctx, plan) : open_file(ctx, plan.temporary, H5F_ACC_RDWR);
      write_into(f.get(), comm.rank() == 0);
      f.close_checked();
    }
    if (comm.rank() + 1 < comm.size()) comm.send(&token, 1, comm.rank() + 1, kTokenTag);
  }
  TESSERA_FAULT_POINT("write");
  commit_output(ctx, plan, file, first_dataset, guard);
}

}  // namespace tessera::io::detail
