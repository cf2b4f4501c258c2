// Scenario tests: one per diagram and table of doc/protocol.md, on fake time
// (fake_clock + manual_executor + memory_store). Handlers "run" until the
// test runs their task, so a test decides exactly when each one ends.
#include <catch2/catch.hpp>

#include "harness.hpp"

using namespace test;
using lease::event_kind;
using lease::run_status;
using op = faulty_store::op;

namespace {

template <class P>
node<P>* who_took_over(cluster<P>& c, time_point slot, std::uint32_t attempt) {
  for (auto& n : c.nodes)
    for (const auto& e : n->events)
      if (e.kind == event_kind::takeover && e.run.slot == slot && e.attempt == attempt) return n.get();
  return nullptr;
}

}  // namespace

// ---- Heartbeats -------------------------------------------------------------

TEST_CASE("a runner renews its lease every heartbeat and finishes with its token") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.count(event_kind::won) == 1);
  CHECK(c.record(at(60s))->lease_end == at(90s));
  c.run_until(at(65s));
  CHECK(c.record(at(60s))->lease_end == at(95s));
  c.run_until(at(80s));
  CHECK(c.record(at(60s))->lease_end == at(110s));
  c.finish_handlers(a);
  CHECK(c.record(at(60s))->status == run_status::success);
  REQUIRE(a.count(event_kind::success) == 1);
  CHECK(a.of(event_kind::success)[0].attempt == 1);
}

TEST_CASE("one heartbeat tick renews all running attempts of an instance in one batch") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->add("second", lease::every(60s), [](lease::run_context&) {});
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.s->running() == 2);
  const int before = c.store.batches();
  c.run_until(at(65s));
  CHECK(c.store.batches() == before + 1);
  CHECK(c.record(at(60s))->lease_end == at(95s));
  CHECK(c.record(at(60s), "second")->lease_end == at(95s));
}

// ---- Backups ------------------------------------------------------------------

TEST_CASE("backups watch a live run and exactly one takes it over after the runner dies") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("runner", 1));
  auto& b1 = c.add(spec_options("backup-1", 2));
  auto& b2 = c.add(spec_options("backup-2", 3));
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(60s));
  REQUIRE(a.count(event_kind::won) == 1);
  CHECK(b1.count(event_kind::backup) == 1);
  CHECK(b2.count(event_kind::backup) == 1);
  c.run_until(at(75s));  // a's tick at 75 s is its last acknowledged heartbeat
  a.down = true;         // the runner dies
  c.run_until(at(105s) - 1ms);
  CHECK(c.record(at(60s))->attempt == 1);  // nobody takes over a live lease
  c.run_until(at(105s) + 2 * 5s);          // lease + 2 × heartbeat after the last heartbeat
  node<>* winner = who_took_over(c, at(60s), 2);
  REQUIRE(winner != nullptr);
  CHECK(winner != &a);
  CHECK(c.record(at(60s))->attempt == 2);
  CHECK(c.record(at(60s))->runner == winner->s->instance());
  CHECK(winner->started.size() == 1);
  node<>& other = winner == &b1 ? b2 : b1;
  CHECK(other.count(event_kind::takeover) == 0);
  CHECK(other.s->watching() == 1);  // now a backup of attempt 2
  c.run_for(30s);
  CHECK(other.count(event_kind::takeover) == 0);
}

TEST_CASE("backups aim a check just after the lease end they read: a dead run is taken over within a quarter heartbeat of it") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("runner", 1));
  auto& b1 = c.add(spec_options("backup-1", 2));
  auto& b2 = c.add(spec_options("backup-2", 3));
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(75s));  // a's tick at 75 s is its last acknowledged heartbeat: the lease ends at 105 s
  a.down = true;
  c.run_until(at(105s) - 1ms);
  CHECK(c.record(at(60s))->attempt == 1);
  // Each backup's checks come every 5-10 s; the one whose answer showed the
  // lease ending before its next check is set for 105 s + up to 1.25 s.
  c.run_until(at(105s) + 5s / 4);
  node<>* winner = who_took_over(c, at(60s), 2);
  REQUIRE(winner != nullptr);
  CHECK(winner != &a);
  CHECK(c.record(at(60s))->attempt == 2);
  CHECK(b1.count(event_kind::takeover) + b2.count(event_kind::takeover) == 1);
}

// ---- Fencing ------------------------------------------------------------------

