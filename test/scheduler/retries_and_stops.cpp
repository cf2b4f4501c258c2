// test/scheduler/retries_and_stops.cpp — what an instance says and does
// when an operator's stop, a buffered slot or a trigger meets a call that
// is being retried. Each a deterministic scenario on fake time that failed
// before its fix (found by a review):
// * an operator's stop (leasectl stop) that lands while the finish of a run
//   whose handler had ended is being retried: reported `lost` ("another
//   instance took the run over"), and the run was not watched, so with one
//   instance it was never taken over after the resume;
// * buffer_one: a buffered slot claimed while a newer slot's claim was
//   pending (being retried), so the older slot ran and the newer one was
//   skipped as its overlap — a queue, not "latest only";
// * the same stop landing while a release is retried (a hand-over at
//   stop(), its release failed once): also reported `lost`, by the refused
//   release or by a refused heartbeat while the release waited;
// * a manual claim deferred behind a slot's claim woke the loop every 10 ms
//   for as long as that claim waited (its claim jitter: up to a day);
// * a manual claim deferred behind a slot whose timer had not fired yet
//   waited for that wall-time timer: a wall clock stepped back 10 min held
//   the trigger 10 min more;
// * a failed read-back of a finish whose outcome is unknown was not counted
//   as a store fault: no event, no summary, and the episode's count wrong.
#include <catch2/catch.hpp>

#include <deque>
#include <span>

#include "counted_cluster.hpp"
#include "harness.hpp"
#include "store_cluster.hpp"

using namespace test;
using lease::event_kind;
using lease::run_status;

namespace {

/// A counted_store (every capability: StopStore, TriggerStore, pushes) whose
/// next finish or get calls can be made to fail (before applying).
class stop_faulty_store : public counted_store {
 public:
  explicit stop_faulty_store(lease::fake_clock c) : counted_store(c) {}
  /// Op names as counted_store counts them: "finish", "release", "get", "claim".
  std::shared_ptr<std::deque<std::pair<std::string, lease::errc>>> faults =
      std::make_shared<std::deque<std::pair<std::string, lease::errc>>>();
  void fail_next(std::string op, lease::errc code) { faults->emplace_back(std::move(op), code); }

  bool finish(const lease::run_key& k, std::string_view t, lease::run_status s) {
    maybe_fail("finish");
    return counted_store::finish(k, t, s);
  }
  bool release(const lease::run_key& k, std::string_view t) {
    maybe_fail("release");
    return counted_store::release(k, t);
  }
  std::vector<bool> finish_many(std::span<const lease::finish_request> b) {
    maybe_fail("finish");
    return counted_store::finish_many(b);
  }
  std::optional<lease::run_record> get(const lease::run_key& k) {
    maybe_fail("get");
    return counted_store::get(k);
  }
  lease::claim_result claim(const lease::claim_request& r) {
    maybe_fail("claim");
    return counted_store::claim(r);
  }
  std::vector<lease::claim_result> claim_many(std::span<const lease::claim_request> b) {
    maybe_fail("claim");
    return counted_store::claim_many(b);
  }

 private:
  void maybe_fail(const std::string& op) {
    auto it = std::find_if(faults->begin(), faults->end(), [&](const auto& f) { return f.first == op; });
    if (it == faults->end()) return;
    const lease::errc code = it->second;
    faults->erase(it);
    throw lease::store_error(lease::make_error_code(code), "injected fault");
  }
};
static_assert(lease::StopStore<stop_faulty_store> && lease::TriggerStore<stop_faulty_store>);

/// Instances over one store of type Store (store_cluster.hpp).
template <class Store, class Policy = lease::skip_t>
using gcluster = store_cluster<Store, Policy>;

}  // namespace

// ---- 1. An operator's stop while a finish is retried -------------------------

