// "Trigger now" (doc/protocol.md "Trigger now") on fake time: an operator's
// trigger, through an instance's API or from outside every instance (a copy
// of the store, as leasectl), is run exactly once across the cluster, as a
// manual run (run_context::manual, run_record::manual); a store that pushes
// has it picked up in the next loop turn, one that cannot within
// options.trigger_poll; the job's overlap mode and a pause apply, each
// refusal says why in an event; a backup takes a dead runner's manual run
// over; and the schedule's slots run as before.
#include <catch2/catch.hpp>

#include <span>

#include "harness.hpp"
#include "store_cluster.hpp"

using namespace test;
using lease::event_kind;
using lease::run_status;

namespace {

using mem = lease::memory_store<lease::fake_clock>;

/// A memory_store that cannot push triggers (as SQLite): listen_triggers is
/// hidden, so the scheduler polls triggers(); the polls are counted.
class polled_store : public mem {
 public:
  explicit polled_store(lease::fake_clock c) : mem(c) {}
  void listen_triggers(lease::trigger_listener) = delete;
  std::vector<lease::run_key> triggers(std::span<const std::string> jobs) {
    ++*polls;
    return mem::triggers(jobs);
  }
  std::shared_ptr<int> polls = std::make_shared<int>(0);
};
static_assert(lease::TriggerStore<polled_store> && !lease::PushTriggerStore<polled_store>);
static_assert(lease::PushTriggerStore<mem>);

/// test::cluster (harness.hpp) over a TriggerStore.
template <class Store = mem, class Policy = lease::skip_t>
using tcluster = store_cluster<Store, Policy>;

}  // namespace

TEST_CASE("trigger(): a manual run through an instance's API runs exactly once across 3 instances, the next slot still runs") {
  tcluster<> c;
  for (int i = 0; i < 3; ++i) c.add(spec_options("api-" + std::to_string(i), i + 1));
  c.start_all();
  c.run_until(at(10s));
  const time_point slot = c.nodes[1]->s->trigger("report");
  CHECK(slot == at(10s));  // the store's clock at the request
  CHECK(c.nodes[1]->s->trigger("report") == slot);  // a second request while pending asks nothing more
  c.run_until(at(10s));    // one loop turn, no time passes
  const auto runs = c.started_at(slot);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].manual);
  CHECK(runs[0].is_manual());
  CHECK(runs[0].reason == lease::claim_reason::manual);
  CHECK(runs[0].attempt == 1);
  CHECK(runs[0].fence > 0);
  REQUIRE(c.record(slot));
  CHECK(c.record(slot)->manual);  // marked in the job's history
  CHECK(c.pending().empty());     // answered
  const auto won = c.events_of(event_kind::won);
  REQUIRE(won.size() == 1);
  CHECK(says(won[0], "manual claim won"));
  CHECK(says(won[0], "manual run of job report"));
  CHECK(c.events_of(event_kind::backup).size() == 2);  // the other two back it up
  for (auto& n : c.nodes) c.finish_handlers(*n);
  CHECK(c.record(slot)->status == run_status::success);

  c.run_until(at(61s));
  CHECK(c.started_at(at(60s)).size() == 1);  // the schedule goes on as before
  CHECK_FALSE(c.started_at(at(60s))[0].manual);
  CHECK(c.started_at(slot).size() == 1);     // and the manual run never ran again
}

TEST_CASE("trigger(): an unknown job and a stopped instance are refused with a sentence") {
  tcluster<> c;
  auto& a = c.add(spec_options("api-1", 1));
  a.s->start();
  CHECK_THROWS_WITH(a.s->trigger("nightly"), Catch::Contains("no job named \"nightly\""));
  a.s->stop();
  CHECK_THROWS_WITH(a.s->trigger("report"), Catch::Contains("stop() was called"));
}

