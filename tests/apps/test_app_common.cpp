// The apps' common library: size parsing, value parsing, the flag parser, dataset paths and the JSON
// writer's exact numbers. References are literal values and the C++ library's own parser.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "cli.hpp"
#include "json.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::apps {
namespace {

std::string usage_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseSize, AcceptsTheDocumentedForms) {
  EXPECT_EQ(parse_size("1000000", "--n"), 1000000);
  EXPECT_EQ(parse_size("1e6", "--n"), 1000000);
  EXPECT_EQ(parse_size("2^20", "--n"), 1 << 20);
  EXPECT_EQ(parse_size("64M", "--n"), index_t(64) << 20);
  EXPECT_EQ(parse_size("1G", "--n"), index_t(1) << 30);
  EXPECT_EQ(parse_size("1.5K", "--n"), 1536);
  EXPECT_EQ(parse_size("0", "--n"), 0);
  EXPECT_EQ(parse_size("2.5e3", "--n"), 2500);
  EXPECT_EQ(parse_size("2^0", "--n"), 1);
  EXPECT_EQ(parse_size("0^5", "--n"), 0);
  EXPECT_EQ(parse_size("2^62", "--n"), index_t(1) << 62);
  EXPECT_EQ(parse_size("9223372036854775807", "--n"), std::numeric_limits<index_t>::max());
  EXPECT_EQ(parse_size("8T", "--n"), index_t(8) << 40);
}

TEST(ParseSize, RejectsWithTheFlagNamed) {
  EXPECT_NE(usage_message([] { parse_size("-5", "--n"); }).find("--n: negative size '-5'"), std::string::npos);
  for (const char* bad : {"", "abc", "12abc", "1e", "2^", "^3", "1.5.5", "1KK", "1 000", "0x10", "e5", "."})
    EXPECT_EQ(usage_message([&] { parse_size(bad, "--m"); }).rfind("--m: ", 0), 0u) << bad;
  for (const char* big : {"2^63", "9223372036854775808", "1e19", "1e30", "9000000T", "99999999999999999999999999999"})
    EXPECT_NE(usage_message([&] { parse_size(big, "--k"); }).find("too large"), std::string::npos) << big;
  EXPECT_NE(usage_message([] { parse_size("1.5", "--n"); }).find("whole number"), std::string::npos);
  EXPECT_NE(usage_message([] { parse_size("1e-3", "--n"); }).find("whole number"), std::string::npos);
}

