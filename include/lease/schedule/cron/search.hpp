// lease/schedule/cron/search.hpp — detail::next_match / detail::prev_match:
// the nearest local time at or after (or at or before) a given one that
// matches a cron_fields, within bounds. No time zones here: only the calendar.
#pragma once

#include <chrono>
#include <optional>

#include <date/date.h>

#include "lease/schedule/cron/fields.hpp"

namespace lease::detail {

/// Years the search covers. Bounding the search is what guarantees it ends;
/// every expression that passes can_fire() matches far more often than this.
inline constexpr int first_search_year = 1;
inline constexpr int last_search_year = 9999;

/// A local time broken into fields; the search moves field by field, from the
/// month down, resetting the smaller fields whenever a bigger one moves.
struct civil_time {
  int year, month, day, hour, minute, second;

  static civil_time from(date::local_seconds t) noexcept {
    const auto day = date::floor<date::days>(t);
    const date::year_month_day ymd{day};
    const auto s = static_cast<int>((t - day).count());
    return {int{ymd.year()}, static_cast<int>(unsigned{ymd.month()}), static_cast<int>(unsigned{ymd.day()}),
            s / 3600, s / 60 % 60, s % 60};
  }
  [[nodiscard]] date::local_seconds start_of_day() const noexcept {
    return date::local_days{date::year{year} / static_cast<unsigned>(month) / static_cast<unsigned>(day)};
  }
  [[nodiscard]] date::local_seconds to_local() const noexcept {
    return start_of_day() + std::chrono::seconds{hour * 3600 + minute * 60 + second};
  }
};

/// The first local time t with from <= t < limit that matches `f`, if any.
inline std::optional<date::local_seconds> next_match(const cron_fields& f, date::local_seconds from,
                                                     date::local_seconds limit) noexcept {
  if (from >= limit) return std::nullopt;
  civil_time c = civil_time::from(from);
  const auto next_month = [&c] { ++c.month, c.day = 1, c.hour = c.minute = c.second = 0; };
  const auto next_day = [&c] { ++c.day, c.hour = c.minute = c.second = 0; };
  for (;;) {
    if (const int m = first_bit_from(f.months, c.month); m != c.month) {
      if (m < 0) {
        ++c.year, c.month = first_bit_from(f.months, 1);
      } else {
        c.month = m;
      }
      c.day = 1, c.hour = c.minute = c.second = 0;
    }
    if (c.year > last_search_year) return std::nullopt;

    const int d = first_bit_from(f.days_matching(c.year, c.month), c.day);
    if (d < 0) { next_month(); continue; }
    if (d != c.day) c.day = d, c.hour = c.minute = c.second = 0;
    if (c.start_of_day() >= limit) return std::nullopt;

    const int h = first_bit_from(f.hours, c.hour);
    if (h < 0) { next_day(); continue; }
    if (h != c.hour) c.hour = h, c.minute = c.second = 0;

    const int mi = first_bit_from(f.minutes, c.minute);
    if (mi < 0) { ++c.hour, c.minute = c.second = 0; continue; }
    if (mi != c.minute) c.minute = mi, c.second = 0;

    const int s = first_bit_from(f.seconds, c.second);
    if (s < 0) { ++c.minute, c.second = 0; continue; }
    c.second = s;

    const auto t = c.to_local();
    return t < limit ? std::optional{t} : std::nullopt;
  }
}

/// The last local time t with floor <= t <= upto that matches `f`, if any.
inline std::optional<date::local_seconds> prev_match(const cron_fields& f, date::local_seconds upto,
                                                     date::local_seconds floor) noexcept {
  if (upto < floor) return std::nullopt;
  civil_time c = civil_time::from(upto);
  const auto end_of_day = [&c] { c.hour = 23, c.minute = 59, c.second = 59; };
  for (;;) {
    if (const int m = last_bit_upto(f.months, c.month); m != c.month) {
      if (m < 0) {
        --c.year, c.month = last_bit_upto(f.months, 12);
      } else {
        c.month = m;
      }
      c.day = 31, end_of_day();
    }
    if (c.year < first_search_year) return std::nullopt;

    const int d = last_bit_upto(f.days_matching(c.year, c.month), c.day);
    if (d < 0) { --c.month, c.day = 31, end_of_day(); continue; }
    if (d != c.day) c.day = d, end_of_day();
    if (c.start_of_day() + std::chrono::seconds{86399} < floor) return std::nullopt;

    const int h = last_bit_upto(f.hours, c.hour);
    if (h < 0) { --c.day, end_of_day(); continue; }
    if (h != c.hour) c.hour = h, c.minute = 59, c.second = 59;

    const int mi = last_bit_upto(f.minutes, c.minute);
    if (mi < 0) { --c.hour, c.minute = 59, c.second = 59; continue; }
    if (mi != c.minute) c.minute = mi, c.second = 59;

    const int s = last_bit_upto(f.seconds, c.second);
    if (s < 0) { --c.minute, c.second = 59; continue; }
    c.second = s;

    const auto t = c.to_local();
    return t >= floor ? std::optional{t} : std::nullopt;
  }
}

}  // namespace lease::detail
