// detail::printable and the UTF-8 decoding under it: any bytes become one
// valid UTF-8 line that still shows every byte, cut only between characters.
// Replay a property failure with RC_PARAMS="seed=…".
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "lease/detail/printable.hpp"
#include "printable_utf8.hpp"

using lease::detail::decode_utf8;
using lease::detail::first_invalid_utf8;
using lease::detail::printable;
using test::is_printable_utf8;

namespace {

/// The UTF-8 encoding of any code point up to 0x10FFFF (surrogates included:
/// the decoder must refuse what this makes of them).
std::string encode(char32_t c) {
  std::string out;
  const auto put = [&](unsigned v) { out.push_back(static_cast<char>(v)); };
  if (c < 0x80) {
    put(c);
  } else if (c < 0x800) {
    put(0xc0 | c >> 6), put(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    put(0xe0 | c >> 12), put(0x80 | (c >> 6 & 0x3f)), put(0x80 | (c & 0x3f));
  } else {
    put(0xf0 | c >> 18), put(0x80 | (c >> 12 & 0x3f)), put(0x80 | (c >> 6 & 0x3f)), put(0x80 | (c & 0x3f));
  }
  return out;
}

/// The reference definition: `s` begins with a valid character of n bytes
/// iff those n bytes are the shortest encoding of a scalar value.
/// (Read by the bit patterns alone, then checked by re-encoding.)
std::size_t reference_length(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  const std::size_t n = b0 < 0x80 ? 1 : (b0 & 0xe0) == 0xc0 ? 2 : (b0 & 0xf0) == 0xe0 ? 3 : (b0 & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || s.size() < n) return 0;
  char32_t c = n == 1 ? b0 : b0 & (0x7fu >> n);
  for (std::size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xc0) != 0x80) return 0;
    c = c << 6 | (b & 0x3fu);
  }
  const bool scalar = (c < 0xd800 || c > 0xdfff) && c <= 0x10ffff;
  return scalar && encode(c) == s.substr(0, n) ? n : 0;
}

/// Undoes printable() (without a cut): the bytes it was made from.
std::optional<std::string> unescape(std::string_view p) {
  std::string out;
  const auto hex = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '\\') {
      out.push_back(p[i]);
      continue;
    }
    if (++i == p.size()) return std::nullopt;
    switch (p[i]) {
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case '\\': out.push_back('\\'); break;
      case '"': out.push_back('"'); break;
      case 'x':
        if (i + 2 >= p.size()) return std::nullopt;
        out.push_back(static_cast<char>(hex(p[i + 1]) * 16 + hex(p[i + 2])));
        i += 2;
        break;
      case 'u': {
        if (i + 4 >= p.size()) return std::nullopt;
        char32_t c = 0;
        for (std::size_t k = 1; k <= 4; ++k) c = c * 16 + static_cast<char32_t>(hex(p[i + k]));
        out += encode(c);
        i += 4;
        break;
      }
      default: return std::nullopt;
    }
  }
  return out;
}

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (const int c : b) s.push_back(static_cast<char>(c));
  return s;
}

}  // namespace

TEST_CASE("Every one- and two-byte sequence decodes as UTF-8 exactly when the standard says it does") {
  for (int a = 0; a < 256; ++a) {
    CHECK(decode_utf8(bytes({a})).length == reference_length(bytes({a})));
    for (int b = 0; b < 256; ++b) {
      const std::string s = bytes({a, b});
      if (decode_utf8(s).length != reference_length(s)) FAIL("bytes " << a << " " << b);
    }
  }
}

TEST_CASE("Every scalar value round-trips through the decoder, surrogates and overlong forms do not decode") {
  for (char32_t c = 0; c <= 0x10ffff; ++c) {
    const std::string s = encode(c);
    const auto d = decode_utf8(s);
    const bool surrogate = c >= 0xd800 && c <= 0xdfff;
    if (surrogate ? d.length != 0 : d.length != s.size() || d.code != c) FAIL("code point " << std::uint32_t{c});
  }
  CHECK(decode_utf8(bytes({0xc0, 0x80})).length == 0);              // overlong NUL
  CHECK(decode_utf8(bytes({0xe0, 0x80, 0xaf})).length == 0);        // overlong '/'
  CHECK(decode_utf8(bytes({0xf0, 0x80, 0x80, 0xaf})).length == 0);  // overlong '/'
  CHECK(decode_utf8(bytes({0xf4, 0x90, 0x80, 0x80})).length == 0);  // U+110000
  CHECK(decode_utf8(bytes({0xe2, 0x82})).length == 0);              // truncated €
}

