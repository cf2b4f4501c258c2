// lease/scheduler/manual_time.hpp — lease::is_manual_clock, which clocks put a
// scheduler in deterministic mode.
#pragma once

#include "lease/clock/concept.hpp"
#include "lease/time.hpp"

namespace lease {

/// True for a clock whose time moves only when a caller moves it (it has
/// `advance(duration)`, like fake_clock), and for a skewed_clock over one.
/// A scheduler on such a clock starts no thread: the caller drives it with
/// poll() and next_wakeup(). Specialize it for a manual clock of your own.
template <class C>
inline constexpr bool is_manual_clock = requires(C& c) { c.advance(duration{}); };

template <class C>
inline constexpr bool is_manual_clock<skewed_clock<C>> = is_manual_clock<C>;

}  // namespace lease
