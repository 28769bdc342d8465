#include "cli.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "tessera/build_config.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::apps {
namespace {

__extension__ using u128 = unsigned __int128;

constexpr u128 kMaxSize = static_cast<u128>(std::numeric_limits<index_t>::max());

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

[[noreturn]] void bad_size(std::string_view text, std::string_view flag) {
  throw UsageError(std::string(flag) + ": cannot parse " + quote(text) +
                   " as a size (examples: 1000000, 1e6, 2^20, 64M, 1G)");
}

[[noreturn]] void too_large(std::string_view text, std::string_view flag) {
  throw UsageError(std::string(flag) + ": size " + quote(text) + " is too large (more than 2^63 - 1)");
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads a run of decimal digits from text[pos...]; saturates above 2^100 (caller treats as overflow).
u128 read_digits(std::string_view text, std::size_t& pos, int* count, bool* saturated) {
  u128 v = 0;
  *count = 0;
  while (pos < text.size() && is_digit(text[pos])) {
    if (v > (u128(1) << 100)) *saturated = true;
    else v = v * 10 + static_cast<unsigned>(text[pos] - '0');
    ++pos;
    ++*count;
  }
  return v;
}

}  // namespace

ArgParser::ArgParser(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void ArgParser::add_switch(std::string name, std::string help, bool* target) {
  flags_.push_back(Flag{std::move(name), "", std::move(help), target, {}});
}

void ArgParser::add_option(std::string name, std::string metavar, std::string help,
                           std::function<void(std::string_view)> apply) {
  Flag flag{std::move(name), std::move(metavar), std::move(help), nullptr, std::move(apply)};
  for (Flag& f : flags_)
    if (f.name == flag.name) {
      f = std::move(flag);  // an app widening a common flag (transpose's --dtype)
      return;
    }
  flags_.push_back(std::move(flag));
}

const ArgParser::Flag* ArgParser::find(std::string_view name) const {
  for (const Flag& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

bool ArgParser::given(std::string_view name) const {
  for (const auto& g : given_)
    if (g == name) return true;
  return false;
}

namespace {

// An argument that was meant as a flag, not as the value of the one before it: "--verify", "-v".
// Numbers ("-1", "-0.5", "-.5", "-inf") are values.
bool looks_like_flag(std::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-') return false;
  if (arg[1] == '-') return true;
  const char c = arg[1];
  if (is_digit(c) || c == '.') return false;
  const std::string_view rest = arg.substr(1);
  return !(rest == "inf" || rest == "infinity" || rest == "nan" || rest == "Inf" || rest == "Infinity" || rest == "NaN" ||
           rest == "INF" || rest == "NAN");
}

}  // namespace

std::vector<std::string> ArgParser::parse(int argc, char** argv) {
  given_.clear();
  values_.clear();
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--")
      throw UsageError("unexpected argument " + quote(arg) + " (flags start with --; see --help)");
    std::string_view name = arg;
    std::optional<std::string_view> value;
    if (const auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    const Flag* flag = find(name);
    if (!flag) throw UsageError("unknown flag " + quote(name) + " (see --help)");
    if (given(flag->name)) throw UsageError(flag->name + ": given more than once");
    given_.push_back(flag->name);
    if (flag->target) {
      if (value) throw UsageError(flag->name + ": takes no value");
      *flag->target = true;
      continue;
    }
    if (!value) {
      if (i + 1 >= argc) throw UsageError(flag->name + ": missing value " + flag->metavar);
      if (looks_like_flag(argv[i + 1]))
        throw UsageError(flag->name + ": missing value " + flag->metavar + " (the next argument, " + quote(argv[i + 1]) +
                         ", is a flag; write " + flag->name + "=" + argv[i + 1] + " if it is meant as the value)");
      value = std::string_view(argv[++i]);
    }
    flag->apply(*value);
    values_.emplace_back(flag->name, std::string(*value));
  }
  return given_;
}

std::vector<std::pair<std::string, std::string>> ArgParser::dataset_files() const {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [name, value] : values_) {
    const Flag* flag = find(name);
    if (flag && flag->metavar.rfind("FILE.h5:", 0) == 0)
      files.emplace_back(name, parse_dataset_option(value, name).file);
  }
  return files;
}

std::string ArgParser::help_text() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
  for (const Flag& f : flags_) {
    std::string head = "  " + f.name + (f.metavar.empty() ? "" : " " + f.metavar);
    if (head.size() < 34) head.resize(34, ' ');
    else head += "\n" + std::string(34, ' ');
    out << head << f.help << "\n";
  }
  return out.str();
}

UsageError flag_error(std::string_view flag, const io::IoError& error) {
  std::string text = std::string(flag) + ": " + error.what();
  if (error.kind() == io::IoError::Kind::dataset_exists) text += " (give --overwrite to replace it)";
  if (error.kind() == io::IoError::Kind::unrepresentable_values) text += " (--dtype)";
  return UsageError(text);
}

io::DatasetPath parse_dataset_option(std::string_view text, std::string_view flag) {
  return for_flag(flag, [&] { return io::parse_dataset_path(text); });
}

void add_threads_option(ArgParser& p, int* threads) {
  p.add_option("--threads", "T",
               "OpenMP threads per rank (default: OMP_NUM_THREADS where set, else the rank's share of its "
               "node's cores)",
               [threads](std::string_view v) { *threads = static_cast<int>(parse_integer(v, "--threads", 1, 1 << 16)); });
}

void add_warmup_option(ArgParser& p, int* warmup) {
  p.add_option("--warmup", "W", "untimed repetitions before the timed ones (default 1)",
               [warmup](std::string_view v) { *warmup = static_cast<int>(parse_integer(v, "--warmup", 0, 1000000)); });
}

void add_common_options(ArgParser& p, CommonOptions& o, bool with_n) {
  p.add_option("--backend", "auto|cuda|cpu", "where local work runs (auto: cuda where every rank has a GPU)",
               [&o](std::string_view v) {
                 if (v != "auto" && v != "cuda" && v != "cpu")
                   throw UsageError("--backend: unknown backend " + quote(v) + " (expected auto, cuda or cpu)");
                 o.backend = std::string(v);
               });
  add_threads_option(p, &o.threads);
  p.add_option("--dtype", "int32|int64|float32|float64",
               "element type (default float32; with --input, the file's type)", [&o](std::string_view v) {
                 o.dtype = io::parse_dtype(v);
                 if (!o.dtype)
                   throw UsageError("--dtype: unknown dtype " + quote(v) + " (expected int32, int64, float32 or float64)");
               });
  if (with_n)
    p.add_option("--n", "N", "global element count: 1000000, 1e6, 2^20, 64M, 1G (default 2^20)",
                 [&o](std::string_view v) { o.n = parse_size(v, "--n"); });
  p.add_option("--seed", "S", "generator seed: element i depends on (S, i) only (default 42)",
               [&o](std::string_view v) { o.seed = parse_unsigned(v, "--seed"); });
  p.add_option("--input", "FILE.h5:/DATASET", "read the input from an HDF5 dataset instead of generating it",
               [&o](std::string_view v) { o.input = parse_dataset_option(v, "--input"); });
  p.add_option("--output", "FILE.h5:/DATASET",
               "write the result as one HDF5 dataset (added to FILE.h5 when it exists; its other objects are kept)",
               [&o](std::string_view v) { o.output = parse_dataset_option(v, "--output"); });
  p.add_switch("--overwrite", "let --output replace an existing dataset of the same name", &o.overwrite);
  p.add_option("--repeat", "R", "timed repetitions; times are medians over them (default 3)",
               [&o](std::string_view v) { o.repeat = static_cast<int>(parse_integer(v, "--repeat", 1, 1000000)); });
  add_warmup_option(p, &o.warmup);
  p.add_option("--json", "FILE", "write a JSON report to FILE", [&o](std::string_view v) {
    if (v.empty()) throw UsageError("--json: empty file name");
    o.json = std::string(v);
  });
  p.add_switch("--verify", "check the result (exit status 1 when it is wrong)", &o.verify);
  p.add_switch("--quiet", "no progress lines on stderr (a run longer than a few seconds prints them)", &o.quiet);
  p.add_switch("--help", "print this help", &o.help);
  p.add_switch("--version", "print the version", &o.version);
}

index_t parse_size(std::string_view text, std::string_view flag) {
  if (text.empty()) throw UsageError(std::string(flag) + ": empty size");
  if (text[0] == '-') throw UsageError(std::string(flag) + ": negative size " + quote(text));
  std::size_t pos = 0;
  if (text[0] == '+') ++pos;
  bool saturated = false;
  int int_digits = 0;
  u128 mantissa = read_digits(text, pos, &int_digits, &saturated);

  // base^exponent
  if (pos < text.size() && text[pos] == '^') {
    ++pos;
    int exp_digits = 0;
    const u128 exponent = read_digits(text, pos, &exp_digits, &saturated);
    if (int_digits == 0 || exp_digits == 0 || pos != text.size()) bad_size(text, flag);
    if (saturated) too_large(text, flag);
    u128 value = 1;
    for (u128 e = 0; e < exponent; ++e) {
      if (mantissa <= 1) {
        value = mantissa;
        break;
      }
      value *= mantissa;
      if (value > kMaxSize) too_large(text, flag);
    }
    if (exponent == 0) value = 1;
    return static_cast<index_t>(value);
  }

  // digits [. digits] [e [+] digits] [K|M|G|T]
  int fraction_digits = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && is_digit(text[pos])) {
      if (mantissa > (u128(1) << 100)) saturated = true;
      else {
        mantissa = mantissa * 10 + static_cast<unsigned>(text[pos] - '0');
        ++fraction_digits;
      }
      ++pos;
      ++int_digits;  // counts as a digit of the number
    }
  }
  if (int_digits == 0) bad_size(text, flag);
  long exponent10 = -fraction_digits;
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
    bool negative = false;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) negative = text[pos++] == '-';
    int exp_digits = 0;
    bool exp_saturated = false;
    const u128 e = read_digits(text, pos, &exp_digits, &exp_saturated);
    if (exp_digits == 0) bad_size(text, flag);
    if (exp_saturated || e > 1000) {
      if (mantissa == 0) return 0;
      if (negative) throw UsageError(std::string(flag) + ": size " + quote(text) + " is not a whole number");
      too_large(text, flag);
    }
    exponent10 += negative ? -static_cast<long>(e) : static_cast<long>(e);
  }
  u128 multiplier = 1;
  if (pos < text.size()) {
    switch (text[pos]) {
      case 'k': case 'K': multiplier = u128(1) << 10; break;
      case 'm': case 'M': multiplier = u128(1) << 20; break;
      case 'g': case 'G': multiplier = u128(1) << 30; break;
      case 't': case 'T': multiplier = u128(1) << 40; break;
      default: bad_size(text, flag);
    }
    ++pos;
  }
  if (pos != text.size()) bad_size(text, flag);
  if (saturated) too_large(text, flag);
  if (mantissa == 0) return 0;

  // Past 2^80 the product below could leave 128 bits; such a mantissa is too large for any exponent
  // this parser accepts, short of a negative one that would make it a fraction of itself.
  if (mantissa > (u128(1) << 80)) too_large(text, flag);
  u128 value = mantissa * multiplier;
  for (; exponent10 > 0; --exponent10) {
    value *= 10;
    if (value > kMaxSize) too_large(text, flag);
  }
  for (; exponent10 < 0; ++exponent10) {
    if (value % 10 != 0) throw UsageError(std::string(flag) + ": size " + quote(text) + " is not a whole number");
    value /= 10;
  }
  if (value > kMaxSize) too_large(text, flag);
  return static_cast<index_t>(value);
}

