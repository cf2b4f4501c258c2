// Structured events: each field of lease::event holds what a log pipeline or
// a metrics exporter relies on, checked in real scenarios on fake time
// (fake_clock + manual_executor + memory_store, and the sim), against the
// store's own record and the simulated gaps.
#include <catch2/catch.hpp>

#include "lease/sim.hpp"
#include "scheduler/harness.hpp"

using namespace test;
using lease::event;
using lease::event_kind;

namespace {

event only(const node<>& n, event_kind k) {  // a copy: the node keeps appending
  const auto& all = n.events;
  const auto it = std::find_if(all.begin(), all.end(), [k](const event& e) { return e.kind == k; });
  REQUIRE(it != all.end());
  REQUIRE(n.count(k) == 1);
  return *it;
}

/// A runner and a backup on one job every minute (lease 30 s, heartbeat 5 s).
struct pair {
  cluster<> c{at(1s)};
  node<>& a;
  node<>& b;
  explicit pair(lease::options oa = spec_options("api-1", 1), lease::options ob = spec_options("api-2", 2))
      : a(c.add(std::move(oa))), b(c.add(std::move(ob))) {}
  void start() {
    a.s->start();
    b.s->start();
  }
};

}  // namespace

TEST_CASE("a won attempt's events name its runner and carry the claim round trip and the handler's duration") {
  pair p;
  p.start();
  p.c.run_until(at(60s) - 1ms);
  p.c.store.delay_next_claim(120ms);  // api-1's claim (polled first) takes 120 ms to reach the store
  p.c.run_until(at(60s));
  const event won = only(p.a, event_kind::won);
  CHECK(won.instance == "api-1");
  CHECK(won.runner == "api-1");
  CHECK(won.attempt == 1);
  CHECK(won.fence == p.c.record(at(60s))->fence);
  CHECK(won.claim_round_trip == 120ms);
  CHECK_FALSE(won.handler_duration);
  CHECK_FALSE(won.takeover_latency);
  CHECK_FALSE(won.skipped_slots);

  const event backup = only(p.b, event_kind::backup);
  CHECK(backup.instance == "api-2");
  CHECK(backup.runner == "api-1");  // the run's runner, not the emitting instance
  CHECK(backup.attempt == 1);
  CHECK(backup.fence == won.fence);
  CHECK(backup.claim_round_trip == 0ms);

  p.c.run_until(at(64s));
  p.c.finish_handlers(p.a);
  const event ok = only(p.a, event_kind::success);
  CHECK(ok.runner == "api-1");
  CHECK(ok.fence == won.fence);
  CHECK(ok.handler_duration == 3880ms);  // handed to the executor at 60.120 s, seen ending at 64 s
  CHECK(ok.handler_duration == ok.at - won.at);
  CHECK_FALSE(ok.claim_round_trip);
}

