// Output directories and files, the temporary an output is written to, and its rename (io_posix.hpp).
#include "io_posix.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "io_verdict.hpp"
#include "tessera/framework/io.hpp"
#include "temporary_file.hpp"

namespace tessera::io::detail {

std::string directory_of(const std::string& file) {
  const auto slash = file.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return file.substr(0, slash);
}

std::string output_directory_problem(const std::string& file) {
  if (file.empty() || file.back() == '/') return in_quotes(file) + " is not a file name";
  const std::string directory = directory_of(file);
  struct stat st {};
  if (stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return "no such directory " + in_quotes(directory) + " for " + in_quotes(file);
  if (access(directory.c_str(), W_OK | X_OK) != 0)
    return "cannot write in directory " + in_quotes(directory) + " (permission denied)";
  // access() answers from the permission bits; a file system that makes no files (procfs, sysfs)
  // or a directory whose files cannot be removed or renamed over (append-only) answers only when a
  // file is made there. One is made under the temporary's name and removed at once, so that a run
  // is refused before its work, not after it.
  const std::string probe = tessera::detail::temporary_name_for(file);
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int error = errno;
    return "cannot make a file in directory " + in_quotes(directory) + " (" + std::strerror(error) + ")";
  }
  close(fd);
  if (unlink(probe.c_str()) != 0) {
    const int error = errno;
    return "cannot remove a file made in directory " + in_quotes(directory) + ", as the output's temporary must be (" +
           std::strerror(error) + "; " + in_quotes(probe) + " is left there)";
  }
  return "";
}

std::string replaceable_file_problem(const std::string& file, bool* exists) {
  *exists = false;
  struct stat st {};
  if (lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return "";
    return "cannot examine " + in_quotes(file) + ": " + std::strerror(errno);
  }
  if (S_ISLNK(st.st_mode)) return in_quotes(file) + " is a symbolic link (give the path of the file itself)";
  if (S_ISDIR(st.st_mode)) return in_quotes(file) + " is a directory";
  if (!S_ISREG(st.st_mode)) return in_quotes(file) + " is not a regular file (a FIFO, socket or device)";
  if (access(file.c_str(), R_OK | W_OK) != 0) return "cannot write " + in_quotes(file) + " (permission denied)";
  *exists = true;
  return "";
}

std::string plain_output_problem(const std::string& file) {
  std::string problem = output_directory_problem(file);
  struct stat st {};
  if (problem.empty() && stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) problem = in_quotes(file) + " is a directory";
  return problem;
}

namespace {

// Copies `from` to the new file `to` (created here, with from's permission bits). "" or the problem.
std::string copy_file(const std::string& from, const std::string& to) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return "cannot read " + in_quotes(from) + ": " + std::strerror(errno);
  struct stat st {};
  if (fstat(in, &st) != 0) st.st_mode = 0644;
  const int out = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
  if (out < 0) {
    const int error = errno;
    close(in);
    return "cannot create " + in_quotes(to) + ": " + std::strerror(error);
  }
  std::string problem;
  std::vector<char> buffer(std::size_t(4) << 20);
  while (problem.empty()) {
    const ssize_t got = read(in, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) problem = "cannot read " + in_quotes(from) + ": " + std::strerror(errno);
    if (got <= 0) break;
    for (ssize_t done = 0; done < got && problem.empty();) {
      const ssize_t put = write(out, buffer.data() + done, static_cast<std::size_t>(got - done));
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) problem = "cannot copy " + in_quotes(from) + " to " + in_quotes(to) + ": " + std::strerror(errno);
      else done += put;
    }
  }
  if (problem.empty()) fchmod(out, st.st_mode & 07777);  // the umask may have narrowed them
  if (close(out) != 0 && problem.empty())
    problem = "cannot copy " + in_quotes(from) + " to " + in_quotes(to) + ": " + std::strerror(errno);
  close(in);
  return problem;
}

}  // namespace

