// lease/clock/system.hpp — lease::system_clock, the host's real clocks.
#pragma once

#include <chrono>

#include "lease/clock/concept.hpp"
#include "lease/clock/host.hpp"

namespace lease {

/// The host's wall clock, truncated to milliseconds, and its monotonic clock
/// (host_steady()). Stateless; thread-safe.
struct system_clock {
  [[nodiscard]] time_point now() const noexcept {
    return std::chrono::floor<duration>(std::chrono::system_clock::now());
  }
  [[nodiscard]] steady_point steady() const noexcept { return host_steady(); }
};

static_assert(MonotonicClock<system_clock>);

}  // namespace lease
