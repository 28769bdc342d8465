#include "whole_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tessera::apps {

std::string write_whole_file(const std::string& path, const std::string& text) {
  struct stat existing {};
  const bool through = lstat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode);
  const std::string partial = through ? path : path + ".partial";
  FILE* f = std::fopen(partial.c_str(), "w");
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
