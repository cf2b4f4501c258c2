// Scenario tests for the faults a real process meets — a wall clock stepped
// either way, store calls that hang or answer late, lost replies — and for
// the scheduler branches that guard against them. Each test fails when its
// branch is removed (scripts/mutation-check.py breaks each one).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "harness.hpp"
#include "lease/schedule/every.hpp"
#include "lease/sim.hpp"
#include "sim_options.hpp"

using namespace test;
using lease::claim_outcome;
using lease::event_kind;
using lease::run_status;
using op = faulty_store::op;

namespace {

/// A simulation of three instances running one job every minute whose
/// handler runs `runs_for` and honours its stop at once.
struct three {
  lease::sim::cluster<> sim;
  explicit three(std::uint64_t seed, duration runs_for = 20s, lease::options o = sim_options()) : sim(seed, o, sim_start) {
    sim.add_job("report", lease::every(60s), [runs_for](const lease::run_context&) {
      return lease::sim::script{.runs_for = runs_for, .honours_stop = 0ms};
    });
    for (const char* n : {"a", "b", "c"}) sim.add_instance(n);
    sim.start_all();
  }
  /// The index of the instance running the first handler.
  std::size_t runner() {
    const std::string name = sim.recorded().handlers.at(0).instance;
    for (std::size_t i = 0; i < sim.size(); ++i)
      if (sim.instance_at(i).instance() == name) return i;
    FAIL("no runner");
    return 0;
  }
  std::vector<lease::event> events(event_kind k, const std::string& who = {}) const {
    std::vector<lease::event> out;
    for (const auto& e : sim.recorded().events)
      if (e.kind == k && (who.empty() || e.instance == who)) out.push_back(e);
    return out;
  }
};

/// One instance, alone with one job every minute whose handler runs
/// `runs_for` and honours its stop at once: no other instance knows its runs.
struct alone {
  lease::sim::cluster<> sim;
  alone(std::uint64_t seed, duration runs_for) : sim(seed, sim_options(), sim_start) {
    sim.add_job("report", lease::every(60s), [runs_for](const lease::run_context&) {
      return lease::sim::script{.runs_for = runs_for, .honours_stop = 0ms};
    });
    sim.add_instance("a");
    sim.start_all();
  }
};

}  // namespace

// ---- two kinds of time -----------------------------------------------------

TEST_CASE("a runner whose wall clock is stepped back 60 s keeps renewing, and no backup takes its run over") {
  three t(1);
  t.sim.run_for(60s + 100ms);  // slot 1 h + 60 s is running
  REQUIRE(t.sim.recorded().handlers.size() == 1);
  const std::size_t r = t.runner();
  t.sim.step_clock(r, -60s);  // NTP, an operator, a VM resumed
  t.sim.run_for(25s);
  INFO(t.sim.describe());
  CHECK(t.sim.recorded().handlers.size() == 1);  // nobody else started it
  CHECK(t.events(event_kind::takeover).empty());
  CHECK(t.events(event_kind::lost).empty());
  CHECK(t.events(event_kind::success).size() == 1);
  CHECK(t.sim.violations().empty());
}

namespace {
/// Store-clock notices of a node's events that say "stepped <way>".
std::vector<std::string> step_notices(const test::node<>& n, const std::string& way) {
  std::vector<std::string> out;
  for (const auto& e : n.of(event_kind::store_notice))
    if (e.message.rfind("the store's clock was stepped " + way, 0) == 0) out.push_back(e.message);
  return out;
}
}  // namespace

// One fake_clock for the store and both instances, as on one host with a
// SQLite file: a step of its wall clock (fake_clock::step) moves the store's
// clock and leaves the monotonic clocks alone.
TEST_CASE("the store's clock stepped ahead or back is said once two claim answers show it, once, with the step") {
  for (const int way : {+1, -1}) {
    test::cluster<> c{test::at(1h) + 1ms};  // 1 ms after slot 1 h: its first slot is 2 h
    auto& a = c.add(test::spec_options("a", 1), "report", 1h);
    auto& b = c.add(test::spec_options("b", 2), "report", 1h);
    c.start_all();
    c.run_until(test::at(2h) + 100ms);  // a runs slot 2 h, b backs it up
    REQUIRE(a.started.size() == 1);
    REQUIRE(b.count(event_kind::backup) == 1);
    c.clock.step(way * 40s);
    c.run_for(45s);  // b's backup checks, 5 to 10 s apart
    INFO("step " << way * 40 << " s");
    const auto said = step_notices(b, way > 0 ? "ahead by at least " : "back by at least ");
    REQUIRE(said.size() == 1);  // once: later answers are read against the stepped clock
    // Never more than the step; less by a ninth (ahead) or an eleventh
    // (back) of the 10 to 20 s the two answers span, for clocks 10 % off.
    const long long size = std::atoll(said.front().c_str() + said.front().find("at least ") + 9);
    CHECK(size <= 40000);
    CHECK(size >= 37000);
    CHECK(step_notices(b, way > 0 ? "back" : "ahead").empty());
  }
}

// The store's clock stepped ahead, in the simulation (lease 3 s, heartbeat
// 500 ms, safety margin 300 ms): where the bound of doc/protocol.md §2 holds
// and where it does not. The last two break I9 on purpose: they show the
// model can break the rule the precondition protects.

namespace {
/// Whether violations() reports two handlers of one run at once.
bool two_handlers_at_once(const lease::sim::cluster<>& sim) {
  for (const auto& v : sim.violations())
    if (v.rfind("I9: ", 0) == 0) return true;
  return false;
}
}  // namespace

TEST_CASE("a store's clock stepped ahead by lease - 2 heartbeats takes nothing from a runner whose heartbeats are on time") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    three t(seed);
    t.sim.run_for(60s + 700ms);  // slot 1 h + 60 s is running, one heartbeat acknowledged
    REQUIRE(t.sim.recorded().handlers.size() == 1);
    t.sim.step_store_clock(2s);
    t.sim.run_for(25s);
    INFO(t.sim.describe());
    CHECK(t.sim.recorded().handlers.size() == 1);  // nobody else started it
    CHECK(t.events(event_kind::lost).empty());
    CHECK(t.events(event_kind::success).size() == 1);
    CHECK(t.sim.violations().empty());
  }
}

TEST_CASE("a store's clock stepped ahead by more than a lease lets a backup start a live runner's run, and is said") {
  // The runner's next heartbeat, within 500 ms, is accepted if nobody took
  // the run over meanwhile (a heartbeat renews any current attempt): two
  // handlers run at once only where a backup's check (every 0.5 to 1 s)
  // falls in between. Some seeds show it; every one says the step.
  int overlapping = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    three t(seed);
    t.sim.run_for(60s + 700ms);
    REQUIRE(t.sim.recorded().handlers.size() == 1);
    t.sim.step_store_clock(10s);
    t.sim.run_for(25s);
    INFO(t.sim.describe());
    if (two_handlers_at_once(t.sim)) {
      ++overlapping;
      CHECK(t.events(event_kind::lost).size() == 1);  // the runner learnt it at its next heartbeat
    }
    std::size_t said = 0;
    for (const auto& e : t.events(event_kind::store_notice))
      said += e.message.rfind("the store's clock was stepped ahead by at least ", 0) == 0 ? 1 : 0;
    // By a backup, at least: its checks are claims. (A backup whose first
    // answer after the step was its takeover's win says nothing: it makes
    // no claim after that, and one answer alone is not believed.)
    CHECK(said >= 1);
    for (const auto& v : t.sim.violations()) CHECK(v.rfind("store clock notice", 0) != 0);  // never overstated
  }
  CHECK(overlapping > 0);
}

