// lease/schedule/cron/dst.hpp — lease::dst_policy: what a cron schedule in a
// time zone does when daylight saving time skips or repeats local times.
//
// A cron expression names *local* times; a slot is a UTC instant. Twice a year
// the two stop being one-to-one:
//
//  * spring forward: local times in the gap do not exist
//    (Europe/Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST);
//  * fall back: local times in the overlap happen twice
//    (Europe/Berlin, 2026-10-25: 02:00–02:59 CEST, then again in CET).
//
// Both choices are per schedule, and every instance must use the same ones
// (they decide which slots exist).
#pragma once

#include <string>

namespace lease {

/// What a slot whose local time falls in a spring-forward gap does.
///
///   lease::cron("30 2 * * *", "Europe/Berlin")        // 2026-03-29: 03:00 CEST (01:00Z)
///   lease::cron("30 2 * * *", "Europe/Berlin",
///               {.gap = lease::dst_gap::skip})        // 2026-03-29: no run
enum class dst_gap {
  /// Run once at the first instant after the gap (the transition itself), as
  /// Vixie cron does for fixed-time jobs. Several local times in one gap
  /// (`*/15 * * * *` has four) collapse into that one run, which is also the
  /// slot of the first local time after the gap when that one matches.
  run_after,
  /// No run: the local time never happened.
  skip,
};

/// What a slot whose local time is repeated by a fall-back does.
///
///   lease::cron("30 2 * * *", "Europe/Berlin")        // 2026-10-25: 02:30 CEST (00:30Z) only
///   lease::cron("30 2 * * *", "Europe/Berlin",
///               {.repeat = lease::dst_repeat::both})  // 02:30 CEST and 02:30 CET (01:30Z)
///
/// With `first_only`, a sub-hourly schedule pauses while the clock replays the
/// hour (`*/15 * * * *` in Berlin runs 02:00–02:45 CEST, then next at 03:00
/// CET). Use `lease::every` when what matters is the interval, not the wall clock.
enum class dst_repeat {
  /// Once, at the first occurrence (the earlier UTC instant).
  first_only,
  /// At both occurrences.
  both,
};

/// How a zoned cron schedule treats DST transitions. The default — run after
/// the gap, once in the overlap — means a daily job runs exactly once every
/// local day.
struct dst_policy {
  dst_gap gap = dst_gap::run_after;
  dst_repeat repeat = dst_repeat::first_only;

  friend bool operator==(const dst_policy&, const dst_policy&) = default;
};

namespace detail {

/// A policy as a registration writes it after the cron's expression (so that
/// leasectl reads back the slots the instance has, and two instances with
/// different policies are seen to disagree): "" for the default, else
/// " (DST: gap skip)", " (DST: repeat both)" or " (DST: gap skip, repeat
/// both)", the names of the members and values as code writes them.
/// (schedule/parse.hpp reads them back.)
inline std::string registered_dst(dst_policy p) {
  if (p == dst_policy{}) return {};
  std::string out = " (DST: ";
  if (p.gap == dst_gap::skip) out += "gap skip";
  if (p.repeat == dst_repeat::both) out += p.gap == dst_gap::skip ? ", repeat both" : "repeat both";
  return out + ")";
}

}  // namespace detail

}  // namespace lease
