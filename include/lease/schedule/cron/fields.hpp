// lease/schedule/cron/fields.hpp — detail::cron_fields, a parsed cron
// expression as bitsets, and the one calendar question it answers: which days
// of a given month match.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include <date/date.h>

namespace lease::detail {

/// Lowest set bit at or after `pos`, or -1. Positions past 63 find nothing,
/// which lets callers step one past the end of a field without a special case.
constexpr int first_bit_from(std::uint64_t mask, int pos) noexcept {
  if (pos > 63) return -1;
  const std::uint64_t m = mask & (~std::uint64_t{0} << pos);
  return m != 0 ? std::countr_zero(m) : -1;
}

/// Highest set bit at or before `pos`, or -1 (also for negative positions).
constexpr int last_bit_upto(std::uint64_t mask, int pos) noexcept {
  if (pos < 0) return -1;
  const std::uint64_t m = pos >= 63 ? mask : mask & ((std::uint64_t{2} << pos) - 1);
  return m != 0 ? 63 - std::countl_zero(m) : -1;
}

/// Number of days in a month, 28–31.
inline int days_in_month(int year, int month) noexcept {
  return static_cast<int>(unsigned{(date::year{year} / date::month{static_cast<unsigned>(month)} / date::last).day()});
}

/// Day of the week of the 1st of a month, 0 = Sunday.
inline int weekday_of_first(int year, int month) noexcept {
  const date::sys_days first{date::year{year} / date::month{static_cast<unsigned>(month)} / 1};
  return static_cast<int>(date::weekday{first}.c_encoding());
}

/// The weekday (Monday–Friday) nearest to day `d` of a month of `n` days whose
/// 1st is weekday `first`, never leaving the month (Quartz's `W`): a Saturday
/// moves to Friday, or to Monday the 3rd when it is the 1st; a Sunday moves to
/// Monday, or to Friday when it is the last day.
constexpr int nearest_weekday(int d, int n, int first) noexcept {
  switch ((first + d - 1) % 7) {
    case 6: return d == 1 ? 3 : d - 1;
    case 0: return d == n ? d - 2 : d + 1;
    default: return d;
  }
}

/// A cron expression, one bitset per field (bit i set = value i matches).
/// Plain data; everything here is in *local* time of the schedule's zone.
struct cron_fields {
  std::uint64_t seconds = 0;  ///< bits 0–59
  std::uint64_t minutes = 0;  ///< bits 0–59
  std::uint32_t hours = 0;    ///< bits 0–23
  std::uint16_t months = 0;   ///< bits 1–12

  // Day of month.
  std::uint32_t days = 0;           ///< bits 1–31: plain day numbers
  std::uint32_t days_before_last = 0;  ///< bit k: the day k days before the last (`L` = bit 0, `L-3` = bit 3)
  std::uint32_t nearest_weekday_to = 0;  ///< bit d: `dW`, the weekday nearest to day d
  bool last_weekday = false;        ///< `LW`: the last Monday–Friday of the month

  // Day of week (0 = Sunday).
  std::uint8_t weekdays = 0;               ///< bits 0–6
  std::array<std::uint8_t, 7> nth_of{};    ///< nth_of[w] bit k: `w#k`, the k-th such weekday (k = 1–5)
  std::uint8_t last_of = 0;                ///< bit w: `wL`, the last such weekday of the month

  /// Whether each day field was written as a restriction. Standard cron
  /// (Vixie, POSIX) matches a day when *either* field matches if both are
  /// restricted, and when both match otherwise; a field counts as
  /// unrestricted when it starts with `*` or is `?` — so `*/2` is
  /// "unrestricted" for this rule, exactly as in Vixie cron.
  bool day_of_month_restricted = false;
  bool day_of_week_restricted = false;

  /// Bit d set for every day d of the month that matches both day fields (as
  /// combined above). Months outside `months` are not checked here.
  [[nodiscard]] std::uint32_t days_matching(int year, int month) const noexcept {
    const int n = days_in_month(year, month);
    const int first = weekday_of_first(year, month);
    const std::uint32_t valid = ((std::uint32_t{1} << n) - 1) << 1;

    std::uint32_t by_month_day = days & valid;
    for (std::uint32_t b = days_before_last; b != 0; b &= b - 1)
      if (const int k = std::countr_zero(b); k < n) by_month_day |= std::uint32_t{1} << (n - k);
    for (std::uint32_t b = nearest_weekday_to; b != 0; b &= b - 1)
      if (const int d = std::countr_zero(b); d <= n) by_month_day |= std::uint32_t{1} << nearest_weekday(d, n, first);
    if (last_weekday) by_month_day |= std::uint32_t{1} << nearest_weekday(n, n, first);

    // Rotate the week so that bit i means "day i+1", repeat it over five
    // weeks, and shift to day numbering.
    const std::uint64_t week = ((weekdays >> first) | (weekdays << (7 - first))) & 0x7f;
    const std::uint64_t five_weeks = week | week << 7 | week << 14 | week << 21 | week << 28;
    auto by_week_day = static_cast<std::uint32_t>((five_weeks << 1) & valid);
    for (int w = 0; w < 7; ++w) {
      const int first_w = 1 + (w - first + 7) % 7;  // the first such weekday of the month
      for (std::uint32_t b = nth_of[static_cast<std::size_t>(w)]; b != 0; b &= b - 1)
        if (const int d = first_w + 7 * (std::countr_zero(b) - 1); d <= n) by_week_day |= std::uint32_t{1} << d;
      if ((last_of >> w) & 1) by_week_day |= std::uint32_t{1} << (first_w + 7 * ((n - first_w) / 7));
    }

    if (day_of_month_restricted && day_of_week_restricted) return by_month_day | by_week_day;
    return by_month_day & by_week_day;
  }

  /// Whether any day ever matches. The Gregorian calendar repeats every 400
  /// years, so checking one such cycle is a complete, bounded answer.
  [[nodiscard]] bool can_fire() const noexcept {
    for (int year = 2000; year < 2400; ++year)
      for (int month = 1; month <= 12; ++month)
        if ((months >> month) & 1 && days_matching(year, month) != 0) return true;
    return false;
  }
};

}  // namespace lease::detail
