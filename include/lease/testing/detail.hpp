// lease/testing/detail.hpp — small helpers shared by the law checks of
// lease::testing (not part of its interface).
#pragma once

#include <string>
#include <vector>

namespace lease::testing::detail {

/// The broken laws, one per line, for a failure message.
inline std::string lines(const std::vector<std::string>& broken) {
  std::string out;
  for (const auto& b : broken) out += b + "\n";
  return out;
}

}  // namespace lease::testing::detail
