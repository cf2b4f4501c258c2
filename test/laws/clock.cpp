// Clock laws (lease/clock/concept.hpp), run against every model we ship.
#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/clock/system.hpp"

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
