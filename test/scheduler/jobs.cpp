// Per-job settings, jobs added and removed while running, and jobs(): one
// scenario per rule on fake time (harness.hpp), plus one real-thread test
// of add/remove/jobs() from another thread (run it under TSan).
#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <thread>

#include "harness.hpp"
#include "lease/clock/system.hpp"
#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/cron.hpp"

using namespace test;
using lease::event_kind;
using lease::job_options;
using lease::run_status;
using op = faulty_store::op;

namespace {

/// Whether `f` throws std::invalid_argument whose message contains every one of `parts`.
template <class F>
bool rejects(F f, std::initializer_list<std::string_view> parts) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    for (std::string_view p : parts)
      if (what.find(p) == std::string::npos) return false;
    return true;
  }
  return false;
}

const lease::job_info* find(const std::vector<lease::job_info>& v, std::string_view name) {
  for (const auto& j : v)
    if (j.name == name) return &j;
  return nullptr;
}

}  // namespace

// ---- Per-job settings ---------------------------------------------------------

TEST_CASE("a job's own lease and heartbeat are used for its runs, intervals due together share one store call") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));  // "report": the instance's lease 30 s, heartbeat 5 s
  a.s->add("ping", lease::every(60s), [](lease::run_context&) {}, job_options{.lease = 6s});  // heartbeat 1 s
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.s->running() == 2);
  CHECK(c.record(at(60s), "ping")->lease_end == at(66s));
  CHECK(c.record(at(60s))->lease_end == at(90s));
  const int before = c.store.batches();
  c.run_until(at(64s));
  CHECK(c.store.batches() == before + 4);  // ping's ticks at 61–64 s
  CHECK(c.record(at(60s), "ping")->lease_end == at(70s));
  CHECK(c.record(at(60s))->lease_end == at(90s));  // not renewed on ping's ticks
  c.run_until(at(65s));
  CHECK(c.store.batches() == before + 5);  // both due at 65 s: one call
  CHECK(c.record(at(60s), "ping")->lease_end == at(71s));
  CHECK(c.record(at(60s))->lease_end == at(95s));
}

TEST_CASE("a job's failed claims are retried at most its own heartbeat apart, not the instance's") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1), "report", 3600s);  // the instance's heartbeat: 5 s
  a.s->add("ping", lease::every(60s), [](lease::run_context&) {}, job_options{.heartbeat = 500ms, .max_late = 60s});
  a.s->start();
  c.run_until(at(59s));
  for (int i = 0; i < 10; ++i) c.store.fail_next(op::claim, lease::errc::unavailable);
  // Backoff 0.1, 0.2, 0.4 s, then ping's heartbeat (0.5 s) each, +50% jitter at
  // most: won by 66.3 s. Capped at the instance's 5 s it would take ~26 s.
  c.run_until(at(67s));
  CHECK(c.store.calls(op::claim) == 11);
  CHECK(a.has(event_kind::won, at(60s)));
}

TEST_CASE("a job's own overlap mode overrides the scheduler's OverlapPolicy for that job only") {
  cluster c{at(1s)};  // OverlapPolicy skip
  auto& a = c.add(spec_options("api-2", 1), "report", 10s);
  a.s->add("stream", lease::every(10s), [](lease::run_context&) {},
           job_options{.overlap = lease::overlap_mode::allow});
  a.s->start();
  c.run_until(at(20s));  // neither handler has ended: slot 10 s of each still runs
  CHECK(c.record(at(20s), "stream")->status == run_status::running);   // allowed to overlap
  CHECK(!c.record(at(20s)).has_value());                               // skipped
  CHECK(a.has(event_kind::skip, at(20s)));
}

