// lease::parse_registered (schedule/parse.hpp): a schedule read back from the
// text and zone an instance registers gives the same slots as the schedule
// itself (RapidCheck, random every and cron schedules at random times), and
// any other text reads as nothing, never as an exception.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "cron_model.hpp"
#include "lease/schedule/parse.hpp"
#include "lease/scheduler/detail/any_schedule.hpp"
#include "random_time.hpp"
#include "support.hpp"

namespace {

using lease::time_point;
using ms = lease::duration;
using schedule_test::random_time;
using schedule_test::utc;

/// An amount in one of the units every::text() writes (or an odd number of ms).
ms random_amount() {
  const std::int64_t unit = *rc::gen::element<std::int64_t>(1, 1'000, 60'000, 3'600'000);
  return ms{unit * *rc::gen::inRange<std::int64_t>(1, unit == 1 ? 100'000 : 200)};
}

/// What a scheduler registers for `s`: the text and zone any_schedule gives.
template <class S>
std::optional<lease::registered_schedule> read_back(const S& s) {
  const lease::detail::any_schedule a(s);
  RC_LOG() << "registered: \"" << a.registered() << "\" zone \"" << a.zone() << "\"\n";
  return lease::parse_registered(a.registered(), a.zone());
}

}  // namespace

TEST_CASE("An every read back from its registration has the same slots") {
  rc::prop("parse(registered text) gives the every's next() at random times", [] {
    const ms interval = random_amount();
    // Half anchored at the epoch (no anchor clause), half elsewhere, before it too.
    const time_point anchor = *rc::gen::arbitrary<bool>() ? time_point{} : random_time(1900, 2100);
    const lease::every e(interval, anchor);
    const auto back = read_back(e);
    RC_ASSERT(back.has_value());
    RC_ASSERT(std::holds_alternative<lease::every>(*back));
    RC_ASSERT(std::get<lease::every>(*back).interval() == interval);
    RC_ASSERT(std::get<lease::every>(*back).anchor() == anchor);
    for (int i = 0; i < 5; ++i) {
      const time_point t = random_time(1950, 2100);
      RC_ASSERT(lease::next_slot(*back, t) == e.next(t));
    }
  });
}

TEST_CASE("A cron read back from its registration has the same slots, in its zone") {
  rc::prop("parse(expression, zone) gives the cron's next() at random times", [] {
    const schedule_test::cron_model m = schedule_test::random_cron(*rc::gen::arbitrary<bool>());
    const char* zone = *rc::gen::element("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                                         "Asia/Kolkata");
    const lease::dst_policy dst{*rc::gen::element(lease::dst_gap::run_after, lease::dst_gap::skip),
                                *rc::gen::element(lease::dst_repeat::first_only, lease::dst_repeat::both)};
    std::optional<lease::cron> c;
    try {
      c.emplace(m.text, zone, dst);
    } catch (const lease::cron_error&) {
      // An expression that can never fire is no schedule: no instance
      // registers it, and read back it is nothing.
      RC_ASSERT(!lease::parse_registered(m.text, zone).has_value());
      return;
    }
    const auto back = read_back(*c);
    RC_ASSERT(back.has_value());
    RC_ASSERT(std::holds_alternative<lease::cron>(*back));
    RC_ASSERT(std::get<lease::cron>(*back).dst() == dst);
    RC_ASSERT(std::get<lease::cron>(*back).expression() == m.text);
    // Times near the zone's DST transitions too, where the policies differ.
    const date::time_zone* tz = std::string_view(zone) == "UTC" ? nullptr : date::locate_zone(zone);
    for (int i = 0; i < 3; ++i) {
      time_point t = random_time(2000, 2037);
      if (tz != nullptr && *rc::gen::arbitrary<bool>())
        t = time_point{tz->get_info(date::floor<std::chrono::seconds>(t)).end} -
            ms{*rc::gen::inRange<std::int64_t>(0, 3 * 3600'000)};
      RC_ASSERT(lease::next_slot(*back, t) == c->next(t));
    }
  });
}

TEST_CASE("Any text at all reads as a schedule or as nothing, never as an exception") {
  rc::prop("parse_registered does not throw", [] {
    const std::string zone = *rc::gen::element<std::string>("", "UTC", "Europe/Berlin", "Nowhere/Atlantis");
    // Mostly texts near the registered forms, so the parser's branches are reached.
    const std::string text =
        *rc::gen::element<std::string>("every ", "every 5", "", "*/5 * * * ") + *rc::gen::string<std::string>() +
        *rc::gen::element<std::string>("", "m", "ms", " anchored 5m after 1970-01-01 00:00 UTC", " *");
    RC_LOG() << "\"" << text << "\" in \"" << zone << "\"\n";
    const auto back = lease::parse_registered(text, zone);
    if (back && std::holds_alternative<lease::every>(*back)) RC_ASSERT(std::get<lease::every>(*back).text() == text);
  });
}

TEST_CASE("Texts no every or cron registers read as nothing") {
  using lease::parse_registered;
  // A user's schedule without text(), and one with its own.
  CHECK_FALSE(parse_registered("custom schedule", ""));
  CHECK_FALSE(parse_registered("custom schedule", "UTC"));
  CHECK_FALSE(parse_registered("weekdays at nine", "Europe/Paris"));
  // Not every::text()'s form: a unit too small, a leading zero, a sign, no unit, zero.
  CHECK_FALSE(parse_registered("every 60s", ""));
  CHECK_FALSE(parse_registered("every 05m", ""));
  CHECK_FALSE(parse_registered("every -5m", ""));
  CHECK_FALSE(parse_registered("every +5m", ""));
  CHECK_FALSE(parse_registered("every 5", ""));
  CHECK_FALSE(parse_registered("every 0s", ""));
  CHECK_FALSE(parse_registered("every 5m ", ""));
  CHECK_FALSE(parse_registered("every 5m anchored 0ms after 1970-01-01 00:00 UTC", ""));
  CHECK_FALSE(parse_registered("every 5m anchored 15m after 2026-01-01 00:00 UTC", ""));
  CHECK_FALSE(parse_registered("every 5m anchored 15m", ""));
  // Too long to compute with, whatever the unit.
  CHECK_FALSE(parse_registered("every 99999999999999999999h", ""));
  CHECK_FALSE(parse_registered("every 87660001h", ""));
  // An every has no zone; a cron always has one.
  CHECK_FALSE(parse_registered("every 5m", "UTC"));
  CHECK_FALSE(parse_registered("0 3 * * *", ""));
  // Not a cron, or one that never fires, or a zone this host does not know.
  CHECK_FALSE(parse_registered("0 3 * *", "UTC"));
  CHECK_FALSE(parse_registered("0 0 30 2 *", "UTC"));
  CHECK_FALSE(parse_registered("0 3 * * *", "Nowhere/Atlantis"));
  // A DST clause not as registered_dst() writes it.
  CHECK_FALSE(parse_registered("30 2 * * * (DST: skip)", "Europe/Berlin"));
  CHECK_FALSE(parse_registered("30 2 * * * (DST: repeat both, gap skip)", "Europe/Berlin"));
}

TEST_CASE("Registered texts read back as what they say") {
  const auto next = [](std::string_view text, std::string_view zone, std::string_view after) {
    const auto s = lease::parse_registered(text, zone);
    REQUIRE(s);
    return lease::next_slot(*s, utc(after));
  };
  CHECK(next("every 5m", "", "2026-03-01 12:03:10") == utc("2026-03-01 12:05:00"));
  CHECK(next("every 1500ms", "", "2026-03-01 12:00:00") == utc("2026-03-01 12:00:01.500"));
  CHECK(next("every 1h anchored 15m after 1970-01-01 00:00 UTC", "", "2026-03-01 12:20:00") ==
        utc("2026-03-01 13:15:00"));
  CHECK(next("every 1h anchored 10m before 1970-01-01 00:00 UTC", "", "2026-03-01 12:20:00") ==
        utc("2026-03-01 12:50:00"));
  CHECK(next("0 3 * * *", "Europe/Berlin", "2026-07-01 12:00:00") == utc("2026-07-02 01:00:00"));  // CEST
  CHECK(next("@daily", "UTC", "2026-07-01 12:00:00") == utc("2026-07-02 00:00:00"));
  // 02:30 is skipped in Berlin on 2026-03-29: the default runs at 03:00 CEST, "gap skip" not that day.
  CHECK(next("30 2 * * *", "Europe/Berlin", "2026-03-28 12:00:00") == utc("2026-03-29 01:00:00"));
  CHECK(next("30 2 * * * (DST: gap skip)", "Europe/Berlin", "2026-03-28 12:00:00") == utc("2026-03-30 00:30:00"));
  // 02:30 happens twice on 2026-10-25: "repeat both" runs at the second one (CET) too.
  CHECK(next("30 2 * * *", "Europe/Berlin", "2026-10-25 00:30:00") == utc("2026-10-26 01:30:00"));
  CHECK(next("30 2 * * * (DST: repeat both)", "Europe/Berlin", "2026-10-25 00:30:00") == utc("2026-10-25 01:30:00"));
  CHECK(next("30 2 * * * (DST: gap skip, repeat both)", "Europe/Berlin", "2026-03-28 12:00:00") ==
        utc("2026-03-30 00:30:00"));
  CHECK(next("*/10 * * * * *", "Asia/Kolkata", "2026-07-01 12:00:01") == utc("2026-07-01 12:00:10"));
}
