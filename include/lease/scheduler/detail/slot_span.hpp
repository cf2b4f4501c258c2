// lease/scheduler/detail/slot_span.hpp — a run of consecutive slots of one
// job that an event names at once ("3 slot(s) not claimed, A to C: …").
#pragma once

#include <cstdint>
#include <string>

#include "lease/scheduler/detail/any_schedule.hpp"
#include "lease/scheduler/detail/format.hpp"

namespace lease::detail {

/// The slots of a schedule from `first` up to, not including, `end`.
struct slot_span {
  /// Counting stops here: a loop years behind (a wall clock stepped far
  /// forward) must not spend its turn walking a minutely schedule.
  static constexpr std::uint64_t cap = 10'000;

  time_point first;
  time_point last;  ///< the last slot counted (== first when count ≤ 1)
  std::uint64_t count = 0;

  static slot_span of(const any_schedule& schedule, time_point first, time_point end) {
    slot_span span{first, first, 0};
    for (time_point s = first; s < end && span.count < cap; s = schedule.next(s)) {
      ++span.count;
      span.last = s;
    }
    return span;
  }

  /// "3 slot(s) not claimed, 2026-…Z to 2026-…Z" (a count at the cap reads "10000+").
  [[nodiscard]] std::string not_claimed() const {
    return std::to_string(count) + (count >= cap ? "+" : "") + " slot(s) not claimed, " + fmt(first) +
           (count > 1 ? " to " + fmt(last) : std::string{});
  }
};

}  // namespace lease::detail
