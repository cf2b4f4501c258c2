// lease::options validation: defaults filled in, impossible settings rejected
// with a sentence naming the option, and limits that keep every sum the
// scheduler, the rules and the stores form from options from overflowing
// anywhere in the years 1970-9999. Replay a property failure with
// RC_PARAMS="seed=…".
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "lease/options.hpp"
#include "lease/run.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using lease::duration;
using lease::options;
using lease::time_point;

TEST_CASE("the default heartbeat is 5 s, or lease / 6 when that is smaller") {
  REQUIRE(lease::options{}.validated().heartbeat == 5s);
  lease::options short_lease;
  short_lease.lease = 6s;
  REQUIRE(short_lease.validated().heartbeat == 1s);
}

TEST_CASE("a heartbeat of half the lease or more is rejected with a sentence naming both") {
  lease::options o;
  o.lease = 10s;
  o.heartbeat = 5s;
  REQUIRE_THROWS_WITH(o.validated(), Contains("heartbeat (5000 ms) must be under half of lease (10000 ms)"));
  o.heartbeat = 4999ms;
  REQUIRE_NOTHROW(o.validated());
}

TEST_CASE("a zero or negative lease is rejected at construction") {
  lease::options o;
  o.lease = 0ms;
  REQUIRE_THROWS_AS(o.validated(), std::invalid_argument);
  REQUIRE_THROWS_WITH(o.validated(), Contains("lease must be positive"));
  o.lease = -1s;
  REQUIRE_THROWS_WITH(o.validated(), Contains("lease must be positive"));
}

TEST_CASE("a lease too short for any heartbeat is rejected") {
  lease::options o;
  o.lease = 5ms;  // lease / 6 rounds down to 0 ms
  REQUIRE_THROWS_WITH(o.validated(), Contains("heartbeat must be positive"));
}

TEST_CASE("max_attempts of zero and negative durations are rejected") {
  lease::options o;
  o.max_attempts = 0;
  REQUIRE_THROWS_WITH(o.validated(), Contains("max_attempts must be at least 1"));
  o = {};
  o.catch_up = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("catch_up"));
  o = {};
  o.max_late = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("max_late"));
  o = {};
  o.claim_jitter = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("jitter"));
  o = {};
  o.stop_timeout = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("stop_timeout"));
}

TEST_CASE("a duration that would overflow a time is rejected with the option's name and limit") {
  options o;
  o.lease = duration::max();  // now + lease used to wrap negative
  REQUIRE_THROWS_WITH(o.validated(),
                      Contains("lease must be at most 1 day (86400000 ms; it is 9223372036854775807 ms)"));
  o = {};
  o.heartbeat = duration::max();  // heartbeat * 2 used to wrap and pass the check
  REQUIRE_THROWS_WITH(o.validated(), Contains("heartbeat (9223372036854775807 ms) must be under half of lease"));
  o = {};
  o.max_late = duration::max();  // slot + max_late + 10 s used to wrap, making every claim late
  REQUIRE_THROWS_WITH(o.validated(), Contains("max_late must be at most 366 days"));
  o = {};
  o.catch_up = duration::max();
  REQUIRE_THROWS_WITH(o.validated(), Contains("catch_up must be at most 366 days"));
  for (duration options::*jitter : {&options::claim_jitter, &options::catch_up_jitter, &options::stop_timeout}) {
    o = {};
    o.*jitter = duration::max();
    REQUIRE_THROWS_WITH(o.validated(), Contains("must be at most 1 day"));
  }
}

TEST_CASE("each limit itself is accepted, one millisecond more is not") {
  options o;
  o.lease = options::lease_limit;
  o.max_late = o.catch_up = options::window_limit;
  o.claim_jitter = o.catch_up_jitter = o.stop_timeout = options::delay_limit;
  REQUIRE_NOTHROW(o.validated());
  REQUIRE(o.validated().heartbeat == 5s);
  o.heartbeat = options::lease_limit / 2 - 1ms;
  REQUIRE_NOTHROW(o.validated());
  for (duration options::*d : {&options::lease, &options::max_late, &options::catch_up, &options::claim_jitter,
                               &options::catch_up_jitter, &options::stop_timeout}) {
    options over = o;
    over.*d += 1ms;
    REQUIRE_THROWS_AS(over.validated(), std::invalid_argument);
  }
}

