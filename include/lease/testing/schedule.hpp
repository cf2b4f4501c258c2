// lease/testing/schedule.hpp — the Schedule laws (lease/schedule/concept.hpp),
// checked on a schedule of yours at random times (RapidCheck).
//
//   TEST_CASE("my_schedule keeps the Schedule laws") {
//     lease::testing::check_schedule([] { return my_schedule{"…"}; });
//   }
//
// `make()` builds the schedule; it is called more than once, at different
// moments, to check L4 (every instance computes the same slots). Times are
// drawn from [from, to) (default: 1990–2060) and a second time up to 40 days
// later (monotonicity). schedule_violations_at() checks one time and returns
// the broken laws, for any test framework.
#pragma once

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <chrono>
#include <string>
#include <vector>

#include "lease/schedule/concept.hpp"
#include "lease/testing/detail.hpp"
#include "lease/time.hpp"

namespace lease::testing {

/// The laws L1–L3 at time `t` (and `later` ≥ t for monotonicity). Returns
/// what is broken, as sentences with the times in ms since the epoch.
template <Schedule S>
[[nodiscard]] std::vector<std::string> schedule_violations_at(const S& s, time_point t, time_point later) {
  std::vector<std::string> broken;
  auto at = [](time_point x) { return std::to_string(x.time_since_epoch().count()); };
  const time_point next = s.next(t);
  const time_point latest = s.latest(t);
  const std::string where = " (t = " + at(t) + ", latest = " + at(latest) + ", next = " + at(next) + ")";
  if (!(t < next)) broken.push_back("L1: next(t) is not after t" + where);
  if (!(latest <= t)) broken.push_back("L2: latest(t) is after t" + where);
  if (s.latest(next) != next) broken.push_back("L2: next(t) is not a slot: latest(next(t)) != next(t)" + where);
  if (s.next(latest) != next)
    broken.push_back("L3: a slot lies between latest(t) and next(t): next(latest(t)) = " + at(s.next(latest)) + where);
  if (s.latest(next - duration{1}) != latest)
    broken.push_back("L3: latest(next(t) - 1 ms) = " + at(s.latest(next - duration{1})) + ", not latest(t)" + where);
  if (!(s.next(next) > next)) broken.push_back("L1: next(next(t)) is not after next(t)" + where);
  if (later >= t && (s.next(t) > s.next(later) || s.latest(t) > s.latest(later)))
    broken.push_back("L1: next or latest went back from t to " + at(later) + where);
  return broken;
}

/// The laws L1–L4 at random times in [from, to); true if they all held.
template <class MakeSchedule>
[[nodiscard]] bool schedule_conforms(MakeSchedule make,
                                     time_point from = time_point{std::chrono::sys_days{std::chrono::year{1990} / 1 / 1}},
                                     time_point to = time_point{std::chrono::sys_days{std::chrono::year{2060} / 1 / 1}}) {
  using S = decltype(make());
  static_assert(Schedule<S>, "lease::testing::check_schedule: make() must return a lease::Schedule");
  const S first = make();
  return rc::check("the Schedule laws hold at random times", [&] {
    const auto span = (to - from).count();
    const time_point t = from + duration{*rc::gen::inRange<std::int64_t>(0, span > 0 ? span : 1)};
    const time_point later = t + duration{*rc::gen::inRange<std::int64_t>(0, 40LL * 86'400'000)};
    const std::vector<std::string> broken = schedule_violations_at(first, t, later);
    if (!broken.empty()) RC_FAIL(detail::lines(broken));
    // L4: a schedule built later (on another instance) has the same slots.
    const S again = make();
    RC_ASSERT(again.next(t) == first.next(t));
    RC_ASSERT(again.latest(t) == first.latest(t));
  });
}

/// Catch2: the Schedule laws hold (call inside a TEST_CASE).
template <class MakeSchedule>
void check_schedule(MakeSchedule make) {
  REQUIRE(schedule_conforms(std::move(make)));
}

}  // namespace lease::testing