TEST_CASE("a trigger from outside every instance is picked up by a pushing store in the next loop turn") {
  tcluster<> c;
  for (int i = 0; i < 3; ++i) c.add(spec_options("api-" + std::to_string(i), i + 1));
  c.start_all();
  c.run_until(at(10s) + 300ms);
  mem operator_copy = c.store;  // leasectl's own store object
  const time_point slot = operator_copy.trigger("report");
  for (auto& n : c.nodes) n->s->poll();  // one loop turn each, on the same millisecond
  CHECK(c.clock.now() == slot);
  const auto runs = c.started_at(slot);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].manual);
  CHECK(c.pending().empty());
}

TEST_CASE("a trigger from outside is picked up within trigger_poll on a store that cannot push, the poll is one call per instance per interval") {
  tcluster<polled_store> c;
  for (int i = 0; i < 3; ++i) {
    auto o = spec_options("api-" + std::to_string(i), i + 1);
    o.trigger_poll = 2s;
    c.add(o);
  }
  c.start_all();
  c.run_until(at(1s));
  CHECK(*c.store.polls == 3);  // one poll each at start
  c.run_until(at(21s) - 1ms);
  CHECK(*c.store.polls == 3 + 3 * 9);  // idle: one call per instance per 2 s
  c.run_until(at(21s));
  c.clock.set(at(21s) + 500ms);
  polled_store operator_copy = c.store;
  const time_point slot = operator_copy.trigger("report");
  c.poll_all();
  CHECK(c.started_at(slot).empty());  // nobody polled yet
  c.run_until(slot + 2s);
  const auto runs = c.started_at(slot);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].manual);
  CHECK(c.pending().empty());
}

TEST_CASE("skip mode: a trigger while a run is live is not run, and an event says why") {
  tcluster<> c;
  auto& a = c.add(spec_options("api-1", 1));
  auto& b = c.add(spec_options("api-2", 2));
  c.start_all();
  c.run_until(at(61s));
  REQUIRE(c.started_at(at(60s)).size() == 1);  // held running by the manual executor
  const time_point slot = c.store.trigger("report");
  c.run_until(slot + 1s);
  CHECK(c.started_at(slot).empty());
  CHECK_FALSE(c.record(slot).has_value());
  CHECK(c.pending().empty());  // dropped
  const auto skips = c.events_of(event_kind::skip);
  REQUIRE(skips.size() == 1);  // the instance that answered the trigger says why; the other got `none`
  CHECK(skips[0].run.slot == slot);
  CHECK(says(skips[0], "manual run of job report not run"));
  CHECK(says(skips[0], "overlap mode is skip"));
  c.finish_handlers(a);
  c.finish_handlers(b);
  c.run_until(at(100s));
  CHECK(c.started_at(slot).empty());  // not run after the live run ended either
}

TEST_CASE("buffer_one mode: a trigger while a run is live runs once that run has ended") {
  tcluster<mem, lease::buffer_one_t> c;
  auto& a = c.add(spec_options("api-1", 1));
  auto& b = c.add(spec_options("api-2", 2));
  c.start_all();
  c.run_until(at(61s));
  REQUIRE(c.started_at(at(60s)).size() == 1);
  const time_point slot = c.store.trigger("report");
  c.run_until(slot + 10s);
  CHECK(c.started_at(slot).empty());  // waits
  CHECK(c.pending().size() == 1);     // still pending in the store
  const auto waits = c.events_of(event_kind::skip);
  REQUIRE(waits.size() >= 1);
  CHECK(says(waits[0], "manual run of job report waits"));
  c.finish_handlers(a);
  c.finish_handlers(b);
  c.run_for(100ms);
  const auto runs = c.started_at(slot);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].manual);
  CHECK(c.pending().empty());
  c.run_for(30s);
  CHECK(c.started_at(slot).size() == 1);
  CHECK(c.events_of(event_kind::skip).size() == waits.size());  // said once per instance, not at every re-claim
}