TEST_CASE("a frozen runner is fenced: its heartbeat is refused, its stop token aborted and its finish not recorded") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(60s));
  REQUIRE(a.started.size() == 1);
  const std::string a1 = a.started[0].token;
  a.down = true;  // frozen: GC pause
  c.run_until(at(101s));
  REQUIRE(b.count(event_kind::takeover) == 1);
  const std::string b7 = c.record(at(60s))->token;
  CHECK(b7 != a1);
  CHECK(c.record(at(60s))->fence > a.started[0].fence);

  a.down = false;  // wakes up
  CHECK_FALSE(a.started[0].stop.stop_requested());
  c.poll_all();
  REQUIRE(a.count(event_kind::lost) == 1);
  CHECK(a.started[0].stop.stop_requested());
  const int finishes = c.store.calls(op::finish);
  c.finish_handlers(a);  // A's handler returns "success"
  CHECK(c.store.calls(op::finish) == finishes);  // nothing more is sent for a1
  CHECK(c.record(at(60s))->token == b7);
  CHECK(c.record(at(60s))->status == run_status::running);
  CHECK(a.count(event_kind::success) == 0);
  CHECK_FALSE(c.store.inner().finish({"report", at(60s)}, a1, run_status::success));  // refused if sent
}

TEST_CASE("a lease under 10 ms still has a safety margin of 1 ms") {
  // lease / 10 rounds down to 0 ms there: the runner's deadline would be the
  // very millisecond at which a backup may win (found by a review).
  lease::options o = spec_options("A", 1);
  o.lease = 9ms;
  o.heartbeat = 2ms;
  cluster c{at(1s)};
  auto& a = c.add(o);
  CHECK(a.s->safety_margin() == 1ms);
}

TEST_CASE("a runner whose heartbeats are not acknowledged for lease − margin aborts before its lease can end") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.s->safety_margin() == 3s);  // lease / 10
  for (int i = 0; i < 10; ++i) c.store.fail_next(op::heartbeat, lease::errc::unavailable);
  c.run_until(at(87s) - 1ms);
  CHECK(a.count(event_kind::lost) == 0);
  CHECK(a.started[0].lease_held());
  // One event when the fault began and a summary every 10 s, not one per failed call.
  CHECK(a.count(event_kind::store_error) == 3);
  c.run_until(at(87s));  // 30 s − 3 s after the claim was sent; the store's lease ends at 90 s
  REQUIRE(a.count(event_kind::lost) == 1);
  CHECK(a.started[0].stop.stop_requested());
  CHECK_FALSE(a.started[0].lease_held());
  CHECK(a.of(event_kind::lost)[0].message.find("lease − safety margin") != std::string::npos);
}

// ---- Attempts and max_attempts ---------------------------------------------------

TEST_CASE("a run whose runner dies three times is marked interrupted, with no fourth attempt") {
  cluster c{at(1s)};
  for (int i = 0; i < 4; ++i) c.add(spec_options("n" + std::to_string(i), static_cast<std::uint64_t>(i + 1)), "report", 3600s);
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(3600s));
  c.nodes[0]->down = true;  // attempt 1 dies
  for (std::uint32_t attempt = 2; attempt <= 3; ++attempt) {
    c.run_for(60s);
    node<>* n = who_took_over(c, at(3600s), attempt);
    REQUIRE(n != nullptr);
    n->down = true;  // attempt 2, then 3, die
  }
  c.run_for(60s);
  auto r = c.record(at(3600s));
  CHECK(r->status == run_status::interrupted);
  CHECK(r->attempt == 3);
  CHECK(who_took_over(c, at(3600s), 4) == nullptr);
  int told = 0;
  for (auto& n : c.nodes)
    for (const auto& e : n->of(event_kind::interrupted))
      if (e.message.find("max_attempts") != std::string::npos) ++told;
  CHECK(told >= 1);
}

TEST_CASE("a hand-over does not count against max_attempts") {
  cluster c{at(1s)};
  for (int i = 0; i < 4; ++i) c.add(spec_options("n" + std::to_string(i), static_cast<std::uint64_t>(i + 7)), "report", 3600s);
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(3600s));
  auto& first = *c.nodes[0];
  REQUIRE(first.count(event_kind::won) == 1);
  first.behaviour = ends::throws_if_stopped;
  first.s->stop(10s);
  c.poll_all();
  c.finish_handlers(first);
  REQUIRE(first.count(event_kind::handed_over) == 1);
  for (std::uint32_t attempt = 2; attempt <= 3; ++attempt) {
    c.run_for(60s);
    node<>* n = who_took_over(c, at(3600s), attempt);
    REQUIRE(n != nullptr);
    n->down = true;  // two dead runners
  }
  c.run_for(60s);
  auto r = c.record(at(3600s));
  CHECK(r->handovers == 1);
  CHECK(r->attempt == 4);  // 4 − 1 hand-over = 3 counted
  CHECK(r->status == run_status::running);
  CHECK(who_took_over(c, at(3600s), 4) != nullptr);
}

