// test/core/printable_utf8.hpp — the check that a text a user sees (an error
// message, an escaped name) is valid UTF-8 with no control character.
#pragma once

#include <cstddef>
#include <string_view>

#include "lease/detail/printable.hpp"

namespace test {

/// Valid UTF-8 with no control character in it (a length of 0 is where
/// decode_utf8 finds invalid UTF-8, as first_invalid_utf8 does).
inline bool is_printable_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = lease::detail::decode_utf8(s.substr(i));
    if (c.length == 0 || lease::detail::is_control(c.code)) return false;
    i += c.length;
  }
  return true;
}

}  // namespace test