TEST_CASE("a store's clock stepped ahead by more than the safety margin while its runner's heartbeat hangs lets a backup start the run") {
  // 2 s is within lease - 2 heartbeats, but the heartbeat that would have
  // renewed the lease in full hangs (2.9 s, then fails). The runner stops
  // itself a lease less the margin after its last acknowledged heartbeat
  // (2.7 s); the store let the lease go 2 s early, and the backups check
  // every 0.5 to 1 s.
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    three t(seed);
    t.sim.run_for(60s + 700ms);
    REQUIRE(t.sim.recorded().handlers.size() == 1);
    t.sim.hang_store(t.runner(), 2900ms, 1);
    t.sim.step_store_clock(2s);
    t.sim.run_for(25s);
    INFO(t.sim.describe());
    REQUIRE(t.sim.recorded().handlers.size() == 2);
    CHECK(two_handlers_at_once(t.sim));
  }
}

TEST_CASE("the safety margin is one budget: a runner's slow monotonic clock and a step ahead of the store's clock share it") {
  // Lease 3 s, margin 300 ms. The runner's monotonic clock runs at 92 % (it
  // reaches lease - margin of its own time 235 ms late: 65 ms of the margin
  // are left) and its next heartbeat hangs, so only its self-abort stops
  // it. A step of the store's clock within what is left takes nothing from
  // it, and neither does a step of 250 ms, within the margin, from a
  // runner whose clock is right; both at once let a backup start the run
  // before the runner stops in some seeds (CI found this in the random
  // histories: 92 % and a 68 ms step of a 2 s lease).
  const auto run = [](std::uint64_t seed, double rate, duration step) {
    three t(seed);
    t.sim.run_for(60s + 700ms);
    REQUIRE(t.sim.recorded().handlers.size() == 1);
    t.sim.drift_clock(t.runner(), rate);
    t.sim.hang_store(t.runner(), 2900ms, 1);
    t.sim.step_store_clock(step);
    t.sim.run_for(25s);
    INFO(t.sim.describe());
    REQUIRE(t.sim.recorded().handlers.size() == 2);  // taken over
    return two_handlers_at_once(t.sim);
  };
  int overlapping = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    CHECK_FALSE(run(seed, 0.92, 50ms));
    CHECK_FALSE(run(seed, 1.0, 250ms));
    overlapping += run(seed, 0.92, 250ms) ? 1 : 0;
  }
  CHECK(overlapping > 0);  // 8 of 8 when written
}

// The random histories found a false alarm of the simulation's own checker
// here (seed 7980216043987740089, a ThreadSanitizer run in CI): the store's
// clock stepped back 3 s, the runner released its run in the same
// millisecond, and a backup took it over 390 ms later. The release set the
// lease end to the store's clock, which reads 3 s in the past in real time:
// I6 ("taken over within 2 heartbeats of the lease end") must not judge such
// an end by real time. Without the rule that skips it, every seed here is
// reported late.
TEST_CASE("a run released just after the store's clock is stepped back and taken over at once breaks no invariant") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    three t(seed);
    t.sim.run_for(65s);  // slot 1 h + 60 s has run for 5 s; both backups watch it
    REQUIRE(t.sim.recorded().handlers.size() == 1);
    t.sim.step_store_clock(-3s);
    t.sim.stop(t.runner(), 1s);  // releases in the same millisecond
    t.sim.run_for(25s);
    INFO(t.sim.describe());
    REQUIRE(t.sim.recorded().handlers.size() == 2);  // handed over
    CHECK(t.events(event_kind::takeover).size() == 1);
    CHECK(t.sim.violations().empty());
  }
}

TEST_CASE("a wall clock stepped forward past slots claims only the latest, with one late event naming what it skipped") {
  lease::options o = sim_options();
  o.max_late = 600s;  // an old slot would still be claimable: only the rule keeps it out
  lease::sim::cluster<> sim(3, o, sim_start);
  sim.add_job("report", lease::every(60s), [](const lease::run_context&) { return lease::sim::script{.runs_for = 1s}; });
  sim.add_instance("a", -190s);  // 190 s behind the store…
  sim.start_all();
  sim.run_for(1s);
  sim.step_clock(0, 190s);  // …until NTP steps it: slots 1 h − 180 s, − 120 s, − 60 s and 1 h are due at once
  sim.run_for(1s);
  INFO(sim.describe());
  const auto& h = sim.recorded();
  REQUIRE(h.handlers.size() == 1);
  CHECK(h.handlers[0].run.slot == lease::time_point{} + 1h);
  const auto late = std::count_if(h.events.begin(), h.events.end(), [](const auto& e) { return e.kind == event_kind::late; });
  CHECK(late == 1);
  for (const auto& e : h.events)
    if (e.kind == event_kind::late) CHECK(e.message.find("3 slot(s) not claimed") != std::string::npos);
}

TEST_CASE("a claim from an instance whose clock runs ahead is answered early and claimed again at the store's time") {
  lease::options o = sim_options();
  lease::sim::cluster<> sim(5, o, sim_start);
  sim.add_job("report", lease::every(60s), [](const lease::run_context&) { return lease::sim::script{.runs_for = 1s}; });
  sim.add_instance("fast", 17s);  // 17 s ahead of the store
  sim.start_all();
  sim.run_for(60s);
  INFO(sim.describe());
  const auto& h = sim.recorded();
  REQUIRE(h.handlers.size() == 1);
  CHECK(h.handlers[0].start >= lease::time_point{} + 1h + 60s - lease::early_tolerance);  // never early by the store
  CHECK(std::any_of(h.events.begin(), h.events.end(), [](const auto& e) { return e.kind == event_kind::early; }));
}

TEST_CASE("a claim from an instance whose clock runs ahead by more than max_late still runs its slot at the store's time") {
  // The store alone says when a slot is late: an early answer is retried
  // at the slot on the store's clock, whatever this instance's clock says.
  lease::options o = sim_options();
  o.max_late = 30s;
  lease::sim::cluster<> sim(5, o, sim_start);
  sim.add_job("report", lease::every(300s), [](const lease::run_context&) { return lease::sim::script{.runs_for = 1s}; });
  sim.add_instance("fast", 120s);  // two minutes ahead of the store: past the deadline by its own clock
  sim.start_all();
  sim.run_for(700s);
  INFO(sim.describe());
  const auto& h = sim.recorded();
  REQUIRE(h.handlers.size() >= 2);  // every slot the store's clock reached
  for (const auto& r : h.handlers) {
    CHECK(r.start >= r.run.slot - lease::early_tolerance);  // never early by the store
    CHECK(r.start <= r.run.slot + 1s);                      // and on time by it
  }
  for (const auto& e : h.events) CHECK(e.kind != event_kind::late);
  CHECK(sim.violations().empty());
}

// Whether a claim is too late to send again is judged on the store's clock
// (a slot's deadline is on it), estimated from the last claim answer as the
// earlier of two estimates: the store's time then plus the monotonic time
// since, and this instance's wall clock plus the store's lead then. Each
// scenario below fails on one of the two alone.
namespace {
/// One instance, one job every 300 s with max_late 5 s (deadline: slot + 5 s,
/// plus 10 s of tolerance), run to 580 s: slot 1 h + 300 s has been claimed
/// and run, and that claim's answer is the last the instance has.
struct after_one_answer {
  lease::sim::cluster<> sim;
  after_one_answer() : sim(7, options(), sim_start) {
    sim.add_job("report", lease::every(300s), [](const lease::run_context&) { return lease::sim::script{.runs_for = 1s}; });
    sim.add_instance("a");
    sim.start_all();
    sim.run_for(580s);
  }
  static lease::options options() {
    lease::options o = sim_options();
    o.max_late = 5s;
    return o;
  }
  /// The second handler ran slot 1 h + 600 s, and no slot was dropped as late.
  /// (`start` is on the sim's true time, which is the store's unless the
  /// store's clock was stepped.)
  void check_next_slot_ran(bool store_clock_is_true_time) const {
    INFO(sim.describe());
    const auto& h = sim.recorded();
    REQUIRE(h.handlers.size() == 2);
    CHECK(h.handlers[1].run.slot == lease::time_point{} + 1h + 600s);
    if (store_clock_is_true_time) CHECK(h.handlers[1].start <= h.handlers[1].run.slot + 1s);  // on time by the store
    for (const auto& e : h.events) CHECK(e.kind != event_kind::late);
    CHECK(sim.violations().empty());
  }
};
}  // namespace