TEST_CASE("a handler that throws is recorded failed and never retried") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.behaviour = ends::throws;
  a.s->start();
  b.s->start();
  c.run_until(at(62s));
  c.finish_handlers(a);
  REQUIRE(a.count(event_kind::failed) == 1);
  CHECK(a.of(event_kind::failed)[0].message.find("boom") != std::string::npos);
  c.run_until(at(119s));
  CHECK(c.record(at(60s))->status == run_status::failed);
  CHECK(b.count(event_kind::takeover) == 0);
  CHECK(b.started.empty());
  CHECK(b.s->watching() == 0);
}

// ---- A dead run and the next slot -------------------------------------------------

TEST_CASE("dead run vs next slot: the next slot is due while the lease is alive, so it is skipped and the old run taken over") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(115s));
  a.down = true;  // last heartbeat at 115 s: lease alive until 145 s
  c.run_until(at(121s));
  CHECK(b.has(event_kind::skip, at(120s)));
  CHECK_FALSE(c.record(at(120s)).has_value());
  c.run_until(at(145s) + 10s);
  REQUIRE(who_took_over(c, at(60s), 2) == &b);
  CHECK(b.of(event_kind::takeover)[0].at >= at(145s));
}

TEST_CASE("dead run vs next slot: the backup's check comes first, takes the old run over, and the next slot is skipped") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(70s));
  a.down = true;  // lease ends at 100 s; the backup checks by 110 s
  c.run_until(at(119s));
  REQUIRE(who_took_over(c, at(60s), 2) == &b);
  c.run_until(at(121s));
  CHECK(b.has(event_kind::skip, at(120s)));
  CHECK_FALSE(c.record(at(120s)).has_value());
}

TEST_CASE("dead run vs next slot: the next slot's claim comes first, so it starts and the dead run is interrupted, not retried") {
  cluster c{at(59s)};
  // A is a bare runner on the store: it wins run 60 s and renews by hand.
  lease::claim_request req{{"report", at(60s)}, "A", "a1", lease::claim_reason::scheduled};
  req.deadline = at(90s);
  c.clock.set(at(60s));
  REQUIRE(c.store.inner().claim(req).outcome == lease::claim_outcome::won);
  auto& b = c.add(spec_options("B", 2));
  b.s->start();
  c.run_until(at(61s));
  REQUIRE(b.s->watching() == 1);
  // Keep A's lease alive exactly through each of B's checks before 120 s,
  // ending 1 ms after the last one: the next slot then comes before B's next check.
  for (;;) {
    const time_point w = *b.s->next_wakeup();
    if (w >= at(120s)) break;
    REQUIRE(c.store.inner().heartbeat({"report", at(60s)}, "a1", (w - c.clock.now()) + 1ms));
    c.run_until(w);
  }
  c.run_until(at(120s));
  CHECK(b.has(event_kind::won, at(120s)));
  CHECK(c.record(at(60s))->status == run_status::interrupted);
  c.run_for(30s);
  CHECK(b.count(event_kind::takeover) == 0);
  REQUIRE(b.has(event_kind::interrupted, at(60s)));
  CHECK(b.of(event_kind::interrupted)[0].message.find("newer run") != std::string::npos);
}

// ---- Overlap -----------------------------------------------------------------------

TEST_CASE("overlap skip: runs :03 and :06 are skipped while :00 runs for 7 s, and :09 starts") {
  cluster c{at(59s)};
  auto& a = c.add(spec_options("A", 1), "report", 3s);
  auto& b = c.add(spec_options("B", 2), "report", 3s);
  a.s->start();
  b.s->start();
  c.run_until(at(60s));
  REQUIRE(a.has(event_kind::won, at(60s)));
  c.run_until(at(63s));
  CHECK(b.has(event_kind::skip, at(63s)));
  CHECK(b.s->watching() == 2);  // watches run :00 and run :03
  c.run_until(at(66s));
  CHECK(b.has(event_kind::skip, at(66s)));
  c.run_until(at(67s));
  c.finish_handlers(a);  // the job took 7 s
  CHECK(c.record(at(60s))->status == run_status::success);
  c.run_until(at(69s));
  CHECK_FALSE(c.record(at(63s)).has_value());
  CHECK_FALSE(c.record(at(66s)).has_value());
  REQUIRE(c.record(at(69s)).has_value());
  CHECK(a.has(event_kind::won, at(69s)) != b.has(event_kind::won, at(69s)));
  for (const auto& e : b.of(event_kind::skip)) CHECK(e.message.find("overlap") != std::string::npos);
}

