#include "json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tessera/framework/utf8.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::apps {
namespace {

template <class T>
std::string shortest(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  TESSERA_ASSERT(result.ec == std::errc(), "to_chars of a floating-point number failed");
  return std::string(buf, result.ptr);
}

// JSON text is UTF-8: a byte that is not part of well-formed UTF-8 (a file name in another
// encoding) is written as U+FFFD, the replacement character.
void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_length(s, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s, i, n);
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          out += esc;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

template <class T>
void write_float(std::string& out, T v) {
  const std::string text = shortest(v);
  if (!std::isfinite(v)) {
    write_string(out, text);
    return;
  }
  out += text == "-0" ? "-0.0" : text;  // "-0" reads back as the integer 0 (Python's json): keep the sign
}

}  // namespace

std::string format_number(double v) { return shortest(v); }
std::string format_number(float v) { return shortest(v); }

Json& Json::operator[](const std::string& key) {
  auto* obj = std::get_if<std::shared_ptr<Object>>(&value_);
  TESSERA_ASSERT(obj != nullptr, "Json::operator[] on a value that is not an object");
  for (auto& [k, v] : **obj)
    if (k == key) return v;
  (*obj)->emplace_back(key, Json());
  return (*obj)->back().second;
}

void Json::push_back(Json v) {
  auto* arr = std::get_if<std::shared_ptr<Array>>(&value_);
  TESSERA_ASSERT(arr != nullptr, "Json::push_back on a value that is not an array");
  (*arr)->push_back(std::move(v));
}

std::string Json::dump(int indent) const {
  std::string out;
  write(out, indent, 0);
  return out;
}

void Json::write(std::string& out, int indent, int depth) const {
  const auto newline = [&](int d) {
    if (indent <= 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::nullptr_t>) {
          out += "null";
        } else if constexpr (std::is_same_v<V, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, std::uint64_t>) {
          out += std::to_string(v);
        } else if constexpr (std::is_same_v<V, float> || std::is_same_v<V, double>) {
          write_float(out, v);
        } else if constexpr (std::is_same_v<V, std::string>) {
          write_string(out, v);
        } else if constexpr (std::is_same_v<V, std::shared_ptr<Object>>) {
          out += '{';
          bool first = true;
          for (const auto& [key, value] : *v) {
            if (!first) out += ',';
            first = false;
            newline(depth + 1);
            write_string(out, key);
            out += indent > 0 ? ": " : ":";
            value.write(out, indent, depth + 1);
          }
          if (!v->empty()) newline(depth);
          out += '}';
        } else {
          out += '[';
          bool first = true;
          for (const auto& value : *v) {
            if (!first) out += indent > 0 ? ", " : ",";
            first = false;
            value.write(out, 0, depth + 1);
          }
          out += ']';
        }
      },
      value_);
}

}  // namespace tessera::apps