// The wall clock alone, stepped ahead after the answer, made a claim the
// store would still take look late, and the slot was dropped.
TEST_CASE("a claim retried after this instance's wall clock was stepped ahead is judged late on the store's clock") {
  after_one_answer t;
  REQUIRE(t.sim.recorded().handlers.size() == 1);
  t.sim.step_clock(0, 60s);        // by its own clock slot 1 h + 600 s is 40 s past…
  t.sim.hang_store(0, 100ms, 3);   // …and its claims fail, so no answer corrects the estimate
  t.sim.run_for(60s);
  t.check_next_slot_ran(true);
}

// On one host (a SQLite file) the store's clock is this wall clock, stepped
// back with it. The monotonic estimate alone ran a minute ahead of the
// store's clock and dropped the claim.
TEST_CASE("a claim retried after this host's wall clock and the store's were stepped back together still runs its slot") {
  after_one_answer t;
  REQUIRE(t.sim.recorded().handlers.size() == 1);
  t.sim.step_clock(0, -60s);       // one host: its wall clock…
  t.sim.step_store_clock(-60s);    // …is the store's
  t.sim.run_for(79s);              // both read 1 h + 599 s
  t.sim.hang_store(0, 100ms, 3);   // the slot's claims fail, so no answer corrects the estimates
  t.sim.run_for(30s);
  t.check_next_slot_ran(false);
}

// ---- the self-abort is on time, whatever the I/O does ----------------------

TEST_CASE("a runner whose store calls hang stops its handler before a backup can take the run over") {
  three t(2);
  t.sim.run_for(60s + 100ms);
  const std::size_t r = t.runner();
  t.sim.hang_store(r, 5s, 3);  // a black-holed connection: each call hangs 5 s, then fails, for 15 s
  t.sim.run_for(15s);
  INFO(t.sim.describe());
  const auto& h = t.sim.recorded().handlers;
  REQUIRE(h.size() == 2);  // a backup took over…
  CHECK(h[1].attempt == 2);
  CHECK(h[0].observed_stop);
  CHECK(h[0].active_until < h[1].start);  // …after the runner had stopped (I9)
  CHECK(t.sim.violations().empty());
}

TEST_CASE("an instance that gave up its run at the self-abort takes it over itself once the store answers again") {
  // No other instance knows of the run (here there is none; a manual run
  // whose trigger the others never polled is the same): the runner itself
  // must be its backup, or the run stays `running` in the store forever.
  alone one(3, 20s);
  auto& sim = one.sim;
  sim.run_for(60s + 100ms);
  sim.hang_store(0, 2s, 3);  // a black-holed connection for 6 s: the lease (3 s) is gone
  sim.run_for(15s);
  INFO(sim.describe());
  const auto& h = sim.recorded().handlers;
  REQUIRE(h.size() == 2);
  CHECK(h[0].observed_stop);
  CHECK(h[1].attempt == 2);
  CHECK(h[1].run == h[0].run);
  CHECK(h[0].active_until < h[1].start);
  CHECK(sim.violations().empty());
}

TEST_CASE("the watchdog requests the stop of a handler that only watches its stop token while the loop hangs") {
  lease::sim::cluster<> sim(12, sim_options(), sim_start);
  sim.add_job("report", lease::every(60s), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 20s, .honours_stop = 0ms, .checks_lease = false};
  });
  for (const char* n : {"a", "b", "c"}) sim.add_instance(n);
  sim.start_all();
  sim.run_for(60s + 100ms);
  const auto& h = sim.recorded().handlers;
  REQUIRE(h.size() == 1);
  std::size_t r = 0;
  for (std::size_t i = 0; i < sim.size(); ++i)
    if (sim.instance_at(i).instance() == h[0].instance) r = i;
  sim.hang_store(r, 5s, 3);
  sim.run_for(15s);
  INFO(sim.describe());
  REQUIRE(h.size() == 2);
  CHECK(h[0].observed_stop);
  CHECK(h[0].active_until < h[1].start);
  CHECK(sim.violations().empty());
}

TEST_CASE("the self-abort counts from the send of the last acknowledged heartbeat, not from its late reply") {
  three t(4);
  t.sim.run_for(60s + 100ms);
  const std::size_t r = t.runner();
  t.sim.slow_store(r, 1500ms, 1, true);  // the next heartbeat is applied at once, its reply comes 1.5 s later…
  t.sim.hang_store(r, 5s, 3);            // …and after it the connection is black-holed for 15 s
  t.sim.run_for(15s);
  INFO(t.sim.describe());
  const auto& h = t.sim.recorded().handlers;
  REQUIRE(h.size() == 2);
  CHECK(h[0].active_until < h[1].start);
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a claim answered past lease − margin starts no handler: its lease may be gone already") {
  three t(6, 20s);
  t.sim.run_for(59s);
  for (std::size_t i = 0; i < 3; ++i) t.sim.slow_store(i, 2800ms, 1, true);  // every claim's reply comes 2.8 s late
  t.sim.run_for(20s);
  INFO(t.sim.describe());
  CHECK(t.sim.violations().empty());
  CHECK_FALSE(t.events(event_kind::lost).empty());
  for (const auto& e : t.events(event_kind::lost)) CHECK(e.message.find("handler is not started") != std::string::npos);
}

TEST_CASE("a claim whose first send hung and whose resend won too late is given up, then taken over by its own instance") {
  // Its only instance: the lease counts from the first send (the hung one
  // may have been applied), so the resend's win, 6 s later, is `lost`, and
  // the instance takes the run over itself once that lease has run out.
  alone one(9, 5s);
  auto& sim = one.sim;
  sim.run_for(59s);
  sim.hang_store(0, 6100ms, 1);  // the claim at 60 s hangs, then fails; it is resent with its token
  sim.run_for(20s);
  INFO(sim.describe());
  CHECK(sim.recorded().events.end() != std::find_if(sim.recorded().events.begin(), sim.recorded().events.end(),
                                                     [](const lease::event& e) { return e.kind == event_kind::lost; }));
  const auto& h = sim.recorded().handlers;
  REQUIRE(h.size() == 1);
  CHECK(h[0].attempt == 2);
  CHECK(sim.violations().empty());
}

// ---- claims: the same token, latest only -----------------------------------

TEST_CASE("a claim applied but whose reply was lost is resent with the same token and run as attempt 1") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.store.fail_next(op::claim, lease::errc::unavailable, /*applied=*/true);
  c.run_until(at(61s));
  REQUIRE(a.started.size() == 1);
  CHECK(a.started[0].attempt == 1);
  CHECK(a.count(event_kind::backup) == 0);  // never a backup of its own phantom
  CHECK(c.record(at(60s))->attempt == 1);
}

