// A job paused in the store (PauseStore, doc/protocol.md "Pause and resume"),
// on fake time: the pause holds on every instance at once and across a
// restart, each instance says `paused` for each slot it did not start, a run
// in progress goes on, and after a resume the next slot runs exactly once.
#include <catch2/catch.hpp>

#include "harness.hpp"

using namespace test;
using lease::event_kind;
using lease::run_status;

namespace {

int started_at(cluster<>& c, time_point slot) {
  int n = 0;
  for (auto& nd : c.nodes)
    for (const auto& ctx : nd->started) n += ctx.slot == slot ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("a job paused in the store starts on no instance, each says paused for each slot, after a resume the next slot runs once") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-1", 1));
  auto& b = c.add(spec_options("api-2", 2));
  for (auto& n : c.nodes) n->s->start();
  REQUIRE(c.store.inner().pause("report"));  // an operator, from outside any instance
  c.run_until(at(150s));
  for (auto* n : {&a, &b}) {
    CHECK(n->started.empty());
    CHECK(n->count(event_kind::won) == 0);
    REQUIRE(n->count(event_kind::paused) == 2);  // one per slot: 60 s and 120 s
    CHECK(n->has(event_kind::paused, at(60s)));
    CHECK(n->has(event_kind::paused, at(120s)));
    const std::string why = n->of(event_kind::paused)[0].message;
    CHECK(why.find("job report is paused in the store") != std::string::npos);
    CHECK(why.find("not started") != std::string::npos);
    CHECK(why.find("after a resume") != std::string::npos);
  }
  CHECK_FALSE(c.record(at(60s)).has_value());
  CHECK_FALSE(c.record(at(120s)).has_value());

  REQUIRE(c.store.inner().resume("report"));
  c.run_until(at(181s));
  CHECK(started_at(c, at(180s)) == 1);  // exactly once, on one of them
  CHECK(started_at(c, at(60s)) + started_at(c, at(120s)) == 0);  // slots due while paused never run
  CHECK(a.count(event_kind::paused) + b.count(event_kind::paused) == 4);
  c.finish_handlers(a);
  c.finish_handlers(b);
  CHECK(c.record(at(180s))->status == run_status::success);
}

TEST_CASE("a pause is durable: an instance started after it, with catch-up, still starts nothing") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-1", 1));
  a.s->start();
  c.run_until(at(61s));
  REQUIRE(started_at(c, at(60s)) == 1);
  c.finish_handlers(a);
  REQUIRE(c.store.inner().pause("report"));
  a.down = true;  // the process dies while the job is paused…
  c.clock.set(at(150s));
  auto o = spec_options("api-1", 7);
  o.catch_up = 60s;
  auto& again = c.add(o);  // …and a new process comes up: catch-up claims 120 s
  again.s->start();
  c.run_until(at(190s));
  CHECK(again.started.empty());
  CHECK(again.has(event_kind::paused, at(120s)));  // the catch-up claim was answered paused
  CHECK(again.has(event_kind::paused, at(180s)));
  CHECK(again.count(event_kind::catch_up) == 0);
  CHECK(c.store.inner().paused("report"));
}

TEST_CASE("a run in progress when its job is paused goes on and its result is recorded") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-1", 1));
  auto& b = c.add(spec_options("api-2", 2));
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(61s));
  node<>& runner = a.started.empty() ? b : a;
  REQUIRE(runner.started.size() == 1);
  REQUIRE(c.store.inner().pause("report"));
  c.run_until(at(100s));  // heartbeats go on: nobody takes it over, nothing is lost
  CHECK(c.record(at(60s))->attempt == 1);
  CHECK(c.record(at(60s))->lease_end > at(100s));
  CHECK(runner.count(event_kind::lost) == 0);
  c.finish_handlers(runner);
  CHECK(c.record(at(60s))->status == run_status::success);
  CHECK(runner.count(event_kind::success) == 1);
}

