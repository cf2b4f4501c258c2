// test/core/strict_json.hpp — a small, strict RFC 8259 JSON parser for tests:
// it rejects what lenient parsers let through (trailing commas, control
// characters and invalid UTF-8 in strings, lone surrogates, leading zeros,
// NaN, duplicate keys, anything after the value), so a sink's output that
// parses here is JSON any consumer accepts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace test::json {

struct value;
using object = std::map<std::string, value>;
using array = std::vector<value>;

/// A parsed value. Numbers keep their text (exactness is checked by the test).
struct value {
  std::variant<std::nullptr_t, bool, std::string /*number text*/, std::string /*string*/,
               std::shared_ptr<array>, std::shared_ptr<object>>
      v;
  [[nodiscard]] bool is_null() const { return v.index() == 0; }
  [[nodiscard]] bool is_number() const { return v.index() == 2; }
  [[nodiscard]] bool is_string() const { return v.index() == 3; }
  [[nodiscard]] bool is_object() const { return v.index() == 5; }
  [[nodiscard]] const std::string& str() const { return std::get<3>(v); }
  [[nodiscard]] std::int64_t integer() const {
    const std::string& t = std::get<2>(v);
    if (t.find_first_of(".eE") != std::string::npos) throw std::runtime_error("not an integer: " + t);
    return std::stoll(t);
  }
  [[nodiscard]] const object& obj() const { return *std::get<5>(v); }
};

class parser {
 public:
  explicit parser(std::string_view text) : s_(text) {}

  /// The one value the text holds; throws std::runtime_error saying where it is not JSON.
  value parse() {
    ws();
    value out = any();
    ws();
    if (i_ != s_.size()) fail("text after the value");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("not strict JSON at offset " + std::to_string(i_) + ": " + why);
  }
  [[nodiscard]] bool at_end() const { return i_ >= s_.size(); }
  [[nodiscard]] char peek() const { return at_end() ? '\0' : s_[i_]; }
  void ws() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail("expected " + std::string(word));
    i_ += word.size();
  }

  value any() {
    switch (peek()) {
      case '{': return {std::make_shared<object>(members())};
      case '[': return {std::make_shared<array>(elements())};
      case '"': {
        value text;
        text.v.emplace<3>(string());
        return text;
      }
      case 't': expect("true"); return {true};
      case 'f': expect("false"); return {false};
      case 'n': expect("null"); return {nullptr};
      default: {
        value n;
        n.v.emplace<2>(number());
        return n;
      }
    }
  }

  object members() {
    object out;
    ++i_;
    ws();
    if (peek() == '}') {
      ++i_;
      return out;
    }
    for (;;) {
      ws();
      if (peek() != '"') fail("expected a key");
      std::string k = string();
      ws();
      expect(":");
      ws();
      if (!out.emplace(k, any()).second) fail("duplicate key " + k);
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect("}");
      return out;
    }
  }

  array elements() {
    array out;
    ++i_;
    ws();
    if (peek() == ']') {
      ++i_;
      return out;
    }
    for (;;) {
      ws();
      out.push_back(any());
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect("]");
      return out;
    }
  }

  std::string number() {
    const std::size_t start = i_;
    auto digits = [&] {
      const std::size_t from = i_;
      while (!at_end() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == from) fail("expected a digit");
    };
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
      if (peek() >= '0' && peek() <= '9') fail("leading zero");
    } else {
      digits();
    }
    if (peek() == '.') {
      ++i_;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      digits();
    }
    return std::string(s_.substr(start, i_ - start));
  }

  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail("short \\u escape");
    std::uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      cp <<= 4;
      if (c >= '0' && c <= '9') cp |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') cp |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') cp |= static_cast<std::uint32_t>(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return cp;
  }

  std::string string() {
    std::string out;
    ++i_;  // the opening quote
    for (;;) {
      if (at_end()) fail("unterminated string");
      const auto b = static_cast<unsigned char>(s_[i_]);
      if (b == '"') {
        ++i_;
        return out;
      }
      if (b < 0x20) fail("raw control character in a string");
      if (b == '\\') {
        ++i_;
        const char e = peek();
        ++i_;
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            std::uint32_t cp = hex4();
            if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              expect("\\u");
              const std::uint32_t lo = hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate without its low half");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(out, cp);
            break;
          }
          default: fail("unknown escape");
        }
        continue;
      }
      if (b < 0x80) {
        out += static_cast<char>(b);
        ++i_;
        continue;
      }
      // A raw multi-byte character: must be valid UTF-8 (shortest form, no surrogates, ≤ U+10FFFF).
      std::size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
      if (n == 0 || b < 0xC2 || b > 0xF4 || i_ + n > s_.size()) fail("invalid UTF-8 lead byte");
      std::uint32_t cp = b & (0xFF >> (n + 1));
      for (std::size_t k = 1; k < n; ++k) {
        const auto c = static_cast<unsigned char>(s_[i_ + k]);
        if ((c & 0xC0) != 0x80) fail("invalid UTF-8 continuation byte");
        cp = (cp << 6) | (c & 0x3F);
      }
      if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        fail("overlong, surrogate or out-of-range UTF-8");
      out.append(s_.substr(i_, n));
      i_ += n;
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

inline value parse(std::string_view text) { return parser(text).parse(); }

}  // namespace test::json
