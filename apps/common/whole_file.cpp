#include "whole_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace tessera::apps {

std::string write_whole_file(const std::string& path, const std::string& text) {
  struct stat existing {};
  const bool through = lstat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode);
  std::string partial = path;
  FILE* f = nullptr;
  if (through) {
    f = std::fopen(path.c_str(), "w");
  } else {
    // A name no file has: made with O_EXCL, so that no existing file (an input of the run, one
    // of the user's) is ever opened, let alone replaced.
    for (int attempt = 0; attempt < 100 && !f; ++attempt) {
      partial = path;
      partial += ".partial-";
      partial += std::to_string(static_cast<long>(getpid()));
      if (attempt > 0) {
        partial += '-';
        partial += std::to_string(attempt);
      }
      const int fd = open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0 && errno == EEXIST) continue;
      if (fd < 0) break;
      f = fdopen(fd, "w");
      if (!f) {
        const int error = errno;
        close(fd);
        std::remove(partial.c_str());
        errno = error;
      }
    }
  }
  if (!f) return "cannot create '" + partial + "': " + std::strerror(errno);
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  const int write_error = errno;
  const bool closed = std::fclose(f) == 0;
  const int close_error = errno;
  if (!written || !closed) {
    if (!through) std::remove(partial.c_str());
    return "cannot write '" + path + "': " + std::strerror(written ? close_error : write_error);
  }
  if (!through && std::rename(partial.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    std::remove(partial.c_str());
    return "cannot replace '" + path + "': " + std::strerror(rename_error);
  }
  return "";
}

}  // namespace tessera::apps
