// lease/clock/system.hpp — lease::system_clock, the real wall clock.
#pragma once

#include <chrono>

#include "lease/clock/concept.hpp"

namespace lease {

/// The host's wall clock, truncated to milliseconds. Stateless; thread-safe.
struct system_clock {
  [[nodiscard]] time_point now() const noexcept {
    return std::chrono::floor<duration>(std::chrono::system_clock::now());
  }
};

static_assert(Clock<system_clock>);

}  // namespace lease
