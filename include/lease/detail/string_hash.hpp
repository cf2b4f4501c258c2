// lease/detail/string_hash.hpp — a hash for unordered maps keyed by
// std::string that can be looked up with a std::string_view (C++20
// heterogeneous lookup), so a lookup by a name read from a reply needs no
// temporary string.
//
// Why hash maps there: a redis_store handle looks a job up twice per claim
// (its highest fence seen, its release channel), and with 10,000 jobs an
// ordered map's ~14 string comparisons per lookup were a visible part of the
// instance's loop thread at thousands of claims a second.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace lease::detail {

struct string_hash {
  using is_transparent = void;
  [[nodiscard]] std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

}  // namespace lease::detail
