// test/sqlite/scheduler.cpp — sqlite_store under the scheduler: two instances,
// each with its own store (connection) on one file, run every slot of a job
// exactly once; and make_scheduler takes a sqlite_store by name as DESIGN.md
// shows (`lease::store = lease::sqlite_store{"jobs.db"}`).
#include <catch2/catch.hpp>

#include <map>
#include <type_traits>

#include "lease/clock/fake.hpp"
#include "lease/executor/manual.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/sqlite.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;

TEST_CASE("two schedulers sharing one sqlite file run every slot of a job exactly once") {
  lease::testing::temp_dir dir;
  const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};
  lease::fake_clock clock{t0};
  // Distinct seeds: tokens must differ between instances.
  auto make = [&](const char* name, std::uint64_t seed, lease::manual_executor exec) {
    lease::sqlite_options o;
    o.clock = [clock] { return clock.now(); };
    return lease::make_scheduler(lease::store = lease::sqlite_store{dir.file("jobs.db"), o}, lease::clock = clock,
                                 lease::executor = exec,
                                 lease::settings = lease::options{.lease = 3s, .instance = name, .seed = seed});
  };
  lease::manual_executor ea, eb;
  auto a = make("a", 1, ea);
  auto b = make("b", 2, eb);
  std::map<lease::time_point, int> runs;  // slot -> handler calls, over both instances
  auto count = [&](lease::run_context& ctx) { ++runs[ctx.slot]; };
  a.add("report", lease::every(1s), count);
  b.add("report", lease::every(1s), count);
  a.start();
  b.start();
  for (int step = 0; step < 200; ++step) {  // 10 s in 50 ms steps
    clock.advance(50ms);
    a.poll();
    b.poll();
    ea.run_all();
    eb.run_all();
    a.poll();
    b.poll();
  }
  CHECK(runs.size() >= 9);
  for (const auto& [slot, calls] : runs) {
    INFO("slot " << (slot - t0).count() << " ms");
    CHECK(calls == 1);
    const auto rec = a.store().get({"report", slot});
    REQUIRE(rec.has_value());
    CHECK(rec->status == lease::run_status::success);
    CHECK(rec->attempt == 1);
  }
}

TEST_CASE("make_scheduler accepts a sqlite_store on the host clock by name") {
  lease::testing::temp_dir dir;
  auto s = lease::make_scheduler(lease::store = lease::sqlite_store{dir.file("jobs.db")},
                                 lease::executor = lease::manual_executor{});
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(s.store())>, lease::sqlite_store>);
  CHECK(s.store().unfinished("anything").empty());
}