TEST_CASE("a takeover applied but whose reply was lost is resent with the same token and run, never left a phantom") {
  three t(8);
  t.sim.run_for(60s + 100ms);
  const std::size_t r = t.runner();
  t.sim.crash(r);
  t.sim.run_until(lease::time_point{} + 1h + 63s);  // the lease (from the claim at 60 s) ends now:
  for (std::size_t i = 0; i < 3; ++i)                // the backups' next claims win, and lose their replies
    if (i != r) t.sim.fail_store(i, lease::errc::unavailable, 1, /*applied=*/true);
  t.sim.run_for(10s);
  INFO(t.sim.describe());
  const auto& h = t.sim.recorded().handlers;
  REQUIRE(h.size() == 2);
  CHECK(h[1].attempt == 2);
  CHECK(t.events(event_kind::interrupted).empty());
  CHECK(t.sim.backing_store().get(h[0].run)->attempt == 2);  // no attempt nobody ran
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a loop that wakes up after several slots claims only the latest one") {
  cluster c{at(1s)};
  auto o = spec_options("A", 1);
  o.max_late = 600s;  // older slots would still be accepted by the store
  auto& a = c.add(o);
  a.s->start();
  c.run_until(at(59s));
  a.down = true;  // frozen across 60 s, 120 s and 180 s
  c.run_until(at(181s));
  a.down = false;
  c.poll_all();
  REQUIRE(a.started.size() == 1);
  CHECK(a.started[0].slot == at(180s));
  CHECK_FALSE(c.record(at(60s)).has_value());
  REQUIRE(a.count(event_kind::late) == 1);
  CHECK(a.of(event_kind::late)[0].message.find("2 slot(s) not claimed") != std::string::npos);
}

TEST_CASE("a claim still being retried when a newer slot is due is dropped with an event") {
  cluster c{at(1s)};
  auto o = spec_options("A", 1);
  o.max_late = 600s;
  auto& a = c.add(o, "report", 10s);
  a.s->start();
  c.run_until(at(9s));
  for (int i = 0; i < 30; ++i) c.store.fail_next(op::claim, lease::errc::unavailable);
  c.run_until(at(25s));  // 10 s and 20 s were tried and failed; the store answers again from now on
  c.run_until(at(31s));
  for (const auto& ctx : a.started) CHECK(ctx.slot >= at(20s));
  CHECK_FALSE(c.record(at(10s)).has_value());  // never started after a newer slot was due
  bool dropped = false;
  for (const auto& e : a.of(event_kind::late))
    dropped = dropped || (e.run.slot == at(10s) && e.message.find("newer slot") != std::string::npos);
  CHECK(dropped);
}

TEST_CASE("a claim still pending when stop() is called is not sent, and says so") {
  cluster c{at(1s)};
  auto o = spec_options("A", 1);
  o.max_late = 600s;
  auto& a = c.add(o, "report", 10s);
  a.s->start();
  c.run_until(at(9s));
  for (int i = 0; i < 30; ++i) c.store.fail_next(op::claim, lease::errc::unavailable);
  c.run_until(at(11s));  // slot 10 s was tried and failed: its claim waits for a retry
  a.s->stop(5s);
  c.run_until(at(40s));
  CHECK(a.started.empty());
  CHECK_FALSE(c.record(at(10s)).has_value());
  bool told = false;
  for (const auto& e : a.of(event_kind::late))
    told = told || (e.run.slot == at(10s) && e.message.find("stop() was called") != std::string::npos);
  CHECK(told);  // a slot this instance gave up at stop() is accounted for, not silently gone
}

TEST_CASE("a slot due in the loop turn that takes a stop() is not claimed, and says so") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1), "report", 10s);
  a.s->start();
  c.run_until(at(9s));
  c.clock.set(at(10s));  // slot 10 s is due, and the stop request is already waiting when the loop wakes
  a.s->stop(5s);
  c.run_until(at(40s));
  CHECK(a.started.empty());
  bool told = false;
  for (const auto& e : a.of(event_kind::late))
    told = told || (e.run.slot == at(10s) && e.message.find("stop() was taken first") != std::string::npos);
  CHECK(told);
}

// ---- backups -----------------------------------------------------------------

TEST_CASE("a backup whose check comes due with a newer slot lets the newer slot's claim go first") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(60s));  // A runs 60 s; B is its backup
  REQUIRE(b.s->watching() == 1);
  a.down = true;          // A dies; its lease ends at 90 s
  c.run_until(at(85s));
  b.down = true;          // B stalls across the lease end and the next slot…
  c.run_until(at(121s));
  b.down = false;         // …and wakes with both its backup check and slot 120 s due
  c.poll_all();
  CHECK(b.count(event_kind::takeover) == 0);  // the dead run is not started after a newer one is due
  CHECK(b.has(event_kind::won, at(120s)));
  CHECK(c.record(at(60s))->status == run_status::interrupted);
}

TEST_CASE("a handler whose task the executor takes only after its lease was lost is not started") {
  // Every worker busy, or the process frozen, from the win until past the
  // self-abort: a backup takes the run over meanwhile. The task, taken at
  // last, must not start a handler that never checks lease_held() itself.
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  int invoked[2] = {0, 0};
  a.s->add("mail", lease::every(60s), [&](lease::run_context&) { ++invoked[0]; });
  b.s->add("mail", lease::every(60s), [&](lease::run_context&) { ++invoked[1]; });
  a.s->start();
  b.s->start();
  c.run_until(at(60s));
  auto& runner = c.record(at(60s), "mail")->runner == "A" ? a : b;
  auto& backup = &runner == &a ? b : a;
  runner.down = true;  // frozen with the task still queued; its lease ends at 90 s
  c.run_until(at(100s));
  REQUIRE(c.record(at(60s), "mail")->attempt == 2);  // the backup took it over
  REQUIRE(backup.has(event_kind::takeover, at(60s)));
  runner.exec.run_all();  // the frozen instance's executor takes its task at last
  CHECK(invoked[&runner == &a ? 0 : 1] == 0);
  runner.down = false;
  c.run_until(at(101s));
  CHECK(c.record(at(60s), "mail")->attempt == 2);  // nothing was released or finished for attempt 1
  CHECK(c.record(at(60s), "mail")->status == run_status::running);
}

