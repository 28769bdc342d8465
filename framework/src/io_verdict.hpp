// What one rank of an io call found wrong, shared with the others so that every rank throws the same
// IoError, and the quoting every io message uses.
#pragma once

#include <cstdio>
#include <string>

#include "tessera/framework/io.hpp"

namespace tessera::io::detail {

inline std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// "'/group/data' in 'file.h5'".
inline std::string quoted_path(const DatasetPath& path) { return in_quotes(path.dataset) + " in " + in_quotes(path.file); }

inline void set_text(char* dst, std::size_t size, const std::string& text) { std::snprintf(dst, size, "%s", text.c_str()); }

// A problem in one fixed-size record, so that it crosses to the other ranks in one broadcast. An
// empty message: nothing was wrong.
struct Verdict {
  char message[1024] = {};
  int kind = 0;  // IoError::Kind

  void fail(const std::string& text, IoError::Kind why = IoError::Kind::other) {
    set_text(message, sizeof message, text);
    kind = static_cast<int>(why);
  }
  bool failed() const { return message[0] != '\0'; }
};

// Collective: every rank takes `root`'s verdict and throws its IoError (for `file` and `dataset`)
// when it failed.
inline void agree_on_verdict(const Context& ctx, Verdict& verdict, int root, const std::string& file,
                             const std::string& dataset) {
  ctx.comm().bcast(reinterpret_cast<unsigned char*>(&verdict), static_cast<index_t>(sizeof verdict), root);
  if (verdict.failed()) throw IoError(verdict.message, file, dataset, static_cast<IoError::Kind>(verdict.kind));
}

}  // namespace tessera::io::detail
