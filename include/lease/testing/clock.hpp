// lease/testing/clock.hpp — the Clock laws (lease/clock/concept.hpp), checked
// on a clock of yours the way the library checks its own.
//
//   TEST_CASE("my_clock keeps the Clock laws") { lease::testing::check_clock(my_clock{}); }
//
// clock_violations() returns the broken laws as sentences (empty: none), for
// any test framework; check_clock() is its Catch2 form. A manual clock (one
// with advance(d), like fake_clock) is also checked for what tests rely on:
// copies see an advance, and a step() of its wall time leaves its monotonic
// time alone.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "lease/clock/concept.hpp"
#include "lease/testing/detail.hpp"
#include "lease/time.hpp"

namespace lease::testing {

/// The Clock laws L1–L3 on `c`, read `reads` times. Returns what is broken.
template <Clock C>
[[nodiscard]] std::vector<std::string> clock_violations(const C& c, int reads = 10'000) {
  std::vector<std::string> broken;
  auto ms = [](auto d) { return std::to_string(d.count()) + " ms"; };
  // L1: now() and steady() never throw.
  try {
    for (int i = 0; i < reads; ++i) {
      (void)c.now();
      (void)steady_now(c);
    }
  } catch (...) {
    broken.emplace_back("L1: now() or steady() threw");
    return broken;
  }
  // L2: copies read the same times.
  const C copy = c;
  if constexpr (requires(C& m) { m.advance(duration{}); }) {
    C moved = c;  // a manual clock: advance one copy, read the other
    const time_point before = copy.now();
    moved.advance(duration{250});
    if (copy.now() != before + duration{250})
      broken.emplace_back("L2: a copy did not see advance(250 ms): it reads " + ms(copy.now() - before) +
                          " later, not 250 ms");
    if constexpr (requires(C& m) { m.step(duration{}); }) {
      // A wall-clock step (NTP, an operator) must not move monotonic time.
      const steady_point s0 = steady_now(copy);
      moved.step(duration{-60'000});
      if (steady_now(copy) != s0)
        broken.emplace_back("L3: step(-60 s) moved monotonic time by " + ms(steady_now(copy) - s0));
      moved.step(duration{60'000});
    }
  } else {
    const time_point a0 = c.now();
    const time_point b = copy.now();
    const time_point a1 = c.now();
    if (b < a0 || a1 < b)
      broken.emplace_back("L2: a copy's now() is not between two reads of the original");
  }
  // L3: steady() never goes back.
  steady_point last = steady_now(c);
  for (int i = 0; i < reads; ++i) {
    const steady_point t = steady_now(i % 2 == 0 ? c : copy);
    if (t < last) {
      broken.emplace_back("L3: monotonic time went back by " + ms(last - t));
      break;
    }
    last = t;
  }
  return broken;
}

/// Catch2: the Clock laws hold for `c` (call inside a TEST_CASE).
template <Clock C>
void check_clock(const C& c) {
  const std::vector<std::string> broken = clock_violations(c);
  INFO(detail::lines(broken));
  CHECK(broken.empty());
}

}  // namespace lease::testing
