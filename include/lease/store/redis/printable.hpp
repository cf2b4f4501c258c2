// lease/store/redis/printable.hpp — text from outside (server replies, job
// names, prefixes) made safe to put in an exception or a notice.
//
// A local stand-in for lease::detail::printable (a shared helper another
// change adds): valid UTF-8 is kept, control characters, DEL and bytes that
// are not UTF-8 become \n, \t, \xNN escapes, and the result is cut at
// `max_bytes` (on a character boundary, marked with "...").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lease::detail::redis {

/// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not one.
[[nodiscard]] inline std::size_t utf8_length(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = 0;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3;
  else if (c >= 0xF0 && c <= 0xF4) n = 4;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;  // overlong
  if (c == 0xED && b(i + 1) > 0x9F) return 0;  // surrogates
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;  // overlong
  if (c == 0xF4 && b(i + 1) > 0x8F) return 0;  // above U+10FFFF
  return n;
}

/// `s` as valid UTF-8 without control characters, at most about `max_bytes` long.
[[nodiscard]] inline std::string printable(std::string_view s, std::size_t max_bytes = 200) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() < max_bytes ? s.size() : max_bytes);
  for (std::size_t i = 0; i < s.size();) {
    std::string piece;
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 1;
    if (c == '\n') piece = "\\n";
    else if (c == '\r') piece = "\\r";
    else if (c == '\t') piece = "\\t";
    else if (c == '\\') piece = "\\\\";
    else if (c >= 0x20 && c < 0x7F) piece.assign(1, static_cast<char>(c));
    else if (c >= 0x80 && (n = utf8_length(s, i)) != 0) piece.assign(s.substr(i, n));
    else {
      n = 1;
      piece = {'\\', 'x', hex[c >> 4], hex[c & 0xF]};
    }
    if (out.size() + piece.size() > max_bytes) {
      out.append("...");
      break;
    }
    out.append(piece);
    i += n;
  }
  return out;
}

}  // namespace lease::detail::redis
