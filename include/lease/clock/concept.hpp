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

/// True for a clock whose time moves only when a caller moves it (it has
/// `advance(duration)`, like fake_clock), and for a skewed_clock over one.
/// A scheduler on such a clock starts no thread: the caller drives it with
/// poll() and next_wakeup(). Specialize it for a manual clock of your own;
/// without steady(), its wall time is then its monotonic time too.
template <class C>
inline constexpr bool is_manual_clock = requires(C& c) { c.advance(duration{}); };

template <class C>
inline constexpr bool is_manual_clock<skewed_clock<C>> = is_manual_clock<C>;

namespace detail {
template <class T>
inline constexpr bool is_skewed_clock = false;
template <class C>
inline constexpr bool is_skewed_clock<skewed_clock<C>> = true;
}  // namespace detail

/// The monotonic time of any Clock: its steady() if it has one; else, for a
/// skewed_clock, its base's, by these same rules (a step of its wall time
/// must not move it, and a skewed manual clock is manual: its time must not
/// be the host's); else, for a manual clock (is_manual_clock, which a user
/// may specialize), its wall time (it is only moved forward in tests that
/// need nothing more); else the host's monotonic clock.
template <Clock C>
[[nodiscard]] steady_point steady_now(const C& c) noexcept {
  if constexpr (MonotonicClock<C>)
    return c.steady();
  else if constexpr (detail::is_skewed_clock<C>)
    return steady_now(c.base());
  else if constexpr (is_manual_clock<C>)
    return steady_point{c.now().time_since_epoch()};
  else
    return host_steady();
}

}  // namespace lease

// skewed_clock was declared here before it had a header of its own.
#include "lease/clock/skewed.hpp"  // IWYU pragma: export
