// Finishes and releases batched like claims (BatchFinishStore, issue #13):
// handlers that end in one loop turn are recorded in one round trip, and
// stop()'s hand-over of many running handlers costs a few round trips, not
// one per handler. On lease::sim, whose every store call takes a round trip.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "lease/executor/manual.hpp"
#include "lease/schedule/every.hpp"
#include "lease/sim.hpp"
#include "lease/store/memory.hpp"

namespace {

using namespace std::chrono_literals;
using lease::event_kind;
using lease::time_point;
using lease::sim::store_op;

std::size_t count_events(const lease::sim::history& h, event_kind k) {
  std::size_t n = 0;
  for (const auto& e : h.events) n += e.kind == k ? 1 : 0;
  return n;
}

/// A cluster that starts between two slots of every(1min), with no catch-up.
/// Between two slots of every(1min), with nothing to catch up (every burst
/// below is a scheduled slot) and no claim jitter.
const time_point start = time_point{} + 1h + 30s;
lease::options quiet_start() {
  lease::options o;
  o.catch_up = 0ms;
  o.claim_jitter = 0ms;  // every claim of a burst in one round trip, every handler ending together
  return o;
}

/// `jobs` jobs every minute, all due at the same instant, each running `plan`,
/// on one instance "a" whose every store call takes `rt`.
void add_burst(lease::sim::cluster<>& sim, int jobs, lease::sim::script plan, lease::duration rt) {
  for (int j = 0; j < jobs; ++j)
    sim.add_job("job" + std::to_string(j), lease::every(1min), [plan](const lease::run_context&) { return plan; });
  sim.add_instance("a");
  sim.store_round_trip(rt);
  sim.start_all();
}

/// The finish_many calls (their numbers) that carried the ops of kind `k`.
std::set<std::uint64_t> batches_of(const lease::sim::history& h, store_op::kind k) {
  std::set<std::uint64_t> out;
  for (const auto& op : h.ops)
    if (op.op == k) out.insert(op.batch);
  return out;
}

}  // namespace

TEST_CASE("handlers that end in the same loop turn are recorded in one round trip, each by its own rule") {
  lease::sim::cluster<> sim(1, quiet_start(), start);
  add_burst(sim, 40, {.runs_for = 2s}, 5ms);
  sim.run_for(2min);  // two bursts of 40, at +30 s and +90 s

  const auto& h = sim.recorded();
  REQUIRE(h.handlers.size() == 80);
  CHECK(count_events(h, event_kind::success) == 80);
  std::size_t finishes = 0;
  for (const auto& op : h.ops) finishes += op.op == store_op::kind::finish && op.accepted ? 1 : 0;
  CHECK(finishes == 80);
  // One finish_many per burst: 0 would mean a finish sent alone.
  CHECK(batches_of(h, store_op::kind::finish) == std::set<std::uint64_t>{1, 2});
  CHECK(sim.violations().empty());
}

TEST_CASE("stop() hands 150 running handlers over in a few round trips, not one per handler") {
  // 150 handlers behind a 12 ms store: one release each took 1.8 s.
  constexpr auto rt = 12ms;
  lease::sim::cluster<> sim(2, quiet_start(), start);
  add_burst(sim, 150, {.runs_for = 10min, .honours_stop = 0ms}, rt);
  sim.run_for(31s);
  REQUIRE(sim.instance_at(0).running() == 150);

  const time_point stop_at = sim.now();
  sim.stop(0, 5s);
  sim.run_for(10s);

  const auto& h = sim.recorded();
  CHECK(sim.instance_at(0).stopped());
  CHECK(count_events(h, event_kind::handed_over) == 150);
  CHECK(batches_of(h, store_op::kind::release) == std::set<std::uint64_t>{1});
  time_point last = stop_at;
  for (const auto& op : h.ops) last = std::max(last, op.at);
  INFO("the last store call came " << (last - stop_at).count() << " ms after stop()");
  CHECK(last - stop_at <= 4 * rt);
  CHECK(sim.violations().empty());
}

TEST_CASE("a batch of finishes whose reply is lost: each run is read back and recorded once, none lost") {
  lease::sim::cluster<> sim(3, quiet_start(), start);
  add_burst(sim, 20, {.runs_for = 2s}, 5ms);
  sim.run_for(1min + 31s);  // the second burst is running; its finishes are the next store call
  REQUIRE(sim.instance_at(0).running() == 20);
  sim.fail_store(0, lease::errc::outcome_unknown, 1, /*applied=*/true);
  sim.run_for(5s);

  const auto& h = sim.recorded();
  CHECK(count_events(h, event_kind::success) == 40);
  CHECK(count_events(h, event_kind::lost) == 0);
  REQUIRE(!h.faults.empty());
  CHECK(h.faults.back().second == "failed call a");
  // Read back, not resent: a resent finish would be refused (the run has
  // ended) and its attempt reported lost.
  std::size_t finishes = 0;
  for (const auto& op : h.ops) finishes += op.op == store_op::kind::finish ? 1 : 0;
  CHECK(finishes == 40);
  CHECK(sim.violations().empty());
}

