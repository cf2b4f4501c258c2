// Each feature of the cron syntax, on UTC and fixed dates (2026-03-01 is a Sunday).
#include <catch2/catch.hpp>

#include "lease/schedule/cron.hpp"
#include "support.hpp"

using lease::cron;
using schedule_test::next_utc;
using schedule_test::utc;
using strings = std::vector<std::string>;

TEST_CASE("A five-field expression runs at second 0 of each matching minute") {
  CHECK(next_utc(cron("*/20 * * * *"), "2026-03-01 00:00:00", 3) ==
        strings{"Sun 2026-03-01 00:20:00", "Sun 2026-03-01 00:40:00", "Sun 2026-03-01 01:00:00"});
}

TEST_CASE("A six-field expression reads seconds first") {
  CHECK(next_utc(cron("*/5 * * * * *"), "2026-03-01 00:00:00", 2) ==
        strings{"Sun 2026-03-01 00:00:05", "Sun 2026-03-01 00:00:10"});
  CHECK(next_utc(cron("30 15 10 * * *"), "2026-03-01 00:00:00", 2) ==
        strings{"Sun 2026-03-01 10:15:30", "Mon 2026-03-02 10:15:30"});
}

TEST_CASE("Ranges, steps and lists combine in one field") {
  CHECK(next_utc(cron("10-40/10 * * * *"), "2026-03-01 00:00:00", 5) ==
        strings{"Sun 2026-03-01 00:10:00", "Sun 2026-03-01 00:20:00", "Sun 2026-03-01 00:30:00",
                "Sun 2026-03-01 00:40:00", "Sun 2026-03-01 01:10:00"});
  CHECK(next_utc(cron("5,7-8 * * * *"), "2026-03-01 00:00:00", 4) ==
        strings{"Sun 2026-03-01 00:05:00", "Sun 2026-03-01 00:07:00", "Sun 2026-03-01 00:08:00",
                "Sun 2026-03-01 01:05:00"});
}

TEST_CASE("A value with a step runs from that value to the end of the field") {
  CHECK(next_utc(cron("50/4 * * * *"), "2026-03-01 00:00:00", 4) ==
        strings{"Sun 2026-03-01 00:50:00", "Sun 2026-03-01 00:54:00", "Sun 2026-03-01 00:58:00",
                "Sun 2026-03-01 01:50:00"});
}

TEST_CASE("Month and weekday names are accepted in any case") {
  CHECK(next_utc(cron("0 0 1 JAN,jul *"), "2026-03-01 00:00:00", 2) ==
        strings{"Wed 2026-07-01 00:00:00", "Fri 2027-01-01 00:00:00"});
  CHECK(next_utc(cron("0 12 * * Tue-THU"), "2026-03-01 00:00:00", 4) ==
        strings{"Tue 2026-03-03 12:00:00", "Wed 2026-03-04 12:00:00", "Thu 2026-03-05 12:00:00",
                "Tue 2026-03-10 12:00:00"});
}

TEST_CASE("Weekday 7 is Sunday, like 0") {
  CHECK(next_utc(cron("0 0 * * 7"), "2026-03-01 00:00:00", 2) ==
        strings{"Sun 2026-03-08 00:00:00", "Sun 2026-03-15 00:00:00"});
  CHECK(next_utc(cron("0 0 * * 5-7"), "2026-03-01 00:00:00", 3) ==
        strings{"Fri 2026-03-06 00:00:00", "Sat 2026-03-07 00:00:00", "Sun 2026-03-08 00:00:00"});
}

TEST_CASE("A range that ends before it starts wraps around") {
  CHECK(next_utc(cron("0 22-2 * * *"), "2026-03-01 00:00:00", 5) ==
        strings{"Sun 2026-03-01 01:00:00", "Sun 2026-03-01 02:00:00", "Sun 2026-03-01 22:00:00",
                "Sun 2026-03-01 23:00:00", "Mon 2026-03-02 00:00:00"});
  CHECK(next_utc(cron("0 0 * * fri-mon"), "2026-03-01 00:00:00", 5) ==
        strings{"Mon 2026-03-02 00:00:00", "Fri 2026-03-06 00:00:00", "Sat 2026-03-07 00:00:00",
                "Sun 2026-03-08 00:00:00", "Mon 2026-03-09 00:00:00"});
  CHECK(next_utc(cron("0 0 1 nov-feb *"), "2026-03-01 00:00:00", 5) ==
        strings{"Sun 2026-11-01 00:00:00", "Tue 2026-12-01 00:00:00", "Fri 2027-01-01 00:00:00",
                "Mon 2027-02-01 00:00:00", "Mon 2027-11-01 00:00:00"});
}

