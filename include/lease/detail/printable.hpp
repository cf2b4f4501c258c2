// lease/detail/printable.hpp — detail::printable, caller-supplied bytes made
// safe to quote in an error message, a log line or JSON; and the UTF-8
// decoding it rests on.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace lease::detail {

/// One decoded UTF-8 character: its code point and its length in bytes,
/// 1-4; length 0 when the bytes do not begin a valid character.
struct utf8_char {
  char32_t code = 0;
  std::size_t length = 0;
};

/// Decodes the character at the start of `s` (non-empty) strictly by RFC
/// 3629: no overlong forms, no surrogates, nothing above U+10FFFF, no
/// truncated sequence.
constexpr utf8_char decode_utf8(std::string_view s) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return {b0, 1};
  // The allowed range of the second byte is what rules out overlong forms,
  // surrogates (ED A0-BF) and code points past U+10FFFF (F4 90-BF).
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;
  char32_t code = 0;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2, code = b0 & 0x1fu;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3, code = b0 & 0x0fu;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4, code = b0 & 0x07u;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return {};
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return {};
  for (std::size_t i = 1; i < n; ++i) {
    if (i > 1 && (byte(i) < 0x80 || byte(i) > 0xbf)) return {};
    code = code << 6 | (byte(i) & 0x3fu);
  }
  return {code, n};
}

/// Offset of the first byte of `s` that does not begin a valid UTF-8
/// character, or std::string_view::npos when all of `s` is valid UTF-8.
constexpr std::size_t first_invalid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = decode_utf8(s.substr(i)).length;
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

/// Control characters: C0 (U+0000-001F), DEL and C1 (U+007F-009F).
constexpr bool is_control(char32_t c) noexcept { return c < 0x20 || (c >= 0x7f && c <= 0x9f); }

/// `s` as valid UTF-8 that prints as one line and shows every byte of `s`:
/// `\` and `"` become `\\` and `\"`; \n \r \t stay as those escapes, other C0
/// controls and DEL become \xHH, C1 controls and the characters that reorder
/// or break text (U+200E-200F, U+2028-202E, U+2066-2069) become \uHHHH; a
/// byte that does not begin a valid UTF-8 character becomes \xHH (\xff).
/// Everything else is copied as is.
///
/// At most `max_bytes` bytes of the result are that text; if `s` does not
/// fit, it is cut before the first character (or escape) that would not fit,
/// never inside one, and "…" (3 bytes) is appended.
inline std::string printable(std::string_view s, std::size_t max_bytes) {
  constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 3);
  for (std::size_t i = 0; i < s.size();) {
    const utf8_char c = decode_utf8(s.substr(i));
    char escape[7] = {};  // longest: \uHHHH
    std::string_view piece;
    if (c.length == 0 || (c.code < 0x80 && is_control(c.code) && c.code != '\n' && c.code != '\r' && c.code != '\t')) {
      const auto b = static_cast<unsigned char>(s[i]);
      escape[0] = '\\', escape[1] = 'x', escape[2] = hex[b >> 4], escape[3] = hex[b & 15];
      piece = {escape, 4};
    } else if (c.code == '\n' || c.code == '\r' || c.code == '\t' || c.code == '\\' || c.code == '"') {
      escape[0] = '\\';
      escape[1] = c.code == '\n' ? 'n' : c.code == '\r' ? 'r' : c.code == '\t' ? 't' : static_cast<char>(c.code);
      piece = {escape, 2};
    } else if (is_control(c.code) || c.code == 0x200e || c.code == 0x200f || (c.code >= 0x2028 && c.code <= 0x202e) ||
               (c.code >= 0x2066 && c.code <= 0x2069)) {
      escape[0] = '\\', escape[1] = 'u';
      for (int k = 0; k < 4; ++k) escape[2 + k] = hex[(c.code >> (12 - 4 * k)) & 15];
      piece = {escape, 6};
    } else {
      piece = s.substr(i, c.length);
    }
    if (out.size() + piece.size() > max_bytes) return out += "…";
    out += piece;
    i += c.length == 0 ? 1 : c.length;
  }
  return out;
}

}  // namespace lease::detail
