// make_scheduler: named arguments in any order, defaults for the rest.
#include <catch2/catch.hpp>

#include <type_traits>

#include "lease/clock/fake.hpp"
#include "lease/executor/manual.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"

using namespace std::chrono_literals;

TEST_CASE("make_scheduler takes named arguments in any order and fills in the others") {
  lease::fake_clock clock;
  lease::manual_executor exec;
  auto s = lease::make_scheduler(lease::overlap = lease::buffer_one, lease::executor = exec, lease::clock = clock,
                                 lease::settings = lease::options{.instance = "x", .seed = 5});
  static_assert(std::is_same_v<decltype(s), lease::scheduler<lease::memory_store<lease::fake_clock>, lease::fake_clock,
                                                             lease::manual_executor, lease::buffer_one_t>>);
  CHECK(s.instance() == "x");
  CHECK(s.settings().seed == 5);
  CHECK(s.settings().heartbeat == 5s);
  // The defaulted store runs on the clock that was given.
  s.add("job", lease::every(1s), [](lease::run_context&) {});
  s.start();
  clock.advance(1s + 250ms);  // the slot plus at most claim_jitter
  s.poll();
  CHECK(exec.pending() == 1);
  CHECK(s.store().get({"job", lease::time_point{} + 1s}).has_value());
}

TEST_CASE("make_scheduler with no arguments uses system_clock, thread_pool, skip and memory_store") {
  auto s = lease::make_scheduler();
  static_assert(std::is_same_v<decltype(s), lease::scheduler<lease::memory_store<lease::system_clock>,
                                                             lease::system_clock, lease::thread_pool, lease::skip_t>>);
  CHECK(s.executor().size() >= 1);
}

TEST_CASE("make_scheduler rejects impossible options with a sentence naming the option") {
  try {
    auto s = lease::make_scheduler(lease::clock = lease::fake_clock{}, lease::executor = lease::manual_executor{},
                                   lease::settings = lease::options{.lease = 1s, .heartbeat = 600ms});
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("heartbeat") != std::string::npos);
  }
}