TEST_CASE("a batch of finishes that never reached the store is resent, and each run is recorded once") {
  lease::sim::cluster<> sim(4, quiet_start(), start);
  add_burst(sim, 20, {.runs_for = 2s}, 5ms);
  sim.run_for(1min + 31s);
  REQUIRE(sim.instance_at(0).running() == 20);
  sim.fail_store(0, lease::errc::unavailable, 1, /*applied=*/false);
  sim.run_for(5s);

  const auto& h = sim.recorded();
  CHECK(count_events(h, event_kind::success) == 40);
  CHECK(count_events(h, event_kind::store_error) >= 1);  // the fault was reported
  std::size_t finishes = 0;
  for (const auto& op : h.ops) finishes += op.op == store_op::kind::finish ? 1 : 0;
  CHECK(finishes == 40);  // the 20 refused before applying are not in the store's record
  CHECK(sim.violations().empty());
}

namespace {

/// A memory_store whose finish_many throws something other than a
/// store_error (a buggy store, against law L6) while `bad` > 0.
struct buggy_batch_store : lease::memory_store<lease::fake_clock> {
  using lease::memory_store<lease::fake_clock>::memory_store;
  std::shared_ptr<int> bad = std::make_shared<int>(0);
  std::vector<bool> finish_many(std::span<const lease::finish_request> batch) {
    if (*bad > 0) {
      --*bad;
      throw std::runtime_error("a bug in the store");
    }
    return lease::memory_store<lease::fake_clock>::finish_many(batch);
  }
};

}  // namespace

TEST_CASE("a finish_many that throws something other than a store_error loses no result, and stop() still ends") {
  lease::fake_clock clock{start};
  lease::manual_executor exec;
  buggy_batch_store store{clock};
  const std::shared_ptr<int> bad = store.bad;
  lease::options o = quiet_start();
  o.instance = "a";
  lease::scheduler<buggy_batch_store, lease::fake_clock, lease::manual_executor, lease::skip_t> s(
      store, clock, exec, lease::skip_t{}, o);
  std::vector<lease::event> events;
  s.on_event([&](const lease::event& e) { events.push_back(e); });
  for (int j = 0; j < 3; ++j) s.add("job" + std::to_string(j), lease::every(1min), [](lease::run_context&) {});
  s.start();
  clock.set(time_point{} + 2h);
  s.poll();
  REQUIRE(exec.pending() == 3);
  *bad = 1;
  exec.run_all();  // the three end together: one finish_many, which throws
  s.poll();
  for (int i = 0; i < 20 && s.running() > 0; ++i) {
    clock.advance(1s);
    s.poll();
  }
  for (int j = 0; j < 3; ++j) {
    auto rec = s.store().get({"job" + std::to_string(j), time_point{} + 2h});
    REQUIRE(rec.has_value());
    CHECK(rec->status == lease::run_status::success);  // read back or resent: recorded once, as success
  }
  auto count = [&](event_kind k) { return std::count_if(events.begin(), events.end(), [k](const auto& e) { return e.kind == k; }); };
  CHECK(count(event_kind::success) == 3);
  CHECK(count(event_kind::lost) == 0);

  // The same at stop()'s deadline: the queued ends are sent, fail, and stop() ends regardless.
  clock.set(time_point{} + 2h + 1min);
  s.poll();
  REQUIRE(exec.pending() == 3);
  exec.run_all();
  *bad = 100;
  s.stop(0ms);
  for (int i = 0; i < 5 && !s.stopped(); ++i) {
    clock.advance(1s);
    s.poll();
  }
  CHECK(s.stopped());
}

// Found by a review: a claim batch that filled up mid-turn went out before
// the finishes of that turn, so a job whose run had just ended was answered
// `overlap` for its next slot, and the event blamed a lease already ended.
TEST_CASE("a full claim batch goes out after the finishes of its turn: a run that ended frees its next slot") {
  lease::fake_clock clock{start};
  lease::manual_executor exec;
  lease::memory_store<lease::fake_clock> store{clock};
  lease::options o = quiet_start();
  o.instance = "a";
  lease::scheduler<lease::memory_store<lease::fake_clock>, lease::fake_clock, lease::manual_executor, lease::skip_t> s(
      store, clock, exec, lease::skip_t{}, o);
  std::vector<lease::event> events;
  s.on_event([&](const lease::event& e) { events.push_back(e); });
  const int jobs = 300;  // more than one claim batch (max_claim_batch, 256)
  std::string ended;  // the job whose handler returns first
  for (int j = 0; j < jobs; ++j)
    s.add("job" + std::to_string(j), lease::every(1min), [&](lease::run_context& c) {
      if (ended.empty()) ended = c.job;
    });
  s.start();
  const time_point first = time_point{} + 2h, second = first + 1min;
  clock.set(first);
  s.poll();
  REQUIRE(exec.pending() == static_cast<std::size_t>(jobs));
  for (;;) {  // every heartbeat until just before the next slot
    auto w = s.next_wakeup();
    if (!w || *w >= second - 1ms) break;
    clock.set(std::max(*w, clock.now()));
    s.poll();
  }
  clock.set(second - 1ms);
  s.poll();
  REQUIRE(exec.run_one());  // one handler returns just before its job's next slot
  clock.set(second);
  s.poll();  // one turn: its completion, and every slot due now
  auto of = [&](event_kind k, const std::string& job) {
    return std::count_if(events.begin(), events.end(), [&](const auto& e) { return e.kind == k && e.run.job == job; });
  };
  REQUIRE_FALSE(ended.empty());
  CHECK(of(event_kind::success, ended) == 1);
  CHECK(of(event_kind::skip, ended) == 0);
  CHECK(of(event_kind::won, ended) == 2);
}
