// Fatal-error policy of the kernels layer. The kernels know nothing of MPI: they report through a
// handler, which the framework's runtime replaces by one that aborts the whole MPI job, so that no
// rank is left waiting in a collective for a rank that died.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

// Thrown for input a user can correct (bad sizes, shapes, unknown options). Callers turn it into a
// message naming what was wrong and a non-zero exit; it never indicates a broken invariant.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