TEST_CASE("A step over a wrapped range counts across the wrap") {
  CHECK(next_utc(cron("0 22-4/2 * * *"), "2026-03-01 00:00:00", 4) ==
        strings{"Sun 2026-03-01 02:00:00", "Sun 2026-03-01 04:00:00", "Sun 2026-03-01 22:00:00",
                "Mon 2026-03-02 00:00:00"});
  // fri, sun, tue: Sunday is counted once even though 0 and 7 both name it.
  CHECK(next_utc(cron("0 0 * * fri-tue/2"), "2026-03-01 00:00:00", 3) ==
        strings{"Tue 2026-03-03 00:00:00", "Fri 2026-03-06 00:00:00", "Sun 2026-03-08 00:00:00"});
}

TEST_CASE("A question mark in a day field means any day") {
  CHECK(next_utc(cron("0 0 ? * mon"), "2026-03-01 00:00:00", 2) ==
        strings{"Mon 2026-03-02 00:00:00", "Mon 2026-03-09 00:00:00"});
  CHECK(next_utc(cron("0 0 15 * ?"), "2026-03-01 00:00:00", 2) ==
        strings{"Sun 2026-03-15 00:00:00", "Wed 2026-04-15 00:00:00"});
}

TEST_CASE("L is the last day of the month and L-n is n days before it") {
  CHECK(next_utc(cron("0 0 L * *"), "2026-01-15 00:00:00", 4) ==
        strings{"Sat 2026-01-31 00:00:00", "Sat 2026-02-28 00:00:00", "Tue 2026-03-31 00:00:00",
                "Thu 2026-04-30 00:00:00"});
  CHECK(next_utc(cron("0 0 L-2 * *"), "2026-01-15 00:00:00", 3) ==
        strings{"Thu 2026-01-29 00:00:00", "Thu 2026-02-26 00:00:00", "Sun 2026-03-29 00:00:00"});
  CHECK(next_utc(cron("0 0 L 2 *"), "2027-03-01 00:00:00", 1) == strings{"Tue 2028-02-29 00:00:00"});
}

TEST_CASE("nW runs on the weekday nearest to day n without leaving the month") {
  // 15 March 2026 is a Sunday: Monday the 16th. 15 April is a Wednesday: itself.
  CHECK(next_utc(cron("0 0 15W * *"), "2026-03-01 00:00:00", 2) ==
        strings{"Mon 2026-03-16 00:00:00", "Wed 2026-04-15 00:00:00"});
  // 1 August 2026 is a Saturday: not Friday 31 July, but Monday the 3rd.
  CHECK(next_utc(cron("0 0 1W * *"), "2026-07-15 00:00:00", 2) ==
        strings{"Mon 2026-08-03 00:00:00", "Tue 2026-09-01 00:00:00"});
  // 31 May 2026 is a Sunday: Friday the 29th. June has no 31st.
  CHECK(next_utc(cron("0 0 31W * *"), "2026-05-01 00:00:00", 2) ==
        strings{"Fri 2026-05-29 00:00:00", "Fri 2026-07-31 00:00:00"});
}

TEST_CASE("LW is the last weekday of the month") {
  CHECK(next_utc(cron("0 0 LW * *"), "2026-01-01 00:00:00", 5) ==
        strings{"Fri 2026-01-30 00:00:00", "Fri 2026-02-27 00:00:00", "Tue 2026-03-31 00:00:00",
                "Thu 2026-04-30 00:00:00", "Fri 2026-05-29 00:00:00"});
}

TEST_CASE("n#k is the k-th such weekday of the month") {
  CHECK(next_utc(cron("0 0 * * fri#3"), "2026-03-01 00:00:00", 2) ==
        strings{"Fri 2026-03-20 00:00:00", "Fri 2026-04-17 00:00:00"});
  // A fifth Monday only in months that have one.
  CHECK(next_utc(cron("0 0 * * 1#5"), "2026-03-01 00:00:00", 2) ==
        strings{"Mon 2026-03-30 00:00:00", "Mon 2026-06-29 00:00:00"});
}

TEST_CASE("nL is the last such weekday of the month") {
  CHECK(next_utc(cron("0 0 * * 5L"), "2026-03-01 00:00:00", 2) ==
        strings{"Fri 2026-03-27 00:00:00", "Fri 2026-04-24 00:00:00"});
}

TEST_CASE("When both day fields are restricted a day matching either one runs") {
  CHECK(next_utc(cron("0 0 10 * fri"), "2026-03-01 00:00:00", 4) ==
        strings{"Fri 2026-03-06 00:00:00", "Tue 2026-03-10 00:00:00", "Fri 2026-03-13 00:00:00",
                "Fri 2026-03-20 00:00:00"});
}

TEST_CASE("A day field starting with a star leaves the choice to both fields together, as in Vixie cron") {
  CHECK(next_utc(cron("0 0 * * fri"), "2026-03-01 00:00:00", 2) ==
        strings{"Fri 2026-03-06 00:00:00", "Fri 2026-03-13 00:00:00"});
  // */2 restricts (odd days) but starts with *, so it combines with AND.
  CHECK(next_utc(cron("0 0 */2 * fri"), "2026-03-01 00:00:00", 3) ==
        strings{"Fri 2026-03-13 00:00:00", "Fri 2026-03-27 00:00:00", "Fri 2026-04-03 00:00:00"});
}