TEST_CASE("a paused job's trigger is not run, an event says the job is paused, the trigger is dropped") {
  tcluster<> c;
  c.add(spec_options("api-1", 1));
  c.add(spec_options("api-2", 2));
  c.start_all();
  c.run_until(at(10s));
  REQUIRE(c.store.pause("report"));
  const time_point slot = c.nodes[0]->s->trigger("report");
  c.run_until(slot + 1s);
  CHECK(c.started_at(slot).empty());
  CHECK(c.pending().empty());
  const auto paused = c.events_of(event_kind::paused);
  REQUIRE(paused.size() == 1);
  CHECK(paused[0].run.slot == slot);
  CHECK(says(paused[0], "manual run of job report not run: the job is paused"));
  REQUIRE(c.store.resume("report"));
  c.run_until(at(61s));
  CHECK(c.started_at(slot).empty());           // not run after the resume either
  CHECK(c.started_at(at(60s)).size() == 1);    // the schedule goes on
}

TEST_CASE("a manual run whose runner dies is taken over by a backup, still as a manual run") {
  tcluster<> c;
  c.add(spec_options("api-1", 1));
  c.add(spec_options("api-2", 2));
  c.add(spec_options("api-3", 3));
  c.start_all();
  c.run_until(at(5s));
  const time_point slot = c.store.trigger("report");
  c.run_until(slot);
  REQUIRE(c.started_at(slot).size() == 1);
  const std::string runner = c.record(slot)->runner;
  for (auto& n : c.nodes)
    if (n->s->instance() == runner) n->down = true;  // the process dies
  c.run_until(slot + 30s + 2 * 5s + 1s);  // lease + 2 × heartbeat
  const auto runs = c.started_at(slot);
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].attempt == 2);
  CHECK(runs[1].manual);
  CHECK(runs[1].reason == lease::claim_reason::takeover);
  CHECK(c.record(slot)->runner != runner);
  CHECK(c.record(slot)->manual);
  CHECK(c.events_of(event_kind::takeover).size() == 1);
}

TEST_CASE("a trigger in the claim jitter of a slot does not make that slot superseded: the slot is claimed first") {
  tcluster<> c;
  for (int i = 0; i < 2; ++i) {
    auto o = spec_options("api-" + std::to_string(i), i + 1);
    o.claim_jitter = 500ms;
    c.add(o);
  }
  c.start_all();
  c.run_until(at(60s) - 1ms);
  c.clock.set(at(60s) + 1ms);  // slot 60 s is due, no instance has claimed it yet
  const time_point slot = c.store.trigger("report");
  c.run_until(at(62s));
  CHECK(c.started_at(at(60s)).size() == 1);
  CHECK(c.events_of(event_kind::superseded).empty());
  // skip mode: the manual run found the slot's run live, and says so
  CHECK(c.started_at(slot).empty());
  CHECK(c.events_of(event_kind::skip).size() == 1);
}

// rules::trigger_slot through the scheduler: a trigger asked in the
// millisecond the store noticed a loss is set past the loss's horizon, so
// that it cannot share a key with a scheduled run the loss forgot; the
// instances' claims of it, sent before that slot, are answered early with an
// event that blames no wall clock, and it runs once, after the quarantine.
TEST_CASE("a trigger asked as the store lost its state runs once, after the quarantine, at a slot past the loss") {
  tcluster<> c;
  for (int i = 0; i < 3; ++i) c.add(spec_options("api-" + std::to_string(i), i + 1));
  c.start_all();
  c.run_until(at(30s));
  c.store.lose_state();  // noticed at 30 s: slots up to 31 s may have run before it
  mem operator_copy = c.store;
  const time_point slot = operator_copy.trigger("report");
  CHECK(slot == at(31s) + 1ms);
  for (auto& n : c.nodes) n->s->poll();  // the push, claimed in this very millisecond
  const auto early = c.events_of(event_kind::early);
  REQUIRE_FALSE(early.empty());
  CHECK(says(early[0], "manual claim refused as early"));
  CHECK(says(early[0], "before the trigger's slot"));
  CHECK_FALSE(says(early[0], "wall clock"));
  CHECK(c.started_at(slot).empty());
  c.run_until(at(30s) + lease::options{}.lease + 5s);  // one lease after the loss, and the claims' retries
  const auto runs = c.started_at(slot);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].manual);
  CHECK(c.pending().empty());
}
