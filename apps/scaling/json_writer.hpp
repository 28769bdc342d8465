// A streaming JSON writer: just enough for the scaling report. Kept inside apps/scaling until the
// shared app library (apps/common) offers one; then this file should go.
#pragma once

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::scaling_app {

class JsonWriter {
 public:
  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  JsonWriter& key(std::string_view k) {
    separator();
    quote(k);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }
  void value(std::string_view s) {
    separator();
    quote(s);
  }
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(bool b) {
    separator();
    out_ += b ? "true" : "false";
  }
  void value(long long v) {
    separator();
    out_ += std::to_string(v);
  }
  void value(int v) { value(static_cast<long long>(v)); }
  void value(long v) { value(static_cast<long long>(v)); }
  // Non-finite numbers have no JSON spelling: they become null.
  void value(double v) {
    separator();
    if (!std::isfinite(v)) {
      out_ += "null";
      return;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += buf;
  }
  void value(std::optional<double> v) {
    if (v)
      value(*v);
    else
      null();
  }
  void null() {
    separator();
    out_ += "null";
  }
  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }
  template <class T>
  void array(std::string_view k, const std::vector<T>& values) {
    key(k);
    begin_array();
    for (const T& v : values) value(v);
    end_array();
  }

  const std::string& str() const { return out_; }

 private:
  void open(char c) {
    separator();
    out_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    first_.pop_back();
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
    out_ += c;
  }
  void separator() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }
  void quote(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += ch;
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out_ += buf;
      } else {
        out_ += ch;
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace tessera::scaling_app