TEST_CASE("overlap buffer_one claims the newest skipped slot once the blocking run ends") {
  cluster<lease::buffer_one_t> c{at(59s)};
  auto& a = c.add(spec_options("A", 1), "report", 3s);
  a.s->start();
  c.run_until(at(67s));
  CHECK(a.has(event_kind::skip, at(63s)));
  CHECK(a.has(event_kind::skip, at(66s)));
  c.finish_handlers(a);
  CHECK(a.has(event_kind::won, at(66s)));  // the newest skipped slot, not :03
  CHECK_FALSE(c.record(at(63s)).has_value());
}

TEST_CASE("overlap replace interrupts the live run and fences its runner") {
  cluster<lease::replace_t> c{at(59s)};
  auto& a = c.add(spec_options("A", 1), "report", 3s);
  a.s->start();
  c.run_until(at(63s));
  CHECK(a.has(event_kind::won, at(63s)));
  CHECK(c.record(at(60s))->status == run_status::interrupted);
  c.run_until(at(66s) - 1ms);
  CHECK(a.has(event_kind::lost, at(60s)));
  CHECK(a.started[0].stop.stop_requested());
}

// ---- Hand-over on stop() -----------------------------------------------------------

TEST_CASE("stop with a handler that throws once aborted releases the run and a backup takes over within 2 heartbeats") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.behaviour = ends::throws_if_stopped;
  a.s->start();
  b.s->start();
  c.run_until(at(70s));
  a.s->stop(10s);
  c.poll_all();
  CHECK(a.started[0].stop.stop_requested());
  c.finish_handlers(a);
  REQUIRE(a.count(event_kind::handed_over) == 1);
  CHECK(a.s->stopped());
  auto r = c.record(at(60s));
  CHECK(r->released);
  CHECK(r->handovers == 1);
  CHECK(r->lease_end == at(70s));
  c.run_until(at(70s) + 2 * 5s);
  CHECK(who_took_over(c, at(60s), 2) == &b);
}

TEST_CASE("stop with a handler that returns records success") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(70s));
  a.s->stop(10s);
  c.poll_all();
  c.finish_handlers(a);
  CHECK(a.count(event_kind::success) == 1);
  CHECK(a.s->stopped());
  CHECK(c.record(at(60s))->status == run_status::success);
  c.run_until(at(110s));
  CHECK(b.count(event_kind::takeover) == 0);
}

TEST_CASE("stop with a handler still running at the timeout abandons it and a backup takes over after the lease") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(70s));
  a.s->stop(10s);
  c.run_until(at(80s) - 1ms);
  CHECK_FALSE(a.s->stopped());
  c.run_until(at(80s));
  REQUIRE(a.count(event_kind::abandoned) == 1);
  CHECK(a.s->stopped());
  const time_point lease_end = c.record(at(60s))->lease_end;
  CHECK(lease_end <= at(80s) + 30s);
  c.run_until(lease_end - 1ms);
  CHECK(c.record(at(60s))->attempt == 1);  // no heartbeats, but the lease is honoured
  c.run_until(lease_end + 2 * 5s);
  CHECK(who_took_over(c, at(60s), 2) == &b);
  c.finish_handlers(a);  // the abandoned handler finally returns: nothing is sent
  CHECK(c.record(at(60s))->attempt == 2);
  CHECK(c.record(at(60s))->status == run_status::running);
}

TEST_CASE("a released lease stays released: a heartbeat arriving after the release does not renew it") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.behaviour = ends::throws_if_stopped;
  a.s->start();
  c.run_until(at(70s));
  const std::string token = a.started[0].token;
  a.s->stop(10s);
  c.poll_all();
  c.finish_handlers(a);
  REQUIRE(c.record(at(60s))->released);
  c.clock.advance(1s);
  CHECK_FALSE(c.store.inner().heartbeat({"report", at(60s)}, token, 30s));  // sent before, arriving after
  CHECK(c.record(at(60s))->lease_end == at(70s));
}

// ---- Catch-up on start ---------------------------------------------------------------

