// HDF5 identifiers, error stack, element types and file access (io_hdf5_handles.hpp).
#include "io_hdf5_handles.hpp"

#include <cstdlib>
#include <cstring>

#include "tessera/kernels/error.hpp"

namespace tessera::io::detail {

void Handle::close_checked() {
  const hid_t id = id_;
  id_ = H5I_INVALID_HID;
  if (id >= 0 && closer_ && closer_(id) < 0) fatal(__FILE__, __LINE__, "H5?close", "closing an HDF5 object failed");
}

namespace {

herr_t innermost_error(unsigned n, const H5E_error2_t* error, void* text) {
  if (n == 0 && error && error->desc) *static_cast<std::string*>(text) = error->desc;
  return 0;
}

}  // namespace

std::string h5_error_text() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, &innermost_error, &text);
  // The deepest message of a failed system call is long ("file write failed: time = ..., errno =
  // 28, error message = 'No space left on device', ..."): keep what the system said.
  const auto said = text.find("error message = '");
  if (said != std::string::npos) {
    const auto begin = said + 17;
    const auto end = text.find('\'', begin);
    text = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  return text.empty() ? "no HDF5 error message" : text;
}

H5Element h5_element(ElementKind kind, std::size_t bytes, const char* name) {
  switch (kind) {
    case ElementKind::signed_integer:
      switch (bytes) {
        case 1: return {H5T_NATIVE_INT8, H5T_STD_I8LE, bytes, name};
        case 2: return {H5T_NATIVE_INT16, H5T_STD_I16LE, bytes, name};
        case 4: return {H5T_NATIVE_INT32, H5T_STD_I32LE, bytes, name};
        default: return {H5T_NATIVE_INT64, H5T_STD_I64LE, bytes, name};
      }
    case ElementKind::unsigned_integer:
      switch (bytes) {
        case 1: return {H5T_NATIVE_UINT8, H5T_STD_U8LE, bytes, name};
        case 2: return {H5T_NATIVE_UINT16, H5T_STD_U16LE, bytes, name};
        case 4: return {H5T_NATIVE_UINT32, H5T_STD_U32LE, bytes, name};
        default: return {H5T_NATIVE_UINT64, H5T_STD_U64LE, bytes, name};
      }
    case ElementKind::floating_point:
      if (bytes == 4) return {H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, bytes, name};
      return {H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, bytes, name};
    case ElementKind::boolean:
    case ElementKind::character: break;
  }
  TESSERA_ASSERT(false, "h5_element: not a numeric element type");
  return {H5I_INVALID_HID, H5I_INVALID_HID, bytes, name};
}

bool parallel_io() {
#if TESSERA_IO_PARALLEL
  static const bool parallel = [] {
    const char* env = std::getenv("TESSERA_IO_SERIAL");
    return !(env && std::strcmp(env, "1") == 0);
  }();
  return parallel;
#else
  return false;
#endif
}

Handle file_access(const Context& ctx) {
  Handle fapl(TESSERA_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
#if TESSERA_IO_PARALLEL
  if (parallel_io()) TESSERA_H5_CHECK(H5Pset_fapl_mpio(fapl.get(), ctx.comm().get(), MPI_INFO_NULL));
#endif
  (void)ctx;
  return fapl;
}

Handle open_file(const Context& ctx, const std::string& file, unsigned flags) {
  Handle fapl = file_access(ctx);
  return Handle(TESSERA_H5_CHECK(H5Fopen(file.c_str(), flags, fapl.get())), H5Fclose);
}

}  // namespace tessera::io::detail