TEST_CASE("a job's own max_attempts, catch_up and max_late go into its claims") {
  cluster c{at(1s)};
  auto o = spec_options("runner", 1);  // catch_up 0: the instance catches nothing up
  auto& a = c.add(o);
  a.s->add("once", lease::every(60s), [](lease::run_context&) {}, job_options{.max_attempts = 1});
  auto& b = c.add(spec_options("backup", 2));
  b.s->add("once", lease::every(60s), [](lease::run_context&) {}, job_options{.max_attempts = 1});
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(60s));
  REQUIRE(c.record(at(60s), "once")->runner == "runner");
  a.down = true;
  c.run_until(at(60s) + 30s + 15s);
  // One attempt allowed: the backup finds it used up and marks it interrupted, never starts attempt 2.
  CHECK(c.record(at(60s), "once")->status == run_status::interrupted);
  CHECK(c.record(at(60s), "once")->attempt == 1);
  CHECK(c.record(at(60s))->attempt == 2);  // the job with the instance's 3 attempts is taken over

  // catch_up and max_late of a job reach the store as the deadline of its claims.
  cluster d{at(90s)};
  auto& late = d.add(spec_options("late", 3));
  late.s->add("nightly", lease::every(60s), [](lease::run_context&) {},
              job_options{.catch_up = 5min, .max_late = 2min});
  late.s->start();
  d.run_until(at(92s) + 2s);  // catch-up of slot 60 s (catch_up_jitter ≤ 2 s)
  CHECK(d.record(at(60s), "nightly")->status == run_status::running);
  CHECK(!d.record(at(60s)).has_value());  // "report" keeps the instance's catch_up 0
  REQUIRE(late.count(event_kind::catch_up) == 1);
}

TEST_CASE("a job's own max_late decides whether a claim that comes late may still start") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));  // "report": max_late 30 s
  a.s->add("strict", lease::every(60s), [](lease::run_context&) {}, job_options{.max_late = 0ms});
  a.s->start();
  c.run_until(at(59s));
  a.down = true;  // frozen across the slot
  c.run_until(at(80s));
  a.down = false;
  c.run_until(at(80s));  // both claims reach the store 20 s after the slot
  CHECK(c.record(at(60s))->status == run_status::running);  // 20 s < 30 s + 10 s
  CHECK(!c.record(at(60s), "strict").has_value());           // 20 s > 0 s + 10 s
  CHECK(a.has(event_kind::late, at(60s)));
}

TEST_CASE("job settings are validated like options, in a sentence naming the job and the option") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  auto none = [](lease::run_context&) {};
  CHECK(rejects([&] { a.s->add("x", lease::every(60s), none, job_options{.heartbeat = 20s}); },
                {"job \"x\"", "heartbeat (20000 ms) must be under half of lease (30000 ms)"}));
  CHECK(rejects([&] { a.s->add("y", lease::every(60s), none, job_options{.lease = 0ms}); },
                {"job \"y\"", "lease must be positive"}));
  CHECK(rejects([&] { a.s->add("z", lease::every(60s), none, job_options{.max_attempts = 0}); },
                {"job \"z\"", "max_attempts must be at least 1"}));
  CHECK(rejects([&] { a.s->add("w", lease::every(60s), none, job_options{.catch_up = -1ms}); },
                {"job \"w\"", "catch_up must not be negative"}));
  CHECK(rejects([&] { a.s->add("v", lease::every(60s), none, job_options{.overlap = lease::overlap_mode{9}}); },
                {"job \"v\"", "overlap must be"}));
  CHECK(rejects([&] { a.s->add("report", lease::every(60s), none); }, {"already added"}));  // before start()
  CHECK(a.s->jobs().size() == 1);  // nothing rejected was added
}