std::string prepare_temporary(const std::string& file, bool copy_existing, OutputPlan& plan) {
  tessera::detail::remove_stale_temporaries(file);
  const std::string temporary = tessera::detail::temporary_name_for(file);
  if (temporary.size() >= sizeof plan.temporary) return "the path " + in_quotes(file) + " is too long";
  set_text(plan.temporary, sizeof plan.temporary, temporary);
  if (!copy_existing) return "";
  tessera::detail::register_temporary_file(temporary);  // an interrupted copy is removed too
  std::string problem = copy_file(file, temporary);
  if (!problem.empty()) {
    tessera::detail::remove_temporary_file();
    tessera::detail::unregister_temporary_file();
  }
  return problem;
}

TemporaryGuard::TemporaryGuard(const std::string& path) { tessera::detail::register_temporary_file(path); }

TemporaryGuard::~TemporaryGuard() {
  if (!committed_) tessera::detail::remove_temporary_file();
  tessera::detail::unregister_temporary_file();
}

namespace {

// fsync of the file or directory at `path`; false (errno set) when it cannot be opened or flushed.
bool sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

}  // namespace

void commit_output(const Context& ctx, const OutputPlan& plan, const std::string& file, const std::string& dataset,
                   TemporaryGuard& guard) {
  // Every rank has closed the file before rank 0 gives it its final name.
  ctx.comm().barrier();
  Verdict verdict;
  if (ctx.is_root()) {
    // The data reach the disk before the name does, and the name before the call returns: a crash
    // of the machine leaves the old file or the whole new one, never a named empty one.
    if (!sync_path(plan.temporary, O_RDONLY))
      verdict.fail("cannot flush " + in_quotes(plan.temporary) + " to disk: " + std::strerror(errno));
    else if (std::rename(plan.temporary, file.c_str()) != 0)
      verdict.fail("cannot rename " + in_quotes(plan.temporary) + " to " + in_quotes(file) + ": " + std::strerror(errno));
    else
      (void)sync_path(directory_of(file), O_RDONLY | O_DIRECTORY);  // some file systems cannot; the rename stands
  }
  agree_on_verdict(ctx, verdict, 0, file, dataset);  // throws: the guard removes the temporary
  guard.commit();
}

}  // namespace tessera::io::detail

namespace tessera::io {

std::string write_whole_file(const std::string& path, std::string_view bytes) {
  struct stat existing {};
  const bool through = lstat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode);
  std::string name = path;
  int fd = -1;
  if (through) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);  // a link's missing target is made
  } else {
    tessera::detail::remove_stale_temporaries(path);
    // A name no file has (the ticks differ between tries): O_EXCL never opens an existing file.
    for (int attempt = 0; attempt < 100; ++attempt) {
      name = tessera::detail::temporary_name_for(path);
      fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0 || errno != EEXIST) break;
    }
  }
  if (fd < 0) return "cannot create " + detail::in_quotes(name) + ": " + std::strerror(errno);
  // Removed by a fatal error or a signal while it is written; not where another write of this
  // process holds the one registration (its own temporary is the one to protect; this one is swept).
  const bool registered = !through && !tessera::detail::temporary_file_registered();
  if (registered) tessera::detail::register_temporary_file(name);
  std::string problem;
  for (std::size_t done = 0; done < bytes.size() && problem.empty();) {
    const ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) problem = "cannot write " + detail::in_quotes(path) + ": " + std::strerror(wrote < 0 ? errno : EIO);
    else done += static_cast<std::size_t>(wrote);
  }
  if (problem.empty() && !through && ::fsync(fd) != 0)
    problem = "cannot flush " + detail::in_quotes(name) + " to disk: " + std::strerror(errno);
  if (::close(fd) != 0 && problem.empty()) problem = "cannot write " + detail::in_quotes(path) + ": " + std::strerror(errno);
  if (problem.empty() && !through) {
    if (std::rename(name.c_str(), path.c_str()) != 0)
      problem = "cannot replace " + detail::in_quotes(path) + ": " + std::strerror(errno);
    else  // the name reaches the disk too (some file systems cannot: the rename stands)
      (void)detail::sync_path(detail::directory_of(path), O_RDONLY | O_DIRECTORY);
  }
  if (!through && !problem.empty()) ::unlink(name.c_str());
  if (registered) tessera::detail::unregister_temporary_file();
  return problem;
}

}  // namespace tessera::io