TEST_CASE("catch-up on start: both instances start after a missed slot, one wins after a jitter and the other is its backup") {
  cluster c{at(6h + 2min)};
  auto o1 = spec_options("A", 11), o2 = spec_options("B", 12);
  o1.catch_up = o2.catch_up = 5min;
  auto& a = c.add(o1, "report", 1h);
  auto& b = c.add(o2, "report", 1h);
  a.s->start();
  b.s->start();
  c.poll_all();
  CHECK(c.store.calls(op::claim) == 0);  // both wait a jitter first
  CHECK(c.store.calls(op::unfinished) == 2);
  c.run_for(2s);
  const bool a_won = a.has(event_kind::catch_up, at(6h));
  const bool b_won = b.has(event_kind::catch_up, at(6h));
  REQUIRE(a_won != b_won);
  node<>& winner = a_won ? a : b;
  node<>& loser = a_won ? b : a;
  CHECK(winner.started.at(0).reason == lease::claim_reason::catch_up);
  CHECK(winner.of(event_kind::catch_up)[0].at > at(6h + 2min));
  CHECK(loser.has(event_kind::backup, at(6h)));
}

TEST_CASE("catch-up on start survives an upsert of the job before the loop first runs (a config reconcile)") {
  cluster c{at(6h + 2min)};
  auto o = spec_options("A", 11);
  o.catch_up = 5min;
  auto& a = c.add(o, "report", 1h);
  a.s->start();
  a.s->add("report", lease::every(1h), [](lease::run_context&) {});  // same job again, as a reconcile loop does
  c.run_for(2s);
  CHECK(a.has(event_kind::catch_up, at(6h)));  // the missed slot is still caught up
  CHECK(c.record(at(6h)).has_value());
}

TEST_CASE("catch-up on start claims only the latest missed slot, never a queue") {
  cluster c{at(2h + 30s)};
  auto o = spec_options("A", 3);
  o.catch_up = 5min;
  auto& a = c.add(o, "report", 1min);
  a.s->start();
  c.run_for(3s);
  REQUIRE(a.count(event_kind::catch_up) == 1);
  CHECK(a.of(event_kind::catch_up)[0].run.slot == at(2h));
  CHECK(c.store.inner().snapshot().jobs.at("report").runs.size() == 1);
  CHECK(c.store.calls(op::claim) == 1);
}

TEST_CASE("catch-up on start leaves a slot that was due longer ago than catch_up") {
  cluster c{at(6h + 10min)};
  auto o = spec_options("A", 3);
  o.catch_up = 5min;
  auto& a = c.add(o, "report", 1h);
  a.s->start();
  c.run_for(5s);
  CHECK(a.count(event_kind::catch_up) == 0);
  CHECK(c.store.calls(op::claim) == 0);
}

// A slot whose very millisecond the instance's clock reads at start() is
// due: it runs as a slot of the schedule, as it would have had the instance
// started 1 ms earlier (it was claimed by neither the slot timer, armed for
// the next slot, nor catch-up, which with catch_up 0 takes nothing: skipped
// without a word). 1 ms after it, it was due before the start: catch-up's.
TEST_CASE("a slot due at the very millisecond of start() is claimed, once") {
  for (const duration catch_up : {duration{0}, duration{5min}}) {
    for (const duration off : {duration{-1}, duration{0}, duration{1}}) {
      cluster c{at(2h) + off};
      auto o = spec_options("A", 3);
      o.catch_up = catch_up;
      auto& a = c.add(o, "report", 1h);
      a.s->start();
      c.run_for(3s);
      INFO("catch_up " << lease::detail::fmt(catch_up) << ", started " << off.count() << " ms after slot 2 h");
      if (off <= 0ms) {
        CHECK(a.has(event_kind::won, at(2h)));  // a slot of the schedule, not a catch-up
        CHECK_FALSE(a.has(event_kind::catch_up, at(2h)));
        CHECK(c.store.calls(op::claim) == 1);
      } else if (catch_up > 0ms) {
        CHECK(a.has(event_kind::catch_up, at(2h)));
        CHECK(c.store.calls(op::claim) == 1);
      } else {
        CHECK(c.store.calls(op::claim) == 0);  // due before the start, and no catch-up asked for
      }
      CHECK(a.started.size() == (off <= 0ms || catch_up > 0ms ? 1u : 0u));
    }
  }
}

