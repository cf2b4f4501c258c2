// test/sqlite/scheduler.cpp — sqlite_store under the scheduler: two instances,
// each with its own store (connection) on one file, run every slot of a job
// exactly once; and make_scheduler takes a sqlite_store by name as README.md
// shows (`lease::store = lease::sqlite_store{"jobs.db"}`).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "lease/clock/fake.hpp"
#include "lease/executor/manual.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/sqlite.hpp"
#include "laws/two_schedulers.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;

TEST_CASE("two schedulers sharing one sqlite file run every slot of a job exactly once") {
  lease::testing::temp_dir dir;
  lease::testing::check_two_schedulers_run_each_slot_once([&](lease::fake_clock clock) {
    lease::sqlite_options o;
    o.clock = [clock] { return clock.now(); };
    o.quarantine_new_file = false;  // a fresh test file is not a lost one
    return lease::sqlite_store{dir.file("jobs.db"), o};
  });
}

TEST_CASE("make_scheduler accepts a sqlite_store on the host clock by name") {
  lease::testing::temp_dir dir;
  auto s = lease::make_scheduler(lease::store = lease::sqlite_store{dir.file("jobs.db")},
                                 lease::executor = lease::manual_executor{});
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(s.store())>, lease::sqlite_store>);
  CHECK(s.store().unfinished("anything").empty());
}

TEST_CASE("a scheduler whose store file is deleted reports it, stops the forgotten run, and runs nothing for a lease") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};
  lease::fake_clock clock{t0 - 1s};
  lease::sqlite_options o;
  o.clock = [clock] { return clock.now(); };
  o.quarantine_new_file = false;  // the first file is not a lost one
  lease::manual_executor exec;
  auto s = lease::make_scheduler(lease::store = lease::sqlite_store{path, o}, lease::clock = clock,
                                 lease::executor = exec,
                                 lease::settings = lease::options{.lease = 3s, .instance = "a", .seed = 1});
  std::vector<lease::event> events;
  s.on_event([&](const lease::event& e) { events.push_back(e); });
  std::map<lease::time_point, int> started;
  s.add("report", lease::every(10s), [&](lease::run_context& ctx) { ++started[ctx.slot]; });
  s.start();
  auto step = [&](std::chrono::milliseconds d) {
    clock.advance(d);
    s.poll();
  };
  for (int i = 0; i < 30; ++i) step(50ms);  // t0 + 0.5 s: the slot t0 is won and dispatched
  REQUIRE(s.store().get({"report", t0}).has_value());
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  const lease::time_point lost = clock.now();
  for (int i = 0; i < 60; ++i) step(50ms);  // 3 s: heartbeats notice, are refused
  auto has = [&](lease::event_kind k, const char* text) {
    for (const auto& e : events)
      if (e.kind == k && e.message.find(text) != std::string::npos) return true;
    return false;
  };
  CHECK(has(lease::event_kind::store_notice, "was deleted"));
  CHECK(has(lease::event_kind::lost, ""));  // the forgotten attempt is fenced off
  CHECK(s.store().lost_at().value() >= lost);
  exec.run_all();  // the forgotten handler returns; its finish is refused
  for (int i = 0; i < 320; ++i) {  // to t0 + 19.5 s: slot t0 + 10 s runs (the quarantine ended at ~t0 + 4 s)
    step(50ms);
    exec.run_all();
  }
  CHECK(started[t0 + 10s] == 1);
  // Deleted again while idle: the claim of slot t0 + 20 s notices and is
  // quarantined; that slot may have run before the loss (as far as the new
  // file can tell), so it never starts, with an event; t0 + 30 s runs.
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  events.clear();
  for (int i = 0; i < 230; ++i) {  // to t0 + 31 s
    step(50ms);
    exec.run_all();
  }
  CHECK(has(lease::event_kind::store_notice, "was deleted"));
  CHECK(has(lease::event_kind::store_notice, "lost its state"));
  CHECK(started[t0 + 20s] == 0);
  CHECK(has(lease::event_kind::late, "whether it ran is unknown"));
  CHECK(started[t0 + 30s] == 1);
  const auto rec = s.store().get({"report", t0 + 30s});
  REQUIRE(rec.has_value());
  CHECK(rec->status == lease::run_status::success);
  const auto second_loss = s.store().lost_at().value();
  CHECK(second_loss >= t0 + 20s);
  for (const auto& e : events)
    if (e.kind == lease::event_kind::won) CHECK(e.at >= second_loss + 3s);
  s.stop();
}

