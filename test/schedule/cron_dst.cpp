// Time zones and daylight saving time. Each expected slot is written as the
// zone's wall clock with its abbreviation, so the two passes of a repeated
// hour read apart (02:30 CEST, then 02:30 CET).
//
// Transitions used (2026):
//   Europe/Berlin        29 Mar 02:00 CET  → 03:00 CEST   25 Oct 03:00 CEST → 02:00 CET
//   America/New_York      8 Mar 02:00 EST  → 03:00 EDT     1 Nov 02:00 EDT  → 01:00 EST
//   Australia/Lord_Howe   4 Oct 02:00 +1030 → 02:30 +11    5 Apr 02:00 +11  → 01:30 +1030  (30 minutes)
#include <catch2/catch.hpp>

#include "lease/schedule/cron.hpp"
#include "support.hpp"

namespace {

using strings = std::vector<std::string>;
using schedule_test::utc;

constexpr lease::dst_policy defaults{};
constexpr lease::dst_policy skip_gap{.gap = lease::dst_gap::skip};
constexpr lease::dst_policy both_repeats{.repeat = lease::dst_repeat::both};

/// The slots in [from, to) (UTC), shown on the zone's wall clock.
strings slots(const char* expression, const char* zone, lease::dst_policy dst, const char* from, const char* to) {
  return schedule_test::slots_local(lease::cron(expression, zone, dst), zone, from, to);
}

}  // namespace

TEST_CASE("A zone without DST shifts every slot by its offset") {
  CHECK(slots("0 3 * * *", "Asia/Kolkata", defaults, "2026-03-01 00:00:00", "2026-03-03 00:00:00") ==
        strings{"2026-03-02 03:00:00 IST", "2026-03-03 03:00:00 IST"});
  CHECK(lease::cron("0 3 * * *", "Asia/Kolkata").next(utc("2026-03-01 00:00:00")) == utc("2026-03-01 21:30:00"));
}

TEST_CASE("Berlin spring forward: a slot in the skipped hour runs at 03:00 CEST, or not at all when skipping") {
  const char* from = "2026-03-29 00:00:00";
  const char* to = "2026-03-29 02:00:00";
  SECTION("hourly") {
    CHECK(slots("30 * * * *", "Europe/Berlin", defaults, from, to) ==
          strings{"2026-03-29 01:30:00 CET", "2026-03-29 03:00:00 CEST", "2026-03-29 03:30:00 CEST"});
    CHECK(slots("30 * * * *", "Europe/Berlin", skip_gap, from, to) ==
          strings{"2026-03-29 01:30:00 CET", "2026-03-29 03:30:00 CEST"});
  }
  SECTION("hourly on the hour: 02:00 and 03:00 are one run, under either policy") {
    for (const auto policy : {defaults, skip_gap})
      CHECK(slots("0 * * * *", "Europe/Berlin", policy, from, to) ==
            strings{"2026-03-29 01:00:00 CET", "2026-03-29 03:00:00 CEST"});
  }
  SECTION("sub-hourly: three skipped slots make one run") {
    CHECK(slots("10/20 * * * *", "Europe/Berlin", defaults, from, to) ==
          strings{"2026-03-29 01:10:00 CET", "2026-03-29 01:30:00 CET", "2026-03-29 01:50:00 CET",
                  "2026-03-29 03:00:00 CEST", "2026-03-29 03:10:00 CEST", "2026-03-29 03:30:00 CEST",
                  "2026-03-29 03:50:00 CEST"});
    CHECK(slots("10/20 * * * *", "Europe/Berlin", skip_gap, from, to) ==
          strings{"2026-03-29 01:10:00 CET", "2026-03-29 01:30:00 CET", "2026-03-29 01:50:00 CET",
                  "2026-03-29 03:10:00 CEST", "2026-03-29 03:30:00 CEST", "2026-03-29 03:50:00 CEST"});
  }
  SECTION("daily") {
    CHECK(slots("30 2 * * *", "Europe/Berlin", defaults, "2026-03-28 00:00:00", "2026-03-31 00:00:00") ==
          strings{"2026-03-28 02:30:00 CET", "2026-03-29 03:00:00 CEST", "2026-03-30 02:30:00 CEST"});
    CHECK(slots("30 2 * * *", "Europe/Berlin", skip_gap, "2026-03-28 00:00:00", "2026-03-31 00:00:00") ==
          strings{"2026-03-28 02:30:00 CET", "2026-03-30 02:30:00 CEST"});
  }
}