TEST_CASE("a job added at the very millisecond of one of its slots runs that slot") {
  cluster c{at(1h) + 30min};
  auto& a = c.add(spec_options("A", 3), "report", 1h);  // catch_up 0
  a.s->start();
  c.run_until(at(2h) - 1s);
  c.clock.set(at(2h));  // not polled since: the add below is asked at 2 h exactly
  a.s->add("other", lease::every(1h), [](lease::run_context&) {});
  c.run_for(2s);
  CHECK(c.record(at(2h), "other").has_value());
  bool won = false;
  for (const auto& e : a.of(event_kind::won)) won = won || (e.run.job == "other" && e.run.slot == at(2h));
  CHECK(won);
}

// The catch-up read failed at start and is retried after the first slot's
// timer fired: that slot is the timer's, claimed (here still unanswered, its
// claims failing), not a missed one to catch up. Caught up too, this
// instance sent two claims of one slot with two tokens.
TEST_CASE("a catch-up retried after the first slot's timer fired does not claim that slot again") {
  cluster c{at(2h) - 50ms};
  auto o = spec_options("A", 3);
  o.catch_up = 5min;
  auto& a = c.add(o, "report", 1h);
  for (int i = 0; i < 2; ++i) c.store.fail_next(op::unfinished, lease::errc::unavailable);
  for (int i = 0; i < 5; ++i) c.store.fail_next(op::claim, lease::errc::unavailable);
  a.s->start();
  c.run_for(10s);
  CHECK(c.store.calls(op::unfinished) == 3);
  CHECK(a.has(event_kind::won, at(2h)));
  CHECK_FALSE(a.has(event_kind::catch_up, at(2h)));
  CHECK(a.of(event_kind::backup).empty());
  CHECK(a.started.size() == 1);
}

TEST_CASE("start takes over a dead run that is still the latest, and leaves one with a newer slot due") {
  cluster c{at(60s)};
  lease::claim_request req{{"report", at(60s)}, "dead", "d1", lease::claim_reason::scheduled};
  req.deadline = at(90s);
  REQUIRE(c.store.inner().claim(req).outcome == lease::claim_outcome::won);
  lease::claim_request other = req;
  other.run.job = "other";
  REQUIRE(c.store.inner().claim(other).outcome == lease::claim_outcome::won);
  c.clock.set(at(100s));  // both leases ran out at 90 s
  auto& a = c.add(spec_options("A", 1));                     // report: every 60 s, slot 60 s still latest
  a.s->add("other", lease::every(30s), [](lease::run_context&) {});  // other: slot 90 s is due, newer
  a.s->start();
  c.poll_all();
  CHECK(a.has(event_kind::takeover, at(60s)));
  CHECK(c.record(at(60s))->attempt == 2);
  CHECK(c.record(at(60s), "other")->attempt == 1);  // left alone
  CHECK(c.record(at(60s), "other")->status == run_status::running);
}

// ---- Late claims and store failures --------------------------------------------------

TEST_CASE("a claim that reaches the store minutes late is refused and starts nothing") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(60s) - 1ms);
  c.store.delay_next_claim(2min);
  c.run_until(at(60s));
  REQUIRE(a.has(event_kind::late, at(60s)));
  CHECK_FALSE(c.record(at(60s)).has_value());
  for (const auto& ctx : a.started) CHECK(ctx.slot != at(60s));
}

TEST_CASE("a claim that fails with unavailable is reported and retried with the same token until it wins") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.store.fail_next(op::claim, lease::errc::unavailable);
  c.store.fail_next(op::claim, lease::errc::unavailable);
  c.run_until(at(60s));
  CHECK(a.count(event_kind::store_error) == 1);
  CHECK(a.count(event_kind::won) == 0);
  c.run_until(at(61s));
  CHECK(a.count(event_kind::store_error) == 2);
  REQUIRE(a.count(event_kind::won) == 1);
  CHECK(c.store.calls(op::claim) == 3);
  CHECK(c.record(at(60s))->attempt == 1);
}

TEST_CASE("a claim whose outcome is unknown is sent again at once with its own token, never a new one") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.store.fail_next(op::claim, lease::errc::outcome_unknown, /*applied=*/true);
  c.run_until(at(60s));
  // The second copy finds the first one's run, running with its token: won.
  REQUIRE(a.count(event_kind::won) == 1);
  REQUIRE(a.started.size() == 1);
  CHECK(c.store.calls(op::claim) == 2);
  CHECK(c.record(at(60s))->token == a.started.at(0).token);
  CHECK(c.record(at(60s))->attempt == 1);
}

