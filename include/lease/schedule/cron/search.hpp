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

/// A local time broken into fields. The search moves one field at a time,
/// from the month down; moving a field forward starts the smaller ones at
/// their beginning, moving it backward at their end. A field may step one
/// past its range (month 13, hour -1): the next bitset lookup then finds
/// nothing there and the search moves the bigger field instead.
struct civil_time {
  int year, month, day, hour, minute, second;

  static civil_time from(date::local_seconds t) noexcept {
    const auto midnight = date::floor<date::days>(t);
    const date::year_month_day ymd{midnight};
    const auto s = static_cast<int>((t - midnight).count());
    return {int{ymd.year()},
            static_cast<int>(unsigned{ymd.month()}),
            static_cast<int>(unsigned{ymd.day()}),
            s / 3600,
            s / 60 % 60,
            s % 60};
  }
  [[nodiscard]] date::local_seconds start_of_day() const noexcept {
    return date::local_days{date::year{year} / static_cast<unsigned>(month) / static_cast<unsigned>(day)};
  }
  [[nodiscard]] date::local_seconds to_local() const noexcept {
    return start_of_day() + std::chrono::seconds{hour * 3600 + minute * 60 + second};
  }

  void month_from_start(int m) noexcept { month = m, day = 1, hour = 0, minute = 0, second = 0; }
  void day_from_start(int d) noexcept { day = d, hour = 0, minute = 0, second = 0; }
  void hour_from_start(int h) noexcept { hour = h, minute = 0, second = 0; }
  void minute_from_start(int m) noexcept { minute = m, second = 0; }

  void month_from_end(int m) noexcept { month = m, day = 31, hour = 23, minute = 59, second = 59; }
  void day_from_end(int d) noexcept { day = d, hour = 23, minute = 59, second = 59; }
  void hour_from_end(int h) noexcept { hour = h, minute = 59, second = 59; }
  void minute_from_end(int m) noexcept { minute = m, second = 59; }
};

/// The first local time t with from <= t < limit that matches `f`, if any.
inline std::optional<date::local_seconds> next_match(const cron_fields& f, date::local_seconds from,
                                                     date::local_seconds limit) noexcept {
  if (from >= limit) return std::nullopt;
  civil_time c = civil_time::from(from);
  for (;;) {
    if (const int m = first_bit_from(f.months, c.month); m < 0) {
      ++c.year;
      c.month_from_start(first_bit_from(f.months, 1));
    } else if (m != c.month) {
      c.month_from_start(m);
    }
    if (c.year > last_search_year) return std::nullopt;

    const int d = first_bit_from(f.days_matching(c.year, c.month), c.day);
    if (d < 0) {
      c.month_from_start(c.month + 1);
      continue;
    }
    if (d != c.day) c.day_from_start(d);
    if (c.start_of_day() >= limit) return std::nullopt;

    const int h = first_bit_from(f.hours, c.hour);
    if (h < 0) {
      c.day_from_start(c.day + 1);
      continue;
    }
    if (h != c.hour) c.hour_from_start(h);

    const int mi = first_bit_from(f.minutes, c.minute);
    if (mi < 0) {
      c.hour_from_start(c.hour + 1);
      continue;
    }
    if (mi != c.minute) c.minute_from_start(mi);

    const int s = first_bit_from(f.seconds, c.second);
    if (s < 0) {
      c.minute_from_start(c.minute + 1);
      continue;
    }
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
  for (;;) {
    if (const int m = last_bit_upto(f.months, c.month); m < 0) {
      --c.year;
      c.month_from_end(last_bit_upto(f.months, 12));
    } else if (m != c.month) {
      c.month_from_end(m);
    }
    if (c.year < first_search_year) return std::nullopt;

    // Day 31 stands for "the month's last day": days_matching() has no bits past it.
    const int d = last_bit_upto(f.days_matching(c.year, c.month), c.day);
    if (d < 0) {
      c.month_from_end(c.month - 1);
      continue;
    }
    if (d != c.day) c.day_from_end(d);
    if (c.start_of_day() + std::chrono::seconds{86399} < floor) return std::nullopt;

    const int h = last_bit_upto(f.hours, c.hour);
    if (h < 0) {
      c.day_from_end(c.day - 1);
      continue;
    }
    if (h != c.hour) c.hour_from_end(h);

    const int mi = last_bit_upto(f.minutes, c.minute);
    if (mi < 0) {
      c.hour_from_end(c.hour - 1);
      continue;
    }
    if (mi != c.minute) c.minute_from_end(mi);

    const int s = last_bit_upto(f.seconds, c.second);
    if (s < 0) {
      c.minute_from_end(c.minute - 1);
      continue;
    }
    c.second = s;

    const auto t = c.to_local();
    return t >= floor ? std::optional{t} : std::nullopt;
  }
}

}  // namespace lease::detail