TEST(ParseValue, IntegersInRangeAndNumbers) {
  EXPECT_EQ(parse_value<std::int32_t>("-2147483648", "--predicate"), std::numeric_limits<std::int32_t>::min());
  EXPECT_NE(usage_message([] { parse_value<std::int32_t>("2147483648", "--predicate"); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(usage_message([] { parse_value<std::int64_t>("1.5", "--predicate"); }).find("not an integer"),
            std::string::npos);
  EXPECT_EQ(parse_value<float>("0.1", "--predicate"), 0.1f);  // rounded once, to float
  EXPECT_EQ(parse_value<double>("-0.75", "--predicate"), -0.75);
  EXPECT_TRUE(std::isinf(parse_value<float>("1e39", "--predicate")));
  EXPECT_NE(usage_message([] { parse_value<double>("1..2", "--predicate"); }).find("not a number"), std::string::npos);
}

TEST(ArgParser, FlagsValuesAndErrors) {
  CommonOptions o;
  ArgParser p("t", "test");
  add_common_options(p, o);
  std::vector<std::string> args = {"t", "--n=2^10", "--dtype", "int64", "--verify", "--seed", "18446744073709551615"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  p.parse(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(o.n, 1024);
  EXPECT_EQ(o.dtype, io::DType::int64);
  EXPECT_TRUE(o.verify);
  EXPECT_EQ(o.seed, std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(p.given("--n"));
  EXPECT_FALSE(p.given("--json"));

  auto parse = [](std::vector<std::string> a) {
    return usage_message([&] {
      CommonOptions opt;
      ArgParser q("t", "test");
      add_common_options(q, opt);
      std::vector<char*> v;
      for (auto& s : a) v.push_back(s.data());
      q.parse(static_cast<int>(v.size()), v.data());
    });
  };
  EXPECT_EQ(parse({"t", "--nope"}), "unknown flag '--nope' (see --help)");
  EXPECT_EQ(parse({"t", "--n"}).rfind("--n: missing value", 0), 0u);
  EXPECT_EQ(parse({"t", "--n", "1", "--n", "2"}), "--n: given more than once");
  EXPECT_EQ(parse({"t", "stray"}).rfind("unexpected argument 'stray'", 0), 0u);
  EXPECT_EQ(parse({"t", "--verify=yes"}), "--verify: takes no value");
  EXPECT_EQ(parse({"t", "--repeat", "0"}).rfind("--repeat: '0' is out of range", 0), 0u);
  EXPECT_EQ(parse({"t", "--backend", "gpu"}).rfind("--backend: unknown backend 'gpu'", 0), 0u);
  EXPECT_EQ(parse({"t", "--output", "x.h5"}).rfind("--output: expected FILE.h5:/DATASET", 0), 0u);
}

TEST(ArgParser, AFlagIsNotTheValueOfTheFlagBeforeIt) {
  auto parse = [](std::vector<std::string> a, CommonOptions* out = nullptr) {
    return usage_message([&] {
      CommonOptions opt;
      ArgParser q("t", "test");
      add_common_options(q, opt);
      std::vector<char*> v;
      for (auto& s : a) v.push_back(s.data());
      q.parse(static_cast<int>(v.size()), v.data());
      if (out) *out = opt;
    });
  };
  const std::string json = parse({"t", "--json", "--verify"});
  EXPECT_EQ(json.rfind("--json: missing value FILE", 0), 0u) << json;
  EXPECT_NE(json.find("'--verify'"), std::string::npos) << json;
  EXPECT_EQ(parse({"t", "--output", "--n", "5"}).rfind("--output: missing value", 0), 0u);
  EXPECT_EQ(parse({"t", "--json", "-v"}).rfind("--json: missing value", 0), 0u);
  // Numbers that start with '-' are values (and then refused or accepted by the flag itself).
  EXPECT_EQ(parse({"t", "--seed", "-1"}).rfind("--seed: negative value '-1'", 0), 0u);
  EXPECT_EQ(parse({"t", "--threads", "-2"}).rfind("--threads: '-2' is out of range", 0), 0u);
  EXPECT_EQ(parse({"t", "--n", "-.5"}).rfind("--n: negative size", 0), 0u);
  // The joined form takes anything, a value that looks like a flag included.
  CommonOptions o;
  EXPECT_EQ(parse({"t", "--json=--verify"}, &o), "");
  EXPECT_EQ(o.json, "--verify");
  EXPECT_FALSE(o.verify);
  EXPECT_EQ(parse({"t", "--output", "a.h5:/x", "--overwrite"}, &o), "");
  EXPECT_TRUE(o.overwrite);
}

TEST(ArgParser, NamesTheHdf5FilesOfTheRun) {
  CommonOptions o;
  ArgParser p("t", "test");
  add_common_options(p, o);
  std::optional<io::DatasetPath> a;
  p.add_option("--a", "FILE.h5:/DSET", "A", [&](std::string_view v) { a = parse_dataset_option(v, "--a"); });
  std::vector<std::string> args = {"t", "--input", "in.h5:/x", "--a=m.h5:/A", "--json", "r.json", "--output", "o.h5:/y"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  p.parse(static_cast<int>(argv.size()), argv.data());
  using Files = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(p.dataset_files(), (Files{{"--input", "in.h5"}, {"--a", "m.h5"}, {"--output", "o.h5"}}));
}

TEST(DatasetPath, SplitsAtTheLastColonSlash) {
  const auto p = io::parse_dataset_path("dir:odd/file.h5:/group/data");
  EXPECT_EQ(p.file, "dir:odd/file.h5");
  EXPECT_EQ(p.dataset, "/group/data");
  EXPECT_NE(usage_message([] { io::parse_dataset_path("file.h5:/"); }).find("not a dataset name"), std::string::npos);
  EXPECT_EQ(usage_message([] { io::parse_dataset_path(":/x"); }).rfind("expected", 0), 0u);
  EXPECT_NE(usage_message([] { parse_dataset_option(":/x", "--a"); }).find("--a: expected"), std::string::npos);
  // Names HDF5 refuses are refused here, before any file exists.
  for (const char* bad : {"f.h5:/.", "f.h5:/..", "f.h5:/a/./b", "f.h5:/a/..", "f.h5://a", "f.h5:/a/"}) {
    const std::string message = usage_message([&] { parse_dataset_option(bad, "--output"); });
    EXPECT_EQ(message.rfind("--output: '", 0), 0u) << bad << ": " << message;
    EXPECT_NE(message.find("not a dataset name"), std::string::npos) << bad << ": " << message;
  }
  EXPECT_EQ(io::parse_dataset_path("f.h5:/a/.hidden/..b/c.").dataset, "/a/.hidden/..b/c.");
}

TEST(DatasetPath, AnIoErrorGetsTheFlagAndItsRemedy) {
  const io::IoError exists("dataset '/x' in 'f.h5' already exists", "f.h5", "/x", io::IoError::Kind::dataset_exists);
  EXPECT_EQ(std::string(flag_error("--output", exists).what()),
            "--output: dataset '/x' in 'f.h5' already exists (give --overwrite to replace it)");
  const io::IoError lossy("1 value of '/x' in 'f.h5' (64-bit float) cannot be represented as int32", "f.h5", "/x",
                          io::IoError::Kind::unrepresentable_values);
  EXPECT_EQ(std::string(flag_error("--input", lossy).what()),
            "--input: 1 value of '/x' in 'f.h5' (64-bit float) cannot be represented as int32 (--dtype)");
  const std::string missing = usage_message([] {
    for_flag("--a", []() -> int { throw io::IoError("no such file 'm.h5'", "m.h5", "/A"); });
  });
  EXPECT_EQ(missing, "--a: no such file 'm.h5'");
}

template <class T>
T read_back(const std::string& text) {
  T v{};
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  EXPECT_EQ(r.ec, std::errc()) << text;
  EXPECT_EQ(r.ptr, text.data() + text.size()) << text;
  return v;
}

TEST(Json, FloatsRoundTripBitForBit) {
  std::mt19937_64 gen(12345);
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t bits64 = gen();
    double d;
    std::memcpy(&d, &bits64, sizeof d);
    const std::uint32_t bits32 = static_cast<std::uint32_t>(gen());
    float f;
    std::memcpy(&f, &bits32, sizeof f);
    if (std::isfinite(d)) {
      const std::string text = Json(d).dump();
      const double back = read_back<double>(text);
      EXPECT_EQ(std::memcmp(&back, &d, sizeof d), 0) << text;
    }
    if (std::isfinite(f)) {
      const std::string text = Json(f).dump();
      const float back = read_back<float>(text);
      EXPECT_EQ(std::memcmp(&back, &f, sizeof f), 0) << text;
    }
  }
  EXPECT_EQ(Json(0.1).dump(), "0.1");  // shortest, not 17 digits
  EXPECT_EQ(Json(0.1f).dump(), "0.1");
  EXPECT_EQ(Json(-0.0).dump(), "-0.0");  // "-0" reads back as the integer 0 in Python's json
  EXPECT_TRUE(std::signbit(read_back<double>(Json(-0.0).dump())));
  EXPECT_EQ(Json(-0.0f).dump(), "-0.0");
  EXPECT_EQ(Json(std::nan("")).dump(), "\"nan\"");
  EXPECT_EQ(Json(-std::numeric_limits<double>::infinity()).dump(), "\"-inf\"");
}

TEST(Json, IntegersExactBeyond2To53AndStructure) {
  EXPECT_EQ(Json(static_cast<long long>((std::int64_t(1) << 53) + 1)).dump(), "9007199254740993");
  EXPECT_EQ(Json(std::numeric_limits<long long>::min()).dump(), "-9223372036854775808");
  EXPECT_EQ(Json(std::numeric_limits<unsigned long long>::max()).dump(), "18446744073709551615");
  Json j = Json::object();
  j["app"] = "a\"b\\c\n";
  j["sizes"] = Json::object();
  j["sizes"]["n"] = 3;
  Json arr = Json::array();
  arr.push_back(true);
  arr.push_back(nullptr);
  j["list"] = arr;
  j["app"] = "x";  // replaces, keeps the position
  EXPECT_EQ(j.dump(), "{\"app\":\"x\",\"sizes\":{\"n\":3},\"list\":[true,null]}");
  Json k = Json::object();
  k["s"] = std::string("tab\there\x01");
  EXPECT_EQ(k.dump(), "{\"s\":\"tab\\there\\u0001\"}");
}

TEST(Json, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  // Well-formed UTF-8 passes through: 2, 3 and 4 byte sequences.
  EXPECT_EQ(Json(std::string("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")).dump(), "\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  // A Latin-1 file name, a stray continuation byte, a cut sequence, an overlong '/', a surrogate,
  // beyond U+10FFFF: each bad byte is one U+FFFD.
  EXPECT_EQ(Json(std::string("caf\xe9.h5")).dump(), "\"caf\\ufffd.h5\"");
  EXPECT_EQ(Json(std::string("\x80x")).dump(), "\"\\ufffdx\"");
  EXPECT_EQ(Json(std::string("\xe2\x82")).dump(), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(Json(std::string("\xc0\xaf")).dump(), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(Json(std::string("\xed\xa0\x80")).dump(), "\"\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(Json(std::string("\xf4\x90\x80\x80")).dump(), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
  Json j = Json::object();
  j[std::string("k\xff")] = 1;
  EXPECT_EQ(j.dump(), "{\"k\\ufffd\":1}");
}

}  // namespace
}  // namespace tessera::apps