TEST_CASE("Berlin fall back: a slot in the repeated hour runs at its first occurrence, or at both") {
  SECTION("hourly") {
    const char* from = "2026-10-24 23:00:00";
    const char* to = "2026-10-25 03:00:00";
    CHECK(slots("30 * * * *", "Europe/Berlin", defaults, from, to) ==
          strings{"2026-10-25 01:30:00 CEST", "2026-10-25 02:30:00 CEST", "2026-10-25 03:30:00 CET"});
    CHECK(slots("30 * * * *", "Europe/Berlin", both_repeats, from, to) ==
          strings{"2026-10-25 01:30:00 CEST", "2026-10-25 02:30:00 CEST", "2026-10-25 02:30:00 CET",
                  "2026-10-25 03:30:00 CET"});
  }
  SECTION("sub-hourly: first_only pauses while the hour replays") {
    const char* from = "2026-10-25 00:00:00";
    const char* to = "2026-10-25 02:01:00";
    CHECK(slots("*/20 * * * *", "Europe/Berlin", defaults, from, to) ==
          strings{"2026-10-25 02:00:00 CEST", "2026-10-25 02:20:00 CEST", "2026-10-25 02:40:00 CEST",
                  "2026-10-25 03:00:00 CET"});
    CHECK(slots("*/20 * * * *", "Europe/Berlin", both_repeats, from, to) ==
          strings{"2026-10-25 02:00:00 CEST", "2026-10-25 02:20:00 CEST", "2026-10-25 02:40:00 CEST",
                  "2026-10-25 02:00:00 CET", "2026-10-25 02:20:00 CET", "2026-10-25 02:40:00 CET",
                  "2026-10-25 03:00:00 CET"});
  }
  SECTION("daily") {
    const char* from = "2026-10-24 00:00:00";
    const char* to = "2026-10-27 00:00:00";
    CHECK(slots("30 2 * * *", "Europe/Berlin", defaults, from, to) ==
          strings{"2026-10-24 02:30:00 CEST", "2026-10-25 02:30:00 CEST", "2026-10-26 02:30:00 CET"});
    CHECK(slots("30 2 * * *", "Europe/Berlin", both_repeats, from, to) ==
          strings{"2026-10-24 02:30:00 CEST", "2026-10-25 02:30:00 CEST", "2026-10-25 02:30:00 CET",
                  "2026-10-26 02:30:00 CET"});
  }
}