TEST_CASE("a dead runner's run is not taken over while its job is paused, after a resume a backup takes it over") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("runner", 1), "report", 300s);
  auto& b = c.add(spec_options("backup", 2), "report", 300s);
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(301s));
  REQUIRE(a.started.size() == 1);
  REQUIRE(b.count(event_kind::backup) == 1);
  a.down = true;  // the runner dies at once; its lease ends at 330 s
  REQUIRE(c.store.inner().pause("report"));
  c.run_until(at(350s));
  CHECK(c.record(at(300s))->attempt == 1);  // left as it is
  CHECK(c.record(at(300s))->status == run_status::running);
  CHECK(b.count(event_kind::takeover) == 0);
  CHECK(b.count(event_kind::paused) == 1);  // said once, not at every check
  CHECK(b.of(event_kind::paused)[0].message.find("not taken over until a resume") != std::string::npos);
  c.run_until(at(355s));
  CHECK(b.count(event_kind::paused) == 1);
  REQUIRE(c.store.inner().resume("report"));
  c.run_until(at(355s) + 2 * 5s);  // the backup's next check (within 2 × heartbeat)
  CHECK(b.count(event_kind::takeover) == 1);
  CHECK(c.record(at(300s))->attempt == 2);
  CHECK(c.record(at(300s))->runner == "backup");
}

// scheduler::pause / resume: an operator's pause through one instance's API
// holds on every instance; a resume asked to catch up runs the latest slot
// missed while paused, once, on one instance — the default runs none.

TEST_CASE("pause through one instance's API holds on every instance, resume without catch-up runs no missed slot") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-1", 1));
  auto& b = c.add(spec_options("api-2", 2));
  for (auto& n : c.nodes) n->s->start();
  CHECK(a.s->pause("report"));
  CHECK_FALSE(b.s->pause("report"));  // already paused: nothing changed
  CHECK(c.store.inner().paused("report"));
  c.run_until(at(150s));
  CHECK(a.started.empty());
  CHECK(b.started.empty());
  CHECK(b.has(event_kind::paused, at(120s)));
  CHECK(b.s->resume("report"));
  CHECK_FALSE(a.s->resume("report"));  // not paused any more
  c.run_until(at(179s));
  CHECK(a.started.empty());  // 60 s and 120 s stay not run: the default
  CHECK(b.started.empty());
  CHECK(a.count(event_kind::catch_up) + b.count(event_kind::catch_up) == 0);
  c.run_until(at(181s));
  CHECK(started_at(c, at(180s)) == 1);
}

TEST_CASE("resume with missed_slots::catch_up_latest runs the latest slot missed while paused, once, now") {
  cluster c{at(1s)};
  auto o1 = spec_options("api-1", 1);
  auto o2 = spec_options("api-2", 2);
  o1.catch_up = o2.catch_up = 45s;
  auto& a = c.add(o1);
  auto& b = c.add(o2);
  for (auto& n : c.nodes) n->s->start();
  REQUIRE(c.store.inner().pause("report"));
  c.run_until(at(150s));  // 60 s and 120 s answered paused on both
  REQUIRE(a.has(event_kind::paused, at(120s)));
  CHECK(b.s->resume("report", lease::missed_slots::catch_up_latest));
  c.run_until(at(151s));
  CHECK(started_at(c, at(120s)) == 1);  // the latest missed slot, 30 s old (< catch_up 45 s)
  CHECK(started_at(c, at(60s)) == 0);   // never a queue: only the latest
  REQUIRE(b.count(event_kind::catch_up) == 1);
  CHECK(b.of(event_kind::catch_up)[0].run.slot == at(120s));
  CHECK(c.record(at(120s))->runner == "api-2");
  CHECK_FALSE(c.record(at(120s))->manual);  // a slot of its schedule, not a trigger
  // A second resume with catch-up (another operator, the other instance)
  // changes nothing: the job is not paused, and the slot ran.
  CHECK_FALSE(a.s->resume("report", lease::missed_slots::catch_up_latest));
  c.finish_handlers(b);
  c.run_until(at(181s));
  CHECK(started_at(c, at(120s)) == 1);
  CHECK(started_at(c, at(180s)) == 1);  // the schedule goes on
}

