// test/schedule/random_time.hpp — a uniformly random instant for the
// schedule properties (RapidCheck).
#pragma once

#include <chrono>
#include <cstdint>

#include <date/date.h>
#include <rapidcheck.h>

#include "lease/time.hpp"

namespace schedule_test {

/// A millisecond between 1 January of `from_year` and 1 January of
/// `to_year` (UTC), uniformly.
inline lease::time_point random_time(int from_year, int to_year) {
  const auto lo = date::sys_days{date::year{from_year} / 1 / 1};
  const auto hi = date::sys_days{date::year{to_year} / 1 / 1};
  const auto offset =
      *rc::gen::inRange<std::int64_t>(0, std::chrono::duration_cast<lease::duration>(hi - lo).count());
  return lease::time_point{lo} + lease::duration{offset};
}

}  // namespace schedule_test
