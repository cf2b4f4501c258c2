// Registration (RegistryStore; doc/protocol.md §20), on fake time: an
// instance registers all its jobs — instance id, schedule as text, zone — in
// one register_jobs call at start(), again after an add() at run time, and
// every options.register_every; a removed job is no longer registered and can
// then be purged once unseen for long enough, while a job still registered
// is refused. Idle, registration is the only store traffic: one round trip
// per instance per register_every.
#include <catch2/catch.hpp>

#include "counted_cluster.hpp"
#include "lease/schedule/cron.hpp"

using namespace test;
using lease::event_kind;

namespace {

const lease::job_registration* of(const std::vector<lease::job_registration>& regs, const std::string& instance) {
  for (const auto& r : regs)
    if (r.instance == instance) return &r;
  return nullptr;
}

/// A user's schedule that describes itself.
struct described {
  [[nodiscard]] time_point next(time_point t) const { return lease::every(1h).next(t); }
  [[nodiscard]] time_point latest(time_point t) const { return lease::every(1h).latest(t); }
  [[nodiscard]] std::string text() const { return "hourly, by the book"; }
  [[nodiscard]] std::string zone() const { return "Asia/Tokyo"; }
};
/// One that does not.
struct silent {
  [[nodiscard]] time_point next(time_point t) const { return lease::every(1h).next(t); }
  [[nodiscard]] time_point latest(time_point t) const { return lease::every(1h).latest(t); }
};

auto noop = [](lease::run_context&) {};

}  // namespace

TEST_CASE("start() registers every job in one call: instance id, the cron expression and its zone, an interval's text") {
  counted_cluster<> c{at(10s)};
  auto& a = c.add_instance(spec_options("api-1", 1));
  a.s->add("nightly", lease::cron("0 3 * * *", "Europe/Paris"), noop);
  a.s->add("spring", lease::cron("30 2 * * *", "Europe/Paris", {.gap = lease::dst_gap::skip}), noop);
  a.s->add("cleanup", lease::every(30s), noop);
  a.s->add("offset", lease::every(1h, time_point{} + 15min), noop);
  a.s->add("odd", lease::every(1500ms), noop);
  a.s->add("mine", described{}, noop);
  a.s->add("theirs", silent{}, noop);
  CHECK(c.store.count("register_jobs") == 0);  // nothing before start()
  c.start_all();
  c.run_until(at(10s));
  CHECK(c.store.count("register_jobs") == 1);  // all seven in one round trip
  auto expect = [&](const std::string& job, const std::string& schedule, const std::string& zone) {
    INFO(job);
    const auto regs = c.registrations(job);
    REQUIRE(regs.size() == 1);
    CHECK(regs[0].instance == "api-1");
    CHECK(regs[0].schedule == schedule);
    CHECK(regs[0].zone == zone);
    CHECK(regs[0].last_seen == at(10s));
  };
  expect("nightly", "0 3 * * *", "Europe/Paris");
  expect("spring", "30 2 * * * (DST: gap skip)", "Europe/Paris");  // a policy other than the default, after it
  expect("cleanup", "every 30s", "");
  expect("offset", "every 1h anchored 15m after 1970-01-01 00:00 UTC", "");
  expect("odd", "every 1500ms", "");
  expect("mine", "hourly, by the book", "Asia/Tokyo");
  expect("theirs", "custom schedule", "");
}

TEST_CASE("registration every register_every: last_seen keeps up, two instances each register, a job added at run time is registered at once") {
  counted_cluster<> c{at(1s)};
  auto o1 = spec_options("api-1", 1);
  auto o2 = spec_options("api-2", 2);
  o1.register_every = o2.register_every = 20s;
  auto& a = c.add(o1, 1h);
  c.add(o2, 1h);
  c.start_all();
  c.run_until(at(1s));
  auto regs = c.registrations();
  REQUIRE(regs.size() == 2);
  CHECK(regs[0].instance == "api-1");
  CHECK(regs[1].instance == "api-2");
  c.run_until(at(50s));  // registrations at 21 s and 41 s
  regs = c.registrations();
  CHECK(of(regs, "api-1")->last_seen == at(41s));
  CHECK(of(regs, "api-2")->last_seen == at(41s));
  CHECK(c.store.count("register_jobs") == 6);  // 3 each: at start, 21 s, 41 s

  a.s->add("late", lease::every(30s), noop);  // at run time: registered in the next loop turn, not at 61 s
  c.run_until(at(50s));
  CHECK(c.store.count("register_jobs") == 7);
  REQUIRE(c.registrations("late").size() == 1);
  CHECK(c.registrations("late")[0].last_seen == at(50s));
  CHECK(c.registrations("late")[0].schedule == "every 30s");
  CHECK(of(c.registrations(), "api-1")->last_seen == at(50s));  // the same call registered all its jobs
  c.run_until(at(61s));
  CHECK(c.store.count("register_jobs") == 9);  // the periodic ones go on as before
  CHECK(c.registrations("late")[0].last_seen == at(61s));
}