TEST_CASE("a claim answered quarantined after a send whose reply was lost is claimed again with a new token, so "
          "the lost copy's lease is never counted from the resend, and its stray win is released") {
  // Found by a review: the same token, sent again after the quarantine,
  // came back `running` with that token — the delayed first copy had won
  // as the quarantine ended — and the handler started with a self-abort
  // counted from the resend, 4 s after the lease really began: a backup
  // took over while the handler still held its lease.
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(30'500ms));
  c.store.inner().lose_state();  // noticed at 30.5 s: no run starts before 60.5 s
  c.store.hold_next_claim();     // A's claim of 60 s: its first copy is delayed, its reply lost
  c.run_until(at(60'499ms));     // A sent it again at once: quarantined, claimed again at 60.5 s
  REQUIRE(c.store.held());
  REQUIRE(c.store.held()->runner == "A");
  c.clock.set(at(60'500ms));
  REQUIRE(c.store.inner().claim(*c.store.held()).outcome == claim_outcome::won);  // the first copy lands: lease end 90.5 s
  a.down = true;  // A's loop is held 4 s (a slow call) while B claims: backup
  c.run_until(at(64'500ms));
  a.down = false;
  c.poll_all();  // A claims again
  CHECK(a.started.empty());  // the attempt its lost copy won is not started with a lease counted from now
  CHECK(c.record(at(60s))->released);  // nobody runs it: released at once…
  CHECK(a.s->watching() == 1);  // …and A backs it up, as B does
  c.run_until(at(76s));  // a backup's next check, long before the stray lease's end (90.5 s)
  CHECK(c.record(at(60s))->attempt == 2);
  CHECK(c.record(at(60s))->handovers == 1);  // a hand-over, not a dead runner: no attempt used up
  CHECK(a.started.size() + b.started.size() == 1);
}

TEST_CASE("a claim whose answer leaves less than a heartbeat before the self-abort renews at once, and its handler "
          "is not stopped") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(59s));
  c.store.delay_next_claim(23s);  // A's claim of 60 s, sent at 60 s, is answered at 83 s: 4 s left of lease − margin
  c.run_until(at(60s));
  REQUIRE(a.started.size() == 1);
  c.run_until(at(95s));  // past the 87 s the first send left, and the heartbeat a full interval later (88 s)
  CHECK_FALSE(a.started[0].stop.stop_requested());
  CHECK(a.count(event_kind::lost) == 0);
  CHECK(c.record(at(60s))->attempt == 1);
  CHECK(c.record(at(60s))->lease_end > c.clock.now() + 20s);  // renewed: the run is still A's
}

TEST_CASE("a finish whose outcome is unknown and whose read-back fails is read back again, not resent, so a recorded "
          "success is not reported lost") {
  // Found by a review (Redis restarting mid-finish): the finish applied, its
  // reply was lost, the read-back failed too; the retry resent the finish,
  // which was refused as the run had ended, and said the result was lost.
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.started.size() == 1);
  c.store.fail_next(op::finish, lease::errc::outcome_unknown, /*applied=*/true);
  c.store.fail_next(op::get, lease::errc::unavailable);
  c.finish_handlers(a);
  c.run_until(at(70s));  // the retry, after a backoff
  CHECK(c.record(at(60s))->status == run_status::success);
  CHECK(a.count(event_kind::success) == 1);
  CHECK(a.count(event_kind::lost) == 0);
  CHECK(c.store.calls(op::finish) == 1);  // never resent
}

TEST_CASE("a backup re-checks a watched run every 1 to 2 × heartbeat") {
  three t(9, 50s);
  t.sim.run_for(60s + 40s);
  const auto& ops = t.sim.recorded().ops;
  std::map<std::string, std::vector<lease::time_point>> checks;
  for (const auto& op : ops)
    if (op.op == lease::sim::store_op::kind::claim && op.reason == lease::claim_reason::takeover)
      checks[op.instance].push_back(op.at);
  REQUIRE(checks.size() == 2);
  for (const auto& [who, times] : checks) {
    REQUIRE(times.size() >= 20);
    for (std::size_t i = 1; i < times.size(); ++i) {
      CHECK(times[i] - times[i - 1] >= 500ms);
      CHECK(times[i] - times[i - 1] <= 1000ms);
    }
  }
}

// ---- push hand-over: a release is announced, backups re-check at once ------

namespace {
/// Stops the runner of the first slot 10 s into its 50 s handler and returns
/// (time of its hand-over, time of the takeover), both on the store's clock.
/// `lost` announcements are lost from just before the stop.
std::pair<lease::time_point, lease::time_point> hand_over(three& t, int lost = 0) {
  t.sim.run_for(60s + 10s);
  if (lost > 0) t.sim.lose_announcements(lost);
  t.sim.stop(t.runner(), 5s);
  t.sim.run_for(5s);
  INFO(t.sim.describe());
  const auto handed = t.events(event_kind::handed_over);
  const auto takeover = t.events(event_kind::takeover);
  REQUIRE(handed.size() == 1);
  REQUIRE(takeover.size() == 1);
  return {handed[0].at, takeover[0].at};
}
}  // namespace

TEST_CASE("a hand-over announced by the store is taken over at once, not at the next backup check") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    three t(seed, 50s);
    const auto [handed, taken] = hand_over(t);
    CHECK(taken == handed);  // store calls take no time here: the same moment
    CHECK(t.sim.violations().empty());
  }
}

TEST_CASE("without announcements, a hand-over waits for a backup's periodic check") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    three t(seed, 50s);
    t.sim.announce_releases(false);
    const auto [handed, taken] = hand_over(t);
    CHECK(taken > handed);
    CHECK(taken - handed <= 1000ms);  // 2 × heartbeat
    CHECK(t.sim.violations().empty());
  }
}

TEST_CASE("a lost announcement costs time, never the takeover") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    three t(seed, 50s);
    const auto [handed, taken] = hand_over(t, 1);
    CHECK(taken > handed);
    CHECK(taken - handed <= 1000ms);
    CHECK(t.sim.violations().empty());
  }
}

TEST_CASE("the end of a run is announced: its backups stop watching it at once") {
  three t(4, 20s);
  t.sim.run_for(60s + 1s);
  for (std::size_t i = 0; i < t.sim.size(); ++i)
    if (i != t.runner()) REQUIRE(t.sim.instance_at(i).watching() == 1);
  t.sim.run_for(19s);  // the handler returns at 1 h + 80 s; no backup check is due at that very moment
  t.sim.run_for(1ms);
  INFO(t.sim.describe());
  REQUIRE(t.events(event_kind::success).size() == 1);
  for (std::size_t i = 0; i < t.sim.size(); ++i) CHECK(t.sim.instance_at(i).watching() == 0);
}

namespace {
/// Takeover checks the backups sent from the finish of the first slot's run
/// (20 s handler) until 5 s after it, when the finish is announced naming
/// its run (EndPushStore) or only its job (PushStore).
std::size_t checks_after_finish(std::uint64_t seed, bool names_run) {
  three t(seed, 20s);
  t.sim.announce_finished_runs(names_run);
  t.sim.run_for(60s + 25s);
  INFO(t.sim.describe());
  const auto done = t.events(event_kind::success);
  REQUIRE(done.size() == 1);
  std::size_t checks = 0;
  for (const auto& op : t.sim.recorded().ops)
    if (op.op == lease::sim::store_op::kind::claim && op.reason == lease::claim_reason::takeover &&
        op.at >= done[0].at)
      ++checks;
  for (std::size_t i = 0; i < t.sim.size(); ++i) CHECK(t.sim.instance_at(i).watching() == 0);
  CHECK(t.sim.violations().empty());
  return checks;
}
}  // namespace

TEST_CASE("an announced finish that names its run ends the backups' watch without another claim") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    CHECK(checks_after_finish(seed, true) == 0);
    CHECK(checks_after_finish(seed, false) == 2);  // each backup asks once, and is told `finished`
  }
}

TEST_CASE("an instance that hears a run's finish before its claim jitter runs out does not claim that slot") {
  // Claims at slot + up to 2 s; each handler runs 100 ms. The first claim
  // wins, and its finish is usually announced before the other two
  // instances' jitter has run out: they would be told only `finished`.
  for (const bool names_run : {true, false}) {
    INFO((names_run ? "the finish names its run (EndPushStore)" : "the finish names only its job (PushStore)"));
    lease::options o = sim_options();
    o.claim_jitter = 2s;
    three t(21, 100ms, o);
    t.sim.announce_finished_runs(names_run);
    t.sim.run_for(10min + 3s);  // ten slots
    INFO(t.sim.describe(200));
    std::size_t claims = 0;
    for (const auto& op : t.sim.recorded().ops)
      if (op.op == lease::sim::store_op::kind::claim && op.reason == lease::claim_reason::scheduled) ++claims;
    std::size_t spared = 0;
    for (const auto& e : t.events(event_kind::skip))
      if (e.message.find("claim not sent: the store announced that this run already ended") != std::string::npos)
        ++spared;
    CHECK(t.sim.recorded().handlers.size() == 10);  // every slot ran, once
    CHECK(t.sim.violations().empty());
    CHECK(claims + spared == 30);  // each instance either claimed a slot or said why not
    if (names_run)
      CHECK(claims <= 12);  // most losing claims spared (all 20, with this seed)
    else
      CHECK(spared == 0);   // a job's name alone says nothing of which run ended
  }
}

