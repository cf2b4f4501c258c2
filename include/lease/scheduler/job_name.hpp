// lease/scheduler/job_name.hpp — lease::validate_job_name, the rule for job names.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "lease/detail/printable.hpp"

namespace lease {

/// Longest job name, in bytes. Names are keys in every store (Redis keys,
/// SQL columns, log lines); a bound keeps them cheap everywhere.
inline constexpr std::size_t max_job_name_bytes = 200;

/// Throws std::invalid_argument, with a sentence saying what to change, unless
/// `name` is non-empty, at most max_job_name_bytes bytes, valid UTF-8 and
/// free of control characters (C0, DEL, C1): names end up in keys, log lines,
/// JSON and terminals, which invalid UTF-8 and control characters corrupt.
/// The message quotes the name through detail::printable, so it is itself
/// valid UTF-8 on one line, whatever the name holds.
inline void validate_job_name(std::string_view name) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("lease: job name \"" + detail::printable(name, 40) + "\" is invalid: " + why);
  };
  if (name.empty()) fail("it is empty; give every job a stable, unique name");
  if (name.size() > max_job_name_bytes)
    fail("it is " + std::to_string(name.size()) + " bytes long; the limit is " +
         std::to_string(max_job_name_bytes));
  for (std::size_t i = 0; i < name.size();) {
    const detail::utf8_char c = detail::decode_utf8(name.substr(i));
    if (c.length == 0)
      fail("it is not valid UTF-8 (byte " + detail::printable(name.substr(i, 1), 4) + " at offset " +
           std::to_string(i) + " does not begin a valid character); use UTF-8 text only");
    if (detail::is_control(c.code))
      fail("it contains a control character (" + detail::printable(name.substr(i, c.length), 6) + " at offset " +
           std::to_string(i) + "); use printable characters only");
    i += c.length;
  }
}

}  // namespace lease
