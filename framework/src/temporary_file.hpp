// The temporary file an output is written to before it is renamed to its final name. While one is
// registered, every abnormal end this process can see removes it: the fatal-error handler (a failed
// call, an injected fault, an exception that ends the job), and SIGINT, SIGTERM and SIGHUP (what
// mpirun and srun send to the ranks when the job is interrupted or one rank dies). A SIGKILL cannot
// be seen; the next write, or check of an output, in the same directory removes what such a
// process left behind (remove_stale_temporaries).
#pragma once

#include <string>

namespace tessera::detail {

// Registers `path` (one at a time) and installs the signal handlers, keeping the previous ones.
void register_temporary_file(const std::string& path);

// Forgets the path (after it was renamed or removed) and restores the previous signal handlers.
void unregister_temporary_file();

// Whether a path is registered (a write in progress).
bool temporary_file_registered() noexcept;

// Unlinks the registered path, if any, and forgets it. Async-signal-safe.
void remove_temporary_file() noexcept;

// "DIR/.BASE.tmp-HOST-PID-TICKS" for `file` = "DIR/BASE": in the destination directory (so that the
// final rename is atomic), naming the host and process that write it.
std::string temporary_name_for(const std::string& file);

// Removes, in the directory of `file`, the temporaries of temporary_name_for's naming that a
// process of this host wrote and that outlived it (the process no longer exists). Returns how many.
int remove_stale_temporaries(const std::string& file);

}  // namespace tessera::detail
