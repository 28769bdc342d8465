// Command-line helpers shared by the kernel benchmarks: the harness's parse and finish for a one-GPU
// benchmark, a usage error (the program's name and the message on stderr, exit status 2), a list
// split at a separator, and whole-number arguments.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "harness.hpp"

namespace tessera::bench {

// The name usage errors start with; each benchmark's main sets it before parsing.
inline std::string& program_name() {
  static std::string name = "tessera_bench";
  return name;
}

[[noreturn]] inline void usage_error(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_name().c_str(), what.c_str());
  std::exit(2);
}

// The value after the flag argv[i] (i moves onto it), or a usage error naming the flag.
inline std::string flag_value(int argc, char** argv, int& i, const std::string& flag) {
  if (i + 1 >= argc) usage_error(flag + ": missing value");
  return argv[++i];
}

inline std::vector<std::string> split(const std::string& s, char sep = ',') {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

// The harness's parse for a one-GPU benchmark: a usage error exits with status 2, --help with 0.
inline void parse_command_line(Harness& h, int argc, char** argv) {
  program_name() = h.program();
  try {
    if (!h.parse(argc, argv)) std::exit(0);
  } catch (const UsageError& e) {
    usage_error(e.what());
  }
}

// Writes --json (when given) and prints the summary line; a --json that cannot be written is a usage
// error. Returns 0 when every row is VALID, else 1.
inline int finish(Harness& h) {
  try {
    return h.finish();
  } catch (const UsageError& e) {
    usage_error(e.what());
  }
}

// A comma-separated list of counts (2^k, K/M/G suffixes), each at least 1: --sizes and the like.
inline std::vector<long long> parse_counts(std::string_view text, const char* flag) {
  std::vector<long long> out;
  for (const std::string& part : split(std::string(text)))
    out.push_back(static_cast<long long>(apps::parse_count(part, flag, 1, std::int64_t(1) << 50)));
  return out;
}

// A whole number of at least `least` (0 or 1), in any base strtoll reads.
inline long long parse_count(const std::string& text, const char* flag, long long least = 0) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 0);
  if (text.empty() || *end != '\0' || v < least)
    usage_error(std::string(flag) + (least > 0 ? ": not a positive integer: '" : ": not a non-negative integer: '") + text +
                "'");
  return v;
}

}  // namespace tessera::bench
