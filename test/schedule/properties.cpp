// Property tests (RapidCheck) for both schedules: the Schedule laws, and for
// cron agreement with an independent brute-force model (cron_model.hpp) on
// random expressions, zones, DST policies and times. Replay a failure with
// RC_PARAMS="seed=…".
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "cron_model.hpp"
#include "lease/schedule/cron.hpp"
#include "lease/schedule/every.hpp"
#include "random_time.hpp"
#include "support.hpp"

namespace {

using lease::time_point;
using schedule_test::cron_model;
using ms = lease::duration;
using schedule_test::random_time;

/// Mostly a time shortly around one of the zone's DST transitions: uniform
/// times would almost never test them. Half of those within 2 hours of it,
/// half up to 40 days after it (a search back to the transition).
time_point random_time_near_transition(const date::time_zone* zone) {
  const time_point t = random_time(2000, 2037);
  if (zone == nullptr || *rc::gen::inRange(0, 4) == 0) return t;
  const auto transition = zone->get_info(date::floor<std::chrono::seconds>(t)).end;
  if (transition > date::sys_days{date::year{2038} / 1 / 1}) return t;  // none left (or none at all)
  const std::int64_t hour = 3600'000;
  return time_point{transition} + ms{*rc::gen::arbitrary<bool>() ? *rc::gen::inRange<std::int64_t>(-2 * hour, 2 * hour)
                                                                 : *rc::gen::inRange<std::int64_t>(0, 40 * 24 * hour)};
}

/// The Schedule laws (schedule/concept.hpp, L1-L3) at one time t.
template <lease::Schedule S>
void check_laws(const S& s, time_point t) {
  const time_point next = s.next(t);
  const time_point latest = s.latest(t);
  RC_LOG() << "t = " << date::format("%F %T", t) << ", latest = " << date::format("%F %T", latest)
           << ", next = " << date::format("%F %T", next) << "\n";
  RC_ASSERT(latest <= t);
  RC_ASSERT(t < next);
  RC_ASSERT(s.latest(next) == next);  // next is a slot
  RC_ASSERT(s.next(latest) == next);  // and nothing lies between latest and next
  RC_ASSERT(s.latest(next - ms{1}) == latest);
  RC_ASSERT(s.next(next) > next);  // strictly increasing
  const time_point later = t + ms{*rc::gen::inRange<std::int64_t>(0, 40LL * 86400'000)};
  RC_ASSERT(s.next(t) <= s.next(later));  // monotonic (L1)
  RC_ASSERT(s.latest(t) <= s.latest(later));
}

std::optional<lease::cron> make_cron(const cron_model& m, const char* zone = "UTC", lease::dst_policy dst = {}) {
  RC_LOG() << "expression: " << m.text << "  zone: " << zone << "  gap: " << static_cast<int>(dst.gap)
           << "  repeat: " << static_cast<int>(dst.repeat) << "\n";
  try {
    return lease::cron(m.text, zone, dst);
  } catch (const lease::cron_error& e) {
    RC_LOG() << "rejected: " << e.what() << "\n";
    RC_ASSERT(!m.ever_fires());  // only expressions that can never fire are rejected
    return std::nullopt;
  }
}

}  // namespace

TEST_CASE("Cron slots in UTC are exactly the matching seconds of the expression") {
  rc::prop("next and latest agree with a brute-force search", [] {
    const cron_model m = schedule_test::random_cron();
    const auto c = make_cron(m);
    if (!c) return;
    const time_point t = random_time(1990, 2060);
    const time_point next = c->next(t);
    RC_ASSERT(m.matches(date::local_seconds{date::floor<std::chrono::seconds>(next).time_since_epoch()}));
    RC_ASSERT(std::optional{next} == schedule_test::model_next_utc(m, t));
    RC_ASSERT(std::optional{c->latest(t)} == schedule_test::model_latest_utc(m, t));
  });
}

TEST_CASE("Cron slots in a zone follow the zone's wall clock and the DST policy") {
  rc::prop("next and latest agree with mapping each matching local time through the tz database", [] {
    const cron_model m = schedule_test::random_cron(*rc::gen::arbitrary<bool>());
    const char* zone = *rc::gen::weightedElement<const char*>(
        {{3, "Europe/Berlin"}, {3, "America/New_York"}, {3, "Australia/Lord_Howe"}, {1, "Asia/Kolkata"}});
    const lease::dst_policy dst{*rc::gen::element(lease::dst_gap::run_after, lease::dst_gap::skip),
                                *rc::gen::element(lease::dst_repeat::first_only, lease::dst_repeat::both)};
    const auto c = make_cron(m, zone, dst);
    if (!c) return;
    const date::time_zone* tz = date::locate_zone(zone);
    const time_point t = random_time_near_transition(tz);
    const time_point next = c->next(t);
    RC_ASSERT(std::optional{next} == schedule_test::model_next_zoned(m, tz, dst, t));
    // latest(t) is a model slot, and the model has none after it up to next.
    const time_point latest = c->latest(t);
    RC_ASSERT(std::optional{latest} == schedule_test::model_next_zoned(m, tz, dst, latest - ms{1}));
    RC_ASSERT(std::optional{next} == schedule_test::model_next_zoned(m, tz, dst, latest));
  });
}

TEST_CASE("Cron slots on a DST transition day are found from far before and after it") {
  rc::prop("next and latest agree with the model from up to 400 days away", [] {
    const char* zone = *rc::gen::element("Europe/Berlin", "America/New_York", "Australia/Lord_Howe");
    const date::time_zone* tz = date::locate_zone(zone);
    const auto transition = tz->get_info(date::floor<std::chrono::seconds>(random_time(2001, 2036))).end;
    const auto before = tz->to_local(transition - std::chrono::seconds{1});  // the last second before it
    const auto midnight = date::floor<date::days>(before);
    const date::year_month_day day{midnight};
    const cron_model m =
        schedule_test::random_cron_on(static_cast<int>(unsigned{day.month()}), static_cast<int>(unsigned{day.day()}),
                                      static_cast<int>(date::floor<std::chrono::hours>(before - midnight).count()));
    const lease::dst_policy dst{*rc::gen::element(lease::dst_gap::run_after, lease::dst_gap::skip),
                                *rc::gen::element(lease::dst_repeat::first_only, lease::dst_repeat::both)};
    const auto c = make_cron(m, zone, dst);
    if (!c) return;
    const std::int64_t day_ms = 86400'000;
    const std::int64_t distance = *rc::gen::inRange<std::int64_t>(0, *rc::gen::element(3, 60, 400) * day_ms);
    const time_point t = time_point{transition} + ms{*rc::gen::element(-1, 1) * distance};
    const time_point next = c->next(t);
    const time_point latest = c->latest(t);
    RC_LOG() << "t = " << date::format("%F %T", t) << "\n";
    RC_ASSERT(std::optional{next} == schedule_test::model_next_zoned(m, tz, dst, t));
    RC_ASSERT(std::optional{latest} == schedule_test::model_next_zoned(m, tz, dst, latest - ms{1}));
    RC_ASSERT(std::optional{next} == schedule_test::model_next_zoned(m, tz, dst, latest));
  });
}

TEST_CASE("Cron schedules obey the Schedule laws in every zone and policy") {
  rc::prop("latest(t) <= t < next(t), next is a slot, nothing in between, strictly increasing", [] {
    const cron_model m = schedule_test::random_cron(*rc::gen::arbitrary<bool>());
    const char* zone = *rc::gen::element("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe");
    const lease::dst_policy dst{*rc::gen::element(lease::dst_gap::run_after, lease::dst_gap::skip),
                                *rc::gen::element(lease::dst_repeat::first_only, lease::dst_repeat::both)};
    const auto c = make_cron(m, zone, dst);
    if (!c) return;
    const date::time_zone* tz = std::string_view(zone) == "UTC" ? nullptr : date::locate_zone(zone);
    check_laws(*c, random_time_near_transition(tz));
  });
}

TEST_CASE("Every schedule obeys the Schedule laws and stays on its anchored grid") {
  rc::prop("slots are anchor + k * interval, and the laws hold", [] {
    const ms interval{*rc::gen::inRange<std::int64_t>(1, 3 * 86400'000)};
    const time_point anchor = random_time(1960, 2080);
    const lease::every e(interval, anchor);
    const time_point t = random_time(1900, 2100);
    RC_LOG() << "interval " << interval.count() << " ms, anchor " << date::format("%F %T", anchor) << "\n";
    check_laws(e, t);
    RC_ASSERT((e.next(t) - anchor) % interval == ms{0});
    RC_ASSERT(e.next(t) - e.latest(t) == interval);
  });
}
