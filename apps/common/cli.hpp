// The command line of the apps: a small flag parser, the flags every app shares, and the parsers of
// sizes and numbers. Every error is a UsageError whose message names the flag and what was wrong;
// parsing is deterministic, so every rank reaches the same verdict without talking to the others.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/framework/io.hpp"
#include "tessera/kernels/config.hpp"

namespace tessera::apps {

class ArgParser {
 public:
  ArgParser(std::string program, std::string summary);

  // A flag without a value (--verify).
  void add_switch(std::string name, std::string help, bool* target);
  // A flag with a value (--n N or --n=N); `apply` converts it and may throw UsageError. A flag
  // added again replaces the earlier one (an app widening a common flag), in its place in the help.
  void add_option(std::string name, std::string metavar, std::string help,
                  std::function<void(std::string_view value)> apply);

  // Throws UsageError for an unknown flag, a missing value, a stray argument, or what an option's
  // `apply` throws. A value may follow its flag (--n 5) or be joined to it (--n=5); a following
  // argument that looks like a flag (--verify, -x; not a number such as -1) is not taken as a value
  // (--json=--verify takes it). Returns the names of the flags that were given, in order.
  std::vector<std::string> parse(int argc, char** argv);
  bool given(std::string_view name) const;
  // (flag, FILE) for every value given to a flag whose metavar starts with "FILE.h5:" (the HDF5
  // inputs and outputs, whichever app defines them).
  std::vector<std::pair<std::string, std::string>> dataset_files() const;

  std::string help_text() const;
  const std::string& program() const { return program_; }

 private:
  struct Flag {
    std::string name, metavar, help;
    bool* target = nullptr;
    std::function<void(std::string_view)> apply;
  };
  const Flag* find(std::string_view name) const;
  std::string program_, summary_;
  std::vector<Flag> flags_;
  std::vector<std::string> given_;
  std::vector<std::pair<std::string, std::string>> values_;  // (flag, value) as given
};

// The flags all four apps take.
struct CommonOptions {
  std::string backend = "auto";
  int threads = 0;                 // OpenMP threads per rank; 0: OMP_NUM_THREADS, else the runtime's choice
  std::optional<io::DType> dtype;  // unset: float32, or the file's type with --input
  index_t n = index_t(1) << 20;
  std::uint64_t seed = 42;
  std::optional<io::DatasetPath> input;
  std::optional<io::DatasetPath> output;
  int repeat = 3;
  int warmup = 1;
  std::string json;
  bool overwrite = false;          // --output may replace an existing dataset of the same name
  bool verify = false;
  bool quiet = false;              // no progress lines on stderr
  bool help = false;
  bool version = false;
};

// Registers --backend --threads --dtype --seed --input --output --overwrite --repeat --warmup --json
// --verify --quiet --help --version, and --n unless with_n is false (matmul has its own --n, the column count).
void add_common_options(ArgParser& parser, CommonOptions& options, bool with_n = true);

// --threads T (1 to 65536) into *threads, for programs that do not take the common flags.
void add_threads_option(ArgParser& parser, int* threads);
// --warmup W (0 to 1000000) into *warmup, for programs that do not take the common flags.
void add_warmup_option(ArgParser& parser, int* warmup);

// A non-negative 64-bit count: 1000000, 1e6, 2^20, 64M, 1G, 1.5K (K, M, G, T are powers of 1024;
// the value must be a whole number). Negative, unparsable and too large (> 2^63 - 1) values throw a
// UsageError naming `flag`.
index_t parse_size(std::string_view text, std::string_view flag);

// An integer in [min, max]; UsageError naming `flag` otherwise.
std::int64_t parse_integer(std::string_view text, std::string_view flag, std::int64_t min, std::int64_t max);
// A count in [min, max] (min >= 0) written as parse_size takes it (2^21, 64K, 1e6); UsageError
// naming `flag` otherwise.
index_t parse_count(std::string_view text, std::string_view flag, index_t min, index_t max);
std::uint64_t parse_unsigned(std::string_view text, std::string_view flag);
// A finite or infinite floating-point number (strtod syntax, whole text); UsageError otherwise.
double parse_real(std::string_view text, std::string_view flag);

// Converts text to T: an integer in T's range for int32 / int64, a number for float / double
// (rounded to the nearest float). UsageError naming `flag` otherwise.
template <class T>
T parse_value(std::string_view text, std::string_view flag);

// A value of T to compare data with: as parse_value, but a finite number beyond T's range (1e39 for
// float32, 1e400 for float64) is refused, naming T's largest value, rather than rounded to infinity
// (inf and -inf are taken as written); a number nearer zero than T holds still rounds, as a literal.
template <class T>
T parse_element(std::string_view text, std::string_view flag);

// The UsageError the apps print for an io error on the file or dataset that `flag` names: "FLAG:
// what went wrong", with the flag that is the remedy where there is one (--overwrite for an existing
// dataset, --dtype for file values the element type cannot hold).
UsageError flag_error(std::string_view flag, const io::IoError& error);

// Runs `call`, an io call on the file or dataset that `flag` names, and returns what it returns; an
// io::IoError it throws becomes flag_error(flag, ...).
//   const auto info = for_flag("--input", [&] { return io::probe_dataset(ctx, path); });
template <class Call>
decltype(auto) for_flag(std::string_view flag, Call&& call) {
  try {
    return std::forward<Call>(call)();
  } catch (const io::IoError& error) {
    throw flag_error(flag, error);
  }
}

// An error found on rank 0 alone (its message; empty where there is none), thrown on every rank as
// the same UsageError. Collective over comm; the other ranks' message is not read.
void throw_root_error(const Communicator& comm, const std::string& message_on_root);

// io::parse_dataset_path for the value of `flag`.
io::DatasetPath parse_dataset_option(std::string_view text, std::string_view flag);

}  // namespace tessera::apps
