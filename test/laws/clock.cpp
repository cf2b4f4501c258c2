// Clock laws (lease/clock/concept.hpp), run against every model we ship.
#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/clock/system.hpp"
#include "lease/scheduler/manual_time.hpp"

#include <limits>
#include <memory>

using namespace std::chrono_literals;

TEST_CASE("copies of a fake_clock read the same time, and it moves only when told") {
  lease::fake_clock a{lease::time_point{1'000ms}};
  lease::fake_clock b = a;
  REQUIRE(a.now() == lease::time_point{1'000ms});
  a.advance(250ms);
  REQUIRE(b.now() == lease::time_point{1'250ms});
  b.set(lease::time_point{10ms});  // a clock may be stepped back
  REQUIRE(a.now() == lease::time_point{10ms});
}

TEST_CASE("a skewed_clock reads its base clock plus a fixed offset") {
  lease::fake_clock base{lease::time_point{5'000ms}};
  lease::skewed_clock<lease::fake_clock> ahead{base, 30s}, behind{base, -30s};
  REQUIRE(ahead.now() == lease::time_point{35'000ms});
  base.advance(1s);
  REQUIRE(behind.now() == lease::time_point{-24'000ms});
}

TEST_CASE("system_clock reads real wall time in milliseconds") {
  const auto before = std::chrono::floor<lease::duration>(std::chrono::system_clock::now());
  const auto t = lease::system_clock{}.now();
  const auto after = std::chrono::system_clock::now();
  REQUIRE(before <= t);
  REQUIRE(t <= after);
}

TEST_CASE("a fake_clock's monotonic time moves with time passing and never with a step of its wall clock") {
  lease::fake_clock c{lease::time_point{10'000ms}};
  const lease::steady_point s0 = c.steady();
  c.advance(250ms);
  CHECK(c.steady() - s0 == 250ms);
  c.step(-60s);  // NTP steps the wall clock back…
  CHECK(c.now() == lease::time_point{10'250ms - 60s});
  CHECK(c.steady() - s0 == 250ms);  // …monotonic time does not move
  c.set(c.now() - 1s);  // a set() into the past is a step too
  CHECK(c.steady() - s0 == 250ms);
  c.set(c.now() + 1s);  // into the future: time passes
  CHECK(c.steady() - s0 == 1'250ms);
  c.step(5s);
  CHECK(c.steady() - s0 == 1'250ms);
}

TEST_CASE("copies of a skewed_clock share their offset, and a step leaves monotonic time alone") {
  lease::fake_clock base{lease::time_point{5'000ms}};
  lease::skewed_clock<lease::fake_clock> a{base, 1s};
  auto b = a;
  a.step(-30s);
  CHECK(b.now() == lease::time_point{5'000ms + 1s - 30s});
  CHECK(b.steady() == base.steady());
}

namespace {
/// A manual clock of a user's own: advance() and a wall time, no steady().
struct ticks {
  std::shared_ptr<lease::time_point> t = std::make_shared<lease::time_point>(lease::time_point{1'000ms});
  [[nodiscard]] lease::time_point now() const { return *t; }
  void advance(lease::duration d) const { *t += d; }
};
}  // namespace

// A skewed_clock over a manual clock without steady() is manual too (a
// scheduler on it starts no thread): its monotonic time must be the base's,
// which moves only when the test moves it. It was the host's, so timers and
// lease deadlines ran on real time while the test moved the clock.
TEST_CASE("a skewed_clock over a manual clock without steady() reads the base's monotonic time, not the host's") {
  ticks base;
  lease::skewed_clock<ticks> skewed{base, 30s};
  static_assert(lease::is_manual_clock<lease::skewed_clock<ticks>>);
  static_assert(!lease::MonotonicClock<lease::skewed_clock<ticks>>);  // steady_now's skewed_clock branch
  const lease::steady_point s0 = lease::steady_now(skewed);
  CHECK(s0 == lease::steady_now(base));
  base.advance(250ms);
  CHECK(lease::steady_now(skewed) - s0 == 250ms);
  skewed.step(-60s);  // a step of its wall clock: monotonic time does not move
  CHECK(lease::steady_now(skewed) - s0 == 250ms);
}

namespace {
/// A manual clock of a user's own that is moved some other way than
/// advance(): it says so by specializing is_manual_clock.
struct set_by_hand {
  std::shared_ptr<lease::time_point> t = std::make_shared<lease::time_point>(lease::time_point{1'000ms});
  [[nodiscard]] lease::time_point now() const { return *t; }
};
}  // namespace
template <>
inline constexpr bool lease::is_manual_clock<set_by_hand> = true;

// steady_now() went by advance() alone: such a clock read the host's
// monotonic time, so a scheduler on it (driven by poll(), no thread) timed
// its leases and heartbeats on real time while the test moved the clock.
TEST_CASE("a manual clock that specializes is_manual_clock without steady() reads its wall time as monotonic time") {
  set_by_hand c;
  static_assert(!lease::MonotonicClock<set_by_hand>);
  const lease::steady_point s0 = lease::steady_now(c);
  CHECK(s0 == lease::steady_point{1'000ms});
  *c.t += 250ms;
  CHECK(lease::steady_now(c) - s0 == 250ms);
  // and a skewed_clock over it: the base's, unmoved by its own steps
  lease::skewed_clock<set_by_hand> skewed{c, 30s};
  static_assert(lease::is_manual_clock<lease::skewed_clock<set_by_hand>>);
  skewed.step(-60s);
  CHECK(lease::steady_now(skewed) == lease::steady_now(c));
}

TEST_CASE("system_clock's monotonic time never goes back") {
  const lease::system_clock c;
  lease::steady_point last = c.steady();
  for (int i = 0; i < 10'000; ++i) {
    const lease::steady_point t = c.steady();
    REQUIRE(t >= last);
    last = t;
  }
}

TEST_CASE("a skewed_clock's monotonic time runs at the rate it is set to, never goes back, and copies share it") {
  lease::fake_clock base{lease::time_point{5'000ms}};
  lease::skewed_clock<lease::fake_clock> c{base, 0ms};
  const auto copy = c;
  base.advance(1s);
  const lease::steady_point s0 = c.steady();
  CHECK(s0 == base.steady());  // no drift: the base's time
  c.run_at(0.9);
  base.advance(10s);
  CHECK(copy.steady() - s0 == 9s);  // 10 s at 0.9
  c.run_at(1.5);                    // a faster rate starts from where it stands
  base.advance(2s);
  CHECK(c.steady() - s0 == 12s);
  c.run_at(0.001);  // nearly stopped: it moves forward, never back
  lease::steady_point last = c.steady();
  for (int i = 0; i < 5000; ++i) {
    base.advance(1ms);
    REQUIRE(c.steady() >= last);
    last = c.steady();
  }
  CHECK(c.steady() - s0 == 12s + 5ms);
  CHECK(c.rate_ppm() == 1'000);
  c.step(-60s);  // the wall clock alone
  CHECK(c.steady() == last);
}

TEST_CASE("a skewed_clock refuses a rate that is not positive, with a sentence") {
  lease::skewed_clock<lease::fake_clock> c{lease::fake_clock{}, 0ms};
  CHECK_THROWS_WITH(c.run_at(0), Catch::Contains("the rate must be in (0, 10]"));
  CHECK_THROWS_WITH(c.run_at(-1), Catch::Contains("got -1"));
  CHECK_THROWS(c.run_at(std::numeric_limits<double>::quiet_NaN()));
}
