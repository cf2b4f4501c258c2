// lease/scheduler/detail/format.hpp — times and durations as text for event messages.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "lease/time.hpp"

namespace lease::detail {

/// "2026-11-29T06:00:00.140Z" (UTC, milliseconds). libstdc++ 12 has no std::format.
inline std::string fmt(time_point t) {
  using namespace std::chrono;
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss hms{t - day};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()), static_cast<int>(hms.subseconds().count()));
  return buf;
}

/// "1500 ms".
inline std::string fmt(duration d) { return std::to_string(d.count()) + " ms"; }

}  // namespace lease::detail