TEST_CASE("jobs() shows each job's schedule as registered, its settings, next slot and what runs here") {
  cluster<lease::buffer_one_t> c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->add("nightly", lease::cron("0 3 * * *", "Europe/Paris"), [](lease::run_context&) {},
           job_options{.lease = 2min, .history_size = 30});
  auto& b = c.add(spec_options("api-3", 2));
  const auto before = a.s->jobs();
  REQUIRE(before.size() == 2);
  const lease::job_info* r = find(before, "report");
  REQUIRE(r != nullptr);
  CHECK(r->schedule == "every 1m");
  // The 3-argument add: the instance's options and the compile-time OverlapPolicy.
  CHECK(r->settings == lease::job_settings{30s, 5s, 3, lease::overlap_mode::buffer_one, 0ms, 30s, 10});
  CHECK(r->next_slot == at(60s));
  const lease::job_info* n = find(before, "nightly");
  REQUIRE(n != nullptr);
  CHECK(n->schedule == "cron \"0 3 * * *\" Europe/Paris");
  CHECK(n->settings.lease == 2min);
  CHECK(n->settings.heartbeat == 5s);  // min(5 s, 2 min / 6): the default for the job's lease
  CHECK(n->settings.history_size == 30);
  for (auto& x : c.nodes) x->s->start();
  c.run_until(at(60s));
  const auto now_a = a.s->jobs();
  CHECK(find(now_a, "report")->running == 1);
  CHECK(find(now_a, "report")->next_slot == at(120s));
  CHECK(find(now_a, "nightly")->running == 0);
  CHECK(find(b.s->jobs(), "report")->watching == 1);
  CHECK(find(b.s->jobs(), "report")->running == 0);
}

// ---- Jobs at run time -----------------------------------------------------------

TEST_CASE("a job added after start() is caught up and claimed from the next poll on") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->start();
  c.run_until(at(30s));
  a.s->add("late-comer", lease::every(20s), [](lease::run_context&) {}, job_options{.catch_up = 1min});
  CHECK(a.s->jobs().size() == 1);  // deterministic mode: it takes effect at the next poll()
  c.run_until(at(33s));            // catch-up of slot 20 s within catch_up_jitter
  CHECK(a.s->jobs().size() == 2);
  CHECK(c.record(at(20s), "late-comer")->runner == "api-2");
  c.finish_handlers(a);
  c.run_until(at(40s));
  CHECK(c.record(at(40s), "late-comer")->status == run_status::running);
}

TEST_CASE("re-adding a job while running replaces its schedule, handler and settings for future slots") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(c.record(at(60s))->lease_end == at(90s));
  std::atomic<int> new_handler{0};
  a.s->add("report", lease::every(15s), [&](lease::run_context&) { ++new_handler; }, job_options{.lease = 12s});
  c.poll_all();
  CHECK(c.record(at(60s))->lease_end == at(90s));  // the running attempt keeps its lease and heartbeat
  c.run_until(at(65s));
  CHECK(c.record(at(60s))->lease_end == at(95s));
  c.finish_handlers(a);
  c.run_until(at(75s));  // the next slot on the new schedule, not 120 s
  REQUIRE(c.record(at(75s)).has_value());
  CHECK(c.record(at(75s))->lease_end == at(87s));
  c.finish_handlers(a);
  CHECK(new_handler.load() == 1);
  CHECK(find(a.s->jobs(), "report")->schedule == "every 15s");
  CHECK(a.s->jobs().size() == 1);
}

// A new schedule's slot at the very millisecond of the add() is due, as it
// is for a new job (scenarios.cpp): re-armed at next(now), strictly after,
// it was skipped without a word. A slot whose timer already fired is not
// armed again by an add at its millisecond: it was claimed once.
TEST_CASE("re-adding a job at the very millisecond of a slot of its new schedule runs that slot") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->start();
  c.run_until(at(75s) - 1s);
  c.finish_handlers(a);
  c.clock.set(at(75s));  // not polled since: the add below is asked at 75 s exactly
  a.s->add("report", lease::every(15s), [](lease::run_context&) {});
  c.run_for(2s);
  CHECK(c.record(at(75s)).has_value());
  CHECK(a.has(event_kind::won, at(75s)));
}

TEST_CASE("re-adding a job at the millisecond of a slot already claimed does not claim it again") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->start();
  c.run_until(at(60s));  // slot 60 s's timer fired at its millisecond
  a.s->add("report", lease::every(60s), [](lease::run_context&) {});  // asked at 60 s exactly
  c.run_for(5s);
  CHECK(a.has(event_kind::won, at(60s)));
  CHECK(c.store.calls(op::claim) == 1);
  CHECK(a.of(event_kind::won).size() == 1);
}

