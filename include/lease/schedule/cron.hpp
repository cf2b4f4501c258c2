// lease/schedule/cron.hpp — lease::cron, a Schedule from a cron expression in
// a time zone, with a chosen daylight-saving policy.
//
//   lease::cron("*/5 * * * * *")                        // every 5 s (6 fields: seconds first)
//   lease::cron("0 3 * * mon-fri", "Europe/Berlin")     // 03:00 Berlin time on weekdays
//   lease::cron("0 0 L * *")                            // midnight UTC, last day of each month
//   lease::cron("30 2 * * *", "America/New_York",
//               {.gap = lease::dst_gap::skip, .repeat = lease::dst_repeat::both})
//
// Syntax (names and letters are case-insensitive):
//
//   field          values          also
//   second (opt.)  0-59
//   minute         0-59
//   hour           0-23
//   day of month   1-31            ?  L (last day)  L-n (n days before it)  nW (weekday nearest n)  LW
//   month          1-12, jan-dec
//   day of week    0-7, sun-sat    ?  nL (last n-day of the month)  n#k (k-th n-day, k = 1-5)
//
//   every field: *  a  a-b  */s  a-b/s  a/s (from a to the field's end)  lists a,b-c,...
//   a range whose end is before its start wraps around: 22-2 (hours), fri-mon.
//   0 and 7 are both Sunday; the week ends at 6 for */s and a/s.  `?` is `*`.
//   With 5 fields the second is 0.  L alone in day of week is an error (Quartz
//   reads it as Saturday; write sat or 6).
//   macros: @yearly = @annually (0 0 1 1 *), @monthly (0 0 1 * *),
//           @weekly (0 0 * * 0), @daily = @midnight (0 0 * * *), @hourly (0 * * * *).
//
// Day of month and day of week combine as in Vixie cron and POSIX: when both
// are restricted, a day matches if EITHER matches ("0 0 13 * fri" runs on
// every 13th and on every Friday); when either starts with `*` or is `?`, a
// day must match both (so "0 0 */2 * fri" is odd-numbered Fridays, as in
// Vixie). Other implementations differ: node-cron always requires both to
// match; Quartz refuses an expression that restricts both (one must be `?`).
//
// Daylight saving time: a local time skipped by a spring-forward runs at the
// end of the gap, a repeated one runs once — or as chosen: see cron/dst.hpp.
//
// Time zones come from the OS tz database through Howard Hinnant's date/tz.
// Note that date 3.0.1 in this mode reads only the transitions listed in the
// zone files (Debian's end in 2037) and not their POSIX rule, so DST
// transitions after 2037 are not applied: zones keep the offset of their last
// listed transition.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <date/tz.h>

#include "lease/schedule/concept.hpp"
#include "lease/schedule/cron/dst.hpp"
#include "lease/schedule/cron/error.hpp"
#include "lease/schedule/cron/fields.hpp"
#include "lease/schedule/cron/parse.hpp"
#include "lease/schedule/cron/search.hpp"
#include "lease/time.hpp"

namespace lease {

/// The slots of a cron expression in a time zone: every UTC instant at which
/// the zone's wall clock shows a matching local time, with DST gaps and
/// repeats handled by a dst_policy (see cron/dst.hpp). Slots are whole seconds.
///
/// Construction parses and checks everything and loads the zone; next() and
/// latest() then only compute (no allocation, no I/O, no error). A cron is a
/// small value (bitsets, a pointer into the tz database, the texts): copy it
/// freely. Its const members are safe to call concurrently. It reads no clock:
/// time is always the caller's argument.
///
/// Slots are searched from 2 January of year 1 to 31 December 9999: past
/// those, next() returns time_point::max() and latest() time_point::min().
class cron {
 public:
  /// Throws lease::cron_error if the expression is invalid, can never fire
  /// (`0 0 30 2 *`), or the zone is not in the tz database. "UTC" (and
  /// "Etc/UTC") needs no database lookup at all.
  explicit cron(std::string_view expression, std::string_view zone = "UTC", dst_policy dst = {})
      : fields_(detail::parse_cron(expression)), dst_(dst), expression_(expression), zone_name_(zone) {
    if (zone != "UTC" && zone != "Etc/UTC") zone_ = find_zone(zone_name_);
  }

  /// The first slot strictly after `after`.
  [[nodiscard]] time_point next(time_point after) const {
    if (after >= last_instant()) return time_point::max();
    const date::sys_seconds from =
        std::chrono::floor<seconds>(std::max(after, first_instant() - seconds{1})) + seconds{1};
    time_point slot = time_point::max();
    if (zone_ != nullptr) {
      slot = next_zoned(from);
    } else if (const auto m = detail::next_match(fields_, as_local(from), date::local_seconds::max())) {
      slot = as_sys(*m);
    }
    return slot <= last_instant() ? slot : time_point::max();
  }

  /// The last slot at or before `at_or_before`.
  [[nodiscard]] time_point latest(time_point at_or_before) const {
    if (at_or_before < first_instant()) return time_point::min();
    const date::sys_seconds upto = std::chrono::floor<seconds>(std::min(at_or_before, last_instant()));
    time_point slot = time_point::min();
    if (zone_ != nullptr) {
      slot = latest_zoned(upto);
    } else if (const auto m = detail::prev_match(fields_, as_local(upto), date::local_seconds::min())) {
      slot = as_sys(*m);
    }
    return slot >= first_instant() ? slot : time_point::min();
  }