namespace {

constexpr duration day = 24h;

/// Durations where arithmetic goes wrong: near ±max, zero, negative, at and
/// around the limits, anything at all; and, to get past validation often
/// enough, anything from 0 to `limit` (weighted `usual` against 4 for the rest).
duration extreme_duration(duration limit, int usual = 12) {
  const auto ms = [](std::int64_t v) { return duration{v}; };
  return *rc::gen::weightedOneOf<duration>(
      {{2, rc::gen::element(duration::min(), duration::min() + 1ms, -1ms, 0ms, 1ms, duration::max() / 2 + 1ms,
                            duration::max() - 1ms, duration::max(), options::lease_limit, options::lease_limit + 1ms,
                            options::window_limit, options::window_limit + 1ms, options::delay_limit + 1ms)},
       {1, rc::gen::map(rc::gen::arbitrary<std::int64_t>(), ms)},
       {1, rc::gen::map(rc::gen::inRange<std::int64_t>(-1000, 2 * limit.count()), ms)},
       {usual, rc::gen::map(rc::gen::inRange<std::int64_t>(0, limit.count() + 1), ms)}});
}

/// a + b, or nothing if that overflows.
std::optional<std::int64_t> add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// t + the durations, added left to right as the code does, or nothing if
/// any step overflows.
std::optional<time_point> sum(time_point t, std::initializer_list<duration> ds) {
  std::optional<std::int64_t> r = t.time_since_epoch().count();
  for (const duration d : ds)
    if (r) r = add(*r, d.count());
  if (!r) return std::nullopt;
  return time_point{duration{*r}};
}

/// The options that break a rule, worked out independently of validated():
/// each one a reason to reject.
std::vector<std::string> broken(const options& o) {
  std::vector<std::string> out;
  const bool lease_ok = o.lease > 0ms && o.lease <= day;
  if (!lease_ok) out.push_back("lease");
  const duration hb = o.heartbeat.value_or(lease_ok ? std::min<duration>(5s, o.lease / 6) : 1ms);
  std::int64_t twice = 0;
  if (hb <= 0ms || (lease_ok && (__builtin_mul_overflow(hb.count(), 2, &twice) || twice >= o.lease.count())))
    out.push_back("heartbeat");
  if (o.max_attempts < 1) out.push_back("max_attempts");
  const auto within = [&](const char* name, duration d, duration limit) {
    if (d < 0ms || d > limit) out.push_back(name);
  };
  within("catch_up", o.catch_up, 366 * day);
  within("max_late", o.max_late, 366 * day);
  within("claim_jitter", o.claim_jitter, day);
  within("catch_up_jitter", o.catch_up_jitter, day);
  within("stop_timeout", o.stop_timeout, day);
  return out;
}

std::string show(const options& o) {
  const auto ms = [](duration d) { return std::to_string(d.count()); };
  return "lease " + ms(o.lease) + ", heartbeat " + (o.heartbeat ? ms(*o.heartbeat) : "unset") + ", max_attempts " +
         std::to_string(o.max_attempts) + ", catch_up " + ms(o.catch_up) + ", max_late " + ms(o.max_late) +
         ", claim_jitter " + ms(o.claim_jitter) + ", catch_up_jitter " + ms(o.catch_up_jitter) + ", stop_timeout " +
         ms(o.stop_timeout);
}

}  // namespace

