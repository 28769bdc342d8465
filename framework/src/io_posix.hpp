// The file-system side of the io layer: checks of an output's directory and file, the temporary an
// output is written to (made in the destination directory, a copy of the existing file or new), and
// the rename that commits it. Problems are returned as text for the message of an IoError.
#pragma once

#include <climits>
#include <string>

#include "tessera/framework/context.hpp"

namespace tessera::io::detail {

// "DIR" of "DIR/BASE"; "." for a bare name, "/" for "/BASE".
std::string directory_of(const std::string& file);

// "" when `file` names a file in an existing directory this process may write in; the problem
// otherwise (not a file name, no such directory, permission denied).
std::string output_directory_problem(const std::string& file);

// "" when nothing is at `file` (*exists false) or a regular file this process may read and write
// (*exists true); the problem otherwise (a symbolic link, a directory, a FIFO, socket or device, no
// permission). An output is renamed over its path: never over a link, which would be replaced
// rather than followed.
std::string replaceable_file_problem(const std::string& file, bool* exists);

// "" when a plain file (a report) can be written at `file`: output_directory_problem, and the path
// is not a directory.
std::string plain_output_problem(const std::string& file);

// The most datasets one output file takes (OutputFile).
inline constexpr int kMaxOutputDatasets = 256;

// What rank 0 decided about an output, for every rank in one broadcast.
struct OutputPlan {
  char message[1024] = {};  // an IoError's text; empty when the write goes ahead
  int kind = 0;             // the IoError's kind
  char temporary[PATH_MAX + 1] = {};
  int copy_of_existing = 0;    // the temporary is a copy of the existing file ...
  unsigned char replace_dataset[kMaxOutputDatasets] = {};  // ... whose dataset of the same name (per dataset
                                                          // written) is unlinked first
};

// Rank 0: removes the temporaries that killed writers left in the directory of `file`, names the
// temporary in plan.temporary and, when `copy_existing`, copies `file` to it (HDF5 creates it
// otherwise). Returns "" or the problem (nothing is left behind then). A copy stays registered as
// the temporary (temporary_file.hpp) until the TemporaryGuard of the write takes it over.
std::string prepare_temporary(const std::string& file, bool copy_existing, OutputPlan& plan);

// The temporary is registered on every rank while the write runs: an exception removes it here,
// a fatal error or a signal in the handlers of temporary_file.hpp.
class TemporaryGuard {
 public:
  explicit TemporaryGuard(const std::string& path);
  ~TemporaryGuard();
  TemporaryGuard(const TemporaryGuard&) = delete;
  TemporaryGuard& operator=(const TemporaryGuard&) = delete;
  void commit() { committed_ = true; }

 private:
  bool committed_ = false;
};

// Collective, once every rank has written and closed the temporary: rank 0 renames it over `file`.
// A failed rename is an IoError on every rank (the guard then removes the temporary); otherwise the
// guard is committed.
void commit_output(const Context& ctx, const OutputPlan& plan, const std::string& file, const std::string& dataset,
                   TemporaryGuard& guard);

}  // namespace tessera::io::detail
