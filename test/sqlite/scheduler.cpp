// test/sqlite/scheduler.cpp — sqlite_store under the scheduler: two instances,
// each with its own store (connection) on one file, run every slot of a job
// exactly once; and make_scheduler takes a sqlite_store by name as DESIGN.md
// shows (`lease::store = lease::sqlite_store{"jobs.db"}`).
#include <catch2/catch.hpp>

#include <type_traits>

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
