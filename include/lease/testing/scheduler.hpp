// lease/testing/scheduler.hpp — a store under real schedulers, written once
// for every backend: two instances, each with its own store object (its own
// connection) on one shared store, run every slot of a job exactly once
// (doc/invariants.md, I5).
//
//   lease::testing::check_two_schedulers([&](lease::fake_clock c) { return my_store{..., c}; });
//
// `make` returns a store on the SAME shared state each time it is called,
// reading its clock from `c`.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <utility>

#include "lease/clock/fake.hpp"
#include "lease/executor/manual.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/concept.hpp"

namespace lease::testing {

/// Catch2 checks, inside a TEST_CASE: 10 s of a job every second on two
/// deterministic instances (fake_clock, manual_executor); every slot runs
/// once, and its record says success at attempt 1.
template <class MakeStore>
void check_two_schedulers(MakeStore make) {
  static_assert(Store<decltype(make(std::declval<fake_clock>()))>,
                "lease::testing::check_two_schedulers: make(fake_clock) must return a lease::Store");
  using namespace std::chrono_literals;
  const time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};
  fake_clock clock{t0};
  // Distinct seeds and names: tokens must differ between instances.
  auto instance = [&](const char* name, std::uint64_t seed, manual_executor exec) {
    return make_scheduler(lease::store = make(clock), lease::clock = clock, lease::executor = exec,
                          lease::settings = options{.lease = 3s, .instance = name, .seed = seed});
  };
  manual_executor ea, eb;
  auto a = instance("a", 1, ea);
  auto b = instance("b", 2, eb);
  std::map<time_point, int> runs;  // slot -> handler calls, over both instances
  auto count = [&](run_context& ctx) { ++runs[ctx.slot]; };
  a.add("report", every(1s), count);
  b.add("report", every(1s), count);
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
    CHECK(rec->status == run_status::success);
    CHECK(rec->attempt == 1);
  }
}

/// The earlier name of check_two_schedulers(), kept for existing tests.
template <class MakeStore>
void check_two_schedulers_run_each_slot_once(MakeStore make) {
  check_two_schedulers(std::move(make));
}

}  // namespace lease::testing