TEST_CASE("the winner of a job's last slot claims the next one first, and while it lives the others send nothing") {
  // claim_jitter 2 s, handlers of 100 ms: the winner claims within the first
  // 500 ms, the instances that saw it win from 1 s on, by which time its
  // finish is announced. With one jitter drawn alike for all, the winner
  // changes from slot to slot and losers' claims come through.
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    INFO("seed " << seed);
    lease::options o = sim_options();
    o.claim_jitter = 2s;
    three t(seed, 100ms, o);
    t.sim.announce_finished_runs(true);
    t.sim.run_for(10min + 3s);  // ten slots
    INFO(t.sim.describe(200));
    const auto& h = t.sim.recorded();
    REQUIRE(h.handlers.size() == 10);
    const std::string first = h.handlers[0].instance;
    const time_point slot1 = h.handlers[0].run.slot;
    std::size_t later_claims = 0;
    for (std::size_t i = 1; i < h.handlers.size(); ++i) {
      CHECK(h.handlers[i].instance == first);                         // it won every slot after the first
      CHECK(h.handlers[i].start - h.handlers[i].run.slot < 600ms);  // in the jitter's first quarter (+ a round trip)
    }
    for (const auto& op : h.ops)
      if (op.op == lease::sim::store_op::kind::claim && op.reason == lease::claim_reason::scheduled &&
          op.run.slot > slot1)
        ++later_claims;
    CHECK(later_claims == 9);  // one claim per later slot: the winner's

    // The winner dies: the others still claim within claim_jitter, one of
    // them wins and keeps the job from then on.
    const std::size_t w = t.runner();
    t.sim.crash(w);
    t.sim.run_for(5min);
    REQUIRE(h.handlers.size() == 15);
    std::set<std::string> after;
    for (std::size_t i = 10; i < h.handlers.size(); ++i) {
      CHECK(h.handlers[i].instance != first);
      CHECK(h.handlers[i].start - h.handlers[i].run.slot < 2s + 100ms);
      if (i > 10) after.insert(h.handlers[i].instance);
    }
    CHECK(after.size() == 1);
    CHECK(t.sim.violations().empty());
  }
}

// ---- claims due together go in one round trip ------------------------------

TEST_CASE("the slots of many jobs due at once are claimed in one round trip per instance, each with its own answer") {
  lease::options o = sim_options();
  lease::sim::cluster<> sim(11, o, sim_start);
  for (int j = 0; j < 40; ++j)
    sim.add_job("job" + std::to_string(j), lease::every(60s),
                [](const lease::run_context&) { return lease::sim::script{.runs_for = 1s}; });
  for (const char* n : {"a", "b", "c"}) sim.add_instance(n);
  sim.start_all();
  sim.run_for(60s + 2s);
  INFO(sim.describe(400));
  const auto& h = sim.recorded();
  CHECK(h.handlers.size() == 40);           // every slot ran, once
  std::size_t claims = 0, won = 0;
  std::set<std::uint64_t> batches;
  for (const auto& op : h.ops)
    if (op.op == lease::sim::store_op::kind::claim && op.reason == lease::claim_reason::scheduled) {
      ++claims;
      won += op.outcome == claim_outcome::won ? 1 : 0;
      batches.insert(op.batch);
    }
  CHECK(batches.size() == 3);               // one round trip per instance…
  CHECK(batches.count(0) == 0);
  CHECK(claims == 120);                     // …of 40 claims, each answered on its own
  CHECK(won == 40);
  CHECK(sim.violations().empty());
}

TEST_CASE("a batch of claims whose reply was lost is resent claim by claim with the same tokens, and runs what it won") {
  lease::options o = sim_options();
  lease::sim::cluster<> sim(12, o, sim_start);
  for (int j = 0; j < 10; ++j)
    sim.add_job("job" + std::to_string(j), lease::every(60s),
                [](const lease::run_context&) { return lease::sim::script{.runs_for = 1s}; });
  sim.add_instance("a");
  sim.start_all();
  sim.run_for(59s);
  sim.fail_store(0, lease::errc::unavailable, 1, true);  // the batch is applied; its reply is lost
  sim.run_for(5s);
  INFO(sim.describe(400));
  const auto& h = sim.recorded();
  CHECK(h.handlers.size() == 10);  // all ten won by the lost batch, recognised by their tokens
  for (const auto& r : h.handlers) CHECK(r.attempt == 1);
  CHECK(sim.violations().empty());
}

TEST_CASE("an instance whose store calls take 12 ms keeps up with 60 jobs due every second, and stops in time") {
  // Each second brings 60 claims and 60 finishes. One call at a time, that
  // is 120 × 12 ms = 1.44 s of round trips every second: the loop would fall
  // further behind each second. With the claims in one batch, 0.73 s.
  // One instance: the simulation nests the calls of several blocked
  // instances (cluster::store_round_trip), which is not how overload looks.
  lease::options o = sim_options();
  o.max_late = 500ms;
  lease::sim::cluster<> sim(13, o, sim_start);
  constexpr int jobs = 60;
  for (int j = 0; j < jobs; ++j)
    sim.add_job("job" + std::to_string(j), lease::every(1s),
                [](const lease::run_context&) { return lease::sim::script{.runs_for = 100ms, .honours_stop = 0ms}; });
  sim.add_instance("a");
  sim.store_round_trip(12ms);
  sim.start_all();
  sim.run_for(20s);
  const auto t0 = lease::time_point{} + 1h;
  std::map<std::int64_t, int> starts;  // per second of the store's clock
  for (const auto& r : sim.recorded().handlers) ++starts[(r.start - t0) / 1s];
  for (std::int64_t sec = 2; sec < 19; ++sec) {
    INFO("second " << sec);
    CHECK(starts[sec] == jobs);
  }
  sim.stop(0, 1s);
  sim.run_for(1500ms);
  CHECK(sim.instance_at(0).stopped());
  const auto bad = sim.violations();
  INFO(sim.describe(100));
  CHECK(bad.empty());
}

// ---- a throw is a failure or a hand-over by the handler's own stop token ----

TEST_CASE("a handler that threw on its own is recorded failed, even when the loop sees it after stop()") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  auto& b = c.add(spec_options("B", 2));
  a.s->start();
  b.s->start();
  c.run_until(at(60s));
  REQUIRE(a.started.size() == 1);
  a.behaviour = ends::throws;
  a.exec.run_all();  // it throws before any stop request…
  a.s->stop(5s);     // …and the loop picks the completion up after stop()
  c.run_for(5s);
  CHECK(a.count(event_kind::failed) == 1);
  CHECK(a.count(event_kind::handed_over) == 0);
  CHECK(c.record(at(60s))->status == run_status::failed);
  CHECK(b.count(event_kind::takeover) == 0);  // a failed run is never run again
}

// ---- a store that lost its state ---------------------------------------------

TEST_CASE("after the store loses its state, no instance starts a run a runner may still hold, and fences keep growing") {
  three t(10, 20s);
  t.sim.run_for(60s + 100ms);
  const auto before = t.sim.recorded().handlers.at(0);
  t.sim.run_for(59s);
  t.sim.lose_store_state();  // just before slot 120 s: its claims come during the quarantine
  t.sim.run_for(90s);
  INFO(t.sim.describe());
  CHECK(t.sim.violations().empty());
  const auto& h = t.sim.recorded().handlers;
  for (std::size_t i = 1; i < h.size(); ++i) {
    CHECK(h[i].run != before.run);  // the forgotten run is never started again
    CHECK(h[i].fence > before.fence);
  }
  CHECK(h.size() >= 2);  // later slots run
  CHECK_FALSE(t.events(event_kind::store_notice).empty());
}

