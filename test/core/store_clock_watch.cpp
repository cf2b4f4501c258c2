// The store-clock watch alone: what counts as a step of the store's clock
// between claim answers, and what does not (scheduler/detail/store_clock_watch.hpp).
#include <catch2/catch.hpp>

#include "lease/scheduler/detail/store_clock_watch.hpp"

using namespace std::chrono_literals;
using lease::duration;
using lease::steady_point;
using lease::time_point;

namespace {

/// Answers 5 s apart on the monotonic clock, each with a 2 ms round trip,
/// the store's clock at `store` plus `offset` (its step so far).
struct answers {
  lease::detail::store_clock_watch watch;
  steady_point at{duration{1'000'000}};
  time_point store{duration{1'700'000'000'000}};
  std::optional<duration> next(duration offset = 0ms, duration gap = 5s) {
    at += gap;
    store += gap;
    return watch.observe(at, at + 2ms, store + 1ms + offset);
  }
};

}  // namespace

TEST_CASE("answers that move with the monotonic clock, within 1 s and a clock 10 % off, show no step") {
  answers a;
  for (int i = 0; i < 20; ++i) CHECK_FALSE(a.next(i % 2 == 0 ? 900ms : 0ms));  // jitter under 1 s
  for (int i = 0; i < 5; ++i) CHECK_FALSE(a.next(0ms, 100s));                  // long gaps
  // The store's clock gains 8 s on 100 s of monotonic time (a monotonic
  // clock 7.4 % slow): inside the 1 s of jitter + 11.1 s a clock 10 % slow
  // allows.
  answers fast;
  CHECK_FALSE(fast.next());
  duration drift = 0ms;
  for (int i = 0; i < 5; ++i) CHECK_FALSE(fast.next(drift += 8s, 100s));
}

TEST_CASE("the size said is never more than the step, for a monotonic clock up to 10 % slow or fast") {
  // The store's clock is stepped 30 s between two answers 60 s apart in real
  // time; the instance's monotonic clock saw 54 s (10 % slow) or 66 s (fast).
  for (const double rate : {0.9, 1.0, 1.1}) {
    for (const int way : {+1, -1}) {
      INFO("rate " << rate << ", step " << way * 30 << " s");
      lease::detail::store_clock_watch w;
      const steady_point m0{duration{1'000'000}};
      const time_point s0{duration{1'700'000'000'000}};
      const auto mono = [&](int real_s) { return m0 + duration{static_cast<std::int64_t>(real_s * 1000 * rate)}; };
      const auto store = [&](int real_s, int step_s) { return s0 + duration{(real_s + step_s) * 1000}; };
      CHECK_FALSE(w.observe(mono(0), mono(0), store(0, 0)));
      CHECK_FALSE(w.observe(mono(60), mono(60), store(60, way * 30)));
      const auto said = w.observe(mono(120), mono(120), store(120, way * 30));  // agrees: said
      REQUIRE(said);
      CHECK(*said * way > 0ms);   // the right way
      CHECK(*said * way <= 30s);  // "at least": never more than the step
    }
  }
}

TEST_CASE("a step of the store's clock is said when the second answer after it agrees, at the smaller size") {
  answers a;
  CHECK_FALSE(a.next());
  CHECK_FALSE(a.next(17s));              // one answer alone is not believed
  const auto step = a.next(17s);         // the next agrees
  REQUIRE(step);
  CHECK(*step >= 15s);  // less by a ninth of the 10 s the two answers span, for a clock 10 % slow
  CHECK(*step <= 17s);
  CHECK_FALSE(a.next(17s));              // said once: the stepped clock is the new baseline
  CHECK_FALSE(a.next(17s));
  CHECK_FALSE(a.next(-43s));             // back 60 s…
  const auto back = a.next(-43s);        // …confirmed
  REQUIRE(back);
  CHECK(*back <= -59s);
  CHECK(*back >= -60s);
}

TEST_CASE("one stale answer (a claim read back with its first send's time) is dropped, not said twice") {
  answers a;
  CHECK_FALSE(a.next());
  CHECK_FALSE(a.next(-40s));  // the time it was first applied, 40 s ago
  CHECK_FALSE(a.next());      // the next answer contradicts it
  CHECK_FALSE(a.next());      // and nothing is said "ahead" by the outage either
}

TEST_CASE("answers alternating between two clocks 3 s apart (Redis Cluster masters) are said only when two in a row agree") {
  answers a;
  int said = 0;
  CHECK_FALSE(a.next());
  for (int i = 0; i < 10; ++i) said += a.next(i % 2 == 0 ? 3s : 0s) ? 1 : 0;
  CHECK(said == 0);
}