TEST_CASE("New York spring forward: a slot in the skipped hour runs at 03:00 EDT, or not at all when skipping") {
  SECTION("hourly") {
    const char* from = "2026-03-08 05:00:00";
    const char* to = "2026-03-08 08:00:00";
    CHECK(slots("30 * * * *", "America/New_York", defaults, from, to) ==
          strings{"2026-03-08 00:30:00 EST", "2026-03-08 01:30:00 EST", "2026-03-08 03:00:00 EDT",
                  "2026-03-08 03:30:00 EDT"});
    CHECK(slots("30 * * * *", "America/New_York", skip_gap, from, to) ==
          strings{"2026-03-08 00:30:00 EST", "2026-03-08 01:30:00 EST", "2026-03-08 03:30:00 EDT"});
  }
  SECTION("sub-hourly") {
    const char* from = "2026-03-08 06:00:00";
    const char* to = "2026-03-08 07:40:00";
    CHECK(slots("10/20 * * * *", "America/New_York", defaults, from, to) ==
          strings{"2026-03-08 01:10:00 EST", "2026-03-08 01:30:00 EST", "2026-03-08 01:50:00 EST",
                  "2026-03-08 03:00:00 EDT", "2026-03-08 03:10:00 EDT", "2026-03-08 03:30:00 EDT"});
    CHECK(slots("10/20 * * * *", "America/New_York", skip_gap, from, to) ==
          strings{"2026-03-08 01:10:00 EST", "2026-03-08 01:30:00 EST", "2026-03-08 01:50:00 EST",
                  "2026-03-08 03:10:00 EDT", "2026-03-08 03:30:00 EDT"});
  }
  SECTION("daily") {
    const char* from = "2026-03-07 00:00:00";
    const char* to = "2026-03-10 00:00:00";
    CHECK(slots("30 2 * * *", "America/New_York", defaults, from, to) ==
          strings{"2026-03-07 02:30:00 EST", "2026-03-08 03:00:00 EDT", "2026-03-09 02:30:00 EDT"});
    CHECK(slots("30 2 * * *", "America/New_York", skip_gap, from, to) ==
          strings{"2026-03-07 02:30:00 EST", "2026-03-09 02:30:00 EDT"});
  }
}

TEST_CASE("New York fall back: a slot in the repeated hour runs at its first occurrence, or at both") {
  SECTION("hourly") {
    const char* from = "2026-11-01 04:00:00";
    const char* to = "2026-11-01 08:00:00";
    CHECK(slots("30 * * * *", "America/New_York", defaults, from, to) ==
          strings{"2026-11-01 00:30:00 EDT", "2026-11-01 01:30:00 EDT", "2026-11-01 02:30:00 EST"});
    CHECK(slots("30 * * * *", "America/New_York", both_repeats, from, to) ==
          strings{"2026-11-01 00:30:00 EDT", "2026-11-01 01:30:00 EDT", "2026-11-01 01:30:00 EST",
                  "2026-11-01 02:30:00 EST"});
  }
  SECTION("sub-hourly") {
    const char* from = "2026-11-01 05:00:00";
    const char* to = "2026-11-01 07:01:00";
    CHECK(slots("*/20 * * * *", "America/New_York", defaults, from, to) ==
          strings{"2026-11-01 01:00:00 EDT", "2026-11-01 01:20:00 EDT", "2026-11-01 01:40:00 EDT",
                  "2026-11-01 02:00:00 EST"});
    CHECK(slots("*/20 * * * *", "America/New_York", both_repeats, from, to) ==
          strings{"2026-11-01 01:00:00 EDT", "2026-11-01 01:20:00 EDT", "2026-11-01 01:40:00 EDT",
                  "2026-11-01 01:00:00 EST", "2026-11-01 01:20:00 EST", "2026-11-01 01:40:00 EST",
                  "2026-11-01 02:00:00 EST"});
  }
  SECTION("daily") {
    const char* from = "2026-10-31 00:00:00";
    const char* to = "2026-11-03 00:00:00";
    CHECK(slots("30 1 * * *", "America/New_York", defaults, from, to) ==
          strings{"2026-10-31 01:30:00 EDT", "2026-11-01 01:30:00 EDT", "2026-11-02 01:30:00 EST"});
    CHECK(slots("30 1 * * *", "America/New_York", both_repeats, from, to) ==
          strings{"2026-10-31 01:30:00 EDT", "2026-11-01 01:30:00 EDT", "2026-11-01 01:30:00 EST",
                  "2026-11-02 01:30:00 EST"});
  }
}