std::int64_t parse_integer(std::string_view text, std::string_view flag, std::int64_t min, std::int64_t max) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == end && (v < min || v > max)))
    throw UsageError(std::string(flag) + ": " + quote(text) + " is out of range (expected " + std::to_string(min) +
                     " to " + std::to_string(max) + ")");
  if (ec != std::errc() || ptr != end || text.empty())
    throw UsageError(std::string(flag) + ": " + quote(text) + " is not an integer");
  return v;
}

index_t parse_count(std::string_view text, std::string_view flag, index_t min, index_t max) {
  const index_t v = parse_size(text, flag);
  if (v < min || v > max)
    throw UsageError(std::string(flag) + ": " + quote(text) + " is out of range (expected " + std::to_string(min) +
                     " to " + std::to_string(max) + ")");
  return v;
}

std::uint64_t parse_unsigned(std::string_view text, std::string_view flag) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  if (!text.empty() && text[0] == '-') throw UsageError(std::string(flag) + ": negative value " + quote(text));
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range)
    throw UsageError(std::string(flag) + ": " + quote(text) + " is out of range (more than 2^64 - 1)");
  if (ec != std::errc() || ptr != end || text.empty())
    throw UsageError(std::string(flag) + ": " + quote(text) + " is not a non-negative integer");
  return v;
}

