// lease::every: fixed intervals on a grid anchored so that every instance agrees.
#include <catch2/catch.hpp>

#include "lease/schedule/every.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using schedule_test::next_utc;
using schedule_test::utc;
using strings = std::vector<std::string>;

TEST_CASE("Every interval is anchored at the Unix epoch by default, whenever it is created") {
  CHECK(next_utc(lease::every(30s), "2026-03-01 12:00:10", 3) ==
        strings{"Sun 2026-03-01 12:00:30", "Sun 2026-03-01 12:01:00", "Sun 2026-03-01 12:01:30"});
  // A day-long interval falls on UTC midnight.
  CHECK(lease::every(24h).next(utc("2026-03-01 12:00:00")) == utc("2026-03-02 00:00:00"));
}

TEST_CASE("Every interval follows its anchor, before and after it") {
  const lease::every quarter_past(1h, utc("2026-03-01 00:15:00"));
  CHECK(quarter_past.next(utc("2026-03-05 10:20:00")) == utc("2026-03-05 11:15:00"));
  CHECK(quarter_past.latest(utc("2026-03-05 10:20:00")) == utc("2026-03-05 10:15:00"));
  CHECK(quarter_past.latest(utc("2020-01-01 00:00:00")) == utc("2019-12-31 23:15:00"));
  CHECK(quarter_past.anchor() == utc("2026-03-01 00:15:00"));
}

TEST_CASE("Every interval's next is strictly after and latest at or before, to the millisecond") {
  const lease::every e(250ms);
  const auto slot = utc("2026-03-01 00:00:00.500");
  CHECK(e.next(slot) == utc("2026-03-01 00:00:00.750"));
  CHECK(e.next(slot - 1ms) == slot);
  CHECK(e.latest(slot) == slot);
  CHECK(e.latest(slot - 1ms) == utc("2026-03-01 00:00:00.250"));
  CHECK(e.interval() == 250ms);
}

TEST_CASE("An interval that is not positive is rejected") {
  CHECK_THROWS_WITH(lease::every(0ms), "lease::every: the interval must be positive (it is 0 ms)");
  CHECK_THROWS_AS(lease::every(-5s), std::invalid_argument);
}
