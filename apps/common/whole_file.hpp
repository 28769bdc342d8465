// A text file written whole or not at all: what the apps, the scaling driver and the benchmarks
// write their reports (--json) with. Plain C++: no MPI, no device.
#pragma once

#include <string>

namespace tessera::apps {

// Writes `text` to `path`. A new or regular file is written under path + ".partial-PID" (a name
// made new, never an existing file's) and renamed over `path` when complete, so that a job killed
// meanwhile leaves no file that looks complete and the old file stays until the new one is whole;
// anything else at the path (a symbolic link, a FIFO, a device) is written through, never
// replaced. On failure nothing is left under the temporary name. Returns "" or what went wrong,
// without a flag: "cannot create 'out.json.partial-123': Permission denied", "cannot write
// 'out.json': No space left on device", "cannot replace 'out.json': ...".
std::string write_whole_file(const std::string& path, const std::string& text);

}  // namespace tessera::apps
