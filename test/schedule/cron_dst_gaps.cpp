// The Schedule laws at the end of every DST gap of every zone in the tz
// database (transitions 1970–2037, where Debian's zone files list them), from
// times in the last second before the gap's end — where a search that starts
// at whole seconds lands exactly on the transition. Replay a failure with
// RC_PARAMS="seed=…".
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "lease/schedule/cron.hpp"
#include "support.hpp"

namespace {

using lease::time_point;
using ms = lease::duration;
using std::chrono::seconds;

/// A transition that skips local times: [start, end) on the wall clock
/// before it never happens; `at` is the UTC instant where it ends.
struct gap {
  date::sys_seconds at;
  date::local_seconds start, end;
};

struct zone_gaps {
  std::string zone;
  std::vector<gap> gaps;
};

/// Every zone of the tz database that has a gap in 1970–2037, with those gaps.
const std::vector<zone_gaps>& every_zone_with_gaps() {
  static const std::vector<zone_gaps> all = [] {
    std::vector<zone_gaps> out;
    const date::sys_seconds from = date::sys_days{date::year{1970} / 1 / 1};
    const date::sys_seconds to = date::sys_days{date::year{2038} / 1 / 1};
    for (const date::time_zone& z : date::get_tzdb().zones) {
      zone_gaps zg{z.name(), {}};
      for (date::sys_info span = z.get_info(from); span.end < to;) {
        const date::sys_info after = z.get_info(span.end);
        if (after.offset > span.offset) {
          const date::local_seconds at_local{span.end.time_since_epoch()};
          zg.gaps.push_back({span.end, at_local + span.offset, at_local + after.offset});
        }
        span = after;
      }
      if (!zg.gaps.empty()) out.push_back(std::move(zg));
    }
    return out;
  }();
  return all;
}

/// One cron field that matches `v`, or `*`, or a step series through v.
std::string field_through(int v) {
  switch (*rc::gen::inRange(0, 4)) {
    case 0: return std::to_string(v);
    case 1: return "*";
    case 2: return std::to_string(v) + "/" + std::to_string(*rc::gen::inRange(1, 24));
    default: return std::to_string(v) + "," + std::to_string(*rc::gen::inRange(0, 24));
  }
}

/// A six-field expression with a slot at the local time x, usually in the
/// gap or at its edges, so that run_after has a slot at the transition.
std::string expression_at(date::local_seconds x) {
  const auto midnight = date::floor<date::days>(x);
  const date::year_month_day day{midnight};
  const date::hh_mm_ss<seconds> time{x - midnight};
  std::string text = field_through(static_cast<int>(time.seconds().count())) + " " +
                     field_through(static_cast<int>(time.minutes().count())) + " " +
                     field_through(static_cast<int>(time.hours().count())) + " ";
  const bool exact_day = *rc::gen::arbitrary<bool>();
  text += exact_day ? std::to_string(unsigned{day.day()}) + " " + std::to_string(unsigned{day.month()}) + " "
                    : std::string("* * ");
  text += *rc::gen::arbitrary<bool>() ? std::to_string(date::weekday{midnight}.c_encoding()) : std::string("*");
  return text;
}

/// The laws at t; a violation fails with everything needed to reproduce it.
void check_gap_laws(const lease::cron& c, time_point t) {
  const time_point next = c.next(t);
  const time_point latest = c.latest(t);
  const auto require = [&](bool ok, const char* law) {
    if (!ok)
      RC_FAIL(std::string(law) + " fails for lease::cron(\"" + c.expression() + "\", \"" + c.zone() +
              "\", {gap " + std::to_string(static_cast<int>(c.dst().gap)) + ", repeat " +
              std::to_string(static_cast<int>(c.dst().repeat)) + "}) at t = " + date::format("%F %T", t) +
              ": latest(t) = " + date::format("%F %T", latest) + ", next(t) = " + date::format("%F %T", next));
  };
  require(latest <= t, "latest(t) <= t");
  require(t < next, "next(t) > t");
  if (next != time_point::max()) {
    require(c.latest(next) == next, "latest(next(t)) == next(t)");
    require(c.latest(next - ms{1}) == latest, "no slot between latest(t) and next(t)");
  }
  if (latest != time_point::min()) {
    require(c.next(latest - ms{1}) == latest, "next(latest(t) - 1 ms) == latest(t)");
    require(c.next(latest) == next, "next(latest(t)) == next(t)");
  }
}

}  // namespace

TEST_CASE("Cron laws hold in the last second before the end of every DST gap of every zone") {
  REQUIRE(every_zone_with_gaps().size() > 100);  // the tz database was read
  rc::prop("for each zone, a random gap 1970-2037, an expression matching in it, t up to 1 s before its end", [] {
    const lease::dst_policy dst{*rc::gen::element(lease::dst_gap::run_after, lease::dst_gap::skip),
                                *rc::gen::element(lease::dst_repeat::first_only, lease::dst_repeat::both)};
    for (const zone_gaps& z : every_zone_with_gaps()) {
      const gap& g = z.gaps[*rc::gen::inRange<std::size_t>(0, z.gaps.size())];
      // A local time from one second before the gap to its end (inclusive).
      const auto x = g.start + seconds{*rc::gen::inRange<std::int64_t>(-1, (g.end - g.start).count() + 1)};
      const lease::cron c(expression_at(x), z.zone, dst);
      const time_point t = time_point{g.at} - ms{*rc::gen::inRange(1, 1001)};
      check_gap_laws(c, t);              // from just before the transition
      check_gap_laws(c, t + seconds{1});  // and just after it, where latest() is the transition
    }
  });
}