TEST_CASE("printable escapes control characters, quotes and invalid bytes, and keeps other text") {
  CHECK(printable(std::string_view("a\nb\0c\x7f\t\r", 8), 100) == R"(a\nb\x00c\x7f\t\r)");
  CHECK(printable("say \"hi\" \\ bye", 100) == R"(say \"hi\" \\ bye)");
  CHECK(printable("x\xff y \xc3 z \xed\xa0\x80", 100) == R"(x\xff y \xc3 z \xed\xa0\x80)");
  CHECK(printable("Zürich → 東京 🙂", 100) == "Zürich → 東京 🙂");
  CHECK(printable("\xc2\x9b" "31m", 100) == R"(\u009b31m)");           // C1 CSI
  CHECK(printable("abc\xe2\x80\xae" "fed", 100) == R"(abc\u202efed)");  // right-to-left override
  CHECK(printable("", 0).empty());
}

TEST_CASE("printable cuts only between characters and escapes, and marks the cut") {
  CHECK(printable("éééé", 8) == "éééé");
  CHECK(printable("éééé", 7) == "ééé…");
  CHECK(printable("ééééé", 7) == "ééé…");
  CHECK(printable("🙂🙂", 7) == "🙂…");
  CHECK(printable("\x01\x02", 7) == R"(\x01…)");
  CHECK(printable("ab\ncd", 3) == R"(ab…)");
  CHECK(printable("abc", 0) == "…");
}

TEST_CASE("printable turns any bytes into one line of valid UTF-8 that shows them all") {
  rc::prop("valid UTF-8, no control character, at most max_bytes + the mark, and unescapes to a prefix of the input",
           [] {
             // Any byte, NUL included (RapidCheck's own strings have none), or
             // valid multi-byte characters among them.
             const auto byte = rc::gen::map(rc::gen::inRange(0, 256), [](int b) { return static_cast<char>(b); });
             const auto character = rc::gen::oneOf(
                 rc::gen::map(byte, [](char c) { return std::string(1, c); }),
                 rc::gen::element<std::string>("é", "→", "🙂", "\xc2\x9b", "\xe2\x80\xae", "\\", "\""));
             std::string text;
             for (const std::string& c : *rc::gen::container<std::vector<std::string>>(character)) text += c;
             const std::size_t max = *rc::gen::inRange<std::size_t>(0, text.size() * 4 + 8);
             const std::string p = printable(text, max);
             RC_ASSERT(is_printable_utf8(p));
             RC_ASSERT(p.find('\0') == std::string::npos);
             const bool cut =
                 p.size() >= 3 && p.compare(p.size() - 3, 3, "…") == 0 && printable(text, 1'000'000) != p;
             const std::string_view shown = cut ? std::string_view(p).substr(0, p.size() - 3) : std::string_view(p);
             RC_ASSERT(shown.size() <= max);
             const auto back = unescape(shown);
             RC_ASSERT(back.has_value());
             if (cut) {
               RC_ASSERT(std::string_view(text).substr(0, back->size()) == *back);
             } else {
               RC_ASSERT(*back == text);
             }
           });
}

TEST_CASE("Three- and four-byte sequences decode as UTF-8 exactly when the standard says it does") {
  rc::prop("decode_utf8 agrees with reading the bit patterns and re-encoding", [] {
    // Lead bytes from the multi-byte range, continuation-like bytes mostly.
    const auto lead = *rc::gen::inRange(0xc0, 0x100);
    const auto next = [] { return *rc::gen::weightedElement<int>({{4, 0x80}, {1, 0}}) + *rc::gen::inRange(0, 0x80); };
    const std::string s = bytes({lead, next(), next(), next()}).substr(0, *rc::gen::inRange<std::size_t>(1, 5));
    RC_ASSERT(decode_utf8(s).length == reference_length(s));
  });
}
