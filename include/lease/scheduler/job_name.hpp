// lease/scheduler/job_name.hpp — lease::validate_job_name, the rule for job names.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lease {

/// Longest job name, in bytes. Names are keys in every store (Redis keys,
/// SQL columns, log lines); a bound keeps them cheap everywhere.
inline constexpr std::size_t max_job_name_bytes = 200;

/// Throws std::invalid_argument, with a sentence saying what to change, unless
/// `name` is non-empty, at most max_job_name_bytes bytes and free of control
/// characters (which would corrupt keys, logs and terminals).
inline void validate_job_name(std::string_view name) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("lease: job name \"" + std::string(name.substr(0, 40)) +
                                (name.size() > 40 ? "…" : "") + "\" is invalid: " + why);
  };
  if (name.empty()) fail("it is empty; give every job a stable, unique name");
  if (name.size() > max_job_name_bytes)
    fail("it is " + std::to_string(name.size()) + " bytes long; the limit is " +
         std::to_string(max_job_name_bytes));
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f)
      fail("it contains a control character (byte " + std::to_string(c) + " at offset " +
           std::to_string(i) + "); use printable characters only");
  }
}

}  // namespace lease
