// test/laws/two_schedulers.hpp — a store under real schedulers, written once
// for every backend: two instances, each with its own store object (its own
// connection) on one shared store, run every slot of a job exactly once.
//
//   lease::testing::check_two_schedulers_run_each_slot_once(
//       [&](lease::fake_clock c) { return my_store{..., c}; });
//
// `make` returns a store on the SAME shared state each time it is called,
// reading its clock from `c`.
#pragma once

#include <catch2/catch.hpp>

#include <map>

#include "lease/clock/fake.hpp"
#include "lease/executor/manual.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"

namespace lease::testing {

template <class MakeStore>
void check_two_schedulers_run_each_slot_once(MakeStore make) {
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

}  // namespace lease::testing