TEST_CASE("a failed handler's event carries how long it ran") {
  pair p;
  p.a.behaviour = ends::throws;
  p.start();
  p.c.run_until(at(71s) + 250ms);
  p.c.finish_handlers(p.a);
  const event failed = only(p.a, event_kind::failed);
  CHECK(failed.handler_duration == 11'250ms);
  CHECK(failed.runner == "api-1");
}

TEST_CASE("a takeover's latency is the time from the dead runner's lease end in the store to the takeover") {
  pair p{spec_options("runner", 1), spec_options("backup", 2)};
  p.start();
  p.c.run_until(at(75s));  // the runner's last acknowledged heartbeat
  p.a.down = true;
  const time_point lease_end = p.c.record(at(60s))->lease_end;
  REQUIRE(lease_end == at(105s));
  p.c.run_until(at(125s));
  const event takeover = only(p.b, event_kind::takeover);
  CHECK(takeover.attempt == 2);
  CHECK(takeover.runner == "backup");
  CHECK(takeover.fence == p.c.record(at(60s))->fence);
  REQUIRE(takeover.takeover_latency);
  CHECK(*takeover.takeover_latency == takeover.at - lease_end);  // one fake clock: the store's too
  CHECK(*takeover.takeover_latency > 0ms);
  CHECK(*takeover.takeover_latency <= 2 * 5s);  // the spec's bound: 2 × heartbeat after the lease end
  CHECK(takeover.claim_round_trip == 0ms);

  // The frozen runner wakes up: its heartbeat is refused; its handler ran since 60 s.
  p.a.down = false;
  p.c.poll_all();
  const event lost = only(p.a, event_kind::lost);
  CHECK(lost.runner == "runner");
  CHECK(lost.attempt == 1);
  CHECK(lost.handler_duration == lost.at - at(60s));
}

TEST_CASE("a takeover slowed by the store counts the slow claim in its latency and its round trip") {
  pair p{spec_options("runner", 1), spec_options("backup", 2)};
  p.start();
  p.c.run_until(at(75s));
  p.a.down = true;
  p.c.run_until(at(105s) - 1ms);
  REQUIRE(p.b.count(event_kind::takeover) == 0);
  // The backup's next check is its first after the lease end; make it arrive 700 ms late.
  p.c.store.delay_next_claim(700ms);
  p.c.run_until(at(125s));
  const event takeover = only(p.b, event_kind::takeover);
  CHECK(takeover.claim_round_trip == 700ms);
  CHECK(takeover.takeover_latency == takeover.at - at(105s));
}

TEST_CASE("a hand-over's takeover has no latency from a lease end: the run ended before it") {
  pair p{spec_options("runner", 1), spec_options("backup", 2)};
  p.a.behaviour = ends::throws_if_stopped;
  p.start();
  p.c.run_until(at(62s));
  p.a.s->stop();
  p.c.poll_all();
  p.c.finish_handlers(p.a);
  const event handed = only(p.a, event_kind::handed_over);
  CHECK(handed.handler_duration == 2s);
  CHECK(handed.runner == "runner");
  p.c.run_until(at(80s));
  const event takeover = only(p.b, event_kind::takeover);
  CHECK(takeover.attempt == 2);
  CHECK_FALSE(takeover.takeover_latency);  // the last lease end it read (90 s or later) is after the release
}

TEST_CASE("an abandoned attempt's event carries how long its handler had run") {
  pair p;
  p.start();
  p.c.run_until(at(63s));
  p.a.s->stop(2s);
  p.c.run_until(at(66s));
  const event abandoned = only(p.a, event_kind::abandoned);
  CHECK(abandoned.handler_duration == 5s);
  CHECK(abandoned.runner == "api-1");
}

TEST_CASE("a watched run that used up its attempts is reported interrupted with its last runner") {
  auto oa = spec_options("runner", 1);
  auto ob = spec_options("backup", 2);
  oa.max_attempts = ob.max_attempts = 1;
  pair p{oa, ob};
  p.start();
  p.c.run_until(at(75s));
  p.a.down = true;
  p.c.run_until(at(120s));
  const event interrupted = only(p.b, event_kind::interrupted);
  CHECK(interrupted.runner == "runner");
  CHECK(interrupted.attempt == 1);
  CHECK(interrupted.claim_round_trip == 0ms);
  CHECK_FALSE(interrupted.takeover_latency);
}

TEST_CASE("an overlap skip carries its claim's round trip, a late burst counts the slots it skipped") {
  cluster c{at(1s)};
  auto o = spec_options("api-1", 1);
  o.max_late = 600s;
  auto& a = c.add(o, "report", 10s);
  a.s->start();
  c.run_until(at(20s) - 1ms);
  c.store.delay_next_claim(40ms);
  c.run_until(at(20s) + 40ms);  // the 10 s run still holds its lease
  const event skip = only(a, event_kind::skip);
  CHECK(skip.run.slot == at(20s));
  CHECK(skip.claim_round_trip == 40ms);
  CHECK(skip.runner.empty());  // the skipped run never had a runner
  CHECK(skip.attempt == 0);

  c.finish_handlers(a);
  a.down = true;  // frozen across 30 s … 70 s
  c.run_until(at(71s));
  a.down = false;
  c.poll_all();
  const event late = only(a, event_kind::late);
  CHECK(late.skipped_slots == 4);  // 30, 40, 50 and 60 s are not claimed; 70 s, the latest, is
  CHECK(late.message.find(std::to_string(*late.skipped_slots) + " slot(s) not claimed") != std::string::npos);
  CHECK_FALSE(late.claim_round_trip);
}

TEST_CASE("a catch-up claim's event names this instance and carries its round trip") {
  cluster c{at(61s)};
  auto o = spec_options("api-1", 1);
  o.catch_up = 300s;
  auto& a = c.add(o);
  c.store.delay_next_claim(30ms);
  a.s->start();
  c.run_until(at(64s));
  const event e = only(a, event_kind::catch_up);
  CHECK(e.run.slot == at(60s));
  CHECK(e.runner == "api-1");
  CHECK(e.claim_round_trip == 30ms);
}

TEST_CASE("an early answer carries the claim's round trip (the sim, an instance 17 s ahead of the store)") {
  lease::options o;
  o.lease = 3s;
  o.catch_up = 0ms;
  o.claim_jitter = 0ms;
  lease::sim::cluster<> sim(5, o);
  sim.add_job("report", lease::every(60s), [](const lease::run_context&) { return lease::sim::script{.runs_for = 1s}; });
  sim.add_instance("fast", 17s);
  sim.start_all();
  sim.run_for(60s);
  int early = 0;
  for (const auto& e : sim.recorded().events) {
    if (e.kind != event_kind::early) continue;
    ++early;
    CHECK(e.claim_round_trip == 0ms);
    CHECK(e.runner.empty());
  }
  CHECK(early >= 1);
}