TEST_CASE("removing a job lets its running handler finish, claims no further slot, and its backups stop watching") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("runner", 1));
  auto& b = c.add(spec_options("backup", 2));
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(60s));
  REQUIRE(a.s->running() == 1);
  REQUIRE(b.s->watching() == 1);
  CHECK(a.s->remove("report"));
  CHECK(b.s->remove("report"));
  CHECK(!a.s->remove("report"));   // already removed
  CHECK(!a.s->remove("unknown"));
  c.run_until(at(70s));
  CHECK(b.s->watching() == 0);
  CHECK(a.s->running() == 1);
  CHECK(!a.started.back().stop.stop_requested());  // a removal never stops a handler by default
  CHECK(c.record(at(60s))->lease_end == at(100s));  // still renewed
  c.finish_handlers(a);
  CHECK(c.record(at(60s))->status == run_status::success);
  c.run_until(at(300s));
  CHECK(!c.record(at(120s)).has_value());
  CHECK(a.started.size() == 1);
  CHECK(a.s->jobs().empty());
}

TEST_CASE("removing a job with hand_over stops its handler as stop() would, and a backup takes the run over") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("runner", 1));
  auto& b = c.add(spec_options("backup", 2));
  a.behaviour = ends::throws_if_stopped;
  for (auto& n : c.nodes) n->s->start();
  c.run_until(at(60s));
  REQUIRE(a.s->running() == 1);
  CHECK(a.s->remove("report", true));
  c.poll_all();
  CHECK(a.started.back().stop.stop_requested());
  c.finish_handlers(a);
  CHECK(a.count(event_kind::handed_over) == 1);
  c.run_until(at(60s) + 2 * 5s + 1ms);  // a backup checks within 2 heartbeats
  CHECK(c.record(at(60s))->runner == "backup");
  CHECK(c.record(at(60s))->attempt == 2);
  CHECK(b.started.size() == 1);
}

TEST_CASE("a job removed and added again never runs a slot twice") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  // The re-added job catches up: the slot that already ran is found finished.
  const job_options catching_up{.catch_up = 5min};
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.started.size() == 1);
  c.finish_handlers(a);
  a.s->remove("report");
  c.run_until(at(61s));
  a.s->add("report", lease::every(60s), [&](lease::run_context&) {}, catching_up);
  c.run_until(at(63s) + 1ms);  // its catch-up claim of slot 60 s
  CHECK(a.started.size() == 1);
  CHECK(c.record(at(60s))->attempt == 1);
  CHECK(!a.has(event_kind::catch_up, at(60s)));  // its catch-up read the run and found it ended
  // Removed and added back within one poll, while a slot runs: still one start per slot.
  c.run_until(at(120s));
  REQUIRE(a.started.size() == 2);
  a.s->remove("report");
  a.s->add("report", lease::every(60s), [](lease::run_context&) {}, catching_up);
  c.run_until(at(125s));
  c.finish_handlers(a);
  c.run_until(at(180s));
  c.finish_handlers(a);
  std::set<lease::time_point> slots;
  for (const auto& ctx : a.started) CHECK(slots.insert(ctx.slot).second);
  CHECK(slots == std::set<lease::time_point>{at(60s), at(120s), at(180s)});
}

TEST_CASE("a remove() taken by the loop before a due slot's timer names that slot and the claims it drops") {
  cluster c{at(1s)};
  auto o = spec_options("api-2", 1);
  o.max_late = 600s;
  auto& a = c.add(o, "report", 10s);
  a.s->start();
  c.run_until(at(9s));
  c.store.fail_next(op::claim, lease::errc::unavailable);
  c.run_until(at(10s));  // slot 10 s was tried and failed: its claim waits for a retry
  c.clock.set(at(20s));  // slot 20 s is due, and the remove is already waiting when the loop wakes
  a.s->remove("report");
  c.run_until(at(60s));
  CHECK(a.started.empty());
  std::set<lease::time_point> named;
  for (const auto& e : a.of(event_kind::late))
    if (e.message.find("removed") != std::string::npos) named.insert(e.run.slot);
  CHECK(named == std::set<lease::time_point>{at(10s), at(20s)});  // neither is silently gone
}