TEST_CASE("Lord Howe spring forward skips only half an hour: slots in it run at 02:30, or not at all") {
  SECTION("hourly") {
    const char* from = "2026-10-03 14:00:00";
    const char* to = "2026-10-03 17:00:00";
    CHECK(slots("15 * * * *", "Australia/Lord_Howe", defaults, from, to) ==
          strings{"2026-10-04 01:15:00 +1030", "2026-10-04 02:30:00 +11", "2026-10-04 03:15:00 +11"});
    CHECK(slots("15 * * * *", "Australia/Lord_Howe", skip_gap, from, to) ==
          strings{"2026-10-04 01:15:00 +1030", "2026-10-04 03:15:00 +11"});
  }
  SECTION("sub-hourly") {
    const char* from = "2026-10-03 15:00:00";
    const char* to = "2026-10-03 16:00:00";
    CHECK(slots("*/20 * * * *", "Australia/Lord_Howe", defaults, from, to) ==
          strings{"2026-10-04 01:40:00 +1030", "2026-10-04 02:30:00 +11", "2026-10-04 02:40:00 +11"});
    CHECK(slots("*/20 * * * *", "Australia/Lord_Howe", skip_gap, from, to) ==
          strings{"2026-10-04 01:40:00 +1030", "2026-10-04 02:40:00 +11"});
  }
  SECTION("every 30 seconds") {
    CHECK(slots("*/30 * * * * *", "Australia/Lord_Howe", defaults, "2026-10-03 15:29:30", "2026-10-03 15:31:00") ==
          strings{"2026-10-04 01:59:30 +1030", "2026-10-04 02:30:00 +11", "2026-10-04 02:30:30 +11"});
  }
  SECTION("daily") {
    const char* from = "2026-10-02 00:00:00";
    const char* to = "2026-10-05 00:00:00";
    CHECK(slots("15 2 * * *", "Australia/Lord_Howe", defaults, from, to) ==
          strings{"2026-10-03 02:15:00 +1030", "2026-10-04 02:30:00 +11", "2026-10-05 02:15:00 +11"});
    CHECK(slots("15 2 * * *", "Australia/Lord_Howe", skip_gap, from, to) ==
          strings{"2026-10-03 02:15:00 +1030", "2026-10-05 02:15:00 +11"});
  }
}

TEST_CASE("Lord Howe fall back repeats only half an hour: slots in it run once, or at both") {
  SECTION("hourly") {
    const char* from = "2026-04-04 13:00:00";
    const char* to = "2026-04-04 16:30:00";
    CHECK(slots("45 * * * *", "Australia/Lord_Howe", defaults, from, to) ==
          strings{"2026-04-05 00:45:00 +11", "2026-04-05 01:45:00 +11", "2026-04-05 02:45:00 +1030"});
    CHECK(slots("45 * * * *", "Australia/Lord_Howe", both_repeats, from, to) ==
          strings{"2026-04-05 00:45:00 +11", "2026-04-05 01:45:00 +11", "2026-04-05 01:45:00 +1030",
                  "2026-04-05 02:45:00 +1030"});
  }
  SECTION("sub-hourly: only the slots in the repeated half hour repeat") {
    const char* from = "2026-04-04 14:00:00";
    const char* to = "2026-04-04 15:31:00";
    CHECK(slots("*/20 * * * *", "Australia/Lord_Howe", defaults, from, to) ==
          strings{"2026-04-05 01:00:00 +11", "2026-04-05 01:20:00 +11", "2026-04-05 01:40:00 +11",
                  "2026-04-05 02:00:00 +1030"});
    CHECK(slots("*/20 * * * *", "Australia/Lord_Howe", both_repeats, from, to) ==
          strings{"2026-04-05 01:00:00 +11", "2026-04-05 01:20:00 +11", "2026-04-05 01:40:00 +11",
                  "2026-04-05 01:40:00 +1030", "2026-04-05 02:00:00 +1030"});
  }
  SECTION("daily") {
    const char* from = "2026-04-03 00:00:00";
    const char* to = "2026-04-06 00:00:00";
    CHECK(slots("45 1 * * *", "Australia/Lord_Howe", defaults, from, to) ==
          strings{"2026-04-04 01:45:00 +11", "2026-04-05 01:45:00 +11", "2026-04-06 01:45:00 +1030"});
    CHECK(slots("45 1 * * *", "Australia/Lord_Howe", both_repeats, from, to) ==
          strings{"2026-04-04 01:45:00 +11", "2026-04-05 01:45:00 +11", "2026-04-05 01:45:00 +1030",
                  "2026-04-06 01:45:00 +1030"});
  }
}