TEST_CASE("idle, registration is the only store traffic: one call per instance per register_every over 10 minutes") {
  counted_cluster<> c{at(1s)};
  c.add(spec_options("api-1", 1), 24h);  // no slot in the next 10 minutes
  c.add(spec_options("api-2", 2), 24h);
  c.start_all();
  c.run_until(at(2s));
  const int before = c.store.total();
  const int regs_before = c.store.count("register_jobs");
  CHECK(regs_before == 2);
  c.run_until(at(2s) + 10min);
  // default register_every = 60 s: 10 per instance, at 61 s, 121 s, …, 601 s
  CHECK(c.store.count("register_jobs") - regs_before == 20);
  CHECK(c.store.total() - before == 20);  // and nothing else at all
}

TEST_CASE("a failed registration is a store_error event, retried at the next interval, claims go on meanwhile") {
  counted_cluster<> c{at(1s)};
  auto o = spec_options("api-1", 1);
  o.register_every = 30s;
  auto& a = c.add(o, 60s);
  *c.store.fail_registration = true;
  c.start_all();
  c.run_until(at(62s));
  CHECK(a.started.size() == 1);  // the 60 s slot ran regardless
  CHECK(c.registrations().empty());
  REQUIRE(a.count(event_kind::store_error) >= 1);
  CHECK(a.of(event_kind::store_error)[0].message.find("registration") != std::string::npos);
  const int failed_calls = c.store.count("register_jobs");
  CHECK(failed_calls == 3);  // at 1 s, 31 s, 61 s: once per interval, no busy retry
  *c.store.fail_registration = false;
  c.run_until(at(91s));
  REQUIRE(c.registrations().size() == 1);
  CHECK(c.registrations()[0].last_seen == at(91s));
}

TEST_CASE("purge: a job removed from every instance is purged once unseen for unseen_for, a job still registered is refused") {
  counted_cluster<> c{at(1s)};
  auto& a = c.add(spec_options("api-1", 1), 24h);
  auto& b = c.add(spec_options("api-2", 2), 24h);
  a.s->add("cleanup", lease::every(24h), noop);
  b.s->add("cleanup", lease::every(24h), noop);
  c.start_all();
  c.run_until(at(120s));
  REQUIRE(c.registrations("cleanup").size() == 2);
  a.s->remove("cleanup");
  b.s->remove("cleanup");
  c.run_until(at(130s));
  const time_point gone = at(61s);  // both registered it last at 61 s (removed before the one at 121 s)
  CHECK(of(c.registrations("cleanup"), "api-1")->last_seen == gone);
  CHECK(of(c.registrations("cleanup"), "api-2")->last_seen == gone);
  CHECK(of(c.registrations("report"), "api-1")->last_seen == at(121s));

  c.run_until(gone + 9min);
  lease::purge_result r = c.store.purge("cleanup", 10min);
  CHECK(r.outcome == lease::purge_outcome::registered);  // not unseen for long enough yet
  REQUIRE(r.instance);
  c.run_until(gone + 10min + 1s);
  r = c.store.purge("cleanup", 10min);
  CHECK(r.outcome == lease::purge_outcome::purged);
  CHECK(c.registrations("cleanup").empty());

  r = c.store.purge("report", 10min);  // still on both instances, registered every minute
  CHECK(r.outcome == lease::purge_outcome::registered);
  REQUIRE(r.instance);
  CHECK(r.instance->job == "report");
  CHECK(c.clock.now() - r.instance->last_seen < 60s);
  CHECK(c.registrations("report").size() == 2);
}
