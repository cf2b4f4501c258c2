// lease/clock/concept.hpp — the Clock policy: where an instance (or a store
// told to use a caller-supplied clock) reads wall time.
//
// Minimal definition: `c.now()` returns a `lease::time_point`.
//
// Laws (test/laws/clock.cpp):
//   L1  now() never throws.
//   L2  Copies of a clock read the same time (a clock is a handle, so a test
//       can hand one fake_clock to several instances and a store).
//
// Models: lease::system_clock (real time, clock/system.hpp),
//         lease::fake_clock (manual time, clock/fake.hpp),
//         lease::skewed_clock<C> (another clock plus a fixed offset).
// Thread-safety: every model's now() may be called from any thread.
#pragma once

#include <concepts>

#include "lease/time.hpp"

namespace lease {

template <class C>
concept Clock = std::copy_constructible<C> && requires(const C& c) {
  { c.now() } -> std::same_as<time_point>;
};

/// A clock that reads another clock and adds a fixed offset: one instance's
/// skew in tests and simulations.
template <Clock C>
class skewed_clock {
 public:
  skewed_clock(C base, duration offset) : base_(std::move(base)), offset_(offset) {}
  [[nodiscard]] time_point now() const { return base_.now() + offset_; }
  [[nodiscard]] duration offset() const { return offset_; }

 private:
  C base_;
  duration offset_;
};

}  // namespace lease