TEST_CASE("latest agrees with next across DST transitions") {
  const lease::cron run_after("30 2 * * *", "Europe/Berlin");
  const lease::cron skipping("30 2 * * *", "Europe/Berlin", skip_gap);
  const lease::cron both("30 2 * * *", "Europe/Berlin", both_repeats);
  // 03:10 CEST on the spring-forward day.
  CHECK(run_after.latest(utc("2026-03-29 01:10:00")) == utc("2026-03-29 01:00:00"));
  CHECK(skipping.latest(utc("2026-03-29 01:10:00")) == utc("2026-03-28 01:30:00"));
  // 02:45 CET on the fall-back day, after both 02:30s.
  CHECK(run_after.latest(utc("2026-10-25 01:45:00")) == utc("2026-10-25 00:30:00"));
  CHECK(both.latest(utc("2026-10-25 01:45:00")) == utc("2026-10-25 01:30:00"));
}

TEST_CASE("From less than a second before a gap's end, next finds the slot at its end") {
  const lease::cron daily("30 2 * * *", "Europe/Berlin");  // 2026-03-29: 03:00 CEST = 01:00Z
  for (const char* t : {"2026-03-29 00:59:59.000", "2026-03-29 00:59:59.001", "2026-03-29 00:59:59.999"})
    CHECK(daily.next(utc(t)) == utc("2026-03-29 01:00:00"));
  CHECK(daily.next(daily.latest(utc("2026-03-29 01:00:00")) - lease::duration{1}) == utc("2026-03-29 01:00:00"));
  // A day skipped whole: Kwajalein went from -12 to +12 on 1993-08-20.
  const lease::cron evening("59 59 23 * * *", "Pacific/Kwajalein");
  CHECK(evening.next(utc("1993-08-21 11:59:59.999")) == utc("1993-08-21 12:00:00"));
}

TEST_CASE("A rare schedule in a zone is found across many DST transitions, in both directions") {
  const lease::cron leap_day("0 0 29 2 *", "Europe/Berlin");
  CHECK(leap_day.next(utc("2026-03-01 00:00:00")) == utc("2028-02-28 23:00:00"));
  CHECK(leap_day.latest(utc("2031-06-01 00:00:00")) == utc("2028-02-28 23:00:00"));

  // A fifth Sunday of October is Berlin's fall-back day; the next one is 31 October 2027.
  const lease::cron once("30 2 * 10 sun#5", "Europe/Berlin");
  const lease::cron twice("30 2 * 10 sun#5", "Europe/Berlin", both_repeats);
  CHECK(once.next(utc("2026-03-01 00:00:00")) == utc("2027-10-31 00:30:00"));
  CHECK(once.next(utc("2027-10-31 00:30:00")) > utc("2028-01-01 00:00:00"));
  CHECK(twice.next(utc("2027-10-31 00:30:00")) == utc("2027-10-31 01:30:00"));
  CHECK(once.latest(utc("2028-06-01 00:00:00")) == utc("2027-10-31 00:30:00"));
  CHECK(twice.latest(utc("2028-06-01 00:00:00")) == utc("2027-10-31 01:30:00"));
  // 29 October 2028 is one too; looking back from two months later still
  // sees that 02:30 CET repeats 02:30 CEST.
  CHECK(once.latest(utc("2029-01-01 00:00:00")) == utc("2028-10-29 00:30:00"));
  CHECK(twice.latest(utc("2029-01-01 00:00:00")) == utc("2028-10-29 01:30:00"));
}
