// lease/clock/host.hpp — lease::host_steady(), the host's monotonic clock.
#pragma once

#include <chrono>
#include <ctime>

#include "lease/time.hpp"

namespace lease {

/// The host's monotonic time in ms. On Linux this is CLOCK_BOOTTIME, which
/// keeps counting while the machine is suspended: a runner whose host slept
/// past its lease sees at once, on waking, that the lease may be gone
/// (CLOCK_MONOTONIC would not count the sleep, and the runner would believe
/// it still held a lease that other instances saw run out).
[[nodiscard]] inline steady_point host_steady() noexcept {
#if defined(__linux__) && defined(CLOCK_BOOTTIME)
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return steady_point{duration{static_cast<duration::rep>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000}};
#else
  return std::chrono::floor<duration>(std::chrono::steady_clock::now());
#endif
}

}  // namespace lease