TEST_CASE("a scheduler on a sqlite file registers its job, an operator's stop through another store object stops "
          "its handler, and the run is taken over only after the resume") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};
  lease::fake_clock clock{t0 - 1s};
  lease::sqlite_options o;
  o.clock = [clock] { return clock.now(); };
  o.quarantine_new_file = false;  // a fresh test file is not a lost one
  lease::manual_executor exec;
  auto s = lease::make_scheduler(lease::store = lease::sqlite_store{path, o}, lease::clock = clock,
                                 lease::executor = exec,
                                 lease::settings = lease::options{.lease = 3s, .instance = "a", .seed = 1});
  lease::sqlite_store ops{path, o};  // leasectl's
  std::vector<lease::event> events;
  s.on_event([&](const lease::event& e) { events.push_back(e); });
  std::map<std::pair<lease::time_point, std::uint32_t>, bool> asked_to_stop;  // (slot, attempt) -> stop requested
  s.add("report", lease::every(10s),
        [&](lease::run_context& ctx) { asked_to_stop[{ctx.slot, ctx.attempt}] = ctx.stop.stop_requested(); });
  s.start();
  auto step = [&](std::chrono::milliseconds d) {
    clock.advance(d);
    s.poll();
  };
  auto count = [&](lease::event_kind k) {
    return std::count_if(events.begin(), events.end(), [&](const lease::event& e) { return e.kind == k; });
  };
  for (int i = 0; i < 30; ++i) step(50ms);  // t0 + 0.5 s: the slot t0 is won and dispatched
  REQUIRE(ops.get({"report", t0}).has_value());

  // The instance registered its job in the file at its start.
  const auto jobs = ops.list_jobs();
  REQUIRE(jobs.size() == 1);
  REQUIRE(jobs[0].instances.size() == 1);
  CHECK(jobs[0].instances[0].instance == "a");
  CHECK(jobs[0].instances[0].schedule == "every 10s");
  CHECK(jobs[0].instances[0].last_seen <= clock.now());
  const auto refused = ops.purge("report", 10min);  // leasectl purge: the instance still has it
  CHECK(refused.outcome == lease::purge_outcome::registered);
  REQUIRE(refused.instance);
  CHECK(refused.instance->instance == "a");

  CHECK(ops.stop("report") == 1);
  for (int i = 0; i < 60; ++i) step(50ms);  // 3 s: the runner's next heartbeat is refused
  CHECK(count(lease::event_kind::stopped) == 1);
  CHECK(count(lease::event_kind::lost) == 0);
  lease::task held = exec.take();  // the handler's task, still waiting for a worker
  REQUIRE(held);
  CHECK(held.context().stop.stop_requested());  // the handler is asked to stop…
  held();                                       // …and, taken only now, is not started at all
  CHECK(asked_to_stop.count({t0, 1}) == 0);
  for (int i = 0; i < 280; ++i) {  // to t0 + 17.5 s: the slot t0 + 10 s is answered paused
    step(50ms);
    exec.run_all();
  }
  CHECK(count(lease::event_kind::takeover) == 0);
  CHECK(count(lease::event_kind::won) == 1);
  CHECK(asked_to_stop.empty());
  const auto stopped = ops.get({"report", t0});
  REQUIRE(stopped);
  CHECK(stopped->released);
  CHECK(stopped->status == lease::run_status::running);

  REQUIRE(ops.resume("report"));
  for (int i = 0; i < 60; ++i) {  // 3 s: its own backup check takes the stopped run over
    step(50ms);
    exec.run_all();
  }
  CHECK(count(lease::event_kind::takeover) == 1);
  CHECK(asked_to_stop.count({t0, 2}) == 1);
  CHECK_FALSE(asked_to_stop[{t0, 2}]);
  const auto back = ops.get({"report", t0});
  REQUIRE(back);
  CHECK(back->attempt == 2);
  CHECK(back->handovers == 1);
  s.stop();
}
