// Fatal-error policy of the kernels layer. The kernels know nothing of MPI: they report through a
// handler, which the framework's runtime replaces by one that aborts the whole MPI job, so that no
// rank is left waiting in a collective for a rank that died.
#pragma once

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

namespace tessera {

// Thrown for input a user can correct (bad sizes, shapes, unknown options). Callers turn it into a
// message naming what was wrong and a non-zero exit; it never indicates a broken invariant.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Memory the backend could not provide: host memory for the cpu backend, device memory for cuda
// (after the allocator gave back what it had cached). A std::bad_alloc, so code that catches that
// still does; the apps turn it into one line naming the flag and the bytes per rank. Also thrown
// for a byte count that does not fit in 64 bits (an element count times the element size).
class OutOfMemory : public std::bad_alloc {
 public:
  OutOfMemory(std::size_t bytes, std::string where);
  const char* what() const noexcept override { return message_.c_str(); }
  std::size_t bytes() const { return bytes_; }  // SIZE_MAX: the count overflowed
  const std::string& where() const { return where_; }

 private:
  std::size_t bytes_;
  std::string where_;
  std::string message_;
};

// "1.50 GiB" and the like (binary prefixes), for messages about memory.
std::string format_bytes(double bytes);

using FatalHandler = void (*)(const char* file, int line, const char* call, const char* what);

// Installs the handler; returns the previous one. The default prints and calls std::abort().
FatalHandler set_fatal_handler(FatalHandler handler);

// Reports "file:line: call: what" through the handler. Never returns.
[[noreturn]] void fatal(const char* file, int line, const char* call, const std::string& what);

}  // namespace tessera

#define TESSERA_FATAL(call, what) ::tessera::fatal(__FILE__, __LINE__, call, what)

// For invariants of our own code (not user input): a broken one is a bug, and the job ends.
#define TESSERA_ASSERT(cond, what)                                   \
  do {                                                               \
    if (!(cond)) ::tessera::fatal(__FILE__, __LINE__, #cond, what);  \
  } while (0)