// A store that notices a loss only by a marker read beside its claims, as
// Redis does. The fault of 1367506: a FLUSHALL while a runs the slot; b,
// whose clock is behind, claims the slot afterwards; the script wins it for
// b on the forgotten state, and b's reply is lost, the marker's answer with
// it. b's resend is answered `running` with its own token; the marker beside
// it shows the loss, and the run is ended: b starts nothing, and no backup
// takes the ended run over later. (b is a process started since its last
// claim of the job: a fence it remembered would prove the loss inside the
// script, rules::prove_loss, and the script would not win.)
TEST_CASE("a loss noticed beside claims: a win on the forgotten state whose reply was lost starts nothing at its "
          "resend, then or later") {
  lease::sim::cluster<> sim(3, sim_options(), sim_start);
  sim.notice_losses_beside_claims(true);
  sim.add_job("report", lease::every(60s), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 20s, .honours_stop = 0ms};
  });
  sim.add_instance("a");
  sim.add_instance("b", -1700ms);  // claims each slot 1.7 s after a
  sim.start_all();
  sim.run_for(30s);
  sim.crash(1);
  sim.restart(1);  // b remembers no fence of the job
  // Between a's heartbeats (every 500 ms from the slot): a refused one
  // would prove the loss with a's fence before b's claim is sent.
  sim.run_for(31s + 600ms);
  const auto& h = sim.recorded().handlers;
  REQUIRE_FALSE(h.empty());
  const lease::sim::handler_run ran = h.back();
  REQUIRE(ran.instance == "a");  // a runs the slot of 1 h + 60 s
  const std::size_t before = h.size();
  sim.lose_store_state();                                     // FLUSHALL: nothing knows yet
  sim.fail_store(1, lease::errc::outcome_unknown, 1, true);  // b's next call: applied, its reply lost
  sim.run_for(40s);
  INFO(sim.describe());
  CHECK(sim.handed_back(true) == 1);  // the resend was answered running, ours, and handed back
  for (std::size_t i = before; i < h.size(); ++i) CHECK(h[i].run != ran.run);  // never started again
  CHECK(sim.violations().empty());
  bool told = false;
  for (const auto& e : sim.recorded().events)
    told = told || (e.instance == "b" && e.run == ran.run && e.kind == event_kind::late &&
                    e.message.find("it is not started") != std::string::npos);
  CHECK(told);
  const auto rec = sim.backing_store().get(ran.run);
  REQUIRE(rec);
  CHECK(rec->status == run_status::interrupted);  // ended, never to be taken over
}

// The same store, and an operator's trigger through an instance's API in
// the very millisecond of a slot won early before the loss, asked before
// anything noticed the loss, its reply lost (so its marker answer too): its
// key may be the forgotten run's, so it is answered, not run, and an event
// says what to do.
TEST_CASE("a loss noticed beside claims: a trigger asked before the notice, its reply lost, is dropped with an "
          "event rather than run at a forgotten run's key") {
  lease::sim::cluster<> sim(5, sim_options(), sim_start);
  sim.notice_losses_beside_claims(true);
  sim.add_job("report", lease::every(60s), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 100ms, .honours_stop = 0ms};
  });
  sim.add_instance("a", 800ms);  // claims each slot 800 ms early (within early_tolerance)
  sim.add_instance("b", -2s);
  sim.start_all();
  const lease::time_point slot = sim.now() + 120s - sim.now().time_since_epoch() % 60s;
  sim.run_until(slot - 500ms);  // a won the slot early and ran it
  const auto& h = sim.recorded().handlers;
  REQUIRE_FALSE(h.empty());
  REQUIRE(h.back().run.slot == slot);
  const std::size_t ran = h.size();
  sim.lose_store_state();
  sim.run_until(slot);  // the slot's own millisecond, on the store's clock
  sim.fail_store(0, lease::errc::unavailable, 1, true);  // a's next call: applied, its reply lost
  sim.trigger_on(0, "report");
  sim.run_for(40s);
  INFO(sim.describe());
  for (std::size_t i = ran; i < h.size(); ++i) CHECK(h[i].run.slot != slot);  // never run again
  CHECK(sim.violations().empty());
  int told = 0;
  for (const auto& e : sim.recorded().events)
    told += e.run.slot == slot && e.message.find("was asked before the store noticed that it lost its state") !=
                                      std::string::npos;
  CHECK(told == 1);
}

// A loss of one job's state alone (an evicted key), unnoticed, after a loss
// the store did notice. c was frozen since before that loss, so the fence
// it remembers was won before it: the recorded loss explains c's proof,
// and every other job's horizon stays where it was. But the slot c claims
// late was run since, by another instance, and lost with the job's key:
// the job's own horizon is the proof's moment, so c does not run it again.
TEST_CASE("a loss of one job's state, proved by a fence from before a recorded loss, does not run again a slot "
          "run since") {
  lease::sim::cluster<> sim(7, sim_options(), sim_start);
  sim.add_job("report", lease::every(10s), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 5s, .honours_stop = 0ms};
  });
  for (const char* n : {"a", "b", "c"}) sim.add_instance(n);
  sim.start_all();
  const lease::time_point t0 = sim.now() - 1ms;  // slot 1 h
  sim.run_until(t0 + 11500ms);  // slot 10 s ran; every instance saw its fence
  sim.freeze(2, 8900ms);        // c, until 20.4 s
  sim.run_until(t0 + 12s);
  sim.lose_store_state();  // noticed at once: slots up to 13 s skipped, claims wait until 15 s
  sim.run_until(t0 + 20300ms);  // a or b runs slot 20 s, with a fence won after the loss
  const auto& h = sim.recorded().handlers;
  const lease::run_key slot20{"report", t0 + 20s};
  REQUIRE(std::count_if(h.begin(), h.end(), [&](const auto& r) { return r.run == slot20; }) == 1);
  REQUIRE(sim.lose_job_state("report"));  // its key evicted while slot 20 s runs
  sim.run_for(30s);  // c thaws at 20.4 s and claims slot 20 s, 400 ms late, before the runner's next heartbeat
  INFO(sim.describe());
  CHECK(sim.violations().empty());
  CHECK(std::count_if(h.begin(), h.end(), [&](const auto& r) { return r.run == slot20; }) == 1);
  CHECK(sim.fence_proofs(true) >= 1);  // c's proof, explained by the recorded loss
  CHECK(std::any_of(h.begin(), h.end(), [&](const auto& r) { return r.run.slot >= t0 + 30s; }));  // later slots run
}

// A backup restored whole (a PostgreSQL database, a Redis dump): the marker
// comes back with it, so nothing notices the loss by itself. The backup was
// taken as an operator's trigger was asked: it holds the trigger pending,
// and the manual run won since is forgotten. Every instance saw that run's
// fence (the winner in its win, the others in their `running` answers), so
// the first claim that carries it finds the restored counter below it: the
// trigger, asked again, is answered without running the slot a second time.
// (Found by the property tests as a trigger run twice, with these proofs
// ignored.)
TEST_CASE("a restored backup that nothing notices is proved by the first fence above a restored counter, and a "
          "trigger run since does not run again") {
  lease::sim::cluster<> sim(11, sim_options(), sim_start);
  sim.add_job("report", lease::every(1h), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 2s, .honours_stop = 0ms};
  });
  for (const char* n : {"a", "b", "c"}) sim.add_instance(n);
  sim.start_all();
  const lease::time_point t0 = sim.now();
  sim.run_until(t0 + 1s);
  sim.trigger_job("report");
  sim.take_store_backup();  // before any claim of the trigger
  sim.run_until(t0 + 1500ms);
  const auto& h = sim.recorded().handlers;
  auto manual_runs = [&] {  // the trigger's: a slot between the schedule's
    return std::count_if(h.begin(), h.end(), [&](const auto& r) { return r.run.slot > t0 && r.run.slot < t0 + 1h; });
  };
  REQUIRE(manual_runs() == 1);
  REQUIRE(sim.restore_store_backup_unnoticed());
  REQUIRE(sim.loss_unproven());
  sim.trigger_job("report");  // the restored trigger, still pending, pushed again
  sim.run_for(30s);
  INFO(sim.describe());
  CHECK(sim.violations().empty());
  CHECK_FALSE(sim.loss_unproven());
  CHECK(sim.fence_proofs() >= 1);
  CHECK(manual_runs() == 1);
}