TEST_CASE("stop while a finish is retried: a stopped event, not lost") {
  gcluster<stop_faulty_store> c;
  auto& a = c.add(spec_options("only", 1), 300s);
  c.start_all();
  c.run_until(at(301s));
  REQUIRE(a.started.size() == 1);
  c.store.fail_next("finish", lease::errc::unavailable);  // not applied: retried after a backoff
  a.exec.run_all();                                       // the handler returns (success)
  a.s->poll();
  REQUIRE(a.s->running() == 1);  // its finish is being retried
  REQUIRE(c.store.stop("report") == 1);  // an operator, before the retry
  c.run_until(at(302s));
  CHECK(c.record(at(300s))->status == run_status::running);  // the result could not be recorded
  CHECK(c.record(at(300s))->released);
  for (const auto& e : a.of(event_kind::lost)) INFO(e.message);
  CHECK(a.count(event_kind::lost) == 0);  // was: "finish refused … another instance took the run over"
  REQUIRE(a.count(event_kind::stopped) == 1);
  CHECK(says(a.of(event_kind::stopped)[0], "stopped by an operator (leasectl stop)"));
  // The only instance watches its stopped run (doc/protocol.md §20): after the
  // resume it takes it over, as for a stop that found the handler running.
  REQUIRE(c.store.resume("report"));
  c.run_until(at(300s) + 30s + 2 * 5s);  // once the lease the stop kept has ended: within 2 heartbeats
  CHECK(a.count(event_kind::takeover) == 1);
}

TEST_CASE("stop while a finish is in doubt: a stopped event, not lost") {
  gcluster<stop_faulty_store> c;
  auto& a = c.add(spec_options("only", 1), 300s);
  c.start_all();
  c.run_until(at(301s));
  REQUIRE(a.started.size() == 1);
  c.store.fail_next("finish", lease::errc::outcome_unknown);  // in fact not applied
  c.store.fail_next("get", lease::errc::unavailable);         // the read-back fails too
  a.exec.run_all();
  a.s->poll();
  REQUIRE(a.s->running() == 1);
  REQUIRE(c.store.stop("report") == 1);
  c.run_until(at(302s));
  for (const auto& e : a.of(event_kind::lost)) INFO(e.message);
  CHECK(a.count(event_kind::lost) == 0);
  CHECK(a.count(event_kind::stopped) == 1);
  CHECK(a.count(event_kind::success) == 0);
}

namespace {
/// Instance A runs slot 300 s of "report" (every 300 s) with a handler that
/// throws once its stop is requested (a hand-over), B is its backup; then
/// A's stop() hands the run over, and its release fails `failures` times
/// (unavailable: not applied), so it is retried after a backoff; an
/// operator stops the job (leasectl stop) before the first retry.
struct release_retried {
  gcluster<stop_faulty_store> c;
  gcluster<stop_faulty_store>::node& a = c.add_instance(spec_options("A", 1));
  gcluster<stop_faulty_store>::node& b = c.add(spec_options("B", 2), 300s);
  explicit release_retried(int failures) {
    a.s->add("report", lease::every(300s), [](lease::run_context& ctx) {
      if (ctx.stop.stop_requested()) throw std::runtime_error("told to stop");
    });
    c.start_all();
    c.run_until(at(301s));
    REQUIRE(a.started.size() == 1);
    REQUIRE(b.count(event_kind::backup) == 1);
    for (int i = 0; i < failures; ++i) c.store.fail_next("release", lease::errc::unavailable);
    a.s->stop(20s);
    a.s->poll();       // the handler's stop token is requested
    a.exec.run_all();  // it throws: the run is handed over
    a.s->poll();
    REQUIRE(a.s->running() == 1);  // its release is being retried
    REQUIRE(c.store.stop("report") == 1);
  }
  void check_stopped() {
    std::string lost;
    for (const auto& e : a.of(event_kind::lost)) lost += e.message + "\n";
    INFO(lost);
    CHECK(a.count(event_kind::lost) == 0);  // was: "… refused by the store … another instance took the run over"
    CHECK(a.count(event_kind::handed_over) == 0);
    REQUIRE(a.count(event_kind::stopped) == 1);
    const lease::event e = a.of(event_kind::stopped)[0];
    INFO(e.message);
    CHECK(says(e, "stopped by an operator (leasectl stop)"));
    CHECK(says(e, "release"));
    CHECK(a.s->stopped());
    CHECK(c.record(at(300s))->released);
    // The run is handed over all the same: after the resume, B takes it over.
    REQUIRE(c.store.resume("report"));
    c.run_until(at(300s) + 30s + 2 * 5s);  // once the lease the stop kept has ended: within 2 heartbeats
    CHECK(b.count(event_kind::takeover) == 1);
  }
};
}  // namespace