TEST_CASE("a claim applied but unanswered, whose run an operator stopped before it was sent again, starts nothing") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  // Applied, and then unknown twice: the copy sent at once is lost too.
  c.store.fail_next(op::claim, lease::errc::outcome_unknown, /*applied=*/true);
  c.store.fail_next(op::claim, lease::errc::outcome_unknown, /*applied=*/true);
  c.run_until(at(60s));
  REQUIRE(c.record(at(60s)));
  CHECK(a.started.empty());
  // leasectl stop: the job paused, its run released with its lease end kept.
  CHECK(c.store.inner().stop("report") == 1);
  c.run_until(at(61s));
  CHECK(c.store.calls(op::claim) >= 3);  // sent again: answered running, with its own token, released
  CHECK(a.count(event_kind::won) == 0);
  CHECK(a.started.empty());
  REQUIRE(a.count(event_kind::skip) == 1);  // said, not taken for a backup's watch
  CHECK(a.of(event_kind::skip).front().message.find("released before this instance could start it") !=
        std::string::npos);
  CHECK(a.count(event_kind::backup) == 0);
}

TEST_CASE("a claim the store cannot take before its deadline is dropped with an event saying so") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  for (int i = 0; i < 100; ++i) c.store.fail_next(op::claim, lease::errc::unavailable);
  c.run_until(at(119s));
  bool dropped = false;
  for (const auto& e : a.of(event_kind::late))
    if (e.run.slot == at(60s) && e.message.find("dropped") != std::string::npos) dropped = true;
  CHECK(dropped);
  CHECK_FALSE(c.record(at(60s)).has_value());
}

TEST_CASE("a finish that fails is retried while heartbeats keep the lease") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(61s));
  c.store.fail_next(op::finish, lease::errc::unavailable);
  c.finish_handlers(a);
  CHECK(c.record(at(60s))->status == run_status::running);
  c.run_until(at(62s));
  CHECK(c.record(at(60s))->status == run_status::success);
  CHECK(a.count(event_kind::success) == 1);
}

// ---- Jobs ---------------------------------------------------------------------------

TEST_CASE("job names must be non-empty, bounded and free of control characters") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto noop = [](lease::run_context&) {};
  CHECK_THROWS_AS(a.s->add("", lease::every(1s), noop), std::invalid_argument);
  CHECK_THROWS_AS(a.s->add(std::string(201, 'x'), lease::every(1s), noop), std::invalid_argument);
  CHECK_THROWS_AS(a.s->add("bad\nname", lease::every(1s), noop), std::invalid_argument);
  CHECK_THROWS_AS(a.s->add("report", lease::every(1s), noop), std::invalid_argument);  // duplicate
  CHECK_NOTHROW(a.s->add(std::string(200, 'x'), lease::every(1s), noop));
  try {
    a.s->add("tab\there", lease::every(1s), noop);
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("control character") != std::string::npos);
  }
}

TEST_CASE("invalid options are rejected when the scheduler is built") {
  lease::fake_clock clock;
  lease::options o;
  o.heartbeat = 20s;  // not under half of the 30 s lease
  using S = lease::scheduler<lease::memory_store<lease::fake_clock>, lease::fake_clock, lease::manual_executor,
                             lease::skip_t>;
  CHECK_THROWS_AS(S(lease::memory_store<lease::fake_clock>{clock}, clock, lease::manual_executor{}, lease::skip, o),
                  std::invalid_argument);
}

TEST_CASE("instances configured with one seed still make different tokens, so only one of them runs a slot") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 99));
  auto& b = c.add(spec_options("B", 99));
  a.s->start();
  b.s->start();
  c.run_until(at(60s));
  CHECK(a.started.size() + b.started.size() == 1);
  CHECK(a.count(event_kind::won) + b.count(event_kind::won) == 1);
}

namespace {
struct refusing_executor {
  void execute(lease::task) { throw std::runtime_error("queue full"); }
};
}  // namespace

TEST_CASE("a run the executor refuses is released to a backup, not lost") {
  lease::fake_clock clock{at(1s)};
  lease::memory_store<lease::fake_clock> store{clock};
  lease::scheduler<lease::memory_store<lease::fake_clock>, lease::fake_clock, refusing_executor, lease::skip_t> s(
      store, clock, refusing_executor{}, lease::skip, spec_options("A", 1));
  std::vector<lease::event> events;
  s.on_event([&](const lease::event& e) { events.push_back(e); });
  s.add("report", lease::every(60s), [](lease::run_context&) {});
  s.start();
  clock.set(at(60s));
  s.poll();
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == event_kind::won);
  CHECK(events[1].kind == event_kind::handed_over);
  CHECK(events[1].message.find("queue full") != std::string::npos);
  auto r = store.get({"report", at(60s)});
  CHECK(r->released);
  CHECK(r->handovers == 1);
  CHECK(s.running() == 0);
}