  /// The expression as given.
  [[nodiscard]] const std::string& expression() const noexcept { return expression_; }
  /// The time zone's name as given.
  [[nodiscard]] const std::string& zone() const noexcept { return zone_name_; }
  /// The DST policy it was built with.
  [[nodiscard]] dst_policy dst() const noexcept { return dst_; }

 private:
  using seconds = std::chrono::seconds;
  // More than any UTC offset (±14 h) and any backward step of a wall clock.
  static constexpr date::days margin{2};

  static const date::time_zone* find_zone(const std::string& name) {
    try {
      const date::time_zone* z = date::locate_zone(name);
      (void)z->get_info(date::sys_seconds{});  // loads the zone now, so that next() and latest() cannot fail later
      return z;
    } catch (const std::runtime_error&) { throw cron_error("time zone", name, "is not in the time zone database", 0); }
  }

  static date::local_seconds as_local(date::sys_seconds t) noexcept {
    return date::local_seconds{t.time_since_epoch()};
  }
  static date::sys_seconds as_sys(date::local_seconds t) noexcept { return date::sys_seconds{t.time_since_epoch()}; }
  // Slots are reported within [first_instant, last_instant] only, the same
  // range in both directions so that next and latest stay consistent; the
  // day's margin inside the searched years leaves room for zone offsets.
  static time_point first_instant() noexcept { return date::sys_days{date::year{detail::first_search_year} / 1 / 2}; }
  static time_point last_instant() noexcept { return date::sys_days{date::year{detail::last_search_year} / 12 / 31}; }

  // The zone's wall clock is a plain shift within one sys_info (a span of
  // constant UTC offset), so the search walks those spans: matches inside a
  // span are slots, then its end is a transition that may be a gap (local
  // times skipped) or followed by an overlap (local times repeated).
  [[nodiscard]] time_point next_zoned(date::sys_seconds from) const {
    for (;;) {
      const date::sys_info span = zone_->get_info(from);
      // At a transition that skipped local times, the transition itself is
      // the run_after slot. This is checked on arriving at the span, not on
      // leaving the one before, so that a search that *starts* at the
      // transition (`after` in the last second before it) finds it too.
      if (from == span.begin && dst_.gap == dst_gap::run_after && span.begin > first_instant() &&
          gap_matches(zone_->get_info(span.begin - seconds{1}), span))
        return span.begin;
      date::local_seconds lo = as_local(from) + span.offset;
      // (A repeat lasts at most hours: past two days into the span, skip the lookup.)
      if (dst_.repeat == dst_repeat::first_only && from - span.begin < margin)
        lo = std::max(lo, first_unrepeated(span));
      const date::local_seconds end_local = as_local(span.end) + span.offset;
      if (const auto m = detail::next_match(fields_, lo, end_local)) return as_sys(*m - span.offset);
      if (span.end >= last_instant()) return time_point::max();

      // Nothing before span.end. Skip the spans that cannot hold a slot either,
      // so a rare schedule (29 February) costs one search, not one per span:
      // a wall clock never runs back by two days, so every later slot's local
      // time is at least the first match from two days before `from`'s, and
      // no UTC offset moves the slot two days before that. (So when the gap
      // at span.end holds a match, `from` becomes exactly span.end, and the
      // check above finds it.)
      const auto ahead = detail::next_match(fields_, as_local(from) + span.offset - margin, date::local_seconds::max());
      if (!ahead) return time_point::max();
      from = std::max(span.end, as_sys(*ahead) - margin);
    }
  }

  [[nodiscard]] time_point latest_zoned(date::sys_seconds upto) const {
    for (;;) {
      const date::sys_info span = zone_->get_info(upto);
      date::local_seconds lo = as_local(span.begin) + span.offset;
      if (dst_.repeat == dst_repeat::first_only) lo = std::max(lo, first_unrepeated(span));
      if (const auto m = detail::prev_match(fields_, as_local(upto) + span.offset, lo)) return as_sys(*m - span.offset);
      if (span.begin <= first_instant()) return time_point::min();

      if (dst_.gap == dst_gap::run_after && gap_matches(zone_->get_info(span.begin - seconds{1}), span))
        return span.begin;

      // As in next_zoned, mirrored: jump to two days after the last match
      // up to two days after `upto`'s local time.
      const auto behind =
          detail::prev_match(fields_, as_local(upto) + span.offset + margin, date::local_seconds::min());
      if (!behind) return time_point::min();
      upto = std::min(span.begin - seconds{1}, as_sys(*behind) + margin);
    }
  }

  // Whether the transition from `before` to `after` (adjacent spans) skips
  // local times and one of them matches: then the transition is a slot under
  // run_after. One definition for next and latest, so that they agree.
  [[nodiscard]] bool gap_matches(const date::sys_info& before, const date::sys_info& after) const noexcept {
    const date::local_seconds gap_start = as_local(after.begin) + before.offset;
    const date::local_seconds gap_end = as_local(after.begin) + after.offset;
    return gap_start < gap_end && detail::next_match(fields_, gap_start, gap_end).has_value();
  }

  // Local times at the start of a span that follows a fall-back already
  // happened in the span before; under first_only they are not slots again.
  // Returns the first local time of the span that is not such a repeat.
  [[nodiscard]] date::local_seconds first_unrepeated(const date::sys_info& span) const {
    const date::sys_info before = zone_->get_info(span.begin - seconds{1});
    return as_local(span.begin) + std::max(before.offset, span.offset);
  }

  detail::cron_fields fields_;
  dst_policy dst_;
  const date::time_zone* zone_ = nullptr;  // null: UTC, local time is UTC
  std::string expression_;
  std::string zone_name_;
};

static_assert(Schedule<cron>);

}  // namespace lease