TEST_CASE("Macros expand to their usual expressions") {
  const auto same = [](const char* macro, const char* expansion) {
    INFO(macro << " = " << expansion);
    CHECK(next_utc(cron(macro), "2026-03-01 00:00:00", 3) == next_utc(cron(expansion), "2026-03-01 00:00:00", 3));
  };
  same("@yearly", "0 0 1 1 *");
  same("@annually", "0 0 1 1 *");
  same("@monthly", "0 0 1 * *");
  same("@weekly", "0 0 * * 0");
  same("@daily", "0 0 * * *");
  same("@midnight", "0 0 * * *");
  same("@hourly", "0 * * * *");
  CHECK(next_utc(cron("@WEEKLY"), "2026-03-01 00:00:00", 1) == strings{"Sun 2026-03-08 00:00:00"});
  CHECK(next_utc(cron("@yearly"), "2026-03-01 00:00:00", 1) == strings{"Fri 2027-01-01 00:00:00"});
}

TEST_CASE("February 29 is found in leap years only") {
  CHECK(next_utc(cron("0 0 29 2 *"), "2026-03-01 00:00:00", 2) ==
        strings{"Tue 2028-02-29 00:00:00", "Sun 2032-02-29 00:00:00"});
  CHECK(cron("0 0 29 2 *").latest(utc("2027-06-01 00:00:00")) == utc("2024-02-29 00:00:00"));
}

TEST_CASE("Blanks between fields may be several spaces or tabs") {
  CHECK(next_utc(cron(" 0\t12  * *\t* "), "2026-03-01 00:00:00", 1) == strings{"Sun 2026-03-01 12:00:00"});
}

TEST_CASE("next is strictly after the given time and latest is at or before it, to the millisecond") {
  const cron hourly("0 * * * *");
  const auto slot = utc("2026-03-01 01:00:00");
  const lease::duration ms{1};
  CHECK(hourly.next(slot) == utc("2026-03-01 02:00:00"));
  CHECK(hourly.next(slot - ms) == slot);
  CHECK(hourly.latest(slot) == slot);
  CHECK(hourly.latest(slot + lease::duration{999}) == slot);
  CHECK(hourly.latest(slot - ms) == utc("2026-03-01 00:00:00"));
}

TEST_CASE("latest looks back across months to the last matching day") {
  CHECK(cron("0 0 L * *").latest(utc("2026-03-15 12:00:00")) == utc("2026-02-28 00:00:00"));
  CHECK(cron("0 9 * * mon-fri").latest(utc("2026-03-01 12:00:00")) == utc("2026-02-27 09:00:00"));
}

TEST_CASE("Beyond the searched years there is no next or latest slot") {
  CHECK(cron("0 0 1 1 *").next(utc("9999-06-01 00:00:00")) == lease::time_point::max());
  CHECK(cron("0 0 1 1 *").latest(utc("0001-01-01 12:00:00")) == lease::time_point::min());
  CHECK(cron("0 0 1 1 *").next(lease::time_point::max() - lease::duration{1}) == lease::time_point::max());
  CHECK(cron("0 0 1 1 *").latest(lease::time_point::max()) == utc("9999-01-01 00:00:00"));
  // The last reported slot is 9999-12-31 00:00, in both directions.
  const cron hourly("0 * * * *");
  CHECK(hourly.next(utc("9999-12-30 23:30:00")) == utc("9999-12-31 00:00:00"));
  CHECK(hourly.next(utc("9999-12-31 00:00:00")) == lease::time_point::max());
  CHECK(hourly.latest(utc("9999-12-31 05:00:00")) == utc("9999-12-31 00:00:00"));
  CHECK(hourly.next(lease::time_point::min()) == utc("0001-01-02 00:00:00"));
  CHECK(hourly.latest(utc("0001-01-02 00:00:00")) == utc("0001-01-02 00:00:00"));
  CHECK(hourly.latest(utc("0001-01-01 23:59:59")) == lease::time_point::min());
}

TEST_CASE("A cron is a copyable value that keeps its expression, zone and policy") {
  const lease::dst_policy policy{.gap = lease::dst_gap::skip, .repeat = lease::dst_repeat::both};
  const cron original("0 3 * * 1-5", "Europe/Berlin", policy);
  const cron copy = original;  // NOLINT(performance-unnecessary-copy-initialization): copying is the point
  CHECK(copy.expression() == "0 3 * * 1-5");
  CHECK(copy.zone() == "Europe/Berlin");
  CHECK(copy.dst() == policy);
  CHECK(copy.next(utc("2026-03-01 00:00:00")) == original.next(utc("2026-03-01 00:00:00")));
}