// What detection cannot see, and why restore_store_backup_unnoticed() does
// not land then: a job whose only change since the backup was a run's end
// (or a pause, or an answered trigger) carries no fence above the restored
// counter (doc/protocol.md §15).
TEST_CASE("an unnoticed restore does not land where a job changed since the backup without a win") {
  lease::sim::cluster<> sim(12, sim_options(), sim_start);
  sim.add_job("report", lease::every(10s), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 2s, .honours_stop = 0ms};
  });
  for (const char* n : {"a", "b"}) sim.add_instance(n);
  sim.start_all();
  const lease::time_point t0 = sim.now();
  sim.run_until(t0 + 11s);  // slot 10 s runs
  sim.take_store_backup();
  sim.run_until(t0 + 13s);  // and ends: the only change since the backup
  CHECK_FALSE(sim.restore_store_backup_unnoticed());
  sim.run_until(t0 + 21s);  // slot 20 s won: a fence above the backup's counter, seen by both
  CHECK(sim.restore_store_backup_unnoticed());
  sim.run_for(30s);
  INFO(sim.describe());
  CHECK(sim.violations().empty());
}

TEST_CASE("an instance restarted under the same id does not call itself the backup of its own run") {
  cluster c{at(1s)};
  auto& old = c.add(spec_options("api-3", 1));
  old.s->start();
  c.run_until(at(60s));
  REQUIRE(old.started.size() == 1);
  old.down = true;  // kill -9: the run's lease is still live
  auto o = spec_options("api-3", 2);
  o.catch_up = 300s;
  auto& again = c.add(o);  // the same instance id, a new process
  again.s->start();
  c.run_until(at(61s));
  REQUIRE(again.count(event_kind::backup) == 1);
  const std::string msg = again.of(event_kind::backup)[0].message;
  CHECK(msg.find("earlier process with this instance's id") != std::string::npos);
  CHECK(msg.find("runs on api-3 with a live lease; this instance is its backup") == std::string::npos);
}

TEST_CASE("lease_held() reads the clock itself: a handler resumed from a freeze sees the loss before any other thread ran") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.started.size() == 1);
  const lease::run_context& ctx = a.started[0];
  CHECK(ctx.lease_held());
  // The whole process froze: no poll, no watchdog; only the clock moved.
  c.clock.advance(27s);  // lease − safety margin after the claim was sent
  CHECK_FALSE(ctx.stop.stop_requested());  // nobody has told the handler…
  CHECK_FALSE(ctx.lease_held());            // …but it sees the loss itself,
  CHECK(ctx.stop.stop_requested());         // and its stop token is requested with it
}

TEST_CASE("a claim resent until it is answered counts its lease from the first send, when the store may have applied it") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(59s));
  c.store.fail_next(op::claim, lease::errc::unavailable, /*applied=*/true);  // applied at 60 s, reply lost
  for (int i = 0; i < 3; ++i) c.store.fail_next(op::claim, lease::errc::unavailable);  // then ≥ 700 ms of retries
  for (duration t = 60s; t < 62s && a.started.empty(); t += 10ms) c.run_until(at(t));  // up to the win, no heartbeat yet
  REQUIRE(a.started.size() == 1);
  CHECK(a.started[0].attempt == 1);
  CHECK(c.store.calls(op::claim) == 5);
  // The store started the lease at 60 s: the self-abort deadline is 60 s +
  // lease − margin (27 s), not counted from the resend that got the answer.
  CHECK(a.started[0].lease_state->deadline().time_since_epoch() <= (at(60s) + 27s).time_since_epoch());
}

// Found by a review: send_end caught only store_error, so a store's bug
// escaped poll() (std::terminate on a real loop), and the attempt stayed
// `finishing` with no retry, its lease renewed for ever: every later slot of
// the job was skipped as an overlap.
TEST_CASE("a finish that throws something other than a store_error is read back, and the job runs on") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.count(event_kind::won) == 1);
  c.store.throw_foreign_next(op::finish);
  a.exec.run_all();  // the handler returns; its finish throws a std::runtime_error
  CHECK_NOTHROW(a.s->poll());
  CHECK_NOTHROW(c.run_until(at(120s)));
  CHECK(c.record(at(60s))->status == run_status::success);  // resent after the read-back found it not applied
  CHECK(a.count(event_kind::success) == 1);
  CHECK(a.has(event_kind::won, at(120s)));  // not skipped behind a run left `finishing` for ever
  a.exec.run_all();
  c.run_until(at(180s));
  CHECK(a.has(event_kind::won, at(180s)));
  CHECK(a.count(event_kind::skip) == 0);
}

// Found by a review: a heartbeat refused because the finish had applied
// (its reply lost, the read-back failing for a moment) fenced the attempt.
TEST_CASE("a finish applied with its reply lost and then a refused renewal is recorded as success, not lost") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->start();
  c.run_until(at(64500ms));
  REQUIRE(a.count(event_kind::won) == 1);
  c.store.fail_next(op::finish, lease::errc::outcome_unknown, /*applied=*/true);
  for (int i = 0; i < 4; ++i) c.store.fail_next(op::get, lease::errc::unavailable);  // read-backs fail a while
  a.exec.run_all();
  c.run_until(at(70s));  // the next renewal, refused: the run has ended
  CHECK(c.record(at(60s))->status == run_status::success);
  CHECK(a.count(event_kind::success) == 1);
  CHECK(a.count(event_kind::lost) == 0);
}

// Found by a review: the loop blocked past the self-abort deadline, the
// watchdog asked the handler to stop, then the loop's late renewal was
// acknowledged: nothing said why the handler had stopped, and its throw was
// reported as a plain hand-over.
TEST_CASE("a renewal due after the self-abort deadline is not sent: the attempt is lost, and the event says why") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.behaviour = ends::throws_if_stopped;
  a.s->start();
  c.run_until(at(70s));  // won at 60 s, renewed at 65 s and 70 s (lease 30 s, margin 3 s)
  REQUIRE(a.started.size() == 1);
  a.down = true;  // the loop is blocked (a store call that hangs) ...
  c.run_until(at(98s));
  a.down = false;
  a.s->check_leases();  // ... while the watchdog thread runs: the deadline, 97 s, has passed
  CHECK(a.started[0].stop.stop_requested());
  const auto heartbeats = c.store.calls(op::heartbeat);
  a.s->poll();  // the loop comes back: its overdue renewal is not sent
  CHECK(c.store.calls(op::heartbeat) == heartbeats);
  REQUIRE(a.count(event_kind::lost) == 1);
  CHECK(a.of(event_kind::lost)[0].message.find("no heartbeat acknowledged for lease − safety margin") !=
        std::string::npos);
  a.exec.run_all();  // the handler saw its stop token and throws: nothing more is sent for it
  c.run_until(at(100s));
  CHECK(a.count(event_kind::handed_over) == 0);
}

// One master of a Redis Cluster down fails the renewals of the jobs it
// serves, not the whole batch. Before, any failure in a batch counted no
// renewal at all: every runner of the instance reached its self-abort
// deadline, on every master, and a refusal in the batch went unheard.
TEST_CASE("renewals answered in a batch that failed in part count, and a refusal among them stops its runner") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("A", 1));
  a.s->add("other", lease::every(60s), [](lease::run_context&) {});
  a.s->add("third", lease::every(60s), [](lease::run_context&) {});
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.count(event_kind::won) == 3);
  const auto third = std::find_if(a.started.begin(), a.started.end(), [](const auto& x) { return x.job == "third"; });
  REQUIRE(third != a.started.end());
  REQUIRE(c.store.inner().release({"third", at(60s)}, third->token));  // its next renewal is refused
  c.store.fail_job_in_batches("other", 10);  // 50 s of heartbeats: past other's self-abort deadline
  c.run_until(at(66s));
  REQUIRE(a.count(event_kind::lost) == 1);  // the refusal, heard in the failed batch
  CHECK(a.of(event_kind::lost)[0].run.job == "third");
  c.run_until(at(110s));
  REQUIRE(a.count(event_kind::lost) == 2);
  CHECK(a.of(event_kind::lost)[1].run.job == "other");  // its master down: its runner stops at its deadline
  CHECK(c.record(at(60s))->lease_end > at(110s));       // report's master answered: still renewed
  CHECK(a.count(event_kind::store_error) >= 1);
}