namespace {

/// validated() on `o`: it throws naming an option that breaks a rule, or
/// there is none and every time formed from the result is in range.
void check(const options& o) {
  RC_LOG() << show(o) << "\n";
  const std::vector<std::string> reasons = broken(o);

  std::optional<options> v;
  try {
    v = o.validated();
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    RC_LOG() << message << "\n";
    const std::string prefix = "lease::options: ";
    RC_ASSERT(message.rfind(prefix, 0) == 0);
    const std::string named = message.substr(prefix.size(), message.find_first_of(" (", prefix.size()) - prefix.size());
    RC_ASSERT(std::find(reasons.begin(), reasons.end(), named) != reasons.end());
    return;
  }
  RC_ASSERT(reasons.empty());
  const duration hb = *v->heartbeat;
  const std::optional<std::int64_t> twice = add(hb.count(), hb.count());  // heartbeat * 2
  RC_ASSERT(hb > 0ms && twice.has_value() && *twice < v->lease.count());
  const std::optional<std::int64_t> retain_ms =
      add(std::max(v->max_late, v->catch_up).count(), lease::late_tolerance.count());
  RC_ASSERT(retain_ms.has_value() && *retain_ms >= 0);
  const duration retain{*retain_ms};

  const time_point first{};                                                              // 1970-01-01
  const time_point last = std::chrono::sys_days{std::chrono::year{10000} / 1 / 1} - 1ms;  // 9999-12-31 23:59:59.999
  const auto anywhere = *rc::gen::inRange(first.time_since_epoch().count(), last.time_since_epoch().count());
  for (const time_point t : {first, last, time_point{duration{anywhere}}}) {
    for (const std::optional<time_point> s : {
             sum(t, {v->lease}),                                 // lease end
             sum(t, {v->max_late, lease::late_tolerance}),       // a scheduled claim's deadline, with tolerance
             sum(t, {v->catch_up, lease::late_tolerance}),       // a catch-up claim's deadline, with tolerance
             sum(t, {retain, lease::late_tolerance}),            // until when an ended run is kept
             sum(t, {v->stop_timeout}),                          // when stop() gives up
             sum(t, {v->claim_jitter}),                          // a jittered claim
             sum(t, {v->catch_up_jitter}),                       // a jittered catch-up claim
             sum(t, {hb, hb}),                                   // a backup's next check, at most
             sum(t, {hb, hb / 2}),                               // a retry after backoff, at most
         }) {
      RC_ASSERT(s.has_value());
      RC_ASSERT(*s >= t);  // nothing goes backwards
    }
  }
}

}  // namespace

TEST_CASE("Options either are rejected naming a broken option, or no time computed from them can overflow") {
  rc::prop("validated() on extreme durations, all together and each alone; every sum at every time in 1970-9999", [] {
    options o;
    o.lease = extreme_duration(options::lease_limit);
    if (*rc::gen::arbitrary<bool>()) o.heartbeat = extreme_duration(std::clamp(o.lease / 2, 1ms, options::lease_limit));
    o.max_attempts = *rc::gen::element<std::uint32_t>(0, 1, 3, 3, 3);
    o.catch_up = extreme_duration(options::window_limit);
    o.max_late = extreme_duration(options::window_limit);
    o.claim_jitter = extreme_duration(options::delay_limit);
    o.catch_up_jitter = extreme_duration(options::delay_limit);
    o.stop_timeout = extreme_duration(options::delay_limit);
    check(o);
    // Each value alone, the others at their defaults: an extreme value is
    // then not hidden behind another option that is rejected first.
    for (duration options::*d : {&options::lease, &options::catch_up, &options::max_late, &options::claim_jitter,
                                 &options::catch_up_jitter, &options::stop_timeout}) {
      options alone;
      alone.*d = o.*d;
      check(alone);
    }
    options heartbeat_alone;
    heartbeat_alone.heartbeat = extreme_duration(heartbeat_alone.lease / 2, 1);
    check(heartbeat_alone);
  });
}

TEST_CASE("trigger_poll must be positive and at most 1 day, each refusal names it") {
  options o;
  REQUIRE(o.validated().trigger_poll == 1s);  // the default: one poll per instance per second (SQLite)
  o.trigger_poll = 0ms;  // would poll in a busy loop
  REQUIRE_THROWS_WITH(o.validated(), Contains("trigger_poll must be positive (it is 0 ms)"));
  o.trigger_poll = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("trigger_poll must be positive"));
  o.trigger_poll = options::delay_limit;
  REQUIRE_NOTHROW(o.validated());
  o.trigger_poll += 1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("trigger_poll must be at most 1 day"));
}

TEST_CASE("register_every must be at least 1 s and at most 1 day, each refusal names it") {
  options o;
  REQUIRE(o.validated().register_every == 60s);  // the default: one registration per instance per minute
  o.register_every = 999ms;  // every instance would write to the store more than once a second, idle
  REQUIRE_THROWS_WITH(o.validated(), Contains("register_every must be at least 1 s (it is 999 ms)"));
  o.register_every = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("register_every must be at least 1 s (it is -1 ms)"));
  o.register_every = 1s;
  CHECK(o.validated().register_every == 1s);
  o.register_every = options::delay_limit;
  CHECK(o.validated().register_every == options::delay_limit);
  o.register_every += 1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("register_every must be at most 1 day"));
  REQUIRE_THROWS_WITH(o.validated(), Contains("purge --unseen-for"));
}