double parse_real(std::string_view text, std::string_view flag) { return parse_value<double>(text, flag); }

template <class T>
T parse_value(std::string_view text, std::string_view flag) {
  T v{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if constexpr (std::is_integral_v<T>) {
    if (ec == std::errc::result_out_of_range)
      throw UsageError(std::string(flag) + ": " + quote(text) + " is out of range for " + ElementTraits<T>::name);
    if (ec != std::errc() || ptr != end || text.empty())
      throw UsageError(std::string(flag) + ": " + quote(text) + " is not an integer (the dtype is " +
                       ElementTraits<T>::name + ")");
  } else {
    // from_chars refuses values beyond the type's range (1e39 as a float, 1e-50); they round to
    // infinity or to zero here, as a C compiler rounds a literal.
    if (ec == std::errc::result_out_of_range && ptr == end && !text.empty())
      return static_cast<T>(std::strtold(std::string(text).c_str(), nullptr));
    if (ec != std::errc() || ptr != end || text.empty())
      throw UsageError(std::string(flag) + ": " + quote(text) + " is not a number");
  }
  return v;
}

template <class T>
T parse_element(std::string_view text, std::string_view flag) {
  const T v = parse_value<T>(text, flag);
  if constexpr (std::is_floating_point_v<T>) {
    T written{};
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), written);
    (void)ptr;
    if (ec == std::errc::result_out_of_range && std::isinf(v)) {
      char largest[32];
      std::snprintf(largest, sizeof largest, "%.9g", static_cast<double>(std::numeric_limits<T>::max()));
      throw UsageError(std::string(flag) + ": " + quote(text) + " is out of range for " + ElementTraits<T>::name +
                       " (its largest magnitude is " + largest + "; write inf or -inf for an infinity)");
    }
  }
  return v;
}

template std::int32_t parse_element<std::int32_t>(std::string_view, std::string_view);
template std::int64_t parse_element<std::int64_t>(std::string_view, std::string_view);
template float parse_element<float>(std::string_view, std::string_view);
template double parse_element<double>(std::string_view, std::string_view);
template std::int32_t parse_value<std::int32_t>(std::string_view, std::string_view);
template std::int64_t parse_value<std::int64_t>(std::string_view, std::string_view);
template float parse_value<float>(std::string_view, std::string_view);
template double parse_value<double>(std::string_view, std::string_view);

void throw_root_error(const Communicator& comm, const std::string& message_on_root) {
  const std::string message = comm.bcast_string(message_on_root, 0);
  if (!message.empty()) throw UsageError(message);
}

}  // namespace tessera::apps