// A resume at the very millisecond of a slot, before that slot's timer
// fired (its claim jitter): the slot is the timer's to claim, as a slot of
// the schedule. Caught up as well, this instance sent two claims of it with
// two tokens.
TEST_CASE("resume with catch-up at the millisecond of a due slot claims it once") {
  cluster c{at(1s)};
  auto o = spec_options("api-1", 1);
  o.catch_up = 45s;
  o.claim_jitter = 2s;  // the slot's timer fires up to 500 ms after the slot
  auto& a = c.add(o);
  a.s->start();
  REQUIRE(a.s->pause("report"));
  c.run_until(at(180s) - 1s);
  c.clock.set(at(180s));  // not polled since: the resume below is asked at 180 s exactly
  const auto claims = c.store.calls(faulty_store::op::claim);
  CHECK(a.s->resume("report", lease::missed_slots::catch_up_latest));
  c.run_for(5s);
  CHECK(c.store.calls(faulty_store::op::claim) == claims + 1);
  CHECK(started_at(c, at(180s)) == 1);
  CHECK(a.of(event_kind::backup).empty());
}

TEST_CASE("resume with catch-up: a latest slot older than catch_up is not run, and an event says why") {
  cluster c{at(1s)};
  auto o = spec_options("api-1", 1);
  o.catch_up = 20s;
  auto& a = c.add(o);
  a.s->start();
  REQUIRE(a.s->pause("report"));
  c.run_until(at(150s));  // the latest slot, 120 s, is 30 s old at the resume
  CHECK(a.s->resume("report", lease::missed_slots::catch_up_latest));
  c.run_until(at(151s));
  CHECK(a.started.empty());
  CHECK_FALSE(c.record(at(120s)).has_value());
  REQUIRE(a.has(event_kind::late, at(120s)));
  const std::string why = a.of(event_kind::late).back().message;
  CHECK(why.find("older than its catch_up") != std::string::npos);
  CHECK(why.find("next slot runs as usual") != std::string::npos);
}

TEST_CASE("resume with catch-up does not run again a slot that ran before the pause") {
  cluster c{at(55s)};  // slot 0 is 55 s old: start() catches nothing up
  auto o = spec_options("api-1", 1);
  o.catch_up = 50s;
  auto& a = c.add(o);
  a.s->start();
  c.run_until(at(61s));
  REQUIRE(a.started.size() == 1);  // 60 s ran…
  c.finish_handlers(a);
  REQUIRE(a.s->pause("report"));  // …then the pause, and a resume 40 s after the slot
  c.run_until(at(100s));
  CHECK(a.s->resume("report", lease::missed_slots::catch_up_latest));
  c.run_until(at(101s));
  CHECK(a.started.size() == 1);
  CHECK(c.record(at(60s))->attempt == 1);
  CHECK(a.count(event_kind::catch_up) == 0);
}

TEST_CASE("resume with catch-up needs the job on the instance asked, pause and resume are refused after stop()") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-1", 1));
  a.s->start();
  CHECK_THROWS_WITH(a.s->resume("billing", lease::missed_slots::catch_up_latest),
                    Catch::Contains("has no job named \"billing\"") && Catch::Contains("cannot catch up"));
  CHECK_FALSE(a.s->resume("billing"));  // a plain resume of any job is the store's: not paused, nothing changed
  a.s->stop(1s);
  CHECK_THROWS_WITH(a.s->pause("report"), Catch::Contains("stop() was called on this instance"));
  CHECK_THROWS_WITH(a.s->resume("report"), Catch::Contains("stop() was called on this instance"));
}