TEST_CASE("a refused run whose release is retried across a stop() is not said to have thrown") {
  lease::fake_clock clock{at(1s)};
  test::faulty_store store{clock};
  lease::scheduler<test::faulty_store, lease::fake_clock, refusing_executor, lease::skip_t> s(
      store, clock, refusing_executor{}, lease::skip, spec_options("A", 1));
  std::vector<lease::event> events;
  s.on_event([&](const lease::event& e) { events.push_back(e); });
  s.add("report", lease::every(60s), [](lease::run_context&) {});
  s.start();
  store.fail_next(op::release, lease::errc::unavailable);
  clock.set(at(60s));
  s.poll();  // won, refused by the executor, its release failed: retried later
  s.stop(5s);
  for (int i = 0; i < 50 && s.running() > 0; ++i) {
    clock.advance(100ms);
    s.poll();
  }
  REQUIRE(store.inner().get({"report", at(60s)})->released);
  const auto handed = std::find_if(events.begin(), events.end(),
                                   [](const lease::event& e) { return e.kind == event_kind::handed_over; });
  REQUIRE(handed != events.end());
  CHECK(handed->message.find("not started") != std::string::npos);
  CHECK(handed->message.find("queue full") != std::string::npos);
  CHECK(handed->message.find("threw") == std::string::npos);  // the handler never ran
}

TEST_CASE("an instance that skipped a slot as an overlap becomes the backup of whoever claims it later") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(120s));  // A still runs slot 60 s: B's claim of 120 s is an overlap
  REQUIRE(b.has(event_kind::skip, at(120s)));
  c.clock.set(at(120s) + 100ms);
  c.finish_handlers(a);  // run 60 s ends within the jitter window…
  c.clock.set(at(120s) + 200ms);
  lease::claim_request req{{"report", at(120s)}, "C", "c1", lease::claim_reason::scheduled};
  req.deadline = at(150s);
  REQUIRE(c.store.inner().claim(req).outcome == lease::claim_outcome::won);  // …and C claims 120 s, then dies
  c.run_until(at(150s));
  CHECK(b.s->watching() == 1);  // B watches run 120 s, which it skipped
  c.run_until(at(150s) + 200ms + 2 * 5s);  // C's lease + 2 heartbeats
  node<>* n = who_took_over(c, at(120s), 2);
  CHECK((n == &a || n == &b));  // A skipped it too: both are backups like any other
}

TEST_CASE("a claim for a slot older than a run that already started is superseded and says so") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.store.fail_next(op::claim, lease::errc::unavailable);
  c.run_until(at(60s));  // A's claim of 60 s failed and waits to be retried
  // A newer run has state (a slot no later than the store's clock: claims
  // for future slots are answered early).
  lease::claim_request newer{{"report", at(60s) + 500ms}, "C", "c1", lease::claim_reason::scheduled};
  newer.deadline = at(150s);
  REQUIRE(c.store.inner().claim(newer).outcome == lease::claim_outcome::won);
  c.run_until(at(61s));
  REQUIRE(a.has(event_kind::superseded, at(60s)));
  CHECK(a.of(event_kind::superseded)[0].message.find("newer run") != std::string::npos);
  CHECK_FALSE(c.record(at(60s)).has_value());
}

TEST_CASE("on(kind) delivers only events of that kind") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  std::vector<lease::event_kind> seen;
  a.s->on(event_kind::success, [&](const lease::event& e) { seen.push_back(e.kind); });
  a.s->start();
  c.run_until(at(60s));
  c.finish_handlers(a);
  CHECK(a.count(event_kind::won) == 1);
  CHECK(seen == std::vector<lease::event_kind>{event_kind::success});
}

TEST_CASE("a store that throws something other than store_error is reported and the instance carries on") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.store.throw_foreign_next(op::claim);
  c.run_until(at(60s));
  REQUIRE(a.count(event_kind::store_error) == 1);
  CHECK(a.of(event_kind::store_error)[0].message.find("not a store_error") != std::string::npos);
  c.run_until(at(120s));
  CHECK(a.has(event_kind::won, at(120s)));  // the next slot runs as usual
}