TEST_CASE("a run handed over by remove() and a job added again at once is taken over, even by a lone instance") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.behaviour = ends::throws_if_stopped;
  a.s->start();
  c.run_until(at(60s));
  REQUIRE(a.s->running() == 1);
  a.s->remove("report", true);  // its stop token is requested: the handler throws, the run is released
  a.s->add("report", lease::every(60s), [](lease::run_context& ctx) {
    if (ctx.stop.stop_requested()) throw std::runtime_error("stopped");
  });
  c.poll_all();
  c.finish_handlers(a);
  REQUIRE(c.record(at(60s))->released);
  c.run_until(at(60s) + 2 * 5s + 1s);  // within 2 heartbeats of the release
  CHECK(a.has(event_kind::takeover, at(60s)));
  c.finish_handlers(a);
  CHECK(c.record(at(60s))->status == run_status::success);
  CHECK(a.started.size() == 2);
}

TEST_CASE("add, remove and jobs() after stop() are refused or harmless") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->start();
  a.s->stop(1s);
  c.poll_all();
  REQUIRE(a.s->stopped());
  CHECK_THROWS_AS(a.s->add("x", lease::every(60s), [](lease::run_context&) {}), std::logic_error);
  CHECK(a.s->jobs().size() == 1);  CHECK_FALSE(a.s->jobs()[0].next_slot.has_value());  // a stopped instance claims nothing more
}

TEST_CASE("an add() after stop() is refused even before the loop has taken the stop") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-2", 1));
  a.s->start();
  a.s->stop(1s);  // deterministic mode: the loop takes it at the next poll
  CHECK_THROWS_AS(a.s->add("x", lease::every(60s), [](lease::run_context&) {}), std::logic_error);
  CHECK_FALSE(a.s->remove("x"));  // the refused add registered nothing
  c.poll_all();
  REQUIRE(a.s->stopped());
  CHECK(a.s->jobs().size() == 1);
}

// ---- Real threads -------------------------------------------------------------

TEST_CASE("real mode: add, remove and jobs() from another thread while running are applied by the loop") {
  lease::memory_store<lease::system_clock> store;
  lease::options o;
  o.lease = 600ms;
  o.claim_jitter = 5ms;
  o.catch_up = 0ms;
  o.instance = "A";
  auto s = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{2}, lease::settings = o);
  std::atomic<int> ran{0};
  s.add("steady", lease::every(50ms), [&](lease::run_context&) { ++ran; });
  s.start();
  std::atomic<bool> done{false};
  std::atomic<int> views{0};
  std::thread reader([&] {
    while (!done) {
      views += s.jobs().empty() ? 0 : 1;
      std::this_thread::yield();
    }
  });
  std::thread editor([&] {
    for (int i = 0; i < 40; ++i) {
      const std::string name = "dyn" + std::to_string(i % 4);
      s.add(name, lease::every(20ms), [&](lease::run_context&) { ++ran; }, job_options{.lease = 300ms});
      std::this_thread::sleep_for(5ms);
      if (i % 3 == 0) s.remove(name, i % 2 == 0);
    }
  });
  editor.join();
  std::this_thread::sleep_for(200ms);
  done = true;
  reader.join();
  std::set<std::string> names;
  for (const auto& j : s.jobs()) names.insert(j.name);
  s.stop(1s);
  // i = 36 (dyn0) and 39 (dyn3) were removed last; dyn1 and dyn2 were added last.
  CHECK(names == std::set<std::string>{"steady", "dyn1", "dyn2"});
  CHECK(ran.load() > 0);
  CHECK(views.load() > 0);
}
