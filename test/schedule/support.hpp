// test/schedule/support.hpp — helpers for the schedule tests: readable times
// in and out, so that expectations read like a calendar.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>
#include <date/tz.h>

#include "lease/schedule/concept.hpp"
#include "lease/time.hpp"

namespace schedule_test {

/// "2026-03-29 01:00:00" (UTC) → time_point. Fractions of a second allowed.
inline lease::time_point utc(std::string_view text) {
  std::istringstream in{std::string(text)};
  lease::time_point t;
  in >> date::parse("%F %T", t);
  if (in.fail()) throw std::invalid_argument("bad time in test: " + std::string(text));
  return t;
}

/// A local wall time in a zone → its UTC instant (the earlier one if repeated).
inline lease::time_point local(std::string_view zone, std::string_view text) {
  std::istringstream in{std::string(text)};
  date::local_time<lease::duration> t;
  in >> date::parse("%F %T", t);
  return date::locate_zone(std::string(zone))->to_sys(t, date::choose::earliest);
}

/// "Sat 2026-03-28 00:00:00" — weekday included, it is what day tests are about.
inline std::string show_utc(lease::time_point t) { return date::format("%a %F %T", date::floor<std::chrono::seconds>(t)); }

/// "2026-10-25 02:30:00 CEST" — local time with its abbreviation, which tells
/// the two occurrences of a repeated hour apart.
inline std::string show_local(std::string_view zone, lease::time_point t) {
  return date::format("%F %T %Z", date::make_zoned(date::locate_zone(std::string(zone)), date::floor<std::chrono::seconds>(t)));
}

/// The first n slots strictly after `after`, shown in UTC.
template <lease::Schedule S>
std::vector<std::string> next_utc(const S& s, std::string_view after, int n) {
  std::vector<std::string> out;
  for (lease::time_point t = utc(after); n-- > 0;) out.push_back(show_utc(t = s.next(t)));
  return out;
}

/// Every slot in [from, to) (UTC bounds), shown in the zone's local time.
template <lease::Schedule S>
std::vector<std::string> slots_local(const S& s, std::string_view zone, std::string_view from, std::string_view to) {
  std::vector<std::string> out;
  const lease::time_point end = utc(to);
  for (lease::time_point t = s.next(utc(from) - lease::duration{1}); t < end; t = s.next(t))
    out.push_back(show_local(zone, t));
  return out;
}

}  // namespace schedule_test

namespace Catch {
template <>
struct StringMaker<lease::time_point> {
  static std::string convert(lease::time_point t) { return date::format("%F %T", t) + "Z"; }
};
}  // namespace Catch