TEST_CASE("stop while a release is retried: a stopped event, not lost") {
  release_retried r(1);
  r.c.run_until(at(302s));  // the retry, 100 to 150 ms later, is refused
  r.check_stopped();
}

TEST_CASE("stop while a release is retried, a heartbeat refused first: stopped") {
  release_retried r(6);      // retried for 6 s and more (100 ms doubling)
  r.c.run_until(at(306s));   // the heartbeat at 305 s comes before the release is sent again
  r.check_stopped();
}

TEST_CASE("instance stop while a finish is retried: the success is recorded") {
  gcluster<stop_faulty_store> c;
  auto& a = c.add(spec_options("only", 1), 300s);
  c.start_all();
  c.run_until(at(301s));
  c.store.fail_next("finish", lease::errc::unavailable);
  a.exec.run_all();
  a.s->poll();
  REQUIRE(a.s->running() == 1);
  a.s->stop(10s);
  c.run_until(at(302s));
  CHECK(a.count(event_kind::success) == 1);
  CHECK(a.count(event_kind::lost) == 0);
  CHECK(c.record(at(300s))->status == run_status::success);
  CHECK(a.s->stopped());
}

// ---- 2. buffer_one: the newest slot -------------------------------------------

TEST_CASE("buffer_one: a buffered slot is not claimed before a newer pending one") {
  cluster<lease::buffer_one_t> c{at(59s)};
  auto& a = c.add(spec_options("A", 1), "report", 3s);
  a.s->start();
  c.run_until(at(63s));
  REQUIRE(a.has(event_kind::won, at(60s)));
  REQUIRE(a.has(event_kind::skip, at(63s)));  // buffered
  c.run_until(at(66s) - 1ms);
  c.store.fail_next(faulty_store::op::claim, lease::errc::unavailable);
  c.run_until(at(66s));  // slot 66 s: its claim fails, and is retried after a backoff
  REQUIRE_FALSE(c.record(at(66s)).has_value());
  c.finish_handlers(a);  // the blocking run ends while the claim of 66 s is pending
  c.run_until(at(67s));
  // The newest slot runs; 63 s, older than a slot due and claimed, does not.
  CHECK(a.has(event_kind::won, at(66s)));
  CHECK_FALSE(c.record(at(63s)).has_value());
  CHECK_FALSE(a.has(event_kind::won, at(63s)));
  CHECK(a.has(event_kind::late, at(63s)));  // dropped, with an event saying why
}

// ---- 3. A manual claim deferred behind a slot's claim -------------------------

TEST_CASE("a trigger deferred behind a slot's claim jitter does not spin the loop") {
  gcluster<counted_store> c;
  auto o = spec_options("api", 3);
  o.claim_jitter = 60s;  // the slot's claim waits up to a minute after the slot
  auto& a = c.add(o);
  c.start_all();
  c.run_until(at(60s) - 1ms);
  c.clock.set(at(60s) + 1ms);  // slot 60 s is due; its claim waits out its jitter
  const time_point slot = c.store.trigger("report");
  const int calls_before = c.store.total();
  int wakeups = 0;
  auto answered = [&] {  // the manual claim was answered (skip mode: the slot's run is live, so a skip event)
    return std::any_of(a.events.begin(), a.events.end(), [&](const lease::event& e) { return e.run.slot == slot; });
  };
  while (!answered()) {
    const auto w = a.s->next_wakeup();
    if (!w || *w > at(200s)) break;
    if (*w > c.clock.now()) c.clock.set(*w);
    a.s->poll();
    ++wakeups;
  }
  const time_point claimed = c.clock.now();
  INFO("wakeups " << wakeups << ", store calls " << c.store.total() - calls_before << ", the manual claim sent "
                  << lease::detail::fmt(claimed - at(60s)) << " after the slot");
  REQUIRE(answered());
  REQUIRE(c.record(at(60s)).has_value());  // the slot claimed first
  REQUIRE(claimed - at(60s) > 5s);           // the jitter drawn is long enough to show the spin
  CHECK(c.store.total() - calls_before <= 2 + (claimed - at(60s)) / 5s);  // its claims and heartbeats: no store call per wake-up
  CHECK(wakeups < 50);                          // was one per 10 ms
}

