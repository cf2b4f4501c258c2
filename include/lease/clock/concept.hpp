// lease/clock/concept.hpp — the Clock policy: an instance's two kinds of time.
//
// Minimal definition: `c.now()` returns wall time, a `lease::time_point`.
// Recommended: `c.steady()` returns monotonic time, a `lease::steady_point`
// (MonotonicClock). The scheduler decides which slot is due on now() and
// times every interval it waits for on steady() (lease/time.hpp says why).
// A clock without steady() still works: lease::steady_now() then reads the
// host's monotonic clock, or, for a manual clock (is_manual_clock), its wall
// time — a test clock that is never stepped needs nothing more.
//
// Laws (test/laws/clock.cpp):
//   L1  now() and steady() never throw.
//   L2  Copies of a clock read the same times (a clock is a handle, so a test
//       can hand one fake_clock to several instances and a store).
//   L3  steady() never goes back, whatever now() does.
//
// Models: lease::system_clock (real time, clock/system.hpp),
//         lease::fake_clock (manual time, clock/fake.hpp),
//         lease::skewed_clock<C> (another clock plus an offset that can be stepped,
//         and a monotonic rate that can drift; clock/skewed.hpp).
// Thread-safety: every model's now() and steady() may be called from any thread.
#pragma once

#include <atomic>
#include <concepts>
#include <memory>

#include "lease/clock/host.hpp"
#include "lease/time.hpp"

namespace lease {

template <class C>
concept Clock = std::copy_constructible<C> && requires(const C& c) {
  { c.now() } -> std::same_as<time_point>;
};

/// A clock that also reads monotonic time.
template <class C>
concept MonotonicClock = Clock<C> && requires(const C& c) {
  { c.steady() } -> std::same_as<steady_point>;
};

template <Clock C>
class skewed_clock;

namespace detail {
template <class T>
inline constexpr bool is_skewed_clock = false;
template <class C>
inline constexpr bool is_skewed_clock<skewed_clock<C>> = true;
}  // namespace detail

/// The monotonic time of any Clock: its steady() if it has one; else, for a
/// manual clock, its wall time (it is only moved forward in tests that need
/// nothing more); else, for a skewed_clock, its base's, by these same rules
/// (a skewed manual clock is manual: its time must not be the host's); else
/// the host's monotonic clock.
template <Clock C>
[[nodiscard]] steady_point steady_now(const C& c) noexcept {
  if constexpr (MonotonicClock<C>)
    return c.steady();
  else if constexpr (requires(C& m) { m.advance(duration{}); })
    return steady_point{c.now().time_since_epoch()};
  else if constexpr (detail::is_skewed_clock<C>)
    return steady_now(c.base());
  else
    return host_steady();
}

}  // namespace lease

// skewed_clock was declared here before it had a header of its own.
#include "lease/clock/skewed.hpp"  // IWYU pragma: export
