// The HDF5 side of the io layer: owned identifiers, the error stack (silenced, and read back as one
// line), the HDF5 types of the element types, and file access for the ranks of a context (MPI-IO
// under parallel HDF5).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>

#include "tessera/build_config.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/kernels/element_traits.hpp"

// TESSERA_IO_FORCE_SERIAL (a compile definition) takes the serial-HDF5 path with a parallel library
// too, so that the path the GPU machine's serial HDF5 takes can be tested where MPI-IO exists; the
// environment variable TESSERA_IO_SERIAL=1 does the same at run time (for tests).
#if TESSERA_HDF5_PARALLEL && defined(H5_HAVE_PARALLEL) && !defined(TESSERA_IO_FORCE_SERIAL)
#define TESSERA_IO_PARALLEL 1
#else
#define TESSERA_IO_PARALLEL 0
#endif

// HDF5 calls return a negative value on failure. A failure after rank 0 validated the input is not
// the user's doing (a file changed under us, a full disk): the job ends with the call's text and
// the innermost message of HDF5's error stack, in one line.
#define TESSERA_H5_CHECK(call)                                                                      \
  ([&]() {                                                                                          \
    auto tessera_h5_result_ = (call);                                                               \
    if (tessera_h5_result_ < 0)                                                                     \
      ::tessera::fatal(__FILE__, __LINE__, #call, "HDF5 call failed: " + ::tessera::io::detail::h5_error_text()); \
    return tessera_h5_result_;                                                                      \
  }())

namespace tessera::io::detail {

// One HDF5 identifier, closed by the matching H5?close when it goes out of scope.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }
  // For files being written: a failed close may mean data never reached the disk.
  void close_checked();

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Silences HDF5's printed error stack while Tessera works on a file: a missing dataset or a corrupt
// chunk is reported in one line (h5_error_text), not as a page of library internals from every rank.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The innermost message of HDF5's error stack (what failed first: "No space left on device",
// "required filter 'lzf' is not registered"), or "no HDF5 error message".
std::string h5_error_text();

// The HDF5 types of an element type: in memory (native) and in files (the little-endian standard
// type of the same kind and size, whatever the host, so files compare anywhere).
struct H5Element {
  hid_t memory_type;
  hid_t file_type;
  std::size_t bytes;
  const char* name;  // ElementTraits' ("int32", "float64", ...)
};

H5Element h5_element(ElementKind kind, std::size_t bytes, const char* name);

template <class T>
H5Element h5_element() {
  static_assert(is_numeric_element_v<T>, "h5_element: HDF5 datasets hold integers and floating-point numbers");
  return h5_element(ElementTraits<T>::kind, ElementTraits<T>::bytes, ElementTraits<T>::name);
}

// Parallel HDF5 (MPI-IO) where the library has it; TESSERA_IO_SERIAL=1 in the environment takes the
// serial path instead (for tests of the path a serial library takes; every rank must see the same).
bool parallel_io();

// File access for every rank of ctx together (MPI-IO) under parallel HDF5; the default otherwise.
Handle file_access(const Context& ctx);

// Opens a file every rank of ctx reads from (MPI-IO under parallel HDF5) or writes to.
Handle open_file(const Context& ctx, const std::string& file, unsigned flags);

}  // namespace tessera::io::detail
