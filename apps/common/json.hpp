// A small JSON value and writer for the apps' reports. Floating-point numbers are written in the
// shortest form that reads back to the same bits (std::to_chars without a precision): a double as
// a double, a float as a float (numpy.float32(x) restores it). Integers are written exactly, also
// beyond 2^53, where JSON readers that keep integers (Python, jq 1.7) read them back exactly.
// NaN and infinities, which JSON lacks, are written as the strings "nan", "inf" and "-inf".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::apps {

class Json {
 public:
  using Object = std::vector<std::pair<std::string, Json>>;  // keeps insertion order
  using Array = std::vector<Json>;

  Json() : value_(nullptr) {}
  Json(std::nullptr_t) : value_(nullptr) {}
  Json(bool v) : value_(v) {}
  Json(int v) : value_(static_cast<std::int64_t>(v)) {}
  Json(long v) : value_(static_cast<std::int64_t>(v)) {}
  Json(long long v) : value_(static_cast<std::int64_t>(v)) {}
  Json(unsigned v) : value_(static_cast<std::uint64_t>(v)) {}
  Json(unsigned long v) : value_(static_cast<std::uint64_t>(v)) {}
  Json(unsigned long long v) : value_(static_cast<std::uint64_t>(v)) {}
  Json(float v) : value_(v) {}
  Json(double v) : value_(v) {}
  Json(const char* v) : value_(std::string(v)) {}
  Json(std::string v) : value_(std::move(v)) {}
  Json(Object v) : value_(std::make_shared<Object>(std::move(v))) {}
  Json(Array v) : value_(std::make_shared<Array>(std::move(v))) {}

  static Json object() { return Json(Object{}); }
  static Json array() { return Json(Array{}); }

  // Object access: adds the key (at the end) when it is not there yet. The value must be an object.
  Json& operator[](const std::string& key);
  // Appends to an array value.
  void push_back(Json v);

  // Compact text (no spaces) or, with indent > 0, one member per line.
  std::string dump(int indent = 0) const;

 private:
  void write(std::string& out, int indent, int depth) const;
  std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, float, double, std::string,
               std::shared_ptr<Object>, std::shared_ptr<Array>>
      value_;
};

// Exact shortest text of a number, as written in JSON (also used by the table printer).
std::string format_number(double v);
std::string format_number(float v);

}  // namespace tessera::apps