TEST_CASE("a trigger parked behind a due slot waits no longer for a wall clock stepped back") {
  // The instance's wall clock, stepped alone; the store keeps the base one.
  lease::fake_clock base{at(2h) - 30s};
  counted_store store{base};
  lease::skewed_clock<lease::fake_clock> wall{base, 0ms};
  recording_executor exec;
  auto o = spec_options("api", 3);
  o.claim_jitter = 60s;  // the slot's claim waits up to a minute after the slot
  lease::scheduler<counted_store, lease::skewed_clock<lease::fake_clock>, recording_executor, lease::skip_t> s(
      store, wall, exec, lease::skip_t{}, o);
  std::vector<lease::event> events;
  s.on_event([&](const lease::event& e) { events.push_back(e); });
  s.add("report", lease::every(1h), [](lease::run_context&) {});
  s.start();
  s.poll();
  base.set(at(2h) + 1ms);  // slot 2 h is due; its timer waits out its jitter (not polled since)
  const time_point slot = store.trigger("report");
  auto answered = [&] {  // skip mode: the slot's run is live, so the manual claim ends in a skip event
    return std::any_of(events.begin(), events.end(), [&](const lease::event& e) { return e.run.slot == slot; });
  };
  s.poll();  // the push is taken: the manual claim waits for slot 2 h to be claimed first
  REQUIRE_FALSE(answered());
  REQUIRE_FALSE(store.get({"report", at(2h)}).has_value());
  wall.step(-10min);  // NTP steps the instance's wall clock back
  // Driven on the base clock: a wake-up the instance asks for (its wall
  // time) is that much later on the base.
  while (!answered()) {
    const auto w = s.next_wakeup();
    if (!w) break;
    const time_point target = *w - wall.offset();
    if (target > at(2h) + 2min) break;
    if (target > base.now()) base.set(target);
    s.poll();
  }
  INFO("the trigger answered " << lease::detail::fmt(base.now() - at(2h)) << " after the slot (monotonic)");
  CHECK(answered());  // was: 10 min and the jitter later, when the stepped wall clock reached the slot's timer
  CHECK(store.get({"report", at(2h)}).has_value());  // the slot was still claimed first
  CHECK(base.now() - at(2h) <= 60s + 1s);           // within the slot's claim jitter
}

// ---- 4. Failed read-backs are store faults -------------------------------------

TEST_CASE("a failed read-back of a finish in doubt is counted as a store fault") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.started.size() == 1);
  c.store.fail_next(faulty_store::op::finish, lease::errc::outcome_unknown);  // not applied
  for (int i = 0; i < 4; ++i) c.store.fail_next(faulty_store::op::get, lease::errc::unavailable);
  c.finish_handlers(a);
  c.run_until(at(64s));  // read back (4 failures), then resent and recorded, before the next heartbeat
  REQUIRE(c.record(at(60s))->status == run_status::success);
  REQUIRE(a.count(event_kind::success) == 1);
  CHECK(c.store.calls(faulty_store::op::get) >= 5);
  const auto errors = a.of(event_kind::store_error);
  REQUIRE(errors.size() >= 2);
  for (const auto& e : errors) INFO(e.message);
  CHECK(says(errors.back(), "store fault ended"));
  CHECK(says(errors.back(), "5 failed call(s)"));  // the finish and its 4 read-backs (was: 1)
}

// ---- Also: an abandon at the stop timeout of a finish in doubt -----------------

TEST_CASE("stop timeout with a finish in doubt: abandoned says it may be recorded") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.started.size() == 1);
  c.store.fail_next(faulty_store::op::finish, lease::errc::outcome_unknown, true);  // applied, reply lost
  for (int i = 0; i < 20; ++i) c.store.fail_next(faulty_store::op::get, lease::errc::unavailable);
  c.finish_handlers(a);
  a.s->stop(1s);
  c.run_until(at(63s));
  REQUIRE(a.s->stopped());
  REQUIRE(c.record(at(60s))->status == run_status::success);  // recorded, whatever the instance could tell
  REQUIRE(a.count(event_kind::abandoned) == 1);
  const auto e = a.of(event_kind::abandoned)[0];
  INFO(e.message);
  CHECK_FALSE(says(e, "did not accept the result"));  // it may well have: its reply was lost
  CHECK(says(e, "may have been recorded"));
}
